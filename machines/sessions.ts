/**
 * The tmux sessions' actors, and their supervisor: invoked by the listener as `sessions`, it keeps one
 * `session.<name>` actor per session of the newest tmux reading (made when one appears, told each reading it does not
 * already hold, stopped with what it held answered when one ends), hands each the input the listener releases, and
 * passes their results on.
 *
 *   supervising: READING → spawn | UPDATE | stop     INPUT → the session's actor, or refused when it is down
 *
 * A session actor that fails is stopped and logged, and rebuilt from the first reading after its backoff; the listener
 * is told (`CHILD.DOWN`) so it refuses what that session held: what a child was handed and owes an answer for is the
 * listener's book (its `owed`), because a child that throws loses the step it failed in. At the fifth failure in ten
 * minutes it is not rebuilt: input for it is refused until the session ends (core/supervision.ts).
 */
import { enqueueActions, setup } from 'xstate';
import type { ApprovalPrompt } from '../core/agents/approvals.js';
import type { SessionRecord } from '../core/protocol/index.js';
import { readingIsNews, readingKey } from '../core/sessions/readings.js';
import { isRemote, type RemoteSessions, remoteAfterReading, withRemote } from '../core/sessions/remoteMode.js';
import { decideFailure, describeFailure, type Failures, isDown, pruneFailures } from '../core/supervision.js';
import { clockOf, type LogParams, logLine, type SupervisorInput } from './log.js';
import {
  type SessionContext,
  type SessionEvent,
  type SessionKeys,
  type SessionKeysResult,
  type SessionPush,
  type SessionResult,
  sessionMachine,
  unanswered,
} from './session.js';

export const sessionId = (name: string) => `session.${name}`;

/**
 * Input for a session, held by the listener until the inventory has read tmux after it arrived: whether a program or
 * a shell is in front, or the session is there at all, is judged on a reading newer than the input (a five-second-old
 * one could show an agent where a shell now waits for commands).
 */
export type HeldInput =
  | { kind: 'push'; session: string; id: number; event: { type: 'PUSH'; push: SessionPush } }
  | { kind: 'keys'; session: string; event: { type: 'KEYS'; keys: SessionKeys } };

/** What one reading says of the sessions' screens (machines/inventory.ts). */
export interface Screens {
  approvalOnScreen: string[];
  approvals?: Record<string, ApprovalPrompt>;
  unreadable?: string[];
  /** The sessions whose agent is in a turn and takes a message only after it (`AgentSpec.typeAfterTurn`). */
  midTurn?: string[];
}

export interface SessionsInput extends SupervisorInput {
  /** The sessions in sticky REMOTE as last saved (core/sessions/remoteMode.ts): they start in REMOTE again. */
  remote?: RemoteSessions;
}

export interface SessionsContext {
  input: SessionsInput;
  /** The sessions of the newest reading, by name; each not down has a `session.<name>` child. */
  sessions: Record<string, SessionRecord>;
  /** Session actors that failed, by actor id (core/supervision.ts), for `svc verify` and `svc debug state`. */
  failures: Record<string, Failures>;
  /** The sessions in sticky REMOTE, saved at each change (`saveRemote`) so a restart keeps them. */
  remote: RemoteSessions;
  /** What each session actor was last told (`readingKey`): a reading it already holds is not told again. */
  told: Record<string, string>;
}

export type SessionsEvent =
  /** A tmux reading: actors made, told, or stopped to match it. */
  | ({ type: 'READING'; sessions: Record<string, SessionRecord> } & Screens)
  /** Input the listener released for a session the reading shows. */
  | { type: 'INPUT'; held: HeldInput }
  /** Sticky REMOTE on or off for a session (machines/listener.ts SESSION.REMOTE). */
  | { type: 'REMOTE'; session: string; on: boolean; why: keyof typeof REMOTE_WHY }
  /** The card of a session's approval prompt, sealed for the phones. */
  | { type: 'CARD.SEALED'; session: string; fingerprint: string; envelope: Record<string, unknown> }
  | SessionResult
  | SessionKeysResult
  | { type: `xstate.error.actor.session.${string}`; error: unknown };

/** What the listener hears: results, a session whose held input it must refuse, and a report to send now. */
export type SessionsToListener =
  | SessionResult
  | SessionKeysResult
  | { type: 'CHILD.DOWN'; id: string }
  | { type: 'REPORT.NOW' };

const REMOTE_WHY = {
  hook: "the phone's message reached the agent's prompt hook",
  keyboard: 'a prompt was typed at the keyboard',
  ask: 'an svc_ask answer asked for it',
} as const;

