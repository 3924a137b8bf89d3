/**
 * One `svc_ask` in flight: `ask.<id>` (docs/mcp.md).
 *
 *   open{ waiting ──ANSWER──▶ opening ──(not taken)──▶ waiting }
 *     │                          └──(taken)──▶ answered (final)
 *     └──untilDeadline / CANCEL──▶ expired (final)
 *
 * The listener spawns it with the question already sealed (the root sends that to the relay) and the deadline as a
 * timestamp: `leftMs` is what was left of it when the actor started, so a listener started again never waits past
 * the deadline of an ask it finds in ~/.svc/asks.json (it answers those expired at once). An answer is opened by
 * `openAnswer` with the key the question was sealed for that device and checked against the ask
 * (core/mcp/ask.ts `checkAnswer`); the first one taken ends the ask, so the answer reaches the agent exactly once.
 * An answer that arrives while another is being opened waits its turn (at most `MAX_QUEUED`): it is refused
 * `already_answered` only if the one before it was taken. An answer that does not open is no answer: it never ends
 * the ask, and never makes a real one that came right behind it look late.
 */
import { assign, enqueueActions, fromPromise, sendParent, setup } from 'xstate';
import { type AnswerBody, checkAnswer, type Recipient } from '../core/mcp/ask.js';
import type { AskCode } from '../core/protocol/codes.js';
import type { LogParams } from './log.js';

export interface AskInput {
  id: string;
  session: string;
  /** Epoch ms (the listener's clock). */
  deadline: number;
  /** Ms left until the deadline when the actor starts. */
  leftMs: number;
  choices: string[];
  /** The devices the question was sealed for, with the keys it was sealed with: only they may answer. */
  recipients: Recipient[];
}

export interface AskContext extends AskInput {
  /** The answer being opened: who sent it, so the result goes back to them. */
  from: { deviceId: string | null; connection: string } | null;
  refused: number;
  /** The answer taken (in `answered`). */
  answer: AnswerBody | null;
  /** Answers that came while one was being opened, oldest first. */
  queued: Extract<AskEvent, { type: 'ANSWER' }>[];
}

/** Answers held while one is being opened; past this many, a further one is refused `already_answered`. */
export const MAX_QUEUED = 8;

export type AskEvent =
  | { type: 'ANSWER'; deviceId: string | null; connection: string; envelope: unknown }
  /** The MCP server went away (the agent gave up on the tool call): nobody is left to read an answer. */
  | { type: 'CANCEL' };

export interface OpenAnswerInput {
  envelope: unknown;
  deviceId: string | null;
  recipients: Recipient[];
}
export type OpenAnswerOutput = { ok: true; body: AnswerBody } | { ok: false; code: AskCode };

export type AskOutput =
  | {
      id: string;
      state: 'answered';
      deviceId: string;
      connection: string;
      text: string;
      choice: string | null;
      svcState?: 'REMOTE';
    }
  | { id: string; state: 'expired' };
/** How an ask ended for its asker: as the ask said, or `failed` when its actor failed (the root ends it). */
export type SettledAsk = AskOutput | { id: string; state: 'failed' };

/** What an ask tells the listener when it refuses an answer (the ask keeps waiting). */
export type AskRefused = {
  type: 'ASK.REFUSED';
  id: string;
  deviceId: string | null;
  connection: string;
  code: AskCode;
};

