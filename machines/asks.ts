/**
 * The `svc_ask`s (docs/mcp.md), and their supervisor: invoked by the listener as `asks`, it spawns one `ask.<id>`
 * actor per ask, hands each the phones' answers, announces them again when the relay link comes back (the relay keeps
 * asks in memory only) and remembers the last FINISHED_ASKS_KEPT that ended, so a late answer is refused with the
 * right code.
 *
 *   supervising ─ASK.START─▶ spawn ask.<id> ─done─▶ closed for the phones, settled for its asker
 *                                            └error─▶ ended `failed` for its asker (ask_failed), closed for the phones
 *
 * An ask is not restarted when its actor fails (core/supervision.ts STRATEGY: `end`): a question half-answered is
 * not asked twice. Frames for the relay go to the listener as RELAY.SEND, which sends them through its link.
 */
import { enqueueActions, sendTo, setup } from 'xstate';
import { FINISHED_ASKS_KEPT, type FinishedAsk, lateAnswerCode } from '../core/mcp/ask.js';
import type { ClientFrame } from '../core/protocol/index.js';
import { decideFailure, describeFailure, type Failures, pruneFailures } from '../core/supervision.js';
import { type AskInput, type AskOutput, type AskRefused, askMachine, type SettledAsk } from './ask.js';
import { clockOf, type LogParams, logLine, type SupervisorInput } from './log.js';

export type AsksInput = SupervisorInput;

export interface AsksContext {
  input: AsksInput;
  /** Asks waiting, by ask id; each has an `ask.<id>` child (machines/ask.ts). */
  asks: Record<string, { session: string; deadline: number; devices: number }>;
  /** Asks that ended, newest last (at most FINISHED_ASKS_KEPT): a late answer is refused with the right code. */
  finished: Record<string, FinishedAsk>;
  /** Asks whose actor failed, by actor id (core/supervision.ts), for `svc verify` and `svc debug state`. */
  failures: Record<string, Failures>;
}

export type AsksEvent =
  /** `svc mcp` asked the phone something, sealed already (actors/mcp/asks.ts). */
  | { type: 'ASK.START'; ask: AskInput }
  /** An ask a listener before this one left in ~/.svc/asks.json: it is over (expired) for the phone too. */
  | { type: 'ASK.LEFTOVER'; id: string }
  /** The asker went away. */
  | { type: 'ASK.CANCEL'; id: string }
  /** A phone's sealed answer, as the relay passed it on. */
  | { type: 'ASK.ANSWER'; id: string; deviceId: string | null; connection: string; envelope: unknown }
  /** The relay link is up (again): every waiting ask goes to the relay once more. */
  | { type: 'ASKS.ANNOUNCE' }
  | AskRefused
  | { type: `xstate.done.actor.ask.${string}`; output: AskOutput }
  | { type: `xstate.error.actor.ask.${string}`; error: unknown };

/** What the asks tell the listener: a frame for the relay, or an answer that asked for sticky REMOTE. */
export type AsksToListener =
  | { type: 'RELAY.SEND'; frame: ClientFrame }
  | { type: 'SESSION.REMOTE'; session: string; on: true; why: 'ask' };

export const askActorId = (id: string) => `ask.${id}`;

/** The finished asks with one more, the oldest dropped past FINISHED_ASKS_KEPT. */
function finish(finished: Record<string, FinishedAsk>, id: string, state: FinishedAsk['state']) {
  const entries = Object.entries(finished).filter(([k]) => k !== id);
  entries.push([id, { state }]);
  return Object.fromEntries(entries.slice(-FINISHED_ASKS_KEPT));
}

const toListener = (event: AsksToListener) => event;
const relaySend = (frame: ClientFrame) => toListener({ type: 'RELAY.SEND', frame });

