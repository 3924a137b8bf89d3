/**
 * Reconnect delays: exponential from `baseMs`, capped at `capMs`, with "equal jitter"
 * (half fixed, half random) so a fleet of listeners does not reconnect in lockstep.
 */
export interface BackoffConfig {
  baseMs: number;
  capMs: number;
}

export const RELAY_BACKOFF: BackoffConfig = { baseMs: 1000, capMs: 30_000 };

/** `attempt` counts failures in a row, from 0. `random` is in [0, 1). */
export function backoffDelay(attempt: number, config: BackoffConfig, random: number): number {
  const exp = Math.min(config.capMs, config.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(exp / 2 + (exp / 2) * random);
}
