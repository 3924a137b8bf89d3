/**
 * The bus on Redis (issue 15; docs/relay-scale.md): what one relay instance publishes for an account reaches the
 * connections of every instance. Events are the same plain JSON as the in-process bus carries, published on
 * `svc:bus:<accountId>`. Each instance subscribes to the pattern `svc:bus:*` once, when it opens, and hands an
 * event to its own handlers of that account: no per-account subscription to wait for, so an event published just
 * after a connection subscribed is never missed. `publish` resolves once Redis has the event; delivery, here too,
 * follows from Redis, in publish order per connection.
 */
import { Redis } from 'ioredis';
import type { BucketConfig } from '../core/tokenBucket.js';
import { AccountHandlers, type Bus, type BusEvent, type BusHandler, PRESENCE_BEAT_MS } from './bus.js';
import type { Log } from './log.js';
import type { KeyLimiter } from './rateLimit.js';
import { RedisKeyLimiter } from './redisLimiter.js';

const PREFIX = 'svc:bus:';

export class RedisBus implements Bus {
  private readonly handlers: AccountHandlers;
  private readonly taps = new Set<(accountId: string, event: BusEvent) => void>();
  /** Listeners some instance said it holds, and when it last said so (epoch ms). */
  private readonly present = new Map<string, number>();

  private constructor(
    private readonly pub: Redis,
    private readonly sub: Redis,
    private readonly onError: (error: unknown) => void,
  ) {
    this.handlers = new AccountHandlers(onError);
    sub.on('pmessage', (_pattern: string, channel: string, message: string) => {
      let event: BusEvent;
      try {
        event = JSON.parse(message) as BusEvent;
      } catch (error) {
        this.onError(error);
        return;
      }
      // presence is heard for every account (the pattern brings them all), handlers here or not
      if (event.kind === 'listener.subscribed') this.present.set(event.hookId, Date.now());
      else if (event.kind === 'listener.present') for (const id of event.hookIds) this.present.set(id, Date.now());
      else if (event.kind === 'listener.offline') this.present.delete(event.hookId);
      const accountId = channel.slice(PREFIX.length);
      for (const tap of this.taps) {
        try {
          tap(accountId, event);
        } catch (error) {
          this.onError(error);
        }
      }
      this.handlers.deliver(accountId, event);
    });
  }

  /** Connects to `url` (redis://…) and subscribes; rejects when Redis cannot be reached. */
  static async open(url: string, onError: (error: unknown) => void = () => {}): Promise<RedisBus> {
    const options = { lazyConnect: true, maxRetriesPerRequest: 3, enableOfflineQueue: true } as const;
    const pub = new Redis(url, options);
    const sub = new Redis(url, options);
    pub.on('error', onError);
    sub.on('error', onError);
    try {
      await pub.connect();
      await sub.connect();
      await sub.psubscribe(`${PREFIX}*`);
    } catch (error) {
      pub.disconnect();
      sub.disconnect();
      throw error;
    }
    return new RedisBus(pub, sub, onError);
  }

  /** Per-key limits shared through this Redis (relay-server/redisLimiter.ts). */
  keyLimiter(config: BucketConfig, log: Log, now?: () => number): KeyLimiter {
    return new RedisKeyLimiter(this.pub, config, log, now);
  }

  onlineElsewhere(hookId: string): boolean {
    const at = this.present.get(hookId);
    return at !== undefined && Date.now() - at < 3 * PRESENCE_BEAT_MS;
  }

  onReconnect(handler: () => void): () => void {
    // ioredis says `ready` on every connection, subscriptions restored: after the first, each is a return
    const ready = () => handler();
    this.sub.on('ready', ready);
    return () => this.sub.off('ready', ready);
  }

  tap(handler: (accountId: string, event: BusEvent) => void): () => void {
    this.taps.add(handler);
    return () => this.taps.delete(handler);
  }

  async publish(accountId: string, event: BusEvent): Promise<void> {
    await this.pub.publish(`${PREFIX}${accountId}`, JSON.stringify(event));
  }

  subscribe(accountId: string, handler: BusHandler): () => void {
    return this.handlers.add(accountId, handler);
  }

  async close(): Promise<void> {
    this.handlers.clear();
    await Promise.allSettled([this.sub.quit(), this.pub.quit()]);
  }
}
