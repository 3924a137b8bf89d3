/**
 * The root of the listener daemon. It invokes the relay link, the inventory and the supervisors of the sessions,
 * devices, schedules, worktrees, live panes and asks, each in a region that restarts it when it fails. It keeps
 * delivery: pushes, pane requests and opened contacts go where core/sessions/routing.ts decides; input waits for a
 * tmux reading newer than itself; what it acted on is recorded so nothing is typed twice (DESIGN.md, "Delivery
 * semantics"); what a child was handed and has not answered is kept until it answers or is refused.
 */
import { assign, enqueueActions, fromCallback, raise, sendTo, setup } from 'xstate';
import { emptyPins } from '../core/devices/devices.js';
import type { PhoneRequest } from '../core/protocol/bodies.js';
import type { Ledger } from '../core/sessions/ledger.js';
import { recoverLedger, unackedOutcomes } from '../core/sessions/ledger.js';
import { pushResultFrame, STOPPED_WHILE_TYPING } from '../core/sessions/routing.js';
import { type AsksEvent, asksMachine } from './asks.js';
import {
  deviceResult,
  keysResult,
  linkFrame,
  reading,
  released,
  report,
  scheduleKeys,
  sessionResult,
  stopping,
} from './delivery.js';
import { type DevicesEvent, devicesMachine } from './devices.js';
import { expirePrompt, launchPrompt } from './firstPrompts.js';
import { inventoryMachine } from './inventory.js';
import { isUp, type ListenerContext, type ListenerEvent, type ListenerInput, toRelay } from './listenerTypes.js';
import { type LogParams, logLine } from './log.js';
import { childDown } from './owed.js';
import { ERROR_EVENT, givesUp, region, SINGLETONS, singletonRecord, stopOrphans, supervisorInput } from './regions.js';
import { relayLinkMachine } from './relayLink.js';
import { schedulerMachine } from './scheduler.js';
import type { PhoneRef } from './session.js';
import { type SessionsEvent, sessionsMachine } from './sessions.js';
import { type WatchesEvent, watchesMachine } from './watches.js';
import { worktreesMachine } from './worktrees.js';

export type { ListenerContext, ListenerEvent, ListenerInput, Owed } from './listenerTypes.js';
export { ACTOR_FAILED } from './owed.js';
export { SUPERVISORS } from './regions.js';

