/**
 * A token bucket as plain data: callers keep the state and pass the time in.
 * Used per API key on the relay and per session in the listener (spec 7.6).
 */
export interface BucketConfig {
  /** Most tokens the bucket holds (the burst). */
  capacity: number;
  /** Tokens added per second. */
  refillPerSecond: number;
}

export interface BucketState {
  tokens: number;
  updatedAt: number; // epoch ms
}

export function fullBucket(config: BucketConfig, now: number): BucketState {
  return { tokens: config.capacity, updatedAt: now };
}

/** Refill for the time passed, then take one token if there is one. */
export function takeToken(
  config: BucketConfig,
  state: BucketState,
  now: number,
): { allowed: boolean; state: BucketState; retryAfterMs: number } {
  const elapsed = Math.max(0, now - state.updatedAt) / 1000;
  const tokens = Math.min(config.capacity, state.tokens + elapsed * config.refillPerSecond);
  if (tokens >= 1) {
    return { allowed: true, state: { tokens: tokens - 1, updatedAt: now }, retryAfterMs: 0 };
  }
  const retryAfterMs = Math.ceil(((1 - tokens) / config.refillPerSecond) * 1000);
  return { allowed: false, state: { tokens, updatedAt: now }, retryAfterMs };
}

/** Per-session limit for typed input (spec 7.6 leaves the numbers to us; docs/protocol.md records them). */
export const SESSION_INPUT_BUCKET: BucketConfig = { capacity: 10, refillPerSecond: 2 };
/** Per-key limit for relay HTTP requests. */
export const RELAY_HTTP_BUCKET: BucketConfig = { capacity: 60, refillPerSecond: 30 };
/**
 * Per client address: relay requests refused without a valid key (401, 404, 405, a claim of a code that does not
 * exist). Requests that succeed never spend from it.
 */
export const RELAY_REFUSED_BUCKET: BucketConfig = { capacity: 30, refillPerSecond: 5 };
/** Per-connection limit for WebSocket frames a client sends to the relay. */
export const RELAY_WS_BUCKET: BucketConfig = { capacity: 100, refillPerSecond: 50 };
/**
 * A listener connection's own allowance for push.result frames, used when its frame bucket is empty: what apps make
 * the listener answer (keys.result for a flood of pane.keys) cannot starve the results a sender is waiting for.
 */
export const RELAY_RESULT_BUCKET: BucketConfig = { capacity: 100, refillPerSecond: 50 };
