/**
 * One WebSocket client of the relay, as the hub and the frame handlers see it. Depends on a minimal socket
 * (`send`, `close`, `terminate`, `readyState`, `bufferedAmount`), not on the network.
 */
import { randomBytes } from 'node:crypto';
import type { RelayFrame } from '../core/protocol/index.js';
import { type BucketConfig, type BucketState, fullBucket, RELAY_RESULT_BUCKET } from '../core/tokenBucket.js';
import type { KeyRecord, PushRecord } from './store.js';

/** Panes one app connection is counted as watching; beyond, the oldest is forgotten (it is told nothing more). */
export const MAX_WATCHING = 64;
/** A client that has not read this much of what we sent is too slow to keep. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
const OPEN = 1;

export interface MinimalSocket {
  readonly readyState: number;
  readonly bufferedAmount: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
}

export type Phase = 'open' | 'subscribing' | 'subscribed' | 'closed';

/** A live pane of a computer, as `Connection.watching` keys it. */
export const watchKey = (computer: string, session: string) => `${computer} ${session}`;

export class Connection {
  readonly id = randomBytes(8).toString('hex');
  readonly socket: MinimalSocket;
  readonly key: KeyRecord;
  role: 'listener' | 'app' | null = null;
  phase: Phase = 'open';
  /** The computer a listener subscribed for. */
  hookId: string | null = null;
  /** The device an app connection subscribed as (a device of the account), if any. */
  deviceId: string | null = null;
  /**
   * An app connection's live panes, by `watchKey`: from its pane.watch until its pane.stop or a stop the listener
   * sends for good. Kept through `computer_offline`, so the connection hears of the computer going away each time.
   */
  readonly watching = new Map<string, { computer: string; session: string }>();
  /** push.new events that arrived while the listener's replay was being prepared. */
  readonly held: PushRecord[] = [];
  /** Whether a pong came back since the last ping. */
  alive = true;
  bucket: BucketState;
  /** A listener's separate allowance for push.result frames (RELAY_RESULT_BUCKET). */
  resultBucket: BucketState;
  /** Frames refused by the bucket in the current run of refusals (logged once per run). */
  limitedRun = 0;
  /** Frames are handled one after another, in arrival order. */
  queue: Promise<void> = Promise.resolve();

  constructor(
    socket: MinimalSocket,
    key: KeyRecord,
    bucket: BucketConfig,
    now: number,
    resultBucket: BucketConfig = RELAY_RESULT_BUCKET,
  ) {
    this.socket = socket;
    this.key = key;
    this.bucket = fullBucket(bucket, now);
    this.resultBucket = fullBucket(resultBucket, now);
  }

  get accountId(): string {
    return this.key.accountId;
  }

  /** What to call this connection in a log line (never the key itself). */
  get label(): string {
    const who = this.hookId ? `listener ${this.hookId}` : (this.role ?? 'connection');
    return `${who} [${this.key.keyId} ${this.id}]`;
  }

  /** Count this connection as watching a pane (the newest last; at most MAX_WATCHING). */
  watch(computer: string, session: string): void {
    const key = watchKey(computer, session);
    this.watching.delete(key);
    this.watching.set(key, { computer, session });
    if (this.watching.size > MAX_WATCHING) this.watching.delete(this.watching.keys().next().value!);
  }

  /** Send a frame if the socket is open; returns false if it was not sent. A client far behind is cut off. */
  send(frame: RelayFrame): boolean {
    if (this.socket.readyState !== OPEN) return false;
    if (this.socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.socket.terminate();
      return false;
    }
    this.socket.send(JSON.stringify(frame));
    return true;
  }

  close(code: number, reason: string): void {
    if (this.socket.readyState === OPEN) this.socket.close(code, reason);
  }
}
