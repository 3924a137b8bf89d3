/**
 * Token buckets by name (an API key id, a connection): the state of core/tokenBucket.ts kept in a map.
 */
import { type BucketConfig, type BucketState, fullBucket, takeToken } from '../core/tokenBucket.js';

/** Above this many names, buckets that have refilled completely are forgotten (they equal a new bucket). */
const PRUNE_ABOVE = 10_000;

export class KeyedBuckets {
  private readonly buckets = new Map<string, BucketState>();
  private readonly config: BucketConfig;
  private readonly now: () => number;

  constructor(config: BucketConfig, now: () => number = Date.now) {
    this.config = config;
    this.now = now;
  }

  /** Take a token for `name`; when there is none, how long until there is. */
  take(name: string): { allowed: boolean; retryAfterMs: number } {
    const now = this.now();
    const state = this.buckets.get(name) ?? fullBucket(this.config, now);
    const result = takeToken(this.config, state, now);
    this.buckets.set(name, result.state);
    if (this.buckets.size > PRUNE_ABOVE) this.prune(now);
    return { allowed: result.allowed, retryAfterMs: result.retryAfterMs };
  }

  delete(name: string): void {
    this.buckets.delete(name);
  }

  private prune(now: number): void {
    const fullAfterMs = (this.config.capacity / this.config.refillPerSecond) * 1000;
    for (const [name, state] of this.buckets) {
      if (now - state.updatedAt >= fullAfterMs) this.buckets.delete(name);
    }
  }
}
