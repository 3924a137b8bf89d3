/**
 * The live panes, and their supervisor: invoked by the listener as `watches`, it spawns one
 * `watch.<deviceId>/<session>` actor (machines/paneWatch.ts) per live pane, decides what a phone's opened `pane.watch`
 * does (core/sessions/routing.ts `decideOpenedWatch`: a new stream, a renewed lease, or a refusal), stops streams when
 * the phone asks, when the device is forgotten or no longer trusted, and when the session goes, and resumes the
 * streams a listener before this one left within their leases once the relay link is up.
 *
 * A watch actor that fails is stopped and logged, and started again after its backoff (1, 2, 4, 8 s) if its session is
 * there, its device still pinned and trusted, and the phone did not send `pane.stop` meanwhile; at the fifth failure
 * in ten minutes the phone is told it stopped (`failed`). Frames for the relay go to the listener as RELAY.SEND.
 */
import { enqueueActions, sendParent, setup } from 'xstate';
import type { ContactOutcome, PinsFile } from '../core/devices/devices.js';
import { type LeaseLeft, watchesToResume } from '../core/panes/watchLeases.js';
import type { ClientFrame, PaneRequestFrame, SessionRecord } from '../core/protocol/index.js';
import {
  type ContactRef,
  decideOpenedWatch,
  decidePaneRequest,
  paneStatusFrame,
  watchId,
} from '../core/sessions/routing.js';
import { decideFailure, describeFailure, type Failures, pruneFailures } from '../core/supervision.js';
import { clockOf, type LogParams, logLine, type SupervisorInput } from './log.js';
import { type PaneWatchInput, type PaneWatchOutput, paneWatchMachine, type WatchFrameEvent } from './paneWatch.js';

export interface WatchesInput extends SupervisorInput {
  /** The pinned devices as the listener knows them now. */
  pins: PinsFile;
  /** The sessions of the listener's newest reading. */
  sessions: Record<string, SessionRecord>;
  /** Live panes a listener before this one was streaming, still within their leases: resumed at RESUME. */
  resume: LeaseLeft[];
}

export interface WatchesContext {
  input: WatchesInput;
  /** Live panes by actor id (`watch.<deviceId>/<session>`); each has a child. */
  watches: Record<string, PaneWatchInput>;
  pins: PinsFile;
  sessions: Record<string, SessionRecord>;
  resume: LeaseLeft[];
  /** Watch actors that failed, by actor id (core/supervision.ts), for `svc verify` and `svc debug state`. */
  failures: Record<string, Failures>;
}

export type WatchesEvent =
  /** The relay link is up: the streams of the listener before this one start again, within their leases. */
  | { type: 'RESUME' }
  /** A phone's `pane.stop`. */
  | { type: 'PANE.STOP'; frame: Extract<PaneRequestFrame, { type: 'pane.stop' }> }
  /** A phone's `pane.watch`, opened by its device actor. */
  | {
      type: 'WATCH.OPENED';
      ref: Extract<ContactRef, { kind: 'watch' }>;
      deviceId: string;
      outcome: ContactOutcome<'pane.watch'>;
    }
  /** ~/.svc/devices.json as read now: a device no longer there sees no more of any screen. */
  | { type: 'PINS'; pins: PinsFile }
  /** A device actor's decision about its pin (absent: none), for the streams started again later. */
  | { type: 'PIN'; deviceId: string; pin?: PinsFile['devices'][string] }
  /** A device that must be verified again: its streams stop. */
  | { type: 'DEVICE.UNTRUSTED'; deviceId: string }
  /** A tmux reading. */
  | { type: 'SESSIONS'; sessions: Record<string, SessionRecord> }
  | WatchFrameEvent
  /** A live pane whose actor failed, started again after its backoff. */
  | { type: 'WATCH.RESTART'; id: string; input: PaneWatchInput }
  | { type: `xstate.done.actor.watch.${string}`; output: PaneWatchOutput }
  | { type: `xstate.error.actor.watch.${string}`; error: unknown };

const relaySend = (frame: ClientFrame) => ({ type: 'RELAY.SEND' as const, frame });
/** The session a watch actor's id names (`watch.<deviceId>/<session>`). */
const sessionOf = (id: string) => id.split('/').slice(1).join('/');

