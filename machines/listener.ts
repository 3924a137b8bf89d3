/**
 * The root of the listener daemon. It invokes the relay link and the inventory, spawns one `session.<name>` actor
 * per tmux session, and routes each `agent.command` push to its session, recording what it acted on so nothing is
 * typed twice (DESIGN.md, "Delivery semantics").
 */
import { assign, enqueueActions, fromPromise, sendTo, setup } from 'xstate';
import { describeSessions } from '../core/inventory.js';
import type { Ledger } from '../core/ledger.js';
import { recordOutcome, triagePush } from '../core/ledger.js';
import type { RelayFrame, SessionRecord, WirePush } from '../core/protocol.js';
import { isValidSessionName } from '../core/refusals.js';
import { sessionsHolding } from '../core/worktree.js';
import { inventoryMachine } from './inventory.js';
import type { LogParams } from './log.js';
import { relayLinkMachine } from './relayLink.js';
import type { SessionResult } from './session.js';
import { sessionMachine } from './session.js';
import type { WorktreeInput } from './worktree.js';
import { worktreeMachine } from './worktree.js';

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
}

interface WaitingPush {
  push: WirePush;
  receivedAt: number;
}

export interface ListenerContext {
  hookId: string;
  input: ListenerInput;
  ledger: Ledger;
  /** Sessions tmux reported last, by name; each has a `session.<name>` child. */
  sessions: Record<string, SessionRecord>;
  /** Pushes for a session tmux had not shown yet: settled by the next inventory snapshot. */
  waiting: WaitingPush[];
  online: boolean;
  /** Worktrees made by `--wt`, by actor id (`worktree.<repo>-wt-<slug>`); each has a child actor. */
  worktrees: Record<string, WorktreeInput>;
  /** Starts from the input; the relay's own window replaces it once the link is up. */
  replayWindowMs: number;
  stopReason: string | null;
}

export type ListenerEvent =
  | { type: 'LINK.FRAME'; frame: RelayFrame; receivedAt?: number }
  | { type: 'LINK.ONLINE'; replayWindowMs?: number | null }
  | { type: 'LINK.OFFLINE'; reason: string }
  | { type: 'LINK.STOPPED'; reason: string }
  | { type: 'INVENTORY.SNAPSHOT'; sessions: SessionRecord[] }
  | { type: 'INVENTORY.REPORT'; sessions: SessionRecord[]; seq: number; reason: string }
  | SessionResult
  | { type: 'STOP' };

export const sessionId = (name: string) => `session.${name}`;
/** Slugs repeat across repositories, so the repository is part of the id. */
export const worktreeId = (repoName: string, slug: string) => `worktree.${repoName}-wt-${slug}`;

