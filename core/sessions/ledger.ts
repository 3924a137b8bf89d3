/**
 * The listener's record of pushes it has acted on, so nothing is typed twice, even across a restart, and every
 * outcome reaches the relay: an outcome stays `unacked` until the relay acknowledges it (`push.ack`), and is sent
 * again until then, across reconnects and restarts. Plain data; actors/sessions/ledgerFile.ts keeps it on disk under ~/.svc.
 */
import type { PushState } from '../protocol/index.js';

export type PushOutcome = { state: Extract<PushState, 'injected' | 'refused' | 'expired'>; code?: string };

export interface Ledger {
  /** Highest push id acted on: the relay replays what came after it. */
  lastPushId: number;
  /** Recent ids and what became of them ('claimed' while being typed). */
  entries: Record<string, PushOutcome | { state: 'claimed' }>;
  /** Ids whose outcome the relay has not acknowledged yet, oldest first (absent in ledgers written before acks). */
  unacked?: number[];
}

export const LEDGER_KEEP = 1000;

/** Why a push claimed by a listener that died is reported, never typed again (docs/architecture.md). */
export const STOPPED_WHILE_TYPING = 'listener stopped while typing this push; not typed again';

export function emptyLedger(): Ledger {
  return { lastPushId: 0, entries: {}, unacked: [] };
}

/**
 * Record a claim or an outcome, keeping only the newest LEDGER_KEEP ids (an outcome the relay has not acknowledged
 * is kept whatever its age). An outcome is unacknowledged until `acknowledge`.
 */
export function recordOutcome(ledger: Ledger, id: number, outcome: Ledger['entries'][string]): Ledger {
  const entries = { ...ledger.entries, [String(id)]: outcome };
  const before = ledger.unacked ?? [];
  // At most LEDGER_KEEP waiting (a relay that never acknowledges, an old one, must not grow the file forever).
  const unacked =
    outcome.state === 'claimed' || before.includes(id)
      ? before
      : [...before, id].sort((a, b) => a - b).slice(-LEDGER_KEEP);
  const ids = Object.keys(entries)
    .map(Number)
    .sort((a, b) => a - b);
  const pending = new Set(unacked);
  for (const old of ids.slice(0, Math.max(0, ids.length - LEDGER_KEEP))) {
    if (!pending.has(old)) delete entries[String(old)];
  }
  return { lastPushId: Math.max(ledger.lastPushId, id), entries, unacked };
}

/** The relay has the outcome of `id`: it is not sent again. Unchanged (same object) when it was not waiting. */
export function acknowledge(ledger: Ledger, id: number): Ledger {
  const unacked = ledger.unacked ?? [];
  if (!unacked.includes(id)) return ledger;
  return { ...ledger, unacked: unacked.filter((u) => u !== id) };
}

/**
 * A ledger as a starting listener finds it. A `claimed` entry is a push the previous listener took and never
 * finished (killed while opening or typing it): it may be partly typed, so it is reported `inject_failed` and never
 * typed again. Returns the ledger to start with and the ids so recovered.
 */
export function recoverLedger(ledger: Ledger): { ledger: Ledger; recovered: number[] } {
  let next: Ledger = { ...ledger, unacked: ledger.unacked ?? [] };
  const recovered: number[] = [];
  for (const [key, outcome] of Object.entries(ledger.entries)) {
    if (outcome.state !== 'claimed') continue;
    recovered.push(Number(key));
    next = recordOutcome(next, Number(key), { state: 'refused', code: 'inject_failed' });
  }
  return { ledger: next, recovered: recovered.sort((a, b) => a - b) };
}

/** The outcomes still to be sent to the relay, oldest first. */
export function unackedOutcomes(ledger: Ledger): { id: number; outcome: PushOutcome }[] {
  const out: { id: number; outcome: PushOutcome }[] = [];
  for (const id of ledger.unacked ?? []) {
    const outcome = ledger.entries[String(id)];
    if (outcome && outcome.state !== 'claimed') out.push({ id, outcome });
  }
  return out;
}

/** What to do with an incoming push, before any session is involved. */
export type PushTriage =
  | { action: 'ignore' } // not an agent.command: other tools' pushes (spec 2.1)
  | { action: 'resend'; outcome: Ledger['entries'][string] } // acted on before: never type again
  | { action: 'expire' } // older than the replay window: never typed late
  | { action: 'deliver' };

export function triagePush(
  push: { id: number; type: string; ageMs: number },
  ledger: Ledger,
  replayWindowMs: number,
): PushTriage {
  if (push.type !== 'agent.command') return { action: 'ignore' };
  const before = ledger.entries[String(push.id)];
  if (before) return { action: 'resend', outcome: before };
  if (push.id <= ledger.lastPushId - LEDGER_KEEP) return { action: 'resend', outcome: { state: 'expired' } };
  if (push.ageMs > replayWindowMs) return { action: 'expire' };
  return { action: 'deliver' };
}