/** Whether `id` was claimed and never finished in the ledger the listener started from. */
const wasClaimed = (ledger: Ledger, id: number) => ledger.entries[String(id)]?.state === 'claimed';

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
    asksUp: ({ context }) => isUp(context, 'asks'),
    /** The sessions' supervisor runs (it was not given up). */
    sessionsUp: ({ context }) => isUp(context, 'sessions'),
    /** The devices' supervisor runs (it was not given up). */
    devicesUp: ({ context }) => isUp(context, 'devices'),
    /** The live panes' supervisor runs (it was not given up). */
    watchesUp: ({ context }) => isUp(context, 'watches'),
    /** A singleton's failure is the last the policy allows (core/supervision.ts): it is not restarted. */
    givesUp: ({ context, event }) => givesUp(context, event.type),
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
    stopOrphans: ({ self, event }) => stopOrphans(self.getSnapshot().children, event.type),
    /**
     * A singleton (relay, inventory, pinsWatch, scheduler, worktrees, watches, asks) failed: its record, and when it
     * is given up the reason the listener stops (relay, inventory). `stopOrphans` and `reportFailure` run before it,
     * the report with the record before this failure.
     */
    recordSingletonFailure: assign(({ context, event, self }) =>
      singletonRecord(context, event, self.getSnapshot().children),
    ),
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
        relay: region({
          id: 'relay',
          src: 'relayLink',
          description:
            'Supervises the relay link: restarted at once when it fails (the root sends to it unchecked); the listener stops (exit 1) at the fifth failure in ten minutes.',
          givenUp: '#listener.halted',
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
        }),
        inventory: region({
          id: 'inventory',
          src: 'inventory',
          description:
            'Supervises the inventory: restarted at once when it fails; the listener stops (exit 1) at the fifth failure in ten minutes.',
          givenUp: '#listener.halted',
          input: ({ context }) => ({ hostname: context.input.hostname ?? '', asked: context.asked }),
        }),
        pins: region({
          id: 'pinsWatch',
          src: 'pinsWatch',
          description:
            'Supervises the watch on ~/.svc/devices.json: restarted at once when it fails; left off at the fifth failure in ten minutes (svc verify says so).',
          input: () => undefined,
        }),
        sessions: region({
          id: 'sessions',
          src: 'sessions',
          description:
            "Supervises the tmux sessions' actors (machines/sessions.ts): restarted at once when it fails (an actor per session again at the next reading; what its sessions held is refused, never typed again); left off at the fifth failure in ten minutes (input for every session is then refused, svc verify says so).",
          after: 'refuseSessionInput',
          input: ({ context }) => ({ ...supervisorInput(context, 'sessions'), remote: context.input.remote?.() ?? {} }),
        }),
        devices: region({
          id: 'devices',
          src: 'devices',
          description:
            'Supervises the devices (machines/devices.ts): restarted at once when it fails (an actor per pinned device again; what its devices held is refused); left off at the fifth failure in ten minutes (every sealed contact is then refused, svc verify says so).',
          after: 'refuseDeviceContacts',
          input: ({ context }) => ({ ...supervisorInput(context, 'devices'), pins: context.pins }),
        }),
        schedules: region({
          id: 'scheduler',
          src: 'scheduler',
          description:
            'Supervises the scheduler: rebuilt from the schedules file at once when it fails; left off at the fifth failure in ten minutes (svc verify says so).',
          input: ({ context }) => supervisorInput(context, 'scheduler'),
        }),
        worktrees: region({
          id: 'worktrees',
          src: 'worktrees',
          description:
            'Supervises the worktrees made by --wt (machines/worktrees.ts): restarted at once when it fails (it scans git again); left off at the fifth failure in ten minutes (svc verify says so).',
          input: ({ context }) => ({ ...supervisorInput(context, 'worktrees'), sessions: context.sessions }),
        }),
        watches: region({
          id: 'watches',
          src: 'watches',
          description:
            "Supervises the live panes (machines/watches.ts): restarted at once when it fails (the panes it streamed stop; a phone's next renewal starts each again); left off at the fifth failure in ten minutes (a phone's pane.watch is then refused, svc verify says so).",
          input: ({ context }) => ({
            ...supervisorInput(context, 'watches'),
            pins: context.pins,
            sessions: context.sessions,
            // the streams of the listener before this one, until the link is first up
            resume: context.online ? [] : context.resume,
          }),
        }),
        asks: region({
          id: 'asks',
          src: 'asks',
          description:
            'Supervises the asks (machines/asks.ts): restarted at once when it fails, the asks it held ended failed for their askers; left off at the fifth failure in ten minutes (every ask then ends failed, svc verify says so).',
          after: 'abandonAsks',
          input: ({ context }) => supervisorInput(context, 'asks'),
        }),
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
          actions: enqueueActions((args) => linkFrame(args)),
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
          actions: [enqueueActions((args) => reading(args)), enqueueActions((args) => released(args))],
        },
        'INVENTORY.REPORT': {
          // Offline, nothing can be sent; LINK.ONLINE asks the inventory for a fresh report anyway.
          guard: 'isOnline',
          actions: enqueueActions((args) => report(args)),
        },
        'CHILD.DOWN': {
          description:
            "A session's or device's actor failed or was given up (its supervisor says so): what it was handed and did not answer is refused, never typed or opened again.",
          actions: enqueueActions((args) => childDown(args)),
        },
        'FAMILY.DOWN': {
          description:
            'The supervisor of the sessions or of the devices failed or was given up: what all of them held is refused.',
          actions: enqueueActions((args) => childDown(args)),
        },
        'DEVICE.RESULT': {
          actions: enqueueActions((args) => deviceResult(args)),
        },
        'SCHEDULE.KEYS': {
          description:
            "A scheduled run's keys wait for a fresh reading like the phone's, then go to its session actor.",
          actions: enqueueActions((args) => scheduleKeys(args)),
        },
        'LAUNCH.PROMPT': {
          description:
            'The first prompt of a session the phone started: kept until a reading shows its own session idle with its agent in front, then typed as a message from the phone (marker, submit strategy); given up when the session ends or firstPromptWait passes.',
          actions: enqueueActions((args) => launchPrompt(args)),
        },
        'FIRST_PROMPT.EXPIRE': {
          actions: enqueueActions((args) => expirePrompt(args)),
        },
        'SESSION.KEYS_RESULT': {
          actions: enqueueActions((args) => keysResult(args)),
        },
        'PINS.LOADED': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            enqueue.assign({ pins: event.pins, pinsUnreadable: event.unreadable === true });
            if (isUp(context, 'devices'))
              enqueue.sendTo('devices', { type: 'PINS', pins: event.pins } satisfies DevicesEvent);
            // a forgotten device sees no more of any screen
            if (isUp(context, 'watches'))
              enqueue.sendTo('watches', { type: 'PINS', pins: event.pins } satisfies WatchesEvent);
          }),
        },
        'SESSION.RESULT': {
          actions: enqueueActions((args) => sessionResult(args)),
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
          guard: ({ context }) => isUp(context, 'scheduler'),
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
        // what the sessions hold is recorded while they still run (a transition out of `running` stops them first)
        STOP: { actions: [enqueueActions((args) => stopping(args)), raise({ type: 'HALT' })] },
        HALT: 'halted',
      },
    },
    halted: {
      description: 'The relay refused this computer, or the daemon was asked to stop.',
      type: 'final',
    },
  },
});
