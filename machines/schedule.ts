/**
 * One schedule: `schedule.<id>` (spec 4.8; core/schedules/). The scheduler (machines/scheduler.ts) decides at each
 * listener tick whether a due run starts or is skipped, for all schedules at once (the three-at-once cap is shared);
 * this actor carries out its own runs: start the session, type the prompt once, end it at its max-runtime.
 *
 *   waiting ─START─▶ starting ──▶ running ──max-runtime──▶ ending ──session gone──▶ done
 *   done/skipped ◀─SKIP─┘   │        │ prompt: pending → typing → typed (once, when the agent reads idle)
 *        ▲──────────────────┘ (failed)└──session gone (the agent ended itself)──▶ done
 *
 * Deadlines are timestamps in the file (`run.startedAt`, `run.endingSince`), checked on each TICK against the
 * tick's wall-clock time, so a listener that restarts (or a laptop that slept) rebuilds the run from the file and
 * tmux instead of from a timer. Ending types the agent's own exit command through its session actor, the way the
 * app's End does; it is never a kill. `done` and `skipped` wait for the next run like `waiting`. In any of those three,
 * a reading that shows its session while it has no run means it failed between starting the session and writing the
 * run down: it takes that session as its run (the prompt is typed, max-runtime counts from then).
 */
import { assign, enqueueActions, fromPromise, sendParent, setup } from 'xstate';
import type { SessionRecord } from '../core/protocol/index.js';
import {
  promptable,
  type RunResult,
  type ScheduleEntry,
  type ScheduleRun,
  scheduledSessionName,
} from '../core/schedules/book.js';
import { endDue } from '../core/schedules/schedule.js';
import { EXIT_COMMANDS } from '../core/sessions/control.js';
import type { LogParams } from './log.js';

/** How long an exit command may take before it is typed again (the agent was busy, a prompt came up). */
export const ENDING_RETRY_MS = 60_000;
/** A started session not seen by any reading within this long is taken as gone. */
export const SEEN_WITHIN_MS = 60_000;

export interface ScheduleInput {
  entry: ScheduleEntry;
}

type Last = NonNullable<ScheduleEntry['last']>;

export interface ScheduleContext {
  entry: ScheduleEntry;
  run: ScheduleRun | null;
  last: Last | null;
  /** The time of the newest TICK (epoch ms). */
  now: number;
}

export type ScheduleEvent =
  /** Start the run of time `at` (decided by the scheduler at wall-clock `now`). */
  | { type: 'START'; at: number; now: number }
  | { type: 'SKIP'; at: number; why: Extract<RunResult, 'missed' | 'previous_running' | 'too_many_running'> }
  /** A listener tick: the run's session as tmux shows it now (null: not there). */
  | { type: 'TICK'; now: number; session: SessionRecord | null }
  /** What became of the keys this actor asked the listener to type (SCHEDULE.KEYS). */
  | { type: 'KEYS.RESULT'; ok: boolean; code?: string };

/** What the scheduler passes on to the listener: type into the run's session, through its session actor. */
export interface ScheduleKeys {
  type: 'SCHEDULE.KEYS';
  id: string;
  session: string;
  text: string;
  keys: string[];
  /** `end`: the agent's exit command; `term`: SIGTERM to the pane's process (machines/session.ts). */
  control?: 'end' | 'term';
  /** Wall-clock time of the tick that asked (epoch ms): the session's rate limit counts it. */
  at: number;
}

/** Startable with `startRun`: the session's name once tmux made it. */
export interface StartRunInput {
  entry: ScheduleEntry;
  session: string;
}

/** Not looking after a run, and its session is in tmux: that session is its run (`unclaimedSession`). */
const CLAIM_SESSION = { guard: 'unclaimedSession', target: '#schedule.running', actions: 'claimSession' } as const;

