/**
 * How the root (machines/listener.ts) supervises its own children: each singleton (the relay link, the inventory, the
 * watch on devices.json and the six families' supervisors) lives in a region of its own that restarts it when it
 * fails, or leaves it off (or stops the listener) at the last failure core/supervision.ts allows. The root's setup
 * names the actions; `stopOrphans` is the one that acts (xstate's own stop of a failed child's children).
 */
import type { AnyActorRef } from 'xstate';
import { decideFailure, describeFailure, type Failures, familyOf, STRATEGY } from '../core/supervision.js';
import { childrenOf } from './delivery.js';
import type { ListenerContext } from './listenerTypes.js';
import { clockOf } from './log.js';

/** The prefix of the event xstate sends a parent for its child's uncaught error. */
export const ERROR_EVENT = 'xstate.error.actor.';
/** The singletons that supervise a family of children (machines/log.ts SupervisorInput). */
export const SUPERVISORS = new Set(['sessions', 'devices', 'scheduler', 'asks', 'worktrees', 'watches']);
/** The children the root invokes once and supervises in their own regions; the rest are their supervisors'. */
export const SINGLETONS = new Set(['relay', 'inventory', 'pinsWatch', ...SUPERVISORS]);

/** What a singleton's failure does (core/supervision.ts): restarted at once, or given up (relay, inventory: halt). */
function singletonFailure(context: ListenerContext, event: { type: string; error?: unknown }) {
  const id = event.type.slice(ERROR_EVENT.length);
  const family = familyOf(id) ?? 'relay';
  const { record, decision } = decideFailure(
    family,
    context.supervision[id],
    clockOf(context),
    describeFailure(event.error),
  );
  const givenUp = decision.kind === 'give_up';
  const halts = givenUp && STRATEGY[family].givenUp === 'halt';
  const what = !givenUp
    ? 'restarted at once'
    : `failed ${record.at.length} times in ten minutes: ${halts ? 'the listener stops' : 'left off until the listener restarts'}`;
  return { id, record: { ...record, retryAt: null }, halts, what };
}

/**
 * Stop a child whose parent failed. xstate allows only a parent to stop its child, and a parent that threw never does
 * (5.33.3): this is xstate's own stop (`_stop`: the child's mailbox takes its stop, which stops its own children and
 * timers), the one internal it offers for it. test/unit/machines/listener.e2ee.test.ts fails if it stops working.
 */
function stopOrphan(child: AnyActorRef): void {
  for (const grandchild of Object.values(childrenOf(child))) stopOrphan(grandchild);
  (child as unknown as { _stop(): void })._stop();
}
/** A singleton's error event: logged, then recorded (its region restarts it or goes to `off` / halted). */
const SINGLETON_FAILED = [
  'stopOrphans',
  {
    type: 'reportFailure',
    params: ({ context, event }: { context: ListenerContext; event: { type: string; error?: unknown } }) => {
      const { id, what } = singletonFailure(context, event);
      return { id, error: event.error, what };
    },
  },
  'recordSingletonFailure',
] as const;
/**
 * A singleton region's answer to its child's failure: restarted (its `up` entered again), or `givenUp` at the last;
 * either way the actions `after` run once it is recorded.
 */
const restartOrGiveUp = (givenUp: string, after?: 'abandonAsks' | 'refuseDeviceContacts' | 'refuseSessionInput') =>
  [
    { guard: 'givesUp', target: givenUp, actions: [...SINGLETON_FAILED, ...(after ? [after] : [])] },
    { target: 'up', reenter: true, actions: [...SINGLETON_FAILED, ...(after ? [after] : [])] },
  ] as const;

/**
 * The region that invokes singleton `id` (from `src`) and supervises it: restarted at once when it fails (its `up`
 * entered again); at the last failure the policy allows (core/supervision.ts) it goes to `givenUp` (`off`: left off
 * until the listener restarts; `#listener.halted`: the listener stops), and the actions `after` run once it is recorded.
 */
export function region<
  const Id extends string,
  const Src extends string,
  Input,
  const GivenUp extends 'off' | '#listener.halted' = 'off',
>(spec: {
  id: Id;
  src: Src;
  description: string;
  input: (args: { context: ListenerContext }) => Input;
  givenUp?: GivenUp;
  after?: 'abandonAsks' | 'refuseDeviceContacts' | 'refuseSessionInput';
}) {
  const { id, src, description, input, givenUp = 'off', after } = spec;
  const on = { [`${ERROR_EVENT}${id}`]: restartOrGiveUp(givenUp, after) } as {
    [K in `xstate.error.actor.${Id}`]: ReturnType<typeof restartOrGiveUp>;
  };
  const up = { invoke: { id, systemId: id, src, input }, on };
  const off = { description: 'Given up: not restarted until the listener is.' };
  const states = (givenUp === 'off' ? { up, off } : { up }) as GivenUp extends 'off'
    ? { up: typeof up; off: typeof off }
    : { up: typeof up };
  return { description, initial: 'up' as const, states };
}

/** What supervisor `id` is started with (machines/log.ts SupervisorInput): the clock, and its predecessor's records. */
export const supervisorInput = (context: ListenerContext, id: string) => ({
  ...(context.input.now ? { now: context.input.now } : {}),
  ...(context.inherited[id] ? { failures: context.inherited[id] } : {}),
});

/** Whether this failure of the singleton the error event `type` names is the last the policy allows. */
export function givesUp(context: ListenerContext, type: string): boolean {
  const id = type.slice(ERROR_EVENT.length);
  const family = familyOf(id);
  return (
    family !== null && decideFailure(family, context.supervision[id], clockOf(context), '').decision.kind === 'give_up'
  );
}

/**
 * A child that failed does not stop its own children (xstate 5.33: an actor that throws skips that step), so the root
 * stops them, deepest first: a failed link's socket, a failed supervisor's live panes or worktree timers do not run on
 * beside the ones its restart makes. `children`: the root's; `type`: the error event.
 */
export function stopOrphans(children: Record<string, AnyActorRef | undefined>, type: string): void {
  const failed = children[type.slice(ERROR_EVENT.length)];
  if (!failed) return;
  for (const child of Object.values(childrenOf(failed))) stopOrphan(child);
}

/**
 * What the root keeps of a singleton's failure: its record, the records of its children a failed supervisor kept
 * (from its last snapshot, the one before the step it failed in), and when it is given up the reason the listener
 * stops (relay, inventory).
 */
export function singletonRecord(
  context: ListenerContext,
  event: { type: string; error?: unknown },
  children: Record<string, AnyActorRef | undefined>,
): Partial<ListenerContext> {
  const { id, record, halts } = singletonFailure(context, event);
  const failed = children[id]?.getSnapshot() as { context?: { failures?: unknown } } | undefined;
  const failures = SUPERVISORS.has(id)
    ? (failed?.context?.failures as Record<string, Failures> | undefined)
    : undefined;
  return {
    supervision: { ...context.supervision, [id]: record },
    ...(failures ? { inherited: { ...context.inherited, [id]: failures } } : {}),
    // a link that failed never said it went offline: nothing goes to the relay until the new one is up
    ...(id === 'relay' ? { online: false } : {}),
    ...(halts ? { stopReason: `${id} failed ${record.at.length} times in ten minutes` } : {}),
  };
}
