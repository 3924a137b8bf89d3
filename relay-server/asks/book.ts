/**
 * The relay's side of `svc_ask` and `svc_notify` (docs/protocol.md "Asks and notifications"): asks are routed
 * and kept **in memory only**, never in the database: the question and the answer are sealed, and what is outside
 * (computer, ask id, session, deadline) is kept only until the ask ends, so an app that connects (or reconnects)
 * while an ask waits is shown it. A relay that restarts forgets them; the listener announces its asks again when
 * it reconnects. Notifications are kept in the store's inbox, handed to the app connections of the moment and
 * pushed (asks/frames.ts).
 */
import type { ClientFrame, RelayFrame } from '../../core/protocol/index.js';

type AskNew = Extract<RelayFrame, { type: 'ask.new' }>;
type AskClosed = Extract<RelayFrame, { type: 'ask.closed' }>;

/** How long the relay remembers that an ask ended, to refuse a late answer without asking the computer. */
const CLOSED_KEPT_MS = 15 * 60_000;
/** Most open asks kept per account: a listener cannot grow the relay's memory without bound. */
export const MAX_OPEN_ASKS = 64;

interface Entry {
  frame: AskNew;
  /** Relay clock: when the frame came, and when the ask ends by its `leftMs`. */
  receivedAt: number;
  endsAt: number;
  closed: AskClosed['state'] | null;
  closedAt: number;
}

const key = (computer: string, id: string) => `${computer}/${id}`;

export class AskBook {
  private readonly accounts = new Map<string, Map<string, Entry>>();

  /** An `ask.new` or `ask.closed` that went out to the apps of `accountId`. */
  apply(accountId: string, frame: AskNew | AskClosed, now: number): void {
    let asks = this.accounts.get(accountId);
    if (!asks) {
      asks = new Map();
      this.accounts.set(accountId, asks);
    }
    this.sweep(asks, now);
    const k = key(frame.computer, frame.id);
    if (frame.type === 'ask.new') {
      if (asks.get(k)?.closed) return; // announced again after it ended: stays ended
      const open = [...asks.values()].filter((e) => !e.closed).length;
      if (!asks.has(k) && open >= MAX_OPEN_ASKS) return;
      asks.set(k, { frame, receivedAt: now, endsAt: now + frame.leftMs, closed: null, closedAt: 0 });
      return;
    }
    const entry = asks.get(k);
    if (entry) {
      entry.closed = frame.state;
      entry.closedAt = now;
    }
  }

  /** Whether the relay has seen this ask before (open or ended). */
  known(accountId: string, computer: string, id: string): boolean {
    return this.accounts.get(accountId)?.has(key(computer, id)) ?? false;
  }

  /** The asks still waiting, as `ask.new` frames with the time left now. */
  open(accountId: string, now: number): AskNew[] {
    const asks = this.accounts.get(accountId);
    if (!asks) return [];
    this.sweep(asks, now);
    return [...asks.values()]
      .filter((e) => !e.closed && e.endsAt > now)
      .map((e) => ({ ...e.frame, leftMs: Math.max(0, e.endsAt - now) }));
  }

  /** How an ask ended, when the relay knows: a late answer is refused here. */
  ended(accountId: string, computer: string, id: string, now: number): 'answered' | 'expired' | null {
    const entry = this.accounts.get(accountId)?.get(key(computer, id));
    if (!entry) return null;
    if (entry.closed) return entry.closed;
    return entry.endsAt <= now ? 'expired' : null;
  }

  private sweep(asks: Map<string, Entry>, now: number): void {
    for (const [k, e] of asks) {
      const endedAt = e.closed ? e.closedAt : e.endsAt;
      if (now - endedAt > CLOSED_KEPT_MS) asks.delete(k);
    }
  }
}

/** The ask and notify frames a client sends. */
export type AskClientFrame = Extract<
  ClientFrame,
  { type: 'ask.new' | 'ask.closed' | 'ask.result' | 'notify.new' | 'ask.answer' }
>;
/** What the relay hands the apps of an account. */
export type AskAppFrame = Extract<RelayFrame, { type: 'ask.new' | 'ask.closed' | 'ask.result' | 'notify.new' }>;
/** What the relay hands a listener. */
export type AskListenerFrame = Extract<RelayFrame, { type: 'ask.answer' }>;