export const scheduleMachine = setup({
  types: {
    context: {} as ScheduleContext,
    input: {} as ScheduleInput,
    events: {} as ScheduleEvent,
  },
  actors: {
    /** Makes the run's tmux session (actors/schedules/runs.ts). */
    startRun: fromPromise<void, StartRunInput>(async () => {
      throw new Error('no startRun provided');
    }),
  },
  actions: {
    log: (_, _params: LogParams) => {},
    /** Write the run's bookkeeping to the schedules file. */
    persist: (_, _params: { id: string; patch: Pick<ScheduleEntry, 'run' | 'last'> }) => {},
    /** Its session, found in tmux with no run in the file, becomes its run, started now (`unclaimedSession`). */
    claimSession: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'TICK' || !event.session) return;
      const run: ScheduleRun = {
        session: event.session.name,
        at: event.now, // the time it was due is not known: the file never had it
        startedAt: event.now,
        prompted: false,
        seen: true,
      };
      enqueue.assign({ run, now: event.now });
      enqueue({
        type: 'persist',
        params: { id: context.entry.id, patch: { run, last: context.last ?? undefined } },
      } as never);
      const message = `schedule ${context.entry.id}: ${run.session} runs with no run in the file (its actor failed after starting it): looked after from now, its max-runtime counted from now`;
      enqueue({ type: 'log', params: { level: 'warn', message } } as never);
    }),
    /** The run is over: its result is the last one, and the actor looks after no session any more. */
    finish: enqueueActions(({ context, enqueue }, params: { result: Extract<RunResult, 'ended' | 'exited'> }) => {
      if (!context.run) return;
      // how max-runtime ended it, for `svc schedule` and the app
      const note =
        params.result !== 'ended'
          ? undefined
          : context.run.endWith === 'term'
            ? 'SIGTERM to its process (its exit command had not ended it)'
            : `its exit command ${EXIT_COMMANDS[context.entry.agent] ?? ''}`.trimEnd();
      const last = { at: context.run.at, result: params.result, ...(note ? { note } : {}) };
      enqueue.assign({ run: null, last });
      // (named actions of this setup are not typed inside it)
      enqueue({ type: 'persist', params: { id: context.entry.id, patch: { run: null, last } } } as never);
      const how = params.result === 'ended' ? 'ended at its max-runtime' : 'the agent ended by itself';
      const message = `schedule ${context.entry.id}: ${context.run.session} ${how}`;
      enqueue({ type: 'log', params: { level: 'info', message } } as never);
    }),
  },
  guards: {
    hasRun: ({ context }) => context.run !== null,
    prompted: ({ context }) => !context.entry.prompt || context.run?.prompted === true,
    ending: ({ context }) => context.run?.endingSince !== undefined,
    /** A reading taken before tmux made the session does not count: gone once seen, or a minute after the start. */
    sessionGone: ({ context, event }) =>
      event.type === 'TICK' &&
      event.session === null &&
      (context.run?.seen === true || event.now - (context.run?.startedAt ?? 0) >= SEEN_WITHIN_MS),
    pastMaxRuntime: ({ context, event }) =>
      event.type === 'TICK' &&
      context.run !== null &&
      endDue(context.run.startedAt, context.entry.maxRuntimeMs, event.now),
    /**
     * Its session is in tmux but the file holds no run: the actor failed after starting it and before writing it
     * down (rebuilt from the file, it does not know it). Looked after from now on, so its prompt is typed (it cannot
     * have been: that is written first) and its max-runtime counts.
     */
    unclaimedSession: ({ context, event }) => event.type === 'TICK' && event.session !== null && context.run === null,
    mayPrompt: ({ context, event }) => event.type === 'TICK' && promptable(context.entry, event.session),
    endAgain: ({ context, event }) =>
      event.type === 'TICK' && event.now - (context.run?.endingSince ?? event.now) >= ENDING_RETRY_MS,
  },
}).createMachine({
  id: 'schedule',
  context: ({ input }) => ({
    entry: input.entry,
    run: input.entry.run ?? null,
    last: input.entry.last ?? null,
    now: 0,
  }),
  initial: 'rebuilding',
  states: {
    rebuilding: {
      description: 'From the file: a run it still looks after goes on where it was; else it waits.',
      always: [{ guard: 'ending', target: 'ending' }, { guard: 'hasRun', target: 'running' }, { target: 'waiting' }],
    },
    waiting: {
      description: 'No run yet; the scheduler sends START or SKIP when one is due.',
      on: { START: 'starting', SKIP: 'skipped', TICK: CLAIM_SESSION },
    },
    starting: {
      entry: assign({
        run: ({ context, event }) => {
          const { at, now } = event as Extract<ScheduleEvent, { type: 'START' }>;
          return { session: scheduledSessionName(context.entry), at, startedAt: now, prompted: false };
        },
        now: ({ event }) => (event as Extract<ScheduleEvent, { type: 'START' }>).now,
      }),
      invoke: {
        src: 'startRun',
        input: ({ context }) => ({ entry: context.entry, session: context.run!.session }),
        onDone: {
          target: 'running',
          actions: [
            assign({ last: ({ context }) => ({ at: context.run!.at, result: 'started' as const }) }),
            {
              type: 'persist',
              params: ({ context }) => ({ id: context.entry.id, patch: { run: context.run, last: context.last! } }),
            },
            {
              type: 'log',
              params: ({ context }) => ({
                level: 'info',
                message: `schedule ${context.entry.id}: started ${context.run!.session}`,
              }),
            },
          ],
        },
        onError: {
          target: 'done',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const note = (event.error instanceof Error ? event.error.message : String(event.error)).slice(0, 300);
            const last = { at: context.run!.at, result: 'start_failed' as const, note };
            enqueue.assign({ run: null, last });
            enqueue({ type: 'persist', params: { id: context.entry.id, patch: { run: null, last } } });
            enqueue({ type: 'log', params: { level: 'warn', message: `schedule ${context.entry.id}: ${note}` } });
          }),
        },
      },
    },
    running: {
      description: 'Its session runs; ended at max-runtime, or done when the agent ends by itself.',
      on: {
        TICK: [
          { guard: 'sessionGone', target: 'done', actions: { type: 'finish', params: { result: 'exited' } } },
          { guard: 'pastMaxRuntime', target: 'ending' },
          {
            guard: ({ context, event }) => event.session !== null && context.run?.seen !== true,
            actions: assign({ run: ({ context }) => ({ ...context.run!, seen: true }) }),
          },
        ],
      },
      initial: 'prompt',
      states: {
        prompt: {
          always: [{ guard: 'prompted', target: 'typed' }, { target: 'pending' }],
        },
        pending: {
          description: 'The prompt waits until the agent is in front of its pane and reads idle (spec 4.8.6).',
          on: {
            TICK: {
              guard: 'mayPrompt',
              target: 'typing',
              actions: [
                // written as sent before the keys leave: an actor rebuilt from the file while they are in flight
                // does not type the prompt again (at most once; a refusal below says it was not typed)
                assign({ run: ({ context }) => ({ ...context.run!, prompted: true }) }),
                {
                  type: 'persist',
                  params: ({ context }) => ({
                    id: context.entry.id,
                    patch: { run: context.run, last: context.last ?? undefined },
                  }),
                },
                sendParent(({ context, event }) => ({
                  type: 'SCHEDULE.KEYS',
                  id: context.entry.id,
                  session: context.run!.session,
                  text: context.entry.prompt!,
                  keys: ['Enter'],
                  at: event.now,
                })),
              ],
            },
          },
        },
        typing: {
          on: {
            'KEYS.RESULT': [
              { guard: ({ event }) => event.ok, target: 'typed' },
              {
                // refused (the screen changed, rate limit): looked at again on the next idle tick, never typed twice
                target: 'pending',
                actions: [
                  assign({ run: ({ context }) => ({ ...context.run!, prompted: false }) }),
                  {
                    type: 'persist',
                    params: ({ context }) => ({
                      id: context.entry.id,
                      patch: { run: context.run, last: context.last ?? undefined },
                    }),
                  },
                  {
                    type: 'log',
                    params: ({ context, event }) => ({
                      level: 'warn',
                      message: `schedule ${context.entry.id}: prompt not typed (${event.code ?? 'refused'}); trying again when idle`,
                    }),
                  },
                ],
              },
            ],
          },
        },
        typed: { description: 'Typed once; never again for this run.' },
      },
    },
    ending: {
      description:
        "Max-runtime, the gentlest way first: the agent's own exit command, typed again each minute it is still there; after a minute (or at once for an agent with none) SIGTERM to the pane's process, sent again each minute; never a kill of tmux.",
      entry: enqueueActions(({ context, event, enqueue }) => {
        // rebuilt from the file (a restarted listener): the last attempt's time stands, and the next tick a minute
        // after it tries again, SIGTERM by then; nothing is sent at once, so an exit command is not typed twice
        if ((event as { type: string }).type === 'xstate.init') return;
        const now = event.type === 'TICK' ? event.now : context.now;
        const first = context.run!.endingSince;
        const escalate = first !== undefined && context.run!.endWith !== 'term' && now - first >= ENDING_RETRY_MS;
        const endWith: 'exit' | 'term' = escalate || context.run!.endWith === 'term' ? 'term' : 'exit';
        const run = { ...context.run!, endingSince: event.type === 'TICK' ? now : (first ?? now), endWith };
        enqueue.assign({ run });
        enqueue({ type: 'persist', params: { id: context.entry.id, patch: { run, last: context.last ?? undefined } } });
        const control = endWith === 'term' ? ('term' as const) : ('end' as const);
        const end = { id: context.entry.id, session: run.session, text: '', keys: [], control, at: run.endingSince };
        enqueue.sendParent({ type: 'SCHEDULE.KEYS', ...end } satisfies ScheduleKeys);
        const how =
          endWith === 'exit'
            ? 'with its exit command'
            : escalate
              ? 'with SIGTERM to its process (its exit command did not end it within a minute)'
              : 'with SIGTERM to its process';
        enqueue({
          type: 'log',
          params: {
            level: 'info',
            message: `schedule ${context.entry.id}: max-runtime reached, ending ${run.session} ${how}`,
          },
        });
      }),
      on: {
        TICK: [
          { guard: 'sessionGone', target: 'done', actions: { type: 'finish', params: { result: 'ended' } } },
          { guard: 'endAgain', target: 'ending', reenter: true },
        ],
        'KEYS.RESULT': [
          {
            description: 'An agent with no exit command: SIGTERM to its process at once.',
            guard: ({ context, event }) =>
              !event.ok && event.code === 'not_supported' && context.run?.endWith !== 'term',
            target: 'ending',
            reenter: true,
            actions: assign({ run: ({ context }) => ({ ...context.run!, endWith: 'term' as const }) }),
          },
          {
            guard: ({ event }) => !event.ok,
            actions: enqueueActions(({ context, event, enqueue }) => {
              const what = context.run?.endWith === 'term' ? 'SIGTERM' : 'exit command';
              const note = `${what} refused (${event.code ?? 'refused'}); tried again in a minute`;
              const last = { at: context.run!.at, result: 'end_blocked' as const, note };
              enqueue.assign({ last });
              enqueue({ type: 'persist', params: { id: context.entry.id, patch: { run: context.run, last } } });
              enqueue({ type: 'log', params: { level: 'warn', message: `schedule ${context.entry.id}: ${note}` } });
            }),
          },
        ],
      },
    },
    done: {
      description: 'The last run is over (or could not start); waits for the next.',
      on: { START: 'starting', SKIP: 'skipped', TICK: CLAIM_SESSION },
    },
    skipped: {
      description: 'The last due run was skipped (missed, the previous run still there, three running).',
      entry: enqueueActions(({ context, event, enqueue }) => {
        if (event.type !== 'SKIP') return;
        const last = { at: event.at, result: event.why };
        enqueue.assign({ last });
        enqueue({ type: 'persist', params: { id: context.entry.id, patch: { run: context.run, last } } });
      }),
      on: { START: 'starting', SKIP: { target: 'skipped', reenter: true }, TICK: CLAIM_SESSION },
    },
  },
});
