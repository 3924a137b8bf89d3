/**
 * One live pane for one device: `watch.<deviceId>/<session>`. While streaming it captures the pane every
 * `paneInterval`, sends what changed (core/panes/frames.ts) sealed for that device only, and a whole frame every
 * `fullFrame` and after each renewal. A frame that cannot be sealed is dropped and logged, never sent in the clear.
 * It stops when asked, when its `lease` lapses without a renewal (a phone that vanished stops the stream), or when
 * the session goes. The lease is recorded (`recordLease`) so a listener that restarts within it resumes the stream
 * (core/panes/watchLeases.ts); a stream that stopped for good is forgotten (`forgetLease`).
 */
import { assign, enqueueActions, fromPromise, setup } from 'xstate';
import { frameRows, type PaneScreen } from '../core/panes/frames.js';
import type { FrameBody } from '../core/protocol/bodies.js';
import type { PaneAnswerFrame, PaneStopReason } from '../core/protocol/index.js';
import type { Envelope } from '../core/seal/seal.js';
import type { LogParams } from './log.js';

/** Why a listener stops a stream (`computer_offline` is the relay's, when the listener itself is gone). */
export type StopReason = Exclude<PaneStopReason, 'computer_offline'>;

export interface PaneWatchInput {
  session: string;
  deviceId: string;
  /** The device's pinned key: frames are sealed for it and nobody else. */
  publicKey: string;
  /** The app connection that asked (answers for a device go to all its connections anyway). */
  connection: string;
  /** The pane to show: the session's active pane, or a subagent's own pane. */
  paneId: string;
  leaseMs: number;
}

export interface PaneWatchContext extends PaneWatchInput {
  /** Frames sent so far; the next frame's number. */
  frameSeq: number;
  /** The screen the app has (the last frame sent), null before the first. */
  sent: PaneScreen | null;
  /** A frame captured and waiting to be sealed, and the screen it brings the app to. */
  pending: { body: FrameBody; screen: PaneScreen } | null;
  owedFull: boolean;
  /** Captures that failed in a row. */
  failures: number;
  stopReason: StopReason | null;
}

export type PaneWatchEvent =
  | { type: 'RENEW'; leaseMs: number }
  | { type: 'STOP' }
  | { type: 'SESSION.GONE' }
  | { type: 'LISTENER.STOPPING' };

export interface PaneWatchOutput {
  session: string;
  deviceId: string;
  connection: string;
  reason: StopReason;
}

/** What `recordLease` keeps: enough to start the stream again after a restart, with the pinned key read then. */
export type LeaseParams = Pick<PaneWatchInput, 'session' | 'deviceId' | 'connection' | 'paneId' | 'leaseMs'>;

export interface SealFrameInput {
  deviceId: string;
  publicKey: string;
  body: FrameBody;
}

/** Sent to the parent for each sealed frame; the root hands it to the relay link. */
export interface WatchFrameEvent {
  type: 'WATCH.FRAME';
  frame: PaneAnswerFrame;
}

/** Captures that may fail in a row before the pane counts as gone. */
const MAX_CAPTURE_FAILURES = 3;

