/**
 * The root of the listener daemon. It invokes the relay link, the inventory and the supervisors of the sessions,
 * devices, schedules, worktrees, live panes and asks, each in a region that restarts it when it fails. It keeps
 * delivery: pushes, pane requests and opened contacts go where core/sessions/routing.ts decides; input waits for a
 * tmux reading newer than itself; what it acted on is recorded so nothing is typed twice (DESIGN.md, "Delivery
 * semantics"); what a child was handed and has not answered is kept until it answers or is refused.
 */
import { type AnyActorRef, assign, enqueueActions, fromCallback, raise, sendTo, setup } from 'xstate';
import type { ApprovalPrompt } from '../core/agents/approvals.js';
import { type ContactOutcome, emptyPins, type PinsFile } from '../core/devices/devices.js';
import type { LeaseLeft } from '../core/panes/watchLeases.js';
import type { PhoneRequest } from '../core/protocol/bodies.js';
import type { ClientFrame, RelayFrame, SessionRecord, WirePush } from '../core/protocol/index.js';
import { decideFirstPrompt, type FirstPrompt, RETRIED_REFUSALS } from '../core/sessions/firstPrompt.js';
import { describeSessions, forRelay } from '../core/sessions/inventory.js';
import type { Ledger } from '../core/sessions/ledger.js';
import { acknowledge, recordOutcome, recoverLedger, unackedOutcomes } from '../core/sessions/ledger.js';
import {
  type Contact,
  type ContactRef,
  decideOpenedKeys,
  decideOpenedPush,
  decidePaneRequest,
  decidePush,
  keysResultFrame,
  paneStatusFrame,
  pushResultFrame,
  releaseHeld,
  STOPPED_WHILE_TYPING,
} from '../core/sessions/routing.js';
import { decideFailure, describeFailure, type Failures, familyOf, STRATEGY } from '../core/supervision.js';
import { type AsksEvent, type AsksToListener, asksMachine } from './asks.js';
import { type DevicesEvent, type DevicesToListener, deviceActorId, devicesMachine } from './devices.js';
import { inventoryMachine, type ReadingCause } from './inventory.js';
import { clockOf, type LogParams, logLine } from './log.js';
import { relayLinkMachine } from './relayLink.js';
import type { ScheduleKeys } from './schedule.js';
import { type SchedulerEvent, schedulerMachine } from './scheduler.js';
import type { KeysRef, PhoneRef, SessionKeys, SessionKeysResult, SessionResult } from './session.js';
import { isPhoneRef } from './session.js';
import {
  actorDown,
  type HeldInput,
  type SessionsEvent,
  type SessionsToListener,
  sessionId,
  sessionShown,
  sessionsMachine,
} from './sessions.js';
import { type WatchesEvent, watchesMachine } from './watches.js';
import { type WorktreesEvent, worktreesMachine } from './worktrees.js';

export interface ListenerInput {
  hookId: string;
  wsUrl: string;
  apiKey: string;
  version: string;
  ledger: Ledger;
  /** Pushes older than this (relay clock) are reported expired, never typed (the relay uses the same window). */
  replayWindowMs: number;
  /** This computer's host name (tmux's default pane title). */
  hostname?: string;
  random?: () => number;
  /** The clock failures are timed by (core/supervision.ts); Date.now when absent. */
  now?: () => number;
  /** ~/.svc/devices.json as it was at start: a `device.<id>` actor for each pinned device. */
  pins?: PinsFile;
  /** devices.json exists but cannot be read: fail closed (plaintext refused) until it can. */
  pinsUnreadable?: boolean;
  /** Live panes that were streaming when the listener last stopped, still inside their leases (~/.svc/watches.json). */
  resumeWatches?: LeaseLeft[];
}

/** `ask`: the number of the REFRESH sent for it; a snapshot that answers it began after the input arrived. */
type Held = HeldInput & { ask: number };

export interface ListenerContext {
  hookId: string;
  input: ListenerInput;
  ledger: Ledger;
  /** Sessions tmux reported last, by name; each has a `session.<name>` actor under `sessions`. */
  sessions: Record<string, SessionRecord>;
  /** Input waiting for an inventory reading taken after it arrived (see `Held`). */
  held: Held[];
  /** REFRESH requests sent to the inventory. */
  asked: number;
  online: boolean;
  /** Starts from the input; the relay's own window replaces it once the link is up. */
  replayWindowMs: number;
  stopReason: string | null;
  /** The pinned devices as last read from ~/.svc/devices.json or decided by a device actor. */
  pins: PinsFile;
  pinsUnreadable: boolean;
  /** Live panes to start again once connected (core/panes/watchLeases.ts), for the watches; emptied then. */
  resume: LeaseLeft[];
  /** Past sessions (core/sessions/control.ts), as records for the report; the IO side keeps the book. */
  past: SessionRecord[];
  /** The schedules, sealed for the phones (SchedulesBody), reported with the inventory; null: none. */
  schedules: Record<string, unknown> | null;
  /** First prompts of sessions the phone started, by session, until typed (core/sessions/firstPrompt.ts). */
  firstPrompts: Record<string, FirstPrompt>;
  /** How many first prompts were kept: their ids are the negatives of it. */
  launched: number;
  /** The root's own children that failed, by id (core/supervision.ts): when, why, whether given up. */
  supervision: Record<string, Failures>;
  /**
   * Input handed to a session or device actor and not answered yet, by actor id. A child that fails mid-step keeps
   * the snapshot from before the event it failed on, so what it owed is known here, not from it.
   */
  owed: Record<string, Owed[]>;
  /** The records a failed supervisor kept of its children's failures, by its id: for the one started in its place. */
  inherited: Record<string, Record<string, Failures>>;
}

/** Something a child was given and owes an answer for (see `owed`). */
export type Owed =
  | { kind: 'push'; session: string; id: number }
  | { kind: 'keys'; session: string; ref: KeysRef }
  | { kind: 'contact'; deviceId: string; ref: ContactRef };