export const watchesMachine = setup({
  types: {
    context: {} as WatchesContext,
    input: {} as WatchesInput,
    events: {} as WatchesEvent,
  },
  actors: { paneWatch: paneWatchMachine },
  actions: {
    log: (_, _params: LogParams) => {},
    /** Watch actor `id` failed: logged with its stack and the last event it took (actors/listener.ts). */
    reportFailure: (_, _params: { id: string; error: unknown; what: string }) => {},
  },
}).createMachine({
  id: 'watches',
  context: ({ input }) => ({
    input,
    watches: {},
    pins: input.pins,
    sessions: input.sessions,
    resume: input.resume,
    failures: input.failures ?? {},
  }),
  initial: 'supervising',
  states: {
    supervising: {
      on: {
        RESUME: {
          actions: enqueueActions(({ context, enqueue }) => {
            if (context.resume.length === 0) return;
            // Streams of the listener before this one, within their leases: started again once frames can go.
            const watches = { ...context.watches };
            for (const { watchId: id, input } of watchesToResume(context.resume, context.pins, context.watches)) {
              const to = { session: input.session, deviceId: input.deviceId, connection: input.connection };
              enqueue.spawnChild('paneWatch', { id, input });
              watches[id] = input;
              enqueue.sendParent(relaySend(paneStatusFrame(to, 'streaming')));
              enqueue(
                logLine('info', `live pane ${to.session} for ${to.deviceId} resumed (lease ${input.leaseMs} ms left)`),
              );
            }
            enqueue.assign({ watches, resume: [] });
          }),
        },
        'PANE.STOP': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const { frame } = event;
            // a live pane waiting to start again after its actor failed: the phone's stop cancels that
            const waiting = frame.deviceId ? watchId(frame.deviceId, frame.session) : null;
            const record = waiting ? context.failures[waiting] : undefined;
            if (waiting && record && record.retryAt !== null && !context.watches[waiting]) {
              enqueue.assign({ failures: { ...context.failures, [waiting]: { ...record, retryAt: null } } });
              enqueue.sendParent(relaySend(paneStatusFrame(frame, 'stopped', 'requested')));
              return;
            }
            const d = decidePaneRequest(frame, 0, { devices: [], watches: context.watches });
            if (d.kind === 'stop') enqueue.sendTo(d.watchId, { type: 'STOP' });
          }),
        },
        'WATCH.OPENED': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const { ref, deviceId, outcome } = event;
            const to = { session: ref.session, deviceId, connection: ref.connection };
            const d = decideOpenedWatch(ref, deviceId, outcome, context);
            if (d.kind === 'renew') enqueue.sendTo(d.watchId, { type: 'RENEW', leaseMs: d.leaseMs });
            if (d.kind === 'refuse') {
              const why = d.message ? ` (${d.message})` : '';
              enqueue(logLine('warn', `watch from ${deviceId}: refused ${d.code}${why}`));
              enqueue.sendParent(relaySend(paneStatusFrame(to, 'refused', d.code)));
            }
            if (d.kind === 'watch') {
              const input: PaneWatchInput = { ...to, publicKey: d.publicKey, paneId: d.paneId, leaseMs: d.leaseMs };
              enqueue.spawnChild('paneWatch', { id: d.watchId, input });
              enqueue.assign({ watches: { ...context.watches, [d.watchId]: input } });
              enqueue.sendParent(relaySend(paneStatusFrame(to, 'streaming')));
              enqueue(logLine('info', `live pane ${ref.session} for ${deviceId} (lease ${d.leaseMs} ms)`));
            }
          }),
        },
        PINS: {
          actions: enqueueActions(({ context, event, enqueue }) => {
            enqueue.assign({ pins: event.pins });
            // A forgotten device sees no more of any screen.
            for (const [id, w] of Object.entries(context.watches)) {
              if (!event.pins.devices[w.deviceId]) enqueue.sendTo(id, { type: 'STOP' });
            }
          }),
        },
        PIN: {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const devices = { ...context.pins.devices };
            if (event.pin) devices[event.deviceId] = event.pin;
            else delete devices[event.deviceId];
            enqueue.assign({ pins: { version: 1, devices } });
          }),
        },
        'DEVICE.UNTRUSTED': {
          // refused until a person verifies: its live panes stop too
          actions: enqueueActions(({ context, event, enqueue }) => {
            for (const [id, w] of Object.entries(context.watches)) {
              if (w.deviceId === event.deviceId) enqueue.sendTo(id, { type: 'STOP' });
            }
          }),
        },
        SESSIONS: {
          actions: enqueueActions(({ context, event, enqueue }) => {
            enqueue.assign({ sessions: event.sessions });
            for (const [id, w] of Object.entries(context.watches)) {
              if (!event.sessions[w.session]) enqueue.sendTo(id, { type: 'SESSION.GONE' });
            }
            // records of failures that left the window, or whose session ended, are dropped
            const gone = (id: string) => !event.sessions[sessionOf(id)];
            enqueue.assign({ failures: pruneFailures(context.failures, clockOf(context), gone) });
          }),
        },
        'WATCH.FRAME': { actions: sendParent(({ event }) => relaySend(event.frame)) },
        'xstate.done.actor.watch.*': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const id = event.type.slice('xstate.done.actor.'.length);
            const { output } = event as Extract<WatchesEvent, { output: PaneWatchOutput }>;
            const watch = context.watches[id];
            enqueue.stopChild(id);
            const { [id]: _gone, ...rest } = context.watches;
            enqueue.assign({ watches: rest });
            if (!watch) return;
            const reason = output?.reason ?? 'requested';
            enqueue.sendParent(relaySend(paneStatusFrame(watch, 'stopped', reason)));
            enqueue(logLine('info', `live pane ${watch.session} for ${watch.deviceId} stopped (${reason})`));
          }),
        },
        'xstate.error.actor.watch.*': {
          description:
            'A live pane whose actor failed is stopped and logged, and started again after its backoff; at the fifth failure in ten minutes the phone is told it stopped (failed).',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const id = event.type.slice('xstate.error.actor.'.length);
            const { error } = event as Extract<WatchesEvent, { error: unknown }>;
            const now = clockOf(context);
            const { record, decision } = decideFailure('watch', context.failures[id], now, describeFailure(error));
            enqueue.stopChild(id);
            const input = context.watches[id];
            const { [id]: _gone, ...rest } = context.watches;
            enqueue.assign({ watches: rest, failures: { ...context.failures, [id]: record } });
            const report = (what: string) => enqueue({ type: 'reportFailure', params: { id, error, what } });
            if (!input) return report('stopped');
            if (decision.kind === 'restart') {
              enqueue.raise({ type: 'WATCH.RESTART', id, input }, { delay: decision.delayMs });
              return report(`started again in ${Math.round(decision.delayMs / 1000)} s`);
            }
            enqueue.sendParent(relaySend(paneStatusFrame(input, 'stopped', 'failed')));
            report('failed 5 times in ten minutes: not restarted until the listener is; the phone is told it stopped');
          }),
        },
        'WATCH.RESTART': {
          description:
            'A live pane whose actor failed starts again after its backoff, unless the phone stopped it meanwhile, and only while its session is there and its device pinned and trusted (as a resumed one).',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const { id, input } = event;
            const record = context.failures[id];
            // stopped by the phone meanwhile (its record says no restart is due), or asked for again: that one streams
            if (!record || record.retryAt === null || context.watches[id]) return;
            enqueue.assign({ failures: { ...context.failures, [id]: { ...record, retryAt: null } } });
            const { publicKey: _old, ...lease } = input;
            const [again] = watchesToResume([lease], context.pins, context.watches);
            if (!context.sessions[input.session] || !again) {
              const reason = context.sessions[input.session] ? 'requested' : 'session_gone';
              enqueue.sendParent(relaySend(paneStatusFrame(input, 'stopped', reason)));
              return;
            }
            enqueue.spawnChild('paneWatch', { id, input: again.input });
            enqueue.assign({ watches: { ...context.watches, [id]: again.input } });
            enqueue(
              logLine('info', `live pane ${input.session} for ${input.deviceId} started again after its actor failed`),
            );
          }),
        },
      },
    },
  },
});
