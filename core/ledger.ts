/**
 * The listener's record of pushes it has acted on, so nothing is typed twice, even across a restart.
 * Plain data; actors/ledgerFile.ts keeps it on disk under ~/.svc.
 */
import type { PushState } from './protocol.js';

export type PushOutcome = { state: Extract<PushState, 'injected' | 'refused' | 'expired'>; code?: string };

export interface Ledger {
  /** Highest push id acted on: the relay replays what came after it. */
  lastPushId: number;
  /** Recent ids and what became of them ('claimed' while being typed). */
  entries: Record<string, PushOutcome | { state: 'claimed' }>;
}

export const LEDGER_KEEP = 1000;

export function emptyLedger(): Ledger {
  return { lastPushId: 0, entries: {} };
}

/** Record a claim or an outcome, keeping only the newest LEDGER_KEEP ids. */
export function recordOutcome(ledger: Ledger, id: number, outcome: Ledger['entries'][string]): Ledger {
  const entries = { ...ledger.entries, [String(id)]: outcome };
  const ids = Object.keys(entries)
    .map(Number)
    .sort((a, b) => a - b);
  for (const old of ids.slice(0, Math.max(0, ids.length - LEDGER_KEEP))) delete entries[String(old)];
  return { lastPushId: Math.max(ledger.lastPushId, id), entries };
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
