/**
 * Token buckets by name (an API key id, a connection): the state of core/tokenBucket.ts kept in a map.
 */
import { type BucketConfig, type BucketState, fullBucket, takeToken } from '../core/tokenBucket.js';
import type { Log } from './log.js';

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

/** What a key may do, per key id: the HTTP and WebSocket-upgrade requests of one API key, on every instance. */
export interface KeyLimiter {
  take(name: string): Promise<{ allowed: boolean; retryAfterMs: number }>;
}

/** One process's limiter: the buckets in memory. */
export class LocalKeyLimiter implements KeyLimiter {
  private readonly buckets: KeyedBuckets;

  constructor(config: BucketConfig, now: () => number = Date.now) {
    this.buckets = new KeyedBuckets(config, now);
  }

  take(name: string): Promise<{ allowed: boolean; retryAfterMs: number }> {
    return Promise.resolve(this.buckets.take(name));
  }
}

/** Addresses whose current run of rate-limited refusals is being counted; beyond, the oldest run is logged and dropped. */
const MAX_RUNS = 1_000;
/** A run of 429s is summed up in the log at most this often per address. */
const RUN_REPORT_MS = 10_000;

/**
 * Refused requests without a valid key, per client address: each spends a token; once the address has none left
 * it is answered 429. The log gets one line when a run of 429s starts and one with their count every 10 s while it
 * lasts (and when it is over), never one per request.
 */
export class RefusalLimiter {
  private readonly buckets: KeyedBuckets;
  private readonly runs = new Map<string, { count: number; since: number }>();
  private readonly log: Log;
  private readonly now: () => number;

  constructor(config: BucketConfig, log: Log, now: () => number = Date.now) {
    this.buckets = new KeyedBuckets(config, now);
    this.log = log;
    this.now = now;
  }

  /** Spend for one refusal from `address`. When not allowed, the caller answers 429 and logs nothing itself. */
  charge(address: string, what: string): { allowed: boolean; retryAfterMs: number } {
    const taken = this.buckets.take(address);
    const now = this.now();
    const run = this.runs.get(address);
    if (run && now - run.since >= RUN_REPORT_MS) {
      this.report(address, run, now);
      if (taken.allowed) this.runs.delete(address);
      else this.runs.set(address, { count: 0, since: now });
    }
    if (taken.allowed) return taken;
    const current = this.runs.get(address);
    if (current) current.count++;
    else {
      this.log.warn(`${what} 429 rate_limited from ${address}: dropping requests without a valid key`);
      if (this.runs.size >= MAX_RUNS) {
        const [oldest, first] = this.runs.entries().next().value as [string, { count: number; since: number }];
        this.report(oldest, first, now);
        this.runs.delete(oldest);
      }
      this.runs.set(address, { count: 1, since: now });
    }
    return taken;
  }

  private report(address: string, run: { count: number; since: number }, now: number): void {
    const seconds = Math.round((now - run.since) / 1000);
    this.log.warn(`${run.count} request(s) without a valid key from ${address} refused 429 in ${seconds}s`);
  }
}
