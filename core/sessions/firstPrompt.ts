/**
 * The first prompt of a session the phone started (issue 30 item 3; core/sessions/newSession.ts): when the listener
 * types it. Apart from newSession.ts, which the app loads: this one reads the schedules' rules. Pure.
 */
import type { RefusalCode, SessionRecord } from '../protocol/index.js';
import { promptable } from '../schedules/book.js';

/**
 * The first prompt of a session the phone started, as the listener keeps it until it is typed (machines/firstPrompts.ts,
 * the root's `firstPrompts`). `id`: negative, never a relay push id, so its result stays out of the ledger. `startedAt`: epoch
 * seconds when the listener made the session; an older session of that name is another one.
 */
export interface FirstPrompt {
  id: number;
  agent: string;
  text: string;
  startedAt: number;
  /** A reading showed the session since it was made: tmux's `session_created` then (another after it is not it). */
  seen: number | null;
  /** Handed to the session's actor; its result not back yet. */
  typing: boolean;
  /** firstPromptWait passed while it was being typed: a refusal ends it. */
  late?: true;
}

/** How much older than `startedAt` (s) tmux's `session_created` may read and still be that session. */
const CREATED_SLACK_S = 2;

/**
 * What a reading means for a first prompt: `type` it now (its own session, its agent in front and idle), `wait`,
 * or `gone` (its session ended, or the name now belongs to another session, made before it or after it ended: never
 * typed into another).
 */
export function decideFirstPrompt(p: FirstPrompt, record: SessionRecord | undefined): 'type' | 'wait' | 'gone' {
  // being typed: the session's answer (session_not_found, if it went) says how it ended
  if (p.typing) return 'wait';
  if (!record) return p.seen !== null ? 'gone' : 'wait';
  if (record.createdAt < p.startedAt - CREATED_SLACK_S) return 'gone';
  if (p.seen !== null && record.createdAt !== p.seen) return 'gone';
  return promptable({ agent: p.agent }, record) ? 'type' : 'wait';
}

/**
 * The refusals given before anything was typed, after which a first prompt is tried again at the next idle
 * reading. Any other (`inject_failed` above all: tmux may have taken part of it, or its Enter) ends it: input that
 * may be half typed is never typed again.
 */
export const RETRIED_REFUSALS: ReadonlySet<RefusalCode> = new Set([
  'rate_limited',
  'approval_pending',
  'screen_unreadable',
  'shell_in_front',
  'prompt_changed',
]);
