/**
 * Which inventory changes tell the person (docs/notifications.md): a session that starts waiting for an approval,
 * and an agent that finishes its turn (working → idle). Pure: the listener hands in each session's state before
 * and after a reading.
 */
import type { AgentState } from '../protocol/frames.js';

export interface SessionEvent {
  session: string;
  kind: 'approval' | 'turn';
  message: string;
}

export function sessionEvents(
  before: Readonly<Record<string, AgentState | undefined>>,
  after: Readonly<Record<string, AgentState | undefined>>,
): SessionEvent[] {
  const events: SessionEvent[] = [];
  for (const [session, state] of Object.entries(after)) {
    const was = before[session];
    if (was === undefined || was === state) continue; // a session first seen tells nothing
    if (state === 'awaiting_approval') events.push({ session, kind: 'approval', message: 'waits for your approval' });
    else if (was === 'working' && state === 'idle') {
      events.push({ session, kind: 'turn', message: 'finished its turn' });
    }
  }
  return events;
}

/**
 * A finished turn is seen twice when the agent has a Stop hook (`svc install`): by the hook, at once, and by the
 * screen, a reading later. The phones are told once: a turn notice within this window of the last one for the
 * same session is the same turn.
 */
export const TURN_NOTICE_WINDOW_MS = 20_000;

export function turnNoticeDue(lastToldAt: number | undefined, now: number): boolean {
  return lastToldAt === undefined || now - lastToldAt >= TURN_NOTICE_WINDOW_MS || now < lastToldAt;
}
