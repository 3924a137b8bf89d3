/**
 * One worktree made by `--wt`: `worktree.<slug>`. It is removed when its session has ended and nothing else holds
 * it (spec part 3, "Worktree session ended"); otherwise it is held and looked at again later.
 *
 *   active ──SESSION.GONE──▶ orphaned ──worktreeGrace──▶ checking ──▶ checked ──▶ removing ──▶ removed (final)
 *     ▲                         │                          │             │  │         │
 *     └──────SESSION.ALIVE──────┴──────────────────────────┤             │  └─▶ gone (final: git no longer lists it)
 *                                                          ▼             ▼         ▼
 *                                                        held ◀──────────┴─────────┘   (error, a hold, git refused)
 *                                                          └──worktreeRecheck──▶ checking
 *
 * The listener sends `SESSION.ALIVE` / `SESSION.GONE` from the inventory (its session by name or `@svc-worktree`).
 * `checkWorktree` gathers the facts (`core/worktrees/worktree.ts` `worktreeHold` decides); `removeWorktree` looks once more and
 * runs plain `git worktree remove` (never `--force`), whose own refusal of a dirty worktree is the last guard.
 * Every error ends in `held` with the error as the reason: an error never removes anything.
 */
import { assign, fromPromise, setup } from 'xstate';
import { FREE_FACTS, type WorktreeFacts, worktreeHold } from '../core/worktrees/worktree.js';
import type { LogParams } from './log.js';

/** What the listener knows of a worktree made by `--wt` when it spawns its actor. */
export interface WorktreeInput {
  /** `feat-x` for branch `feat/x`. */
  slug: string;
  /** The worktree's directory (absolute, real path). */
  path: string;
  /** The main checkout's directory (absolute): git is run there when the worktree's own directory may be gone. */
  repo: string;
  branch: string;
  /** `svc-<repo>-wt-<slug>`. */
  sessionName: string;
}

/** What `removeWorktree` did: removed, or why not (a hold found on the last look, or git's refusal). */
export type RemoveOutcome = { removed: true } | { removed: false; reason: string };

export interface WorktreeContext extends WorktreeInput {
  /** The facts of the last check. */
  facts: WorktreeFacts | null;
  /** Why it is held (null unless in `held`). */
  reason: string | null;
}

export type WorktreeEvent = { type: 'SESSION.ALIVE' } | { type: 'SESSION.GONE' };

/** The actor's output when it ends. */
export interface WorktreeOutput {
  slug: string;
  path: string;
  outcome: 'removed' | 'gone';
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error)).slice(0, 300);

export const worktreeMachine = setup({
  types: {
    context: {} as WorktreeContext,
    input: {} as WorktreeInput,
    events: {} as WorktreeEvent,
    output: {} as WorktreeOutput,
  },
  actors: {
    checkWorktree: fromPromise<WorktreeFacts, WorktreeInput>(async () => FREE_FACTS),
    removeWorktree: fromPromise<RemoveOutcome, WorktreeInput>(async () => ({
      removed: false,
      reason: 'no removeWorktree provided',
    })),
  },
  actions: {
    log: (_, _params: LogParams) => {},
  },
  guards: {
    notRegistered: ({ context }) => context.facts?.registered === false,
    isHeld: ({ context }) => context.facts === null || worktreeHold(context.facts) !== null,
  },
  delays: {
    /** The session may be back in a moment (an agent restarted in the same worktree): wait before looking. */
    worktreeGrace: 30_000,
    /** How long a held worktree waits before it is looked at again. */
    worktreeRecheck: 300_000,
  },
}).createMachine({
  id: 'worktree',
  context: ({ input }) => ({ ...input, facts: null, reason: null }),
  initial: 'active',
  output: ({ context }) => ({
    slug: context.slug,
    path: context.path,
    outcome: context.facts?.registered === false ? 'gone' : 'removed',
  }),
  states: {
    active: {
      description: 'Its tmux session is alive.',
      entry: assign({ reason: null }),
      on: { 'SESSION.GONE': 'orphaned' },
    },
    orphaned: {
      description: 'No pane left in its session; waits `worktreeGrace` in case the session comes back.',
      after: { worktreeGrace: 'checking' },
      on: { 'SESSION.ALIVE': 'active' },
    },
    checking: {
      invoke: {
        src: 'checkWorktree',
        input: ({ context }) => inputOf(context),
        onDone: { target: 'checked', actions: assign({ facts: ({ event }) => event.output }) },
        onError: {
          target: 'held',
          actions: assign({ reason: ({ event }) => `check failed: ${errorText(event.error)}` }),
        },
      },
      on: { 'SESSION.ALIVE': 'active' },
    },
    checked: {
      description: 'Facts gathered: removable, held, or no longer a worktree at all.',
      always: [
        { guard: 'notRegistered', target: 'gone' },
        {
          guard: 'isHeld',
          target: 'held',
          actions: assign({ reason: ({ context }) => worktreeHold(context.facts ?? FREE_FACTS)?.reason ?? 'held' }),
        },
        { target: 'removing' },
      ],
    },
    removing: {
      description: 'Looks once more, then plain `git worktree remove`; a session coming back now cannot stop git.',
      invoke: {
        src: 'removeWorktree',
        input: ({ context }) => inputOf(context),
        onDone: [
          { guard: ({ event }) => event.output.removed, target: 'removed' },
          {
            target: 'held',
            actions: assign({ reason: ({ event }) => (event.output.removed ? null : event.output.reason) }),
          },
        ],
        onError: {
          target: 'held',
          actions: assign({ reason: ({ event }) => `remove failed: ${errorText(event.error)}` }),
        },
      },
    },
    held: {
      description: 'Something holds it (the reason is in context); looked at again after `worktreeRecheck`.',
      entry: {
        type: 'log',
        params: ({ context }) => ({ level: 'info', message: `worktree ${context.path} held: ${context.reason}` }),
      },
      after: { worktreeRecheck: 'checking' },
      on: { 'SESSION.ALIVE': 'active' },
    },
    removed: {
      type: 'final',
      entry: {
        type: 'log',
        params: ({ context }) => ({ level: 'info', message: `worktree ${context.path} removed (branch kept)` }),
      },
    },
    gone: {
      type: 'final',
      description: 'Git no longer lists it (removed by someone else): nothing to do.',
      entry: {
        type: 'log',
        params: ({ context }) => ({ level: 'info', message: `worktree ${context.path} is no longer registered` }),
      },
    },
  },
});

function inputOf(context: WorktreeContext): WorktreeInput {
  const { slug, path, repo, branch, sessionName } = context;
  return { slug, path, repo, branch, sessionName };
}