export const listenerMachine = setup({
  types: {
    context: {} as ListenerContext,
    input: {} as ListenerInput,
    events: {} as ListenerEvent,
  },
  actors: {
    relayLink: relayLinkMachine,
    inventory: inventoryMachine,
    session: sessionMachine,
    worktree: worktreeMachine,
    /** Every worktree made by `--wt` that git still lists (actors/git.ts findSvcWorktrees). */
    findWorktrees: fromPromise<(WorktreeInput & { repoName: string })[]>(async () => []),
  },
  delays: {
    worktreeScan: 60_000,
  },
  actions: {
    log: (_, _params: LogParams) => {},
    /** Write the ledger to disk before anything is typed (actors/ledgerFile.ts). */
    persistLedger: (_, _params: { ledger: Ledger }) => {},
  },
}).createMachine({
  id: 'listener',
  context: ({ input }) => ({
    hookId: input.hookId,
    input,
    ledger: input.ledger,
    sessions: {},
    waiting: [],
    online: false,
    worktrees: {},
    replayWindowMs: input.replayWindowMs,
    stopReason: null,
  }),
  initial: 'running',
  states: {
    running: {
      initial: 'scanningWorktrees',
      states: {
        scanningWorktrees: {
          description: 'Looks for worktrees made by --wt, so each gets a worktree actor (also after a restart).',
          invoke: {
            src: 'findWorktrees',
            onDone: {
              target: 'waitingToScan',
              actions: enqueueActions(({ context, event, enqueue }) => {
                const next = { ...context.worktrees };
                for (const wt of event.output) {
                  const id = worktreeId(wt.repoName, wt.slug);
                  if (next[id]) continue;
                  const input: WorktreeInput = {
                    slug: wt.slug,
                    path: wt.path,
                    repo: wt.repo,
                    branch: wt.branch,
                    sessionName: wt.sessionName,
                  };
                  next[id] = input;
                  enqueue.spawnChild('worktree', { id, systemId: id, input });
                  const alive =
                    sessionsHolding(Object.values(context.sessions), input.sessionName, input.path).length > 0;
                  enqueue.sendTo(id, { type: alive ? 'SESSION.ALIVE' : 'SESSION.GONE' });
                }
                enqueue.assign({ worktrees: next });
              }),
            },
            onError: {
              target: 'waitingToScan',
              actions: {
                type: 'log',
                params: ({ event }) => ({ level: 'warn', message: `could not list worktrees: ${String(event.error)}` }),
              },
            },
          },
        },
        waitingToScan: { after: { worktreeScan: 'scanningWorktrees' } },
      },
      invoke: [
        {
          id: 'relay',
          systemId: 'relay',
          src: 'relayLink',
          input: ({ context }) => ({
            wsUrl: context.input.wsUrl,
            apiKey: context.input.apiKey,
            hookId: context.input.hookId,
            version: context.input.version,
            lastPushId: context.ledger.lastPushId,
            random: context.input.random,
          }),
        },
        {
          id: 'inventory',
          systemId: 'inventory',
          src: 'inventory',
          input: ({ context }) => ({ hostname: context.input.hostname ?? '' }),
        },
      ],
      on: {
        'LINK.ONLINE': {
          actions: [
            assign({
              online: true,
              replayWindowMs: ({ context, event }) => event.replayWindowMs ?? context.replayWindowMs,
            }),
            sendTo('inventory', { type: 'FORCE_REPORT' }),
          ],
        },
        'LINK.OFFLINE': { actions: assign({ online: false }) },
        'LINK.STOPPED': { target: 'halted', actions: assign({ stopReason: ({ event }) => event.reason }) },
        'LINK.FRAME': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            if (event.type !== 'LINK.FRAME') return;
            const frame = event.frame;
            const receivedAt = event.receivedAt ?? Date.now();
            if (frame.type === 'sessions.result') {
              enqueue({
                type: 'log',
                params: frame.ok
                  ? { level: 'info', message: `server persisted listener.sessions (seq ${frame.seq})` }
                  : {
                      level: 'warn',
                      message: `server rejected listener.sessions: ${frame.reason ?? 'no reason given'}`,
                    },
              });
              return;
            }
            if (frame.type === 'error') {
              enqueue({
                type: 'log',
                params: { level: 'warn', message: `relay error ${frame.code}: ${frame.message}` },
              });
              return;
            }
            if (frame.type !== 'push.new') return;
            const push = frame.push;
            const triage = triagePush(push, context.ledger, context.replayWindowMs);
            const result = (state: 'injected' | 'refused' | 'expired', code?: string, message?: string) =>
              enqueue.sendTo('relay', {
                type: 'SEND',
                frame: {
                  type: 'push.result',
                  id: push.id,
                  state,
                  ...(code ? { code } : {}),
                  ...(message ? { message } : {}),
                },
              });
            const settle = (ledger: Ledger) => {
              enqueue.assign({ ledger });
              enqueue({ type: 'persistLedger', params: { ledger } });
              enqueue.sendTo('relay', { type: 'ACTED', lastPushId: ledger.lastPushId });
            };
            switch (triage.action) {
              case 'ignore':
                enqueue({
                  type: 'log',
                  params: { level: 'debug', message: `push ${push.id}: type ${push.type}, ignored` },
                });
                return;
              case 'resend': {
                const outcome = triage.outcome;
                if (outcome.state === 'claimed') {
                  // The listener stopped while typing it: it may or may not have been typed; never type it again.
                  result('refused', 'inject_failed', 'listener stopped while typing this push; not typed again');
                } else result(outcome.state, outcome.code);
                return;
              }
              case 'expire':
                settle(recordOutcome(context.ledger, push.id, { state: 'expired' }));
                result('expired');
                enqueue({
                  type: 'log',
                  params: {
                    level: 'info',
                    message: `push ${push.id}: expired (${Math.round(push.ageMs / 1000)} s old), not typed`,
                  },
                });
                return;
              case 'deliver': {
                if (!isValidSessionName(push.agentSessionName)) {
                  settle(recordOutcome(context.ledger, push.id, { state: 'refused', code: 'invalid_target' }));
                  result('refused', 'invalid_target');
                  enqueue({
                    type: 'log',
                    params: { level: 'warn', message: `push ${push.id}: refused invalid_target` },
                  });
                  return;
                }
                settle(recordOutcome(context.ledger, push.id, { state: 'claimed' }));
                if (context.sessions[push.agentSessionName]) {
                  enqueue.sendTo(sessionId(push.agentSessionName), {
                    type: 'PUSH',
                    push: {
                      id: push.id,
                      body: push.body,
                      addressedToThisComputer: push.targetComputer === context.hookId,
                      receivedAt,
                    },
                  });
                } else {
                  enqueue.assign({ waiting: [...context.waiting, { push, receivedAt }] });
                  enqueue.sendTo('inventory', { type: 'REFRESH' });
                }
              }
            }
          }),
        },
        'INVENTORY.SNAPSHOT': {
          actions: [
            enqueueActions(({ context, event, enqueue }) => {
              if (event.type !== 'INVENTORY.SNAPSHOT') return;
              const next: Record<string, SessionRecord> = {};
              for (const record of event.sessions) next[record.name] = record;
              for (const name of Object.keys(context.sessions)) {
                if (!next[name]) enqueue.stopChild(sessionId(name));
              }
              for (const [name, record] of Object.entries(next)) {
                if (context.sessions[name]) enqueue.sendTo(sessionId(name), { type: 'UPDATE', record });
                else
                  enqueue.spawnChild('session', {
                    id: sessionId(name),
                    systemId: sessionId(name),
                    input: { name, record },
                  });
              }
              enqueue.assign({ sessions: next });
              for (const [id, wt] of Object.entries(context.worktrees)) {
                const alive = sessionsHolding(Object.values(next), wt.sessionName, wt.path).length > 0;
                enqueue.sendTo(id, { type: alive ? 'SESSION.ALIVE' : 'SESSION.GONE' });
              }
            }),
            enqueueActions(({ context, enqueue }) => {
              if (context.waiting.length === 0) return;
              for (const { push, receivedAt } of context.waiting) {
                if (context.sessions[push.agentSessionName]) {
                  enqueue.sendTo(sessionId(push.agentSessionName), {
                    type: 'PUSH',
                    push: {
                      id: push.id,
                      body: push.body,
                      addressedToThisComputer: push.targetComputer === context.hookId,
                      receivedAt,
                    },
                  });
                } else {
                  enqueue.raise({
                    type: 'SESSION.RESULT',
                    session: push.agentSessionName,
                    id: push.id,
                    state: 'refused',
                    code: 'session_not_found',
                  });
                }
              }
              enqueue.assign({ waiting: [] });
            }),
          ],
        },
        'INVENTORY.REPORT': {
          // Offline, nothing can be sent; LINK.ONLINE asks the inventory for a fresh report anyway.
          guard: ({ context }) => context.online,
          actions: [
            sendTo('relay', ({ event }) => ({
              type: 'SEND',
              frame: { type: 'listener.sessions', seq: event.seq, sessions: event.sessions },
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
        'xstate.done.actor.worktree.*': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const id = event.type.slice('xstate.done.actor.'.length);
            const output = (event as { output?: { path?: string; outcome?: string } }).output;
            enqueue.stopChild(id);
            const { [id]: _gone, ...rest } = context.worktrees;
            enqueue.assign({ worktrees: rest });
            enqueue({
              type: 'log',
              params: {
                level: 'info',
                message:
                  output?.outcome === 'removed'
                    ? `removed worktree ${output.path} (its session ended and nothing held it)`
                    : `worktree ${output?.path ?? id} is gone`,
              },
            });
          }),
        },
        'SESSION.RESULT': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            if (event.type !== 'SESSION.RESULT') return;
            const ledger = recordOutcome(
              context.ledger,
              event.id,
              event.state === 'injected'
                ? { state: 'injected' }
                : { state: 'refused', code: event.code ?? 'inject_failed' },
            );
            enqueue.assign({ ledger });
            enqueue({ type: 'persistLedger', params: { ledger } });
            enqueue.sendTo('relay', {
              type: 'SEND',
              frame: {
                type: 'push.result',
                id: event.id,
                state: event.state,
                ...(event.code ? { code: event.code } : {}),
                ...(event.message ? { message: event.message } : {}),
              },
            });
            const how =
              event.state === 'injected'
                ? `typed into ${event.session}${event.submitted === false ? ' (submit not confirmed)' : ''}`
                : `refused ${event.code} for ${event.session}`;
            enqueue({
              type: 'log',
              params: { level: event.state === 'injected' ? 'info' : 'warn', message: `push ${event.id}: ${how}` },
            });
          }),
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