export const asksMachine = setup({
  types: {
    context: {} as AsksContext,
    input: {} as AsksInput,
    events: {} as AsksEvent,
  },
  actors: { ask: askMachine },
  actions: {
    log: (_, _params: LogParams) => {},
    /** Send ask `id`'s sealed question to the relay, with the time left now (actors/mcp/asks.ts). */
    announceAsk: (_, _params: { id: string }) => {},
    /** Tell the MCP server how its ask ended (actors/mcp/asks.ts). */
    settleAsk: (_, _params: { output: SettledAsk }) => {},
    /** Ask actor `id` failed: logged with its stack and the last event it took (actors/listener.ts). */
    reportFailure: (_, _params: { id: string; error: unknown; what: string }) => {},
  },
}).createMachine({
  id: 'asks',
  context: ({ input }) => ({ input, asks: {}, finished: {}, failures: input.failures ?? {} }),
  initial: 'supervising',
  states: {
    supervising: {
      on: {
        'ASK.START': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const { ask } = event;
            const id = askActorId(ask.id);
            enqueue.spawnChild('ask', { id, input: ask });
            const record = { session: ask.session, deadline: ask.deadline, devices: ask.recipients.length };
            enqueue.assign({ asks: { ...context.asks, [ask.id]: record } });
            enqueue({ type: 'announceAsk', params: { id: ask.id } });
            enqueue(logLine('info', `ask ${ask.id} for ${ask.session}: sealed for ${ask.recipients.length} device(s)`));
          }),
        },
        'ASK.CANCEL': {
          // an ask that ended (or whose actor failed) has no actor to tell
          guard: ({ context, event }) => context.asks[event.id] !== undefined,
          actions: sendTo(({ event }) => askActorId(event.id), { type: 'CANCEL' }),
        },
        'ASK.LEFTOVER': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            enqueue.assign({ finished: finish(context.finished, event.id, 'expired') });
            enqueue.sendParent(relaySend({ type: 'ask.closed', id: event.id, state: 'expired' }));
            enqueue(logLine('info', `ask ${event.id}: left by the listener before this one, expired`));
          }),
        },
        'ASK.ANSWER': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const { id, deviceId, connection, envelope } = event;
            if (context.asks[id]) {
              enqueue.sendTo(askActorId(id), { type: 'ANSWER', deviceId, connection, envelope });
              return;
            }
            const code = lateAnswerCode(context.finished[id]);
            enqueue.sendParent(relaySend({ type: 'ask.result', id, deviceId, connection, state: 'refused', code }));
            enqueue(
              logLine('warn', `answer to ask ${id} from ${deviceId ?? 'a connection without device'}: refused ${code}`),
            );
          }),
        },
        'ASKS.ANNOUNCE': {
          actions: enqueueActions(({ context, enqueue }) => {
            for (const id of Object.keys(context.asks)) enqueue({ type: 'announceAsk', params: { id } });
          }),
        },
        'ASK.REFUSED': {
          actions: enqueueActions(({ event, enqueue }) => {
            const { id, deviceId, connection, code } = event;
            enqueue.sendParent(relaySend({ type: 'ask.result', id, deviceId, connection, state: 'refused', code }));
            enqueue(logLine('warn', `answer to ask ${id} from ${deviceId ?? '-'}: refused ${code}`));
          }),
        },
        'xstate.done.actor.ask.*': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const { output } = event as Extract<AsksEvent, { output: AskOutput }>;
            enqueue.stopChild(askActorId(output.id));
            const { [output.id]: record, ...rest } = context.asks;
            enqueue.assign({ asks: rest, finished: finish(context.finished, output.id, output.state) });
            enqueue.sendParent(relaySend({ type: 'ask.closed', id: output.id, state: output.state }));
            if (output.state === 'answered') {
              const { deviceId, connection } = output;
              if (output.svcState === 'REMOTE' && record) {
                enqueue.sendParent(
                  toListener({ type: 'SESSION.REMOTE', session: record.session, on: true, why: 'ask' }),
                );
              }
              enqueue.sendParent(
                relaySend({ type: 'ask.result', id: output.id, deviceId, connection, state: 'accepted' }),
              );
            }
            enqueue({ type: 'settleAsk', params: { output } });
            enqueue(logLine('info', `ask ${output.id}: ${output.state}`));
          }),
        },
        'xstate.error.actor.ask.*': {
          description:
            'An ask whose actor failed is stopped and logged, then ended: failed for its asker (ask_failed), closed (expired) for the phones; a later answer is refused as late.',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const id = event.type.slice('xstate.error.actor.'.length);
            const askId = id.slice('ask.'.length);
            const { error } = event as Extract<AsksEvent, { error: unknown }>;
            const now = clockOf(context);
            const previous = pruneFailures(context.failures, now, () => false);
            const { record } = decideFailure('ask', previous[id], now, describeFailure(error));
            enqueue.stopChild(id);
            const { [askId]: _gone, ...rest } = context.asks;
            enqueue.assign({
              asks: rest,
              finished: finish(context.finished, askId, 'expired'),
              failures: { ...previous, [id]: record },
            });
            enqueue.sendParent(relaySend({ type: 'ask.closed', id: askId, state: 'expired' }));
            enqueue({ type: 'settleAsk', params: { output: { id: askId, state: 'failed' } } });
            const what = 'ended: its asker is told it failed (ask_failed), the phones that it closed';
            enqueue({ type: 'reportFailure', params: { id, error, what } });
          }),
        },
      },
    },
  },
});
