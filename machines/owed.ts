/**
 * What a child of the root was handed and owes an answer for (the root's `owed`, machines/listenerTypes.ts), and how
 * it is answered when the child fails: refused, never typed or opened again. A child that throws keeps the snapshot
 * from before the event it failed on, so what it owed is known here, not from it.
 */
import type { ClientFrame } from '../core/protocol/index.js';
import { type ContactRef, keysResultFrame, paneStatusFrame } from '../core/sessions/routing.js';
import { type Owed, type RootEnqueue, type Step, toRelay } from './listenerTypes.js';
import type { SessionKeysResult, SessionResult } from './session.js';

/** Why input for a session whose actor failed was not typed (core/supervision.ts). */
export const ACTOR_FAILED =
  "svc's actor for this session failed while this waited or was being typed (the listener's log says why): it may be partly typed, look before sending it again";

/** How a contact a failed (or given up) device actor held is answered: refused, never opened or typed. */
function contactRefusal(ref: ContactRef, deviceId: string): (SessionResult | ClientFrame)[] {
  if (ref.kind === 'push') {
    const { id, agentSessionName: session } = ref.push;
    return [{ type: 'SESSION.RESULT', session, id, state: 'refused', code: 'inject_failed', message: DEVICE_FAILED }];
  }
  const to = { session: ref.session, deviceId, connection: ref.connection };
  return [
    ref.kind === 'watch'
      ? paneStatusFrame(to, 'refused', 'inject_failed')
      : keysResultFrame(to, 'refused', 'inject_failed'),
  ];
}
const DEVICE_FAILED = "svc's actor for this phone failed (the listener's log says why); this was not opened or typed";

/** `owed` with `item` added for child `id`. */
export const owe = (owed: Record<string, Owed[]>, id: string, item: Owed) => ({
  ...owed,
  [id]: [...(owed[id] ?? []), item],
});
export const sameRef = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
/** `owed` without child `id`'s first item matching `paid` (unchanged when none does). */
export function paid(owed: Record<string, Owed[]>, id: string, answered: (o: Owed) => boolean) {
  const list = owed[id] ?? [];
  const at = list.findIndex(answered);
  if (at < 0) return owed;
  const rest = list.filter((_, i) => i !== at);
  if (rest.length > 0) return { ...owed, [id]: rest };
  const { [id]: _gone, ...others } = owed;
  return others;
}
/** How what a failed child owed is answered: refused, never typed again. */
function owedRefusal(o: Owed): (SessionResult | SessionKeysResult | ClientFrame)[] {
  const refused = { state: 'refused', code: 'inject_failed' } as const;
  if (o.kind === 'contact') return contactRefusal(o.ref, o.deviceId);
  return o.kind === 'push'
    ? [{ type: 'SESSION.RESULT', session: o.session, id: o.id, ...refused, message: ACTOR_FAILED }]
    : [{ type: 'SESSION.KEYS_RESULT', session: o.session, ref: o.ref, ...refused, message: ACTOR_FAILED }];
}
/** Answers for what children owed (see `owed`): each refused, never typed or opened again. */
export function refuseOwed(enqueue: RootEnqueue, items: Owed[]): void {
  for (const answer of items.flatMap(owedRefusal)) {
    if (answer.type === 'SESSION.RESULT' || answer.type === 'SESSION.KEYS_RESULT') enqueue.raise(answer);
    else enqueue.sendTo('relay', toRelay(answer));
  }
}
/** What the children `theirs` picks owed, and the rest of `owed`. */
function splitOwed(owed: Record<string, Owed[]>, theirs: (id: string) => boolean) {
  const kept: Record<string, Owed[]> = {};
  const refused: Owed[] = [];
  for (const [id, items] of Object.entries(owed)) {
    if (theirs(id)) refused.push(...items);
    else kept[id] = items;
  }
  return { refused, kept };
}
/** A session's or device's actor is down (CHILD.DOWN), or its whole family (FAMILY.DOWN): what it owed is refused. */
export const childDown: Step<'CHILD.DOWN' | 'FAMILY.DOWN'> = ({ context, event, enqueue }) => {
  const theirs = (id: string) => (event.type === 'CHILD.DOWN' ? id === event.id : id.startsWith(`${event.family}.`));
  const { refused, kept } = splitOwed(context.owed, theirs);
  refuseOwed(enqueue, refused);
  enqueue.assign({ owed: kept });
};
