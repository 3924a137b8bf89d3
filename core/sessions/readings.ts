/**
 * Which session actors a tmux reading is news for. The supervisor (machines/sessions.ts) tells each session actor
 * every reading, and a reading comes every 5 s and for every push (each is judged on a fresh one): with 20 sessions,
 * 20 `UPDATE`s, nearly all repeating what the actor already holds. A reading is left untold only where telling it
 * would change nothing: the actor was last told exactly this (its record and what its screen showed), no approval
 * prompt is in it, and the actor's approval region is at `none` (a refused `prompt_changed` or a typed answer settles
 * at the next reading, so an actor in any other approval state always hears it, as does one shown a prompt).
 */
import type { ApprovalPrompt } from '../agents/approvals.js';
import type { SessionRecord } from '../protocol/index.js';

/** What one `UPDATE` tells a session actor. */
export interface SessionReading {
  record: SessionRecord;
  approvalOnScreen: boolean;
  approval: ApprovalPrompt | null;
  screenUnreadable: boolean;
  midTurn: boolean;
}

/** A reading as a string, to compare with the one the actor was last told. */
export const readingKey = (r: SessionReading): string => JSON.stringify(r);

export function readingIsNews(r: SessionReading, told: string | undefined, approvalRegion: unknown): boolean {
  if (r.approvalOnScreen || r.approval || approvalRegion !== 'none') return true;
  return told !== readingKey(r);
}