export const askMachine = setup({
  types: {
    context: {} as AskContext,
    input: {} as AskInput,
    events: {} as AskEvent,
    output: {} as AskOutput,
  },
  actors: {
    /** Opens the envelope with the key the question was sealed for that device (actors/mcp/asks.ts). */
    openAnswer: fromPromise<OpenAnswerOutput, OpenAnswerInput>(async () => ({ ok: false, code: 'bad_seal' })),
  },
  delays: {
    untilDeadline: ({ context }) => Math.max(0, context.leftMs),
  },
  guards: {
    roomInQueue: ({ context }) => context.queued.length < MAX_QUEUED,
  },
  actions: {
    /** A line for the listener's log (actors/listener.ts). */
    log: (_, _params: LogParams) => {},
    /** The answer being opened was taken: every answer that waited behind it comes second. */
    refuseQueued: enqueueActions(({ context, enqueue }) => {
      for (const q of context.queued)
        enqueue.sendParent({
          type: 'ASK.REFUSED',
          id: context.id,
          deviceId: q.deviceId,
          connection: q.connection,
          code: 'already_answered',
        } satisfies AskRefused);
      enqueue.assign({ queued: [] });
    }),
    /** The answer being opened was not taken: the next that waited is opened now. */
    nextQueued: enqueueActions(({ context, enqueue }) => {
      const [next, ...rest] = context.queued;
      if (!next) return;
      enqueue.assign({ queued: rest });
      enqueue.raise(next);
    }),
  },
}).createMachine({
  id: 'ask',
  context: ({ input }) => ({ ...input, from: null, refused: 0, answer: null, queued: [] }),
  initial: 'open',
  states: {
    open: {
      after: { untilDeadline: 'expired' },
      on: { CANCEL: 'expired' },
      initial: 'waiting',
      states: {
        waiting: {
          on: {
            ANSWER: {
              target: 'opening',
              actions: [
                assign({ from: ({ event }) => ({ deviceId: event.deviceId, connection: event.connection }) }),
                {
                  type: 'log',
                  params: ({ context, event }) => ({
                    level: 'info',
                    message: `answer to ask ${context.id} from ${event.deviceId ?? 'a connection without device'}: opening`,
                  }),
                },
              ],
            },
          },
        },
        opening: {
          invoke: {
            src: 'openAnswer',
            input: ({ context, event }) => ({
              envelope: (event as Extract<AskEvent, { type: 'ANSWER' }>).envelope,
              deviceId: context.from?.deviceId ?? null,
              recipients: context.recipients,
            }),
            onDone: [
              {
                guard: ({ context, event }) => event.output.ok && checkAnswer(context, event.output.body).ok,
                target: '#ask.answered',
                actions: [
                  assign({ answer: ({ event }) => (event.output.ok ? event.output.body : null) }),
                  'refuseQueued',
                ],
              },
              {
                target: 'waiting',
                actions: [
                  sendParent(({ context, event }) =>
                    refusal(context, event.output.ok ? 'bad_seal' : event.output.code),
                  ),
                  assign({ refused: ({ context }) => context.refused + 1, from: null }),
                  'nextQueued',
                ],
              },
            ],
            onError: {
              target: 'waiting',
              actions: [
                sendParent(({ context }) => refusal(context, 'bad_seal')),
                assign({ refused: ({ context }) => context.refused + 1, from: null }),
                'nextQueued',
              ],
            },
          },
          on: {
            // Another answer while one is being opened: it waits; whether it comes second depends on whether the
            // one being opened is taken.
            ANSWER: [
              {
                guard: 'roomInQueue',
                actions: assign({ queued: ({ context, event }) => [...context.queued, event] }),
              },
              {
                actions: sendParent(({ context, event }) => ({
                  type: 'ASK.REFUSED',
                  id: context.id,
                  deviceId: event.deviceId,
                  connection: event.connection,
                  code: 'already_answered',
                })),
              },
            ],
          },
        },
      },
    },
    answered: { type: 'final' },
    expired: { type: 'final' },
  },
  output: ({ context }): AskOutput => {
    const taken = context.answer ? checkAnswer(context, context.answer) : null;
    if (!taken?.ok || !context.answer || !context.from?.deviceId) return { id: context.id, state: 'expired' };
    return {
      id: context.id,
      state: 'answered',
      deviceId: context.from.deviceId,
      connection: context.from.connection,
      text: taken.text,
      choice: taken.choice,
      ...(context.answer.svcState ? { svcState: context.answer.svcState } : {}),
    };
  },
});

function refusal(context: AskContext, code: AskCode): AskRefused {
  return {
    type: 'ASK.REFUSED',
    id: context.id,
    deviceId: context.from?.deviceId ?? null,
    connection: context.from?.connection ?? '',
    code,
  };
}