export type ListenerEvent =
  | { type: 'LINK.FRAME'; frame: RelayFrame; receivedAt: number }
  | { type: 'LINK.ONLINE'; replayWindowMs?: number | null }
  | { type: 'LINK.OFFLINE'; reason: string }
  | { type: 'LINK.STOPPED'; reason: string }
  | {
      type: 'INVENTORY.SNAPSHOT';
      sessions: SessionRecord[];
      answers: number;
      approvalOnScreen: string[];
      approvals?: Record<string, ApprovalPrompt>;
      unreadable?: string[];
      /** Why the reading was taken (machines/inventory.ts); absent: a tick. */
      cause?: ReadingCause;
      /** When it was read (epoch ms). */
      takenAt?: number;
    }
  | { type: 'HOLD'; held: HeldInput }
  /** The past sessions changed (actors/sessions/pastSessions.ts): reported with the live ones. */
  | { type: 'PAST.CHANGED'; past: SessionRecord[] }
  /** A phone made or removed a schedule: the scheduler reads the file now, not at the next tick. */
  | { type: 'SCHEDULES.CHANGED' }
  /** The schedules changed and were sealed again (actors/schedules/runs.ts); null: there are none. */
  | { type: 'SCHEDULES.SEALED'; envelope: Record<string, unknown> | null }
  /** A session's approval card, sealed (actors/mcp/asks.ts card): for its session actor. */
  | { type: 'APPROVAL.SEALED'; session: string; fingerprint: string; envelope: Record<string, unknown> }
  | { type: 'INVENTORY.REPORT'; sessions: SessionRecord[]; seq: number; reason: string }
  | SessionResult
  | SessionKeysResult
  /** A scheduled run's prompt or its end at max-runtime (machines/schedule.ts), typed through its session actor. */
  | ScheduleKeys
  /** The first prompt of a session the phone started, its agent now idle (actors/sessions/newSession.ts). */
  | { type: 'LAUNCH.PROMPT'; session: string; agent: string; text: string; startedAt: number }
  | { type: 'FIRST_PROMPT.EXPIRE'; session: string; id: number }
  /** A child failed (xstate sends this for a child's uncaught error; core/supervision.ts says what is done). */
  | { type: `xstate.error.actor.${string}`; error: unknown }
  /** What a device opened (machines/devices.ts), what a session did (machines/sessions.ts). */
  | DevicesToListener
  | SessionsToListener
  /** A session's or device's actor is down (`session.<name>`, `device.<id>`): what it owes is refused. */
  | { type: 'CHILD.DOWN'; id: string }
  /** A whole family is down (`session`, `device`): its supervisor failed or was given up. */
  | { type: 'FAMILY.DOWN'; family: 'session' | 'device' }
  /** ~/.svc/devices.json changed on disk (`svc devices verify` / `forget`). */
  | { type: 'PINS.LOADED'; pins: PinsFile; unreadable?: boolean }
  /** An ask started, left by the listener before, or cancelled by its asker: for the asks (machines/asks.ts). */
  | Extract<AsksEvent, { type: 'ASK.START' | 'ASK.LEFTOVER' | 'ASK.CANCEL' }>
  /** A frame a supervisor sends to the relay through the link (machines/asks.ts), or an ask's REMOTE. */
  | AsksToListener
  /** `svc_notify` or a listener event, sealed for the phones (actors/mcp/asks.ts). */
  | { type: 'NOTIFY.SEND'; frame: Extract<ClientFrame, { type: 'notify.new' }> }
  /**
   * Sticky REMOTE (spec 4.13, docs/agents.md): `svc remote-hook` saw the phone's prompt (`hook`) or one typed at the
   * keyboard (`keyboard`), or an svc_ask answer said `svcState: REMOTE` (`ask`).
   */
  | { type: 'SESSION.REMOTE'; session: string; on: boolean; why: 'hook' | 'keyboard' | 'ask' }
  | { type: 'STOP' };

/** A push for its session (a sealed one already opened: `body` is its text). */
function heldPush(push: WirePush, receivedAt: number, hookId: string): HeldInput {
  const addressedToThisComputer = push.targetComputer === hookId;
  const event = { type: 'PUSH' as const, push: { id: push.id, body: push.body, addressedToThisComputer, receivedAt } };
  return { kind: 'push', session: push.agentSessionName, id: push.id, event };
}

