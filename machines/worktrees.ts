/**
 * The worktrees made by `--wt`, and their supervisor: invoked by the listener as `worktrees`, it asks git for them at
 * start and every `worktreeScan`, spawns one `worktree.<repo>-wt-<slug>` actor per worktree (also after a restart),
 * and after each tmux reading tells each actor whether a session still holds it.
 *
 *   scanning ─(git's list)─▶ waiting ─worktreeScan─▶ scanning           SESSIONS: each actor told ALIVE or GONE
 *
 * A worktree actor that fails is stopped and logged, and spawned again at the next scan; at the fifth failure in ten
 * minutes it is not (core/supervision.ts). A record goes with the worktree when git no longer lists it.
 */
import { enqueueActions, fromPromise, setup } from 'xstate';
import type { SessionRecord } from '../core/protocol/index.js';
import { decideFailure, describeFailure, type Failures, pruneFailures } from '../core/supervision.js';
import { sessionsHolding } from '../core/worktrees/worktree.js';
import { clockOf, type LogParams, logLine, type SupervisorInput } from './log.js';
import { type WorktreeInput, type WorktreeOutput, worktreeMachine } from './worktree.js';

export interface WorktreesInput extends SupervisorInput {
  /**
   * The sessions of the listener's newest reading: a supervisor started again after a failure tells the worktrees it
   * finds at once whether a session holds them, rather than that none does.
   */
  sessions?: Record<string, SessionRecord>;
}

export interface WorktreesContext {
  input: WorktreesInput;
  /** Worktrees by actor id (`worktree.<repo>-wt-<slug>`); each has a child actor. */
  worktrees: Record<string, WorktreeInput>;
  /** The sessions of the newest tmux reading, by name. */
  sessions: Record<string, SessionRecord>;
  /** Worktree actors that failed, by actor id (core/supervision.ts), for `svc verify` and `svc debug state`. */
  failures: Record<string, Failures>;
}

export type WorktreesEvent =
  /** A tmux reading: which worktrees a session still holds. */
  | { type: 'SESSIONS'; sessions: Record<string, SessionRecord> }
  | { type: `xstate.done.actor.worktree.${string}`; output: WorktreeOutput }
  | { type: `xstate.error.actor.worktree.${string}`; error: unknown };

/** Slugs repeat across repositories, so the repository is part of the id. */
export const worktreeId = (repoName: string, slug: string) => `worktree.${repoName}-wt-${slug}`;

/** What a worktree actor is told after each reading: whether any session still holds it. */
function liveness(sessions: Record<string, SessionRecord>, wt: WorktreeInput) {
  const held = sessionsHolding(Object.values(sessions), wt.sessionName, wt.path).length > 0;
  return { type: held ? 'SESSION.ALIVE' : 'SESSION.GONE' } as const;
}

export const worktreesMachine = setup({
  types: {
    context: {} as WorktreesContext,
    input: {} as WorktreesInput,
    events: {} as WorktreesEvent,
  },
  actors: {
    worktree: worktreeMachine,
    /** Every worktree made by `--wt` that git still lists (actors/worktrees/git.ts findSvcWorktrees). */
    findWorktrees: fromPromise<(WorktreeInput & { repoName: string })[]>(async () => []),
  },
  delays: { worktreeScan: 60_000 },
  actions: {
    log: (_, _params: LogParams) => {},
    /** Worktree actor `id` failed: logged with its stack and the last event it took (actors/listener.ts). */
    reportFailure: (_, _params: { id: string; error: unknown; what: string }) => {},
  },
}).createMachine({
  id: 'worktrees',
  context: ({ input }) => ({ input, worktrees: {}, sessions: input.sessions ?? {}, failures: input.failures ?? {} }),
  initial: 'scanning',
  on: {
    SESSIONS: {
      actions: enqueueActions(({ context, event, enqueue }) => {
        enqueue.assign({ sessions: event.sessions });
        for (const [id, wt] of Object.entries(context.worktrees)) enqueue.sendTo(id, liveness(event.sessions, wt));
      }),
    },
    'xstate.done.actor.worktree.*': {
      actions: enqueueActions(({ context, event, enqueue }) => {
        const id = event.type.slice('xstate.done.actor.'.length);
        const { output } = event as Extract<WorktreesEvent, { output: WorktreeOutput }>;
        enqueue.stopChild(id);
        const { [id]: _gone, ...rest } = context.worktrees;
        enqueue.assign({ worktrees: rest });
        enqueue(
          logLine(
            'info',
            output?.outcome === 'removed'
              ? `removed worktree ${output.path} (its session ended and nothing held it)`
              : `worktree ${output?.path ?? id} is gone`,
          ),
        );
      }),
    },
    'xstate.error.actor.worktree.*': {
      description:
        'A worktree actor that failed is stopped and logged, and spawned again at the next scan; given up at the fifth failure in ten minutes.',
      actions: enqueueActions(({ context, event, enqueue }) => {
        const id = event.type.slice('xstate.error.actor.'.length);
        const { error } = event as Extract<WorktreesEvent, { error: unknown }>;
        const { record, decision } = decideFailure(
          'worktree',
          context.failures[id],
          clockOf(context),
          describeFailure(error),
        );
        enqueue.stopChild(id);
        const { [id]: _gone, ...rest } = context.worktrees;
        enqueue.assign({ worktrees: rest, failures: { ...context.failures, [id]: record } });
        const what =
          decision.kind === 'give_up'
            ? 'failed 5 times in ten minutes: not restarted until the listener is'
            : 'rebuilt at the next scan of git worktrees';
        enqueue({ type: 'reportFailure', params: { id, error, what } });
      }),
    },
  },
  states: {
    scanning: {
      description: 'Looks for worktrees made by --wt, so each gets a worktree actor (also after a restart).',
      invoke: {
        src: 'findWorktrees',
        onDone: {
          target: 'waiting',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const next = { ...context.worktrees };
            // a given-up worktree that git no longer lists is gone: its record too
            const listed = new Set(event.output.map((wt) => worktreeId(wt.repoName, wt.slug)));
            const failures = pruneFailures(context.failures, clockOf(context), (id) => !listed.has(id));
            for (const wt of event.output) {
              const id = worktreeId(wt.repoName, wt.slug);
              // a worktree whose actor failed comes back at the next scan, unless it was given up
              if (next[id] || failures[id]?.givenUp) continue;
              const { slug, path, repo, branch, sessionName } = wt;
              const input: WorktreeInput = { slug, path, repo, branch, sessionName };
              next[id] = input;
              enqueue.spawnChild('worktree', { id, input });
              enqueue.sendTo(id, liveness(context.sessions, input));
            }
            enqueue.assign({ worktrees: next, failures });
          }),
        },
        onError: {
          target: 'waiting',
          actions: {
            type: 'log',
            params: ({ event }) => ({ level: 'warn', message: `could not list worktrees: ${String(event.error)}` }),
          },
        },
      },
    },
    waiting: { after: { worktreeScan: 'scanning' } },
  },
});
