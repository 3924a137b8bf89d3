/**
 * How the listener's root machine supervises its children (docs/architecture.md, "Supervision"): which family a
 * failed child belongs to, what is done with it, and when restarting it stops. Pure: the root keeps the records and
 * the clock's readings.
 */
import { backoffDelay } from './backoff.js';
import type { FailingChild } from './daemon/control.js';
import { byCodeUnits } from './order.js';

/** The kinds of child the root spawns, by the first part of their actor id (`session.<name>`, `relay`, …). */
export const FAMILIES = [
  'session',
  'ask',
  'watch',
  'worktree',
  'device',
  'relay',
  'inventory',
  'scheduler',
  'pinsWatch',
  'asks',
  'sessions',
  'devices',
  'worktrees',
  'schedule',
  'watches',
] as const;
export type Family = (typeof FAMILIES)[number];

/**
 * What a failure of each family does. `restart`: rebuilt from what outlives it (tmux and the ledger, the lease, the
 * pin, the files), after a backoff when a gap is safe, at once when the root sends to it unchecked. `end`: over with a
 * result its asker sees. `halt`: the listener cannot serve without it: after the last restart it stops (exit 1, so a
 * service manager starts it again), saying why.
 */
export const STRATEGY: Record<Family, { onFailure: 'restart' | 'end'; givenUp: 'left_off' | 'halt' }> = {
  session: { onFailure: 'restart', givenUp: 'left_off' },
  ask: { onFailure: 'end', givenUp: 'left_off' },
  watch: { onFailure: 'restart', givenUp: 'left_off' },
  worktree: { onFailure: 'restart', givenUp: 'left_off' },
  device: { onFailure: 'restart', givenUp: 'left_off' },
  relay: { onFailure: 'restart', givenUp: 'halt' },
  inventory: { onFailure: 'restart', givenUp: 'halt' },
  scheduler: { onFailure: 'restart', givenUp: 'left_off' },
  pinsWatch: { onFailure: 'restart', givenUp: 'left_off' },
  asks: { onFailure: 'restart', givenUp: 'left_off' },
  sessions: { onFailure: 'restart', givenUp: 'left_off' },
  devices: { onFailure: 'restart', givenUp: 'left_off' },
  worktrees: { onFailure: 'restart', givenUp: 'left_off' },
  schedule: { onFailure: 'restart', givenUp: 'left_off' },
  watches: { onFailure: 'restart', givenUp: 'left_off' },
};

/**
 * Backoff 1 s, 2 s, 4 s, 8 s (capped at 60 s for a policy that allows more); given up at the 5th failure within
 * 10 minutes.
 */
export const SUPERVISION = { baseMs: 1_000, capMs: 60_000, limit: 5, windowMs: 10 * 60_000 } as const;
export type SupervisionPolicy = { baseMs: number; capMs: number; limit: number; windowMs: number };

/** One child's failures as the root keeps them (by actor id); shown by `svc debug state` and `svc verify`. */
export interface Failures {
  family: Family;
  /** When it failed, oldest first, only those inside the window. */
  at: number[];
  /** The last failure's error, first line, and the event the child was handling (when known). */
  error: string;
  /** Restarting stopped: `svc verify` says so until the listener restarts or the child's subject is gone. */
  givenUp: boolean;
  /** When the restart is due (epoch ms); null when there is none pending. */
  retryAt: number | null;
}

export type FailureDecision = { kind: 'restart'; delayMs: number } | { kind: 'end' } | { kind: 'give_up' };

/** The family of actor id `id`, or null for one the root does not spawn. */
export function familyOf(id: string): Family | null {
  const head = id.split('.', 1)[0] ?? '';
  return (FAMILIES as readonly string[]).includes(head) ? (head as Family) : null;
}

/**
 * A child failed at `now` with `error`: its record after it, and what the root does. The delay is the backoff for
 * the failures in the window so far (no jitter: one child, not a fleet).
 */
export function decideFailure(
  family: Family,
  previous: Failures | undefined,
  now: number,
  error: string,
  policy: SupervisionPolicy = SUPERVISION,
): { record: Failures; decision: FailureDecision } {
  const at = [...(previous?.at ?? []).filter((t) => now - t < policy.windowMs), now];
  const base = { family, at, error, retryAt: null };
  if (STRATEGY[family].onFailure === 'end') return { record: { ...base, givenUp: false }, decision: { kind: 'end' } };
  if (at.length >= policy.limit) return { record: { ...base, givenUp: true }, decision: { kind: 'give_up' } };
  const delayMs = backoffDelay(at.length - 1, { baseMs: policy.baseMs, capMs: policy.capMs }, 1);
  return { record: { ...base, givenUp: false, retryAt: now + delayMs }, decision: { kind: 'restart', delayMs } };
}

/** The first line of what a child threw, with the event it was handling when that is known. */
export function describeFailure(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return (text.split('\n', 1)[0] ?? '').slice(0, 300);
}

/** Whether a child's restart is still waiting at `now`, or was given up: it has no actor to send to. */
export function isDown(record: Failures | undefined, now: number): boolean {
  if (!record) return false;
  return record.givenUp || (record.retryAt !== null && record.retryAt > now);
}

/** The children that failed within the window (or were given up), as `svc verify` and `svc debug state` show them. */
export function failingChildren(
  records: Record<string, Failures>,
  now: number,
  policy: SupervisionPolicy = SUPERVISION,
): FailingChild[] {
  return Object.entries(records)
    .map(([id, r]) => ({ id, r, recent: r.at.filter((t) => now - t < policy.windowMs).length }))
    .filter(({ r, recent }) => r.givenUp || recent > 0)
    .map(({ id, r, recent }) => ({
      id,
      failures: r.givenUp ? r.at.length : recent,
      givenUp: r.givenUp,
      error: r.error,
    }));
}

/**
 * The records worth keeping: not those whose failures all left the window with nothing pending (a restart still to
 * come; one whose time passed long ago was the restart of a supervisor that is gone), nor those whose subject is gone
 * (`gone`: the session ended, the device was forgotten), given up or not.
 */
export function pruneFailures(
  records: Record<string, Failures>,
  now: number,
  gone: (id: string, record: Failures) => boolean,
  policy: SupervisionPolicy = SUPERVISION,
): Record<string, Failures> {
  const kept = Object.entries(records).filter(([id, r]) => {
    if (gone(id, r)) return false;
    return r.givenUp || (r.retryAt !== null && r.retryAt > now) || r.at.some((t) => now - t < policy.windowMs);
  });
  return kept.length === Object.keys(records).length ? records : Object.fromEntries(kept);
}

/** `svc verify`'s lines for failed children, given up first: FAIL for one given up (the listener runs without it). */
export function formatFailingLines(children: readonly FailingChild[]): string[] {
  const minutes = SUPERVISION.windowMs / 60_000;
  return [...children]
    .sort((a, b) => Number(b.givenUp) - Number(a.givenUp) || byCodeUnits(a.id, b.id))
    .map((c) => {
      const family = familyOf(c.id);
      const ended = family !== null && STRATEGY[family].onFailure === 'end';
      const what = c.givenUp
        ? 'not restarted; `svc listener --restart` once its log says why'
        : ended
          ? 'ended'
          : 'restarted';
      const head = `${c.givenUp ? 'FAIL' : 'ok  '}  ${'child'.padEnd(9)}`;
      return `${head} ${c.id} failed ${c.failures} time(s) in ${minutes} min, ${what} (last: ${c.error})`;
    });
}
