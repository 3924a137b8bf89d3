/**
 * Fan-out between whoever changes something (routes, the hub, the sweeper) and the WebSocket connections that must
 * hear of it. Events are per account and plain JSON, so a Redis pub/sub bus can carry them between relay instances;
 * the in-process bus below is the default for one instance.
 */
import type { AppPaneFrame, PaneRequestFrame, PushState, RelayFrame } from '../core/protocol/index.js';
import type { BucketConfig } from '../core/tokenBucket.js';
import type { AskAppFrame, AskListenerFrame } from './asks/book.js';
import type { Log } from './log.js';
import type { KeyLimiter } from './rateLimit.js';
import type { PushRecord } from './store.js';

export type BusEvent =
  /** A stored push to hand to listeners: only those of `targets` (hookIds), or all of the account when null. */
  | { kind: 'push.new'; push: PushRecord; targets: string[] | null }
  /** A push changed state: tell the account's app connections. */
  | { kind: 'push.status'; id: number; state: PushState; code: string | null }
  /** A computer's inventory or presence changed: tell the account's app connections. */
  | { kind: 'computers.changed'; computer: string }
  /** A listener subscribed for hookId on connection `connectionId`: any other listener of that hookId must go. */
  | { kind: 'listener.subscribed'; hookId: string; connectionId: string }
  /** The listener of hookId went away: the app connections watching its panes are told (`computer_offline`). */
  | { kind: 'listener.offline'; hookId: string }
  /** An app's pane request for the listener of hookId. Routed, never stored. */
  | { kind: 'pane.toListener'; hookId: string; frame: PaneRequestFrame }
  /** A listener's pane answer: for the app connections of `frame.deviceId`, or the one connection when it is null. */
  | { kind: 'pane.toApp'; frame: AppPaneFrame }
  /** An ask, its end, an answer's result or a notification for the account's apps (relay-server/asks/). */
  | { kind: 'ask.toApps'; frame: AskAppFrame }
  /** An app's sealed answer for the listener of hookId. Routed, never stored. */
  | { kind: 'ask.toListener'; hookId: string; frame: AskListenerFrame }
  /** A history chunk a listener sent, stored: for the account's apps (the live timeline). */
  | { kind: 'history.toApps'; frame: Extract<RelayFrame, { type: 'history.chunk' }> }
  /** A device was removed with its tokens: connections opened with one of them are closed (4401). */
  | { kind: 'device.removed'; deviceId: string }
  /** An instance's heartbeat: these listeners are connected to it (for the other instances' presence). */
  | { kind: 'listener.present'; hookIds: string[] };

export type BusHandler = (event: BusEvent) => void;

export interface Bus {
  publish(accountId: string, event: BusEvent): Promise<void>;
  /** Returns the function that unsubscribes. */
  subscribe(accountId: string, handler: BusHandler): () => void;
  close(): Promise<void>;
  /**
   * A bus shared by several relay instances says whether a listener is connected to another instance (it heard
   * that instance say so recently); absent on a bus of one process.
   */
  onlineElsewhere?(hookId: string): boolean;
  /**
   * A bus shared by several instances hands `handler` every event of every account, whether this instance has a
   * connection of that account or not (what an instance must remember for a connection that comes later: the asks
   * waiting). Absent on a bus of one process, where nothing is published for an account nobody here is connected to.
   */
  tap?(handler: (accountId: string, event: BusEvent) => void): () => void;
  /**
   * A bus that can drop out (Redis) calls `handler` each time it is back, for what it may have missed to be found
   * in the store; returns the function that stops it. Absent on a bus of one process, which never drops out.
   */
  onReconnect?(handler: () => void): () => void;
  /** A bus shared by several instances gives per-key limits shared by them all; absent: each process limits alone. */
  keyLimiter?(config: BucketConfig, log: Log, now?: () => number): KeyLimiter;
}

/** How often an instance on a shared bus says which listeners it holds; one not heard of for 3 beats is gone. */
export const PRESENCE_BEAT_MS = 15_000;

/** The handlers of this process, by account: what every bus hands an event to. */
export class AccountHandlers {
  private readonly handlers = new Map<string, Set<BusHandler>>();

  constructor(private readonly onHandlerError: (error: unknown) => void) {}

  /** Hands `event` to each handler of `accountId`; a throwing handler does not stop the others. */
  deliver(accountId: string, event: BusEvent): void {
    const set = this.handlers.get(accountId);
    if (!set) return;
    for (const handler of [...set]) {
      try {
        handler(event);
      } catch (error) {
        this.onHandlerError(error);
      }
    }
  }

  add(accountId: string, handler: BusHandler): () => void {
    let set = this.handlers.get(accountId);
    if (!set) {
      set = new Set();
      this.handlers.set(accountId, set);
    }
    set.add(handler);
    return () => {
      const current = this.handlers.get(accountId);
      if (!current) return;
      current.delete(handler);
      if (current.size === 0) this.handlers.delete(accountId);
    };
  }

  clear(): void {
    this.handlers.clear();
  }
}

/** Delivers synchronously to the handlers of this process; a throwing handler does not stop the others. */
export class InProcessBus implements Bus {
  private readonly handlers: AccountHandlers;

  constructor(onHandlerError: (error: unknown) => void = () => {}) {
    this.handlers = new AccountHandlers(onHandlerError);
  }

  async publish(accountId: string, event: BusEvent): Promise<void> {
    this.handlers.deliver(accountId, event);
  }

  subscribe(accountId: string, handler: BusHandler): () => void {
    return this.handlers.add(accountId, handler);
  }

  async close(): Promise<void> {
    this.handlers.clear();
  }
}