/** The answer for held input whose session the fresh reading does not show. */
function notFound(h: HeldInput): SessionResult | SessionKeysResult {
  const refused = { session: h.session, state: 'refused', code: 'session_not_found' } as const;
  return h.kind === 'push'
    ? { type: 'SESSION.RESULT', id: h.id, ...refused }
    : { type: 'SESSION.KEYS_RESULT', ref: h.event.keys.ref, ...refused };
}

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
const owe = (owed: Record<string, Owed[]>, id: string, item: Owed) => ({ ...owed, [id]: [...(owed[id] ?? []), item] });
const sameRef = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
/** `owed` without child `id`'s first item matching `paid` (unchanged when none does). */
function paid(owed: Record<string, Owed[]>, id: string, answered: (o: Owed) => boolean) {
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

const ERROR_EVENT = 'xstate.error.actor.';
/** The children the root invokes once and supervises in their own regions; the rest are their supervisors'. */
/** The singletons that supervise a family of children (machines/log.ts SupervisorInput). */
export const SUPERVISORS = new Set(['sessions', 'devices', 'scheduler', 'asks', 'worktrees', 'watches']);
const SINGLETONS = new Set(['relay', 'inventory', 'pinsWatch', ...SUPERVISORS]);

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

/** An actor's children as its last snapshot lists them. */
const childrenOf = (ref: AnyActorRef | undefined) =>
  (ref?.getSnapshot() as { children?: Record<string, AnyActorRef> } | undefined)?.children ?? {};
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

/** Answers for what children owed (see `owed`): each refused, never typed or opened again. */
function refuseOwed(
  enqueue: {
    raise(e: SessionResult | SessionKeysResult): void;
    sendTo(to: 'relay', e: { type: 'SEND'; frame: ClientFrame }): void;
  },
  items: Owed[],
): void {
  for (const answer of items.flatMap(owedRefusal)) {
    if (answer.type === 'SESSION.RESULT' || answer.type === 'SESSION.KEYS_RESULT') enqueue.raise(answer);
    else enqueue.sendTo('relay', toRelay(answer));
  }
}
/** What supervisor `id` is started with (machines/log.ts SupervisorInput): the clock, and its predecessor's records. */
const supervisorInput = (context: ListenerContext, id: string) => ({
  ...(context.input.now ? { now: context.input.now } : {}),
  ...(context.inherited[id] ? { failures: context.inherited[id] } : {}),
});
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
/** The devices that have an actor, as the devices' supervisor lists them (none while it is down). */
const devicesNow = (system: { get(id: string): AnyActorRef | undefined }): string[] =>
  (system.get('devices')?.getSnapshot().context as { devices?: string[] } | undefined)?.devices ?? [];
/** Whether `id` was claimed and never finished in the ledger the listener started from. */
const wasClaimed = (ledger: Ledger, id: number) => ledger.entries[String(id)]?.state === 'claimed';
const toRelay = (frame: ClientFrame) => ({ type: 'SEND' as const, frame });

export const listenerMachine = setup({
  types: {
    context: {} as ListenerContext,
    input: {} as ListenerInput,
    events: {} as ListenerEvent,
  },
  actors: {
    relayLink: relayLinkMachine,
    inventory: inventoryMachine,
    sessions: sessionsMachine,
    worktrees: worktreesMachine,
    devices: devicesMachine,
    watches: watchesMachine,
    asks: asksMachine,
    scheduler: schedulerMachine,
    /** Reports ~/.svc/devices.json whenever it changes on disk (actors/devices/pins.ts). */
    pinsWatch: fromCallback(() => () => {}),
  },
  delays: {
    /** How long a first prompt from the phone waits for its agent to read idle (an agent updating itself is slow). */
    firstPromptWait: 180_000,
  },
  guards: {
    isOnline: ({ context }) => context.online,
    /** The asks' supervisor runs (it was not given up). */
    asksUp: ({ context }) => !context.supervision.asks?.givenUp,
    /** The sessions' supervisor runs (it was not given up). */
    sessionsUp: ({ context }) => !context.supervision.sessions?.givenUp,
    /** The devices' supervisor runs (it was not given up). */
    devicesUp: ({ context }) => !context.supervision.devices?.givenUp,
    /** The live panes' supervisor runs (it was not given up). */
    watchesUp: ({ context }) => !context.supervision.watches?.givenUp,
    /** A singleton's failure is the last the policy allows (core/supervision.ts): it is not restarted. */
    givesUp: ({ context, event }) => {
      const id = event.type.slice(ERROR_EVENT.length);
      const family = familyOf(id);
      return (
        family !== null &&
        decideFailure(family, context.supervision[id], clockOf(context), '').decision.kind === 'give_up'
      );
    },
  },
  actions: {
    log: (_, _params: LogParams) => {},
    /** Write the ledger to disk before anything is typed (actors/sessions/ledgerFile.ts). */
    persistLedger: (_, _params: { ledger: Ledger }) => {},
    /**
     * The asks' supervisor failed or was given up: every ask still waiting ends `failed` for its asker and closed
     * for the phones (actors/mcp/asks.ts), as when one ask's actor fails.
     */
    abandonAsks: () => {},
    /** The devices' supervisor failed or was given up: what its devices held is refused, never opened or typed. */
    refuseDeviceContacts: raise({ type: 'FAMILY.DOWN', family: 'device' }),
    /** The sessions' supervisor failed or was given up: what its sessions held is refused, never typed again. */
    refuseSessionInput: raise({ type: 'FAMILY.DOWN', family: 'session' }),
    /**
     * Child `id` failed: logged with its error's stack and the last event it took (actors/listener.ts), and what the
     * root does about it (`what`).
     */
    reportFailure: (_, _params: { id: string; error: unknown; what: string }) => {},
    /** The relay took notification `id`: its `svc_notify` returns. */
    notifyAcked: (_, _params: { id: string; delivered: boolean; reason?: string }) => {},
    /**
     * What a phone asks of the listener's IO instead of typing, for the device of `ref` (actors/sessions/
     * phoneRequests.ts): the answer comes back as SESSION.KEYS_RESULT or sealed for that device. `live`: the fresh
     * reading shows a running session of that name.
     */
    phoneRequest: (_, _params: { session: string; request: PhoneRequest; ref: PhoneRef; live: boolean }) => {},
    /**
     * A child that failed does not stop its own children (xstate 5.33: an actor that throws skips that step), so the
     * root stops them, deepest first: a failed link's socket, a failed supervisor's live panes or worktree timers do not
     * run on beside the ones its restart makes.
     */
    stopOrphans: ({ self, event }) => {
      const failed = self.getSnapshot().children[event.type.slice(ERROR_EVENT.length)];
      if (!failed) return;
      for (const child of Object.values(childrenOf(failed))) stopOrphan(child);
    },
    /**
     * A singleton (relay, inventory, pinsWatch, scheduler, worktrees, watches, asks) failed: its record, and when it
     * is given up the reason the listener stops (relay, inventory). `stopOrphans` and `reportFailure` run before it,
     * the report with the record before this failure.
     */
    recordSingletonFailure: assign(({ context, event, self }) => {
      const { id, record, halts } = singletonFailure(context, event);
      // a supervisor's records of its children, from its last snapshot (the one before the step it failed in)
      const failed = self.getSnapshot().children[id]?.getSnapshot() as { context?: { failures?: unknown } } | undefined;
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
    }),
  },
}).createMachine({
  id: 'listener',
  context: ({ input }) => ({
    hookId: input.hookId,
    input,
    // Claims the previous listener never finished are outcomes now (inject_failed), to be reported first.
    ledger: recoverLedger(input.ledger).ledger,
    sessions: {},
    held: [],
    asked: 0,
    online: false,
    replayWindowMs: input.replayWindowMs,
    stopReason: null,
    pins: input.pins ?? emptyPins(),
    pinsUnreadable: input.pinsUnreadable ?? false,
    resume: input.resumeWatches ?? [],
    past: [],
    schedules: null,
    firstPrompts: {},
    launched: 0,
    supervision: {},
    owed: {},
    inherited: {},
  }),
  initial: 'running',
  states: {
    running: {
      entry: enqueueActions(({ context, enqueue }) => {
        const { recovered } = recoverLedger(context.input.ledger);
        if (recovered.length === 0) return;
        enqueue({ type: 'persistLedger', params: { ledger: context.ledger } });
        for (const id of recovered) {
          enqueue(
            logLine(
              'warn',
              `push ${id}: the listener before this one stopped while handling it; reported inject_failed, not typed again`,
            ),
          );
        }
      }),
      type: 'parallel',
      states: {
        relay: {
          description:
            'Supervises the relay link: restarted at once when it fails (the root sends to it unchecked); the listener stops (exit 1) at the fifth failure in ten minutes.',
          initial: 'up',
          states: {
            up: {
              invoke: {
                id: 'relay',
                systemId: 'relay',
                src: 'relayLink',
                input: ({ context }) => ({
                  wsUrl: context.input.wsUrl,
                  apiKey: context.input.apiKey,
                  hookId: context.input.hookId,
                  version: context.input.version,
                  lastPushId: context.ledger.lastPushId,
                  // Outcomes the relay never acknowledged (lost with a socket, a crash, a rate limit): sent first.
                  unacked: unackedOutcomes(context.ledger).map(({ id, outcome }) =>
                    pushResultFrame(
                      id,
                      outcome.state,
                      outcome.code,
                      wasClaimed(context.input.ledger, id) ? STOPPED_WHILE_TYPING : undefined,
                    ),
                  ),
                  random: context.input.random,
                }),
              },
              on: {
                'xstate.error.actor.relay': restartOrGiveUp('#listener.halted'),
              },
            },
          },
        },
        inventory: {
          description:
            'Supervises the inventory: restarted at once when it fails; the listener stops (exit 1) at the fifth failure in ten minutes.',
          initial: 'up',
          states: {
            up: {
              invoke: {
                id: 'inventory',
                systemId: 'inventory',
                src: 'inventory',
                input: ({ context }) => ({ hostname: context.input.hostname ?? '', asked: context.asked }),
              },
              on: {
                'xstate.error.actor.inventory': restartOrGiveUp('#listener.halted'),
              },
            },
          },
        },
        pins: {
          description:
            'Supervises the watch on ~/.svc/devices.json: restarted at once when it fails; left off at the fifth failure in ten minutes (svc verify says so).',
          initial: 'up',
          states: {
            up: {
              invoke: { id: 'pinsWatch', systemId: 'pinsWatch', src: 'pinsWatch' },
              on: {
                'xstate.error.actor.pinsWatch': restartOrGiveUp('off'),
              },
            },
            off: { description: 'Given up: not restarted until the listener is.' },
          },
        },
        sessions: {
          description:
            "Supervises the tmux sessions' actors (machines/sessions.ts): restarted at once when it fails (an actor per session again at the next reading; what its sessions held is refused, never typed again); left off at the fifth failure in ten minutes (input for every session is then refused, svc verify says so).",
          initial: 'up',
          states: {
            up: {
              invoke: {
                id: 'sessions',
                systemId: 'sessions',
                src: 'sessions',
                input: ({ context }) => supervisorInput(context, 'sessions'),
              },
              on: {
                'xstate.error.actor.sessions': restartOrGiveUp('off', 'refuseSessionInput'),
              },
            },
            off: { description: 'Given up: not restarted until the listener is.' },
          },
        },
        devices: {
          description:
            'Supervises the devices (machines/devices.ts): restarted at once when it fails (an actor per pinned device again; what its devices held is refused); left off at the fifth failure in ten minutes (every sealed contact is then refused, svc verify says so).',
          initial: 'up',
          states: {
            up: {
              invoke: {
                id: 'devices',
                systemId: 'devices',
                src: 'devices',
                input: ({ context }) => ({ ...supervisorInput(context, 'devices'), pins: context.pins }),
              },
              on: {
                'xstate.error.actor.devices': restartOrGiveUp('off', 'refuseDeviceContacts'),
              },
            },
            off: { description: 'Given up: not restarted until the listener is.' },
          },
        },
        schedules: {
          description:
            'Supervises the scheduler: rebuilt from the schedules file at once when it fails; left off at the fifth failure in ten minutes (svc verify says so).',
          initial: 'up',
          states: {
            up: {
              invoke: {
                id: 'scheduler',
                systemId: 'scheduler',
                src: 'scheduler',
                input: ({ context }) => supervisorInput(context, 'scheduler'),
              },
              on: {
                'xstate.error.actor.scheduler': restartOrGiveUp('off'),
              },
            },
            off: { description: 'Given up: not restarted until the listener is.' },
          },
        },
        worktrees: {
          description:
            'Supervises the worktrees made by --wt (machines/worktrees.ts): restarted at once when it fails (it scans git again); left off at the fifth failure in ten minutes (svc verify says so).',
          initial: 'up',
          states: {
            up: {
              invoke: {
                id: 'worktrees',
                systemId: 'worktrees',
                src: 'worktrees',
                input: ({ context }) => ({ ...supervisorInput(context, 'worktrees'), sessions: context.sessions }),
              },
              on: {
                'xstate.error.actor.worktrees': restartOrGiveUp('off'),
              },
            },
            off: { description: 'Given up: not restarted until the listener is.' },
          },
        },
        watches: {
          description:
            "Supervises the live panes (machines/watches.ts): restarted at once when it fails (the panes it streamed stop; a phone's next renewal starts each again); left off at the fifth failure in ten minutes (a phone's pane.watch is then refused, svc verify says so).",
          initial: 'up',
          states: {
            up: {
              invoke: {
                id: 'watches',
                systemId: 'watches',
                src: 'watches',
                input: ({ context }) => ({
                  ...supervisorInput(context, 'watches'),
                  pins: context.pins,
                  sessions: context.sessions,
                  // the streams of the listener before this one, until the link is first up
                  resume: context.online ? [] : context.resume,
                }),
              },
              on: {
                'xstate.error.actor.watches': restartOrGiveUp('off'),
              },
            },
            off: { description: 'Given up: not restarted until the listener is.' },
          },
        },
        asks: {
          description:
            'Supervises the asks (machines/asks.ts): restarted at once when it fails, the asks it held ended failed for their askers; left off at the fifth failure in ten minutes (every ask then ends failed, svc verify says so).',
          initial: 'up',
          states: {
            up: {
              invoke: {
                id: 'asks',
                systemId: 'asks',
                src: 'asks',
                input: ({ context }) => supervisorInput(context, 'asks'),
              },
              on: {
                'xstate.error.actor.asks': restartOrGiveUp('off', 'abandonAsks'),
              },
            },
            off: { description: 'Given up: not restarted until the listener is.' },
          },
        },
      },
      on: {
        'LINK.ONLINE': {
          actions: [
            assign({
              online: true,
              replayWindowMs: ({ context, event }) => event.replayWindowMs ?? context.replayWindowMs,
            }),
            sendTo('inventory', { type: 'FORCE_REPORT' }),
            // Streams of the listener before this one, within their leases: started again once frames can go.
            enqueueActions(({ check, enqueue }) => {
              if (check('watchesUp')) enqueue.sendTo('watches', { type: 'RESUME' } satisfies WatchesEvent);
              enqueue.assign({ resume: [] });
            }),
            // A relay that restarted forgot the asks (it keeps them in memory): they are announced again.
            enqueueActions(({ check, enqueue }) => {
              if (check('asksUp')) enqueue.sendTo('asks', { type: 'ASKS.ANNOUNCE' } satisfies AsksEvent);
            }),
          ],
        },
        'LINK.OFFLINE': { actions: assign({ online: false }) },
        'LINK.STOPPED': { target: 'halted', actions: assign({ stopReason: ({ event }) => event.reason }) },
        'LINK.FRAME': {
          actions: enqueueActions(({ context, event, enqueue, check, system }) => {
            const { frame, receivedAt } = event;
            // a sealed contact goes to the devices' supervisor, and is owed an answer until its device gives one
            const toDevice = ({ deviceId, contact }: { deviceId: string; contact: Contact }) => {
              const item = { kind: 'contact', deviceId, ref: contact.ref } as const;
              if (!check('devicesUp')) return refuseOwed(enqueue, [item]);
              const pin = context.pins.devices[deviceId];
              enqueue.sendTo('devices', { type: 'CONTACT', deviceId, pin, contact } satisfies DevicesEvent);
              enqueue.assign({ owed: owe(context.owed, deviceActorId(deviceId), item) });
            };
            const devices = devicesNow(system);
            switch (frame.type) {
              case 'sessions.result':
                enqueue(
                  frame.ok
                    ? logLine('info', `server persisted listener.sessions (seq ${frame.seq})`)
                    : logLine('warn', `server rejected listener.sessions: ${frame.reason ?? 'no reason given'}`),
                );
                enqueue.sendTo('inventory', { type: frame.ok ? 'PERSISTED' : 'REJECTED' });
                return;
              case 'error':
                enqueue(logLine('warn', `relay error ${frame.code}: ${frame.message}`));
                return;
              case 'ask.answer': {
                const { id, deviceId, connection, envelope } = frame;
                if (!context.supervision.asks?.givenUp) {
                  enqueue.sendTo('asks', {
                    type: 'ASK.ANSWER',
                    id,
                    deviceId,
                    connection,
                    envelope,
                  } satisfies AsksEvent);
                  return;
                }
                // the asks were given up: every ask ended failed, so this answer is late
                const code = 'ask_expired';
                enqueue.sendTo(
                  'relay',
                  toRelay({ type: 'ask.result', id, deviceId, connection, state: 'refused', code }),
                );
                enqueue(
                  logLine('warn', `answer to ask ${id} from ${deviceId ?? '-'}: refused ${code} (asks given up)`),
                );
                return;
              }
              case 'notify.ack':
                enqueue({
                  type: 'notifyAcked',
                  params: {
                    id: frame.id,
                    delivered: frame.delivered ?? true,
                    ...(frame.reason ? { reason: frame.reason } : {}),
                  },
                });
                return;
              case 'push.ack': {
                // The relay has this outcome: it is not sent again, after a restart either.
                const ledger = acknowledge(context.ledger, frame.id);
                if (ledger === context.ledger) return;
                enqueue.assign({ ledger });
                enqueue({ type: 'persistLedger', params: { ledger } });
                return;
              }
              case 'pane.stop':
                // the live panes' supervisor stops it (machines/watches.ts)
                if (!context.supervision.watches?.givenUp)
                  enqueue.sendTo('watches', { type: 'PANE.STOP', frame } satisfies WatchesEvent);
                return;
              case 'pane.watch':
              case 'pane.keys': {
                // the live panes are the watches' business: their device opens the request first
                const d = decidePaneRequest(frame, receivedAt, { devices, watches: {} });
                if (d.kind === 'contact') toDevice(d);
                if (d.kind === 'refuse') {
                  const answer = frame.type === 'pane.watch' ? paneStatusFrame : keysResultFrame;
                  enqueue.sendTo('relay', toRelay(answer(frame, 'refused', d.code)));
                }
                return;
              }
              case 'push.new': {
                const push = frame.push;
                const d = decidePush(push, receivedAt, { ...context, devices });
                const settle = (outcome: Ledger['entries'][string]) => {
                  const ledger = recordOutcome(context.ledger, push.id, outcome);
                  enqueue.assign({ ledger });
                  enqueue({ type: 'persistLedger', params: { ledger } });
                  enqueue.sendTo('relay', { type: 'ACTED', lastPushId: ledger.lastPushId });
                };
                const answer = (state: 'injected' | 'refused' | 'expired', code?: string, message?: string) =>
                  enqueue.sendTo('relay', toRelay(pushResultFrame(push.id, state, code, message)));
                switch (d.kind) {
                  case 'ignore':
                    return enqueue(logLine('debug', `push ${push.id}: type ${push.type}, ignored`));
                  case 'resend':
                    return answer(d.state, d.code, d.message);
                  case 'expire':
                    settle({ state: 'expired' });
                    answer('expired');
                    return enqueue(
                      logLine('info', `push ${push.id}: expired (${Math.round(push.ageMs / 1000)} s old), not typed`),
                    );
                  case 'refuse':
                    settle({ state: 'refused', code: d.code });
                    answer('refused', d.code);
                    return enqueue(logLine('warn', `push ${push.id}: refused ${d.code}`));
                }
                // Claimed before it is opened or typed: whatever happens next, it is never typed twice.
                settle({ state: 'claimed' });
                if (d.kind === 'contact') toDevice(d);
                else if (d.kind === 'hold')
                  enqueue.raise({ type: 'HOLD', held: heldPush(push, receivedAt, context.hookId) });
                else {
                  const { id, agentSessionName: session } = push;
                  enqueue.raise({ type: 'SESSION.RESULT', session, id, state: 'refused', code: d.code });
                }
              }
            }
          }),
        },
        HOLD: {
          description:
            'Input for a session waits for a tmux reading newer than itself; the inventory is asked for one.',
          actions: [
            assign(({ context, event }) => ({
              held: [...context.held, { ...event.held, ask: context.asked + 1 }],
              asked: context.asked + 1,
            })),
            sendTo('inventory', { type: 'REFRESH' }),
          ],
        },
        'INVENTORY.SNAPSHOT': {
          actions: [
            enqueueActions(({ context, event, enqueue, check }) => {
              const next: Record<string, SessionRecord> = {};
              for (const record of event.sessions) next[record.name] = record;
              // the session actors follow the reading (machines/sessions.ts); an ended session's answers come from it
              if (check('sessionsUp')) {
                const { approvalOnScreen, approvals, unreadable } = event;
                const screens = {
                  approvalOnScreen,
                  ...(approvals ? { approvals } : {}),
                  ...(unreadable ? { unreadable } : {}),
                };
                enqueue.sendTo('sessions', { type: 'READING', sessions: next, ...screens } satisfies SessionsEvent);
              }
              enqueue.assign({ sessions: next });
              // the phone's first prompts: typed once their own session reads idle (core/sessions/firstPrompt.ts)
              const prompts = { ...context.firstPrompts };
              for (const [session, prompt] of Object.entries(context.firstPrompts)) {
                const d = decideFirstPrompt(prompt, next[session]);
                if (d === 'gone') {
                  delete prompts[session];
                  enqueue(logLine('warn', `${session}: first prompt not typed: the session ended before it read idle`));
                } else if (d === 'type') {
                  prompts[session] = { ...prompt, seen: next[session]!.createdAt, typing: true };
                  const receivedAt = event.takenAt ?? 0;
                  const push = { id: prompt.id, body: prompt.text, addressedToThisComputer: true, receivedAt };
                  enqueue.raise({
                    type: 'HOLD',
                    held: { kind: 'push', session, id: prompt.id, event: { type: 'PUSH', push } },
                  });
                } else if (next[session] && prompt.seen === null)
                  prompts[session] = { ...prompt, seen: next[session].createdAt };
              }
              if (Object.keys(context.firstPrompts).length > 0) enqueue.assign({ firstPrompts: prompts });
              // the supervisors that follow the sessions: live panes of an ended session stop, worktrees are freed
              if (!context.supervision.watches?.givenUp)
                enqueue.sendTo('watches', { type: 'SESSIONS', sessions: next } satisfies WatchesEvent);
              if (!context.supervision.worktrees?.givenUp)
                enqueue.sendTo('worktrees', { type: 'SESSIONS', sessions: next } satisfies WorktreesEvent);
              // schedules are decided at the inventory's 5 s ticks, not at every push's or screen change's reading
              if ((event.cause ?? 'tick') === 'tick' && !context.supervision.scheduler?.givenUp)
                enqueue.sendTo('scheduler', { type: 'TICK', sessions: event.sessions } satisfies SchedulerEvent);
            }),
            enqueueActions(({ context, event, enqueue, check }) => {
              if (context.held.length === 0) return;
              // A reading that began before the input arrived may predate what it is about; the inventory reads
              // again at once (it was asked to), so such input waits for that reading.
              const { waiting, released } = releaseHeld(context.held, event.answers, context.sessions);
              let owed = context.owed;
              for (const { held, found } of released) {
                // what a phone asks of the IO side instead of typing (resume, forget, schedules, files, a new
                // session): answered there; a schedule's key input carries none
                const request = held.kind === 'keys' ? held.event.keys.request : undefined;
                const phone = held.kind === 'keys' && isPhoneRef(held.event.keys.ref) ? held.event.keys.ref : null;
                if (phone && request) {
                  enqueue({
                    type: 'phoneRequest',
                    params: { session: held.session, request, ref: phone, live: found },
                  });
                } else if (found && !check('sessionsUp'))
                  // the sessions' supervisor was given up: nothing to send to
                  enqueue.raise(actorDown(held));
                else if (found) {
                  // after the reading that released it: its actor is there, or it is refused as down
                  enqueue.sendTo('sessions', { type: 'INPUT', held } satisfies SessionsEvent);
                  const item: Owed =
                    held.kind === 'push'
                      ? { kind: 'push', session: held.session, id: held.id }
                      : { kind: 'keys', session: held.session, ref: held.event.keys.ref };
                  owed = owe(owed, sessionId(held.session), item);
                } else enqueue.raise(notFound(held));
              }
              enqueue.assign({ held: waiting, owed });
            }),
          ],
        },
        'INVENTORY.REPORT': {
          // Offline, nothing can be sent; LINK.ONLINE asks the inventory for a fresh report anyway.
          guard: 'isOnline',
          actions: [
            sendTo('relay', ({ context, event, system }) => ({
              type: 'SEND',
              frame: {
                type: 'listener.sessions',
                seq: event.seq,
                // the session actors know which sessions are in sticky REMOTE, and the cards of their prompts
                sessions: [
                  ...event.sessions.map((r) => {
                    const { remote, card } = sessionShown(childrenOf(system.get('sessions')), r.name);
                    const approval = card?.envelope;
                    return forRelay({ ...r, ...(remote ? { remote: true } : {}), ...(approval ? { approval } : {}) });
                  }),
                  // sessions that ended, or were there before the computer restarted: offered to resume
                  ...context.past.filter((p) => !event.sessions.some((r) => r.name === p.name)).map(forRelay),
                ],
                ...(context.schedules ? { schedules: context.schedules } : {}),
              },
            })),
            {
              type: 'log',
              params: ({ event }) => ({
                level: 'info',
                message: `reported ${event.sessions.length} session(s): ${describeSessions(event.sessions) || '-'}`,
              }),
            },
          ],
        },
        'CHILD.DOWN': {
          description:
            "A session's or device's actor failed or was given up (its supervisor says so): what it was handed and did not answer is refused, never typed or opened again.",
          actions: enqueueActions(({ context, event, enqueue }) => {
            const { refused, kept } = splitOwed(context.owed, (id) => id === event.id);
            refuseOwed(enqueue, refused);
            enqueue.assign({ owed: kept });
          }),
        },
        'FAMILY.DOWN': {
          description:
            'The supervisor of the sessions or of the devices failed or was given up: what all of them held is refused.',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const { refused, kept } = splitOwed(context.owed, (id) => id.startsWith(`${event.family}.`));
            refuseOwed(enqueue, refused);
            enqueue.assign({ owed: kept });
          }),
        },
        'DEVICE.RESULT': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const { ref, outcome, deviceId } = event;
            const answered = (o: Owed) => o.kind === 'contact' && sameRef(o.ref, ref);
            enqueue.assign({ owed: paid(context.owed, deviceActorId(deviceId), answered) });
            const devices = { ...context.pins.devices };
            if (event.pin) devices[deviceId] = event.pin;
            else delete devices[deviceId];
            enqueue.assign({ pins: { version: 1, devices } });
            const watchesUp = !context.supervision.watches?.givenUp;
            if (watchesUp)
              enqueue.sendTo('watches', { type: 'PIN', deviceId, ...(event.pin ? { pin: event.pin } : {}) });
            // refused until a person verifies: its live panes stop too
            if (watchesUp && event.trust === 'unverified')
              enqueue.sendTo('watches', { type: 'DEVICE.UNTRUSTED', deviceId } satisfies WatchesEvent);
            const why = (code: string, message?: string) =>
              enqueue(
                logLine('warn', `${ref.kind} from ${deviceId}: refused ${code}${message ? ` (${message})` : ''}`),
              );

            if (ref.kind === 'push') {
              const { push, receivedAt } = ref;
              const d = decideOpenedPush(push, outcome as ContactOutcome<'agent.command'>);
              if (d.kind === 'hold')
                enqueue.raise({ type: 'HOLD', held: heldPush(d.push, receivedAt, context.hookId) });
              else {
                const { kind: _, ...refused } = d;
                enqueue.raise({
                  type: 'SESSION.RESULT',
                  session: push.agentSessionName,
                  id: push.id,
                  state: 'refused',
                  ...refused,
                });
              }
              return;
            }
            const to = { session: ref.session, deviceId, connection: ref.connection };
            if (ref.kind === 'watch') {
              // what the opened request does is the live panes' supervisor's to decide (machines/watches.ts)
              if (watchesUp) {
                const opened = outcome as ContactOutcome<'pane.watch'>;
                enqueue.sendTo('watches', {
                  type: 'WATCH.OPENED',
                  ref,
                  deviceId,
                  outcome: opened,
                } satisfies WatchesEvent);
                return;
              }
              why('inject_failed', 'live panes are off: their supervisor failed');
              enqueue.sendTo('relay', toRelay(paneStatusFrame(to, 'refused', 'inject_failed')));
              return;
            }
            const d = decideOpenedKeys(ref, deviceId, outcome as ContactOutcome<'pane.keys'>);
            if (d.kind === 'hold') {
              enqueue.raise({
                type: 'HOLD',
                held: { kind: 'keys', session: ref.session, event: { type: 'KEYS', keys: d.keys } },
              });
              return;
            }
            why(d.code, d.message);
            enqueue.sendTo('relay', toRelay(keysResultFrame(to, 'refused', d.code, d.seq)));
          }),
        },
        'SCHEDULE.KEYS': {
          description:
            "A scheduled run's keys wait for a fresh reading like the phone's, then go to its session actor.",
          actions: enqueueActions(({ event, enqueue }) => {
            const keys: SessionKeys = {
              kind: 'keys',
              ref: { schedule: event.id },
              keys: event.keys,
              text: event.text,
              receivedAt: event.at,
              ...(event.control ? { control: event.control } : {}),
            };
            enqueue.raise({
              type: 'HOLD',
              held: { kind: 'keys', session: event.session, event: { type: 'KEYS', keys } },
            });
          }),
        },
        'LAUNCH.PROMPT': {
          description:
            'The first prompt of a session the phone started: kept until a reading shows its own session idle with its agent in front, then typed as a message from the phone (marker, submit strategy); given up when the session ends or firstPromptWait passes.',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const id = -(context.launched + 1);
            const prompt: FirstPrompt = {
              id,
              agent: event.agent,
              text: event.text,
              startedAt: event.startedAt,
              seen: null,
              typing: false,
            };
            enqueue.assign({
              launched: context.launched + 1,
              firstPrompts: { ...context.firstPrompts, [event.session]: prompt },
            });
            enqueue.raise({ type: 'FIRST_PROMPT.EXPIRE', session: event.session, id }, { delay: 'firstPromptWait' });
          }),
        },
        'FIRST_PROMPT.EXPIRE': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const prompt = context.firstPrompts[event.session];
            if (prompt?.id !== event.id) return;
            const { [event.session]: _gone, ...rest } = context.firstPrompts;
            // being typed now: its result says how it ended, and a refusal then is not tried again
            if (prompt.typing) {
              enqueue.assign({ firstPrompts: { ...rest, [event.session]: { ...prompt, late: true } } });
              return;
            }
            enqueue.assign({ firstPrompts: rest });
            enqueue(logLine('warn', `${event.session}: first prompt not typed: its agent did not read idle in time`));
          }),
        },
        'SESSION.KEYS_RESULT': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const answered = (o: Owed) => o.kind === 'keys' && sameRef(o.ref, event.ref);
            enqueue.assign({ owed: paid(context.owed, sessionId(event.session), answered) });
            if (!isPhoneRef(event.ref)) {
              const code = event.code;
              const result = { type: 'SCHEDULE.KEYS_RESULT', id: event.ref.schedule, ok: event.state === 'typed' };
              if (!context.supervision.scheduler?.givenUp)
                enqueue.sendTo('scheduler', { ...result, ...(code ? { code } : {}) } as SchedulerEvent);
              if (event.state === 'refused')
                enqueue(logLine('warn', `scheduled input for ${event.session}: refused ${code}`));
              return;
            }
            const to = { session: event.session, deviceId: event.ref.deviceId, connection: event.ref.connection };
            enqueue.sendTo('relay', toRelay(keysResultFrame(to, event.state, event.code, event.ref.seq)));
            if (event.state === 'refused') {
              enqueue(logLine('warn', `keys from ${event.ref.deviceId}: refused ${event.code} for ${event.session}`));
            }
          }),
        },
        'PINS.LOADED': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            enqueue.assign({ pins: event.pins, pinsUnreadable: event.unreadable === true });
            if (!context.supervision.devices?.givenUp)
              enqueue.sendTo('devices', { type: 'PINS', pins: event.pins } satisfies DevicesEvent);
            // a forgotten device sees no more of any screen
            if (!context.supervision.watches?.givenUp)
              enqueue.sendTo('watches', { type: 'PINS', pins: event.pins } satisfies WatchesEvent);
          }),
        },
        'SESSION.RESULT': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const answered = (o: Owed) => o.kind === 'push' && o.id === event.id;
            enqueue.assign({ owed: paid(context.owed, sessionId(event.session), answered) });
            if (event.id < 0) {
              // a first prompt (LAUNCH.PROMPT): not a relay push, nothing for the ledger or the relay
              const prompt = context.firstPrompts[event.session];
              if (prompt?.id !== event.id) return;
              const { [event.session]: _done, ...rest } = context.firstPrompts;
              if (event.state === 'refused' && event.code && RETRIED_REFUSALS.has(event.code) && !prompt.late) {
                // refused before anything was typed (a rate limit, a prompt that came up): again when it reads idle
                enqueue.assign({ firstPrompts: { ...rest, [event.session]: { ...prompt, typing: false } } });
                enqueue(
                  logLine('warn', `${event.session}: first prompt refused ${event.code}; again when it reads idle`),
                );
                return;
              }
              enqueue.assign({ firstPrompts: rest });
              enqueue(
                event.state === 'injected'
                  ? logLine('info', `${event.session}: first prompt typed`)
                  : logLine('warn', `${event.session}: first prompt not typed (${event.code}); not tried again`),
              );
              return;
            }
            const ledger = recordOutcome(
              context.ledger,
              event.id,
              event.state === 'injected'
                ? { state: 'injected' }
                : { state: 'refused', code: event.code ?? 'inject_failed' },
            );
            enqueue.assign({ ledger });
            enqueue({ type: 'persistLedger', params: { ledger } });
            enqueue.sendTo('relay', toRelay(pushResultFrame(event.id, event.state, event.code, event.message)));
            const how =
              event.state === 'injected'
                ? `typed into ${event.session}${event.submitted === false ? ' (submit not confirmed)' : ''}`
                : `refused ${event.code} for ${event.session}`;
            enqueue(logLine(event.state === 'injected' ? 'info' : 'warn', `push ${event.id}: ${how}`));
          }),
        },
        'ASK.*': {
          description:
            'Asks go to their supervisor (machines/asks.ts); once it was given up, each ends failed for its asker at once.',
          actions: enqueueActions(({ check, event, enqueue }) => {
            if (check('asksUp')) return enqueue.sendTo('asks', event as AsksEvent);
            if (event.type === 'ASK.START') enqueue('abandonAsks');
            if (event.type === 'ASK.LEFTOVER')
              enqueue.sendTo('relay', toRelay({ type: 'ask.closed', id: event.id, state: 'expired' }));
          }),
        },
        'RELAY.SEND': { actions: sendTo('relay', ({ event }) => toRelay(event.frame)) },
        'xstate.error.actor.*': {
          description:
            "A child failed (core/supervision.ts, docs/architecture.md). Every child of the root lives in a region of its own that restarts it (its own transition, above); each family's children are their supervisor's. One of none is stopped and logged: no child's failure stops the root.",
          actions: enqueueActions(({ event, enqueue }) => {
            const id = event.type.slice(ERROR_EVENT.length);
            if (SINGLETONS.has(id)) return;
            enqueue.stopChild(id);
            const error = (event as { error?: unknown }).error;
            enqueue({ type: 'reportFailure', params: { id, error, what: 'not a supervised child: stopped' } });
          }),
        },
        'NOTIFY.SEND': { actions: sendTo('relay', ({ event }) => toRelay(event.frame)) },
        'PAST.CHANGED': {
          actions: [assign({ past: ({ event }) => event.past }), sendTo('inventory', { type: 'FORCE_REPORT' })],
        },
        'SCHEDULES.CHANGED': {
          guard: ({ context }) => !context.supervision.scheduler?.givenUp,
          actions: sendTo('scheduler', ({ context }) => ({
            type: 'TICK',
            sessions: Object.values(context.sessions),
          })),
        },
        'SCHEDULES.SEALED': {
          actions: [
            assign({ schedules: ({ event }) => event.envelope }),
            sendTo('inventory', { type: 'FORCE_REPORT' }),
          ],
        },
        'APPROVAL.SEALED': {
          description: "A session's approval card, sealed: for its session actor (machines/sessions.ts).",
          guard: 'sessionsUp',
          actions: sendTo('sessions', ({ event }) => ({ ...event, type: 'CARD.SEALED' }) satisfies SessionsEvent),
        },
        'SESSION.REMOTE': [
          {
            description: 'Sticky REMOTE on or off: for the session actor (machines/sessions.ts).',
            guard: 'sessionsUp',
            actions: sendTo('sessions', ({ event }) => ({ ...event, type: 'REMOTE' }) satisfies SessionsEvent),
          },
          {
            actions: {
              type: 'log',
              params: ({ event }) => ({
                level: 'warn',
                message: `${event.why}: ${event.session} not put in ${event.on ? 'REMOTE' : 'local'} mode: the sessions' supervisor failed and is off`,
              }),
            },
          },
        ],
        'REPORT.NOW': {
          description: 'A session changed what the phones are shown (its mode, its card): reported now.',
          actions: sendTo('inventory', { type: 'FORCE_REPORT' }),
        },
        STOP: 'halted',
      },
    },
    halted: {
      description: 'The relay refused this computer, or the daemon was asked to stop.',
      type: 'final',
    },
  },
});
