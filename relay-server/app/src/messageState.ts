/**
 * A sent message's state on the phone, and which news of it to take. Pure: the app's state (state.ts) asks it for
 * every push.status frame and every GET /pushes/<id> answer, which may arrive in any order.
 */
import type { Message } from './db.js';

type State = Message['state'];

/** A message in one of these states changes no more (but see `takesStatus`). */
export const FINAL: ReadonlySet<State> = new Set<State>(['injected', 'refused', 'expired']);

/** How far along a message is: news of an earlier step is stale (an answer read before the frame that beat it). */
const STEP: Record<State, number> = {
  unsent: 0,
  sending: 1,
  pending: 2,
  delivered: 3,
  injected: 4,
  refused: 4,
  expired: 4,
};

/**
 * Whether a message at `current` takes `next` from the relay. A state only moves forward: a poll's answer read
 * before the listener's result may land after the `injected` frame, and must not put the message back to
 * `delivered` for good. A final state stays, except `session_not_found`, which a later reading may still overturn.
 */
export function takesStatus(current: Pick<Message, 'state' | 'code'>, next: State): boolean {
  if (FINAL.has(current.state)) return current.state === 'refused' && current.code === 'session_not_found';
  return STEP[next] > STEP[current.state];
}