/** Why input for a session whose actor is down (failed, not back yet, or given up) was refused. */
export const ACTOR_DOWN =
  "svc's actor for this session failed and is not back (the listener's log says why): this was not typed";

/** The answer for held input whose session actor failed and is not back yet, or was given up. */
export function actorDown(h: HeldInput): SessionResult | SessionKeysResult {
  const refused = { session: h.session, state: 'refused', code: 'inject_failed', message: ACTOR_DOWN } as const;
  return h.kind === 'push'
    ? { type: 'SESSION.RESULT', id: h.id, ...refused }
    : { type: 'SESSION.KEYS_RESULT', ref: h.event.keys.ref, ...refused };
}

type Children = Record<string, { getSnapshot(): { context: unknown; value: unknown } } | undefined>;
/** Session `name`'s actor among a supervisor snapshot's children, with what the phones are shown of it. */
export function sessionShown(children: Children, name: string) {
  const child = children[sessionId(name)];
  if (!child) return { exists: false, remote: false, card: null } as const;
  const snapshot = child.getSnapshot();
  const remote = (snapshot.value as { remote?: string }).remote === 'remote';
  const card = (snapshot.context as SessionContext).card;
  return { exists: true, remote, card } as const;
}

export const sessionsMachine = setup({
  types: {
    context: {} as SessionsContext,
    input: {} as SessionsInput,
    events: {} as SessionsEvent,
  },
  actors: { session: sessionMachine },
  actions: {
    log: (_, _params: LogParams) => {},
    /** Session actor `id` failed: logged with its stack and the last event it took (actors/listener.ts). */
    reportFailure: (_, _params: { id: string; error: unknown; what: string }) => {},
    /** Save the sessions in sticky REMOTE (actors/sessions/remoteBook.ts: ~/.svc/remote.json). */
    saveRemote: (_, _params: { remote: RemoteSessions }) => {},
  },
}).createMachine({
  id: 'sessions',
  context: ({ input }) => ({
    input,
    sessions: {},
    failures: input.failures ?? {},
    remote: input.remote ?? {},
    told: {},
  }),
  initial: 'supervising',
  states: {
    supervising: {
      on: {
        READING: {
          description:
            'An actor per session of the reading: made for a new one (or one whose backoff after a failure passed), told the reading otherwise when it is news to it (core/sessions/readings.ts); a session gone is stopped, what it held answered.',
          actions: enqueueActions(({ context, event, enqueue, self }) => {
            const next = event.sessions;
            const now = clockOf(context);
            const failures = { ...context.failures };
            const children = self.getSnapshot().children as Children;
            const told: Record<string, string> = {};
            let restored = false;
            for (const name of Object.keys(context.sessions)) {
              if (next[name]) continue;
              delete failures[sessionId(name)];
              // Whatever it still held gets an answer before it goes: nothing a phone sent is left pending.
              const child = children[sessionId(name)];
              if (child)
                for (const r of unanswered(child.getSnapshot().context as SessionContext)) enqueue.sendParent(r);
              enqueue.stopChild(sessionId(name));
            }
            for (const [name, record] of Object.entries(next)) {
              const screen = {
                approvalOnScreen: event.approvalOnScreen.includes(name),
                approval: event.approvals?.[name] ?? null,
                screenUnreadable: event.unreadable?.includes(name) === true,
                midTurn: event.midTurn?.includes(name) === true,
              };
              const failed = failures[sessionId(name)];
              if (isDown(failed, now)) continue;
              if (failed?.retryAt) failures[sessionId(name)] = { ...failed, retryAt: null };
              if (children[sessionId(name)] && !failed?.retryAt) {
                // another session made under the name between two readings is not the one the person drove remotely
                const was = context.sessions[name];
                if (was && was.createdAt !== record.createdAt && sessionShown(children, name).remote) {
                  enqueue.sendTo(sessionId(name), { type: 'REMOTE.OFF' } satisfies SessionEvent);
                  restored = true;
                }
                const reading = { record, ...screen };
                const region = (children[sessionId(name)]?.getSnapshot().value as { approval?: unknown } | undefined)
                  ?.approval;
                told[name] = readingKey(reading);
                if (readingIsNews(reading, context.told[name], region))
                  enqueue.sendTo(sessionId(name), { type: 'UPDATE', ...reading } satisfies SessionEvent);
              } else {
                enqueue(logLine('debug', `${name}: an actor made from the reading`));
                const remote = isRemote(context.remote, record);
                const input = {
                  name,
                  record,
                  ...screen,
                  remote,
                  ...(context.input.now ? { now: context.input.now } : {}),
                };
                enqueue.spawnChild('session', { id: sessionId(name), input });
                told[name] = readingKey({ record, ...screen });
                // back in REMOTE (after a restart of the listener or of this supervisor)
                if (remote) restored = true;
              }
            }
            // records of failures that left the window, or of sessions that ended, are dropped
            const gone = (id: string) => !next[id.slice('session.'.length)];
            enqueue.assign({ sessions: next, failures: pruneFailures(failures, now, gone), told });
            // sticky REMOTE ends with its session (or when another is made under its name)
            const remote = remoteAfterReading(context.remote, next);
            if (remote !== context.remote) {
              enqueue.assign({ remote });
              enqueue({ type: 'saveRemote', params: { remote } });
            }
            // a session back in REMOTE, or one that left it with its name: the phones hear it now
            if (restored) enqueue.sendParent({ type: 'REPORT.NOW' } satisfies SessionsToListener);
          }),
        },
        INPUT: {
          description: "Released input goes to its session's actor; while that is down it is refused, not typed.",
          actions: enqueueActions(({ event, enqueue, self }) => {
            const { held } = event;
            if (!(self.getSnapshot().children as Children)[sessionId(held.session)])
              return enqueue.sendParent(actorDown(held));
            enqueue.sendTo(sessionId(held.session), held.event);
          }),
        },
        REMOTE: {
          description:
            'Sticky REMOTE on or off, said in the log and saved (it outlives a restart); the phones hear the new mode with a report sent now.',
          actions: enqueueActions(({ context, event, enqueue, self }) => {
            const { session, on, why } = event;
            const shown = sessionShown(self.getSnapshot().children as Children, session);
            if (!context.sessions[session] || !shown.exists) {
              return enqueue(
                logLine('info', `${why}: no session ${session} to put in ${on ? 'REMOTE' : 'local'} mode`),
              );
            }
            if (shown.remote === on) return;
            enqueue.sendTo(sessionId(session), { type: on ? 'REMOTE.ON' : 'REMOTE.OFF' } satisfies SessionEvent);
            const remote = withRemote(context.remote, context.sessions[session], on);
            enqueue.assign({ remote });
            enqueue({ type: 'saveRemote', params: { remote } });
            enqueue(logLine('info', `${session}: ${on ? 'REMOTE' : 'local'} (${REMOTE_WHY[why]})`));
            enqueue.sendParent({ type: 'REPORT.NOW' } satisfies SessionsToListener);
          }),
        },
        'CARD.SEALED': {
          description:
            'A card sealed for the prompt its session actor still shows is kept there and reported at once; one for a gone prompt is dropped.',
          actions: enqueueActions(({ event, enqueue, self }) => {
            const shown = sessionShown(self.getSnapshot().children as Children, event.session);
            if (shown.card?.fingerprint !== event.fingerprint) return;
            const sealed = { type: 'CARD.SEALED', fingerprint: event.fingerprint, envelope: event.envelope } as const;
            enqueue.sendTo(sessionId(event.session), sealed satisfies SessionEvent);
            enqueue.sendParent({ type: 'REPORT.NOW' } satisfies SessionsToListener);
          }),
        },
        'SESSION.*': {
          description: "A session's result goes to the listener, which records and answers it.",
          actions: enqueueActions(({ event, enqueue }) => enqueue.sendParent(event as SessionResult)),
        },
        'xstate.error.actor.session.*': {
          description:
            'A session actor that failed is stopped and logged; the listener refuses what it held; it is rebuilt from the first reading after its backoff. At the fifth failure in ten minutes input for it is refused until the session ends.',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const id = event.type.slice('xstate.error.actor.'.length);
            const { error } = event as Extract<SessionsEvent, { error: unknown }>;
            const now = clockOf(context);
            const { record, decision } = decideFailure('session', context.failures[id], now, describeFailure(error));
            enqueue.stopChild(id);
            const { [id.slice('session.'.length)]: _forgotten, ...told } = context.told;
            enqueue.assign({ failures: { ...context.failures, [id]: record }, told });
            enqueue.sendParent({ type: 'CHILD.DOWN', id } satisfies SessionsToListener);
            const what =
              decision.kind === 'give_up'
                ? 'failed 5 times in ten minutes: not restarted until the listener is; input for it is refused'
                : `rebuilt from tmux at the first reading after ${Math.round(decision.kind === 'restart' ? decision.delayMs / 1000 : 0)} s; what it held is refused, not typed again`;
            enqueue({ type: 'reportFailure', params: { id, error, what } });
          }),
        },
      },
    },
  },
});