export const paneWatchMachine = setup({
  types: {
    context: {} as PaneWatchContext,
    input: {} as PaneWatchInput,
    events: {} as PaneWatchEvent,
    output: {} as PaneWatchOutput,
  },
  actors: {
    /** The pane's rows and width (actors/tmux/tmux.ts captureScreen). */
    capturePane: fromPromise<PaneScreen, { paneId: string }>(async () => ({ lines: [], width: 80 })),
    /** The frame body sealed for the device (core/seal/seal.ts, purpose pane.frame). */
    sealFrame: fromPromise<Envelope, SealFrameInput>(async () => {
      throw new Error('no sealFrame provided');
    }),
  },
  actions: {
    log: (_, _params: LogParams) => {},
    /** The lease runs `leaseMs` from now (actors/ keep it under ~/.svc with a deadline). */
    recordLease: (_, _params: LeaseParams) => {},
    /** The stream ended for good: nothing to resume. */
    forgetLease: (_, _params: Pick<PaneWatchInput, 'session' | 'deviceId'>) => {},
  },
  delays: {
    paneInterval: 300,
    lease: ({ context }) => context.leaseMs,
    fullFrame: 10_000,
  },
  guards: {
    paneGone: ({ context }) => context.failures + 1 >= MAX_CAPTURE_FAILURES,
    /** The capture differs from what the app has, or a whole frame is owed. */
    frameDue: ({ context, event }) =>
      frameRows(context.sent, (event as unknown as { output: PaneScreen }).output, context.owedFull) !== null,
  },
}).createMachine({
  id: 'paneWatch',
  context: ({ input }) => ({
    ...input,
    frameSeq: 0,
    sent: null,
    pending: null,
    owedFull: true,
    failures: 0,
    stopReason: null,
  }),
  initial: 'streaming',
  states: {
    streaming: {
      type: 'parallel',
      on: {
        STOP: { target: 'stopped', actions: assign({ stopReason: 'requested' }) },
        'SESSION.GONE': { target: 'stopped', actions: assign({ stopReason: 'session_gone' }) },
        'LISTENER.STOPPING': { target: 'stopped', actions: assign({ stopReason: 'listener_stopping' }) },
      },
      states: {
        capture: {
          initial: 'capturing',
          states: {
            capturing: {
              invoke: {
                src: 'capturePane',
                input: ({ context }) => ({ paneId: context.paneId }),
                onDone: [
                  {
                    guard: 'frameDue',
                    target: 'sealing',
                    actions: assign(({ context, event }) => ({
                      failures: 0,
                      pending: {
                        screen: event.output,
                        body: {
                          session: context.session,
                          frameSeq: context.frameSeq,
                          ...frameRows(context.sent, event.output, context.owedFull)!,
                        },
                      },
                    })),
                  },
                  { target: 'waiting', actions: assign({ failures: 0 }) },
                ],
                onError: [
                  {
                    guard: 'paneGone',
                    target: '#paneWatch.stopped',
                    actions: assign({ stopReason: 'session_gone' }),
                  },
                  { target: 'waiting', actions: assign({ failures: ({ context }) => context.failures + 1 }) },
                ],
              },
            },
            sealing: {
              invoke: {
                src: 'sealFrame',
                input: ({ context }) => ({
                  deviceId: context.deviceId,
                  publicKey: context.publicKey,
                  body: context.pending!.body,
                }),
                onDone: {
                  target: 'waiting',
                  actions: enqueueActions(({ context, event, enqueue }) => {
                    const { body, screen } = context.pending!;
                    enqueue.sendParent({
                      type: 'WATCH.FRAME',
                      frame: {
                        type: 'pane.frame',
                        session: context.session,
                        deviceId: context.deviceId,
                        frameSeq: body.frameSeq,
                        envelope: event.output,
                      },
                    } satisfies WatchFrameEvent);
                    enqueue.assign({
                      sent: screen,
                      frameSeq: context.frameSeq + 1,
                      owedFull: context.owedFull && !body.full,
                      pending: null,
                    });
                  }),
                },
                onError: {
                  // Never downgraded to plaintext: the frame is dropped; the next one is computed against what the
                  // app really has, so nothing is lost but this moment of the screen.
                  target: 'waiting',
                  actions: [
                    {
                      type: 'log',
                      params: ({ context, event }) => ({
                        level: 'warn',
                        message: `pane frame for ${context.deviceId} on ${context.session} dropped: could not seal it (${String(event.error).slice(0, 120)})`,
                      }),
                    },
                    assign({ pending: null }),
                  ],
                },
              },
            },
            waiting: { after: { paneInterval: 'capturing' } },
          },
        },
        lease: {
          initial: 'active',
          states: {
            active: {
              description: 'Renewed by each pane.watch from the device; lapses when the phone stops asking.',
              entry: {
                type: 'recordLease',
                params: ({ context }) => ({
                  session: context.session,
                  deviceId: context.deviceId,
                  connection: context.connection,
                  paneId: context.paneId,
                  leaseMs: context.leaseMs,
                }),
              },
              after: { lease: { target: '#paneWatch.stopped', actions: assign({ stopReason: 'lease_expired' }) } },
              on: {
                RENEW: { target: 'active', reenter: true, actions: assign({ leaseMs: ({ event }) => event.leaseMs }) },
              },
            },
          },
        },
        fullFrame: {
          initial: 'counting',
          states: {
            counting: {
              description:
                'A whole frame every fullFrame, and after each renewal: an app asks again when it saw a gap in the frames (a reconnect), and should not wait for the next one.',
              after: { fullFrame: { target: 'counting', reenter: true, actions: assign({ owedFull: true }) } },
              on: { RENEW: { target: 'counting', reenter: true, actions: assign({ owedFull: true }) } },
            },
          },
        },
      },
    },
    stopped: {
      type: 'final',
      entry: enqueueActions(({ context, enqueue }) => {
        // A listener that stops takes its streams along, to be resumed after its restart within their leases.
        if (context.stopReason === 'listener_stopping') return;
        enqueue({ type: 'forgetLease', params: { session: context.session, deviceId: context.deviceId } });
      }),
    },
  },
  output: ({ context }) => ({
    session: context.session,
    deviceId: context.deviceId,
    connection: context.connection,
    reason: context.stopReason ?? 'requested',
  }),
});
