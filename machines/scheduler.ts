/**
 * The schedules (spec 4.8): invoked by the listener as `scheduler`, it spawns one `schedule.<id>` actor per entry of
 * the schedules file and, at each listener tick (a tmux reading), reads the file again (so `svc schedule add/rm`
 * take effect within a tick) and decides for all schedules at once which due runs start and which are skipped
 * (core/schedules/schedule.ts decideTick; the three-at-once cap is shared, so it is decided here, in order). What
 * was skipped goes to the phones as one notice per tick.
 *
 *   idle ─TICK─▶ reading ─(file, wall clock, zone)─▶ idle      (a TICK while reading only updates the sessions)
 *
 * Removing a schedule stops its actor; a session it started keeps running (spec 4.5).
 *
 * A schedule actor that fails is stopped and logged, and rebuilt from the file (its run is there) at the first reading
 * after its backoff; meanwhile nothing is decided for it. At the fifth failure in ten minutes it is left off until the
 * listener restarts, and `svc verify` says so (core/supervision.ts).
 */
import { assign, enqueueActions, fromPromise, sendParent, sendTo, setup } from 'xstate';
import type { SessionRecord } from '../core/protocol/index.js';
import {
  isScheduledSessionName,
  type ScheduleEntry,
  type SchedulesFile,
  type SkippedRun,
  scheduledSessionName,
} from '../core/schedules/book.js';
import { decideTick } from '../core/schedules/schedule.js';
import { decideFailure, describeFailure, type Failures, isDown, pruneFailures } from '../core/supervision.js';
import { clockOf, type LogParams, type SupervisorInput } from './log.js';
import { type ScheduleKeys, scheduleMachine } from './schedule.js';

/** What `readSchedules` returns: the file, the wall clock and the local time zone, read together. */
export interface ScheduleReading {
  file: SchedulesFile;
  now: number;
  /** null when the file holds no schedule: then nothing needs it, and learning it costs memory (actors/schedules/runs.ts). */
  zone: string | null;
}

export type SchedulerInput = SupervisorInput;

export interface SchedulerContext {
  input: SchedulerInput;
  /** The sessions of the newest tmux reading, by name. */
  sessions: Record<string, SessionRecord>;
  /** Schedule ids that have a `schedule.<id>` child. */
  ids: string[];
  /** Why the last reading failed (a broken file): logged once, not at every tick. */
  problem: string | null;
  /** Schedule actors that failed, by actor id (core/supervision.ts), for `svc verify` and `svc debug state`. */
  failures: Record<string, Failures>;
}

export type SchedulerEvent =
  | { type: 'TICK'; sessions: SessionRecord[] }
  | ScheduleKeys
  /** What the listener's session actor did with a schedule's keys. */
  | { type: 'SCHEDULE.KEYS_RESULT'; id: string; ok: boolean; code?: string }
  | { type: `xstate.error.actor.schedule.${string}`; error: unknown };

export const scheduleActorId = (id: string) => `schedule.${id}`;

export const schedulerMachine = setup({
  types: {
    context: {} as SchedulerContext,
    input: {} as SchedulerInput,
    events: {} as SchedulerEvent,
  },
  actors: {
    schedule: scheduleMachine,
    /** The schedules file with the time (actors/schedules/runs.ts); a broken file fails the reading (logged). */
    readSchedules: fromPromise<ScheduleReading>(async () => {
      throw new Error('no readSchedules provided');
    }),
  },
  actions: {
    log: (_, _params: LogParams) => {},
    /** Schedule actor `id` failed: logged with its stack and the last event it took (actors/listener.ts). */
    reportFailure: (_, _params: { id: string; error: unknown; what: string }) => {},
    /** Record that runs up to `seenUntil` were decided, so none is decided twice (also after a restart). */
    saveSeen: (_, _params: { ids: string[]; seenUntil: number }) => {},
    /** One sealed notice to the phones of what this tick skipped. */
    notifySkipped: (_, _params: { skipped: SkippedRun[]; zone: string }) => {},
  },
}).createMachine({
  id: 'scheduler',
  context: ({ input }) => ({ input, sessions: {}, ids: [], problem: null, failures: input.failures ?? {} }),
  initial: 'idle',
  on: {
    'SCHEDULE.KEYS': { actions: sendParent(({ event }) => event) },
    'SCHEDULE.KEYS_RESULT': {
      // a schedule whose actor failed meanwhile has none to tell: it reads its run from the file when rebuilt
      guard: ({ context, event }) => context.ids.includes(event.id),
      actions: sendTo(
        ({ event }) => scheduleActorId(event.id),
        ({ event }) => ({ type: 'KEYS.RESULT' as const, ok: event.ok, ...(event.code ? { code: event.code } : {}) }),
      ),
    },
    'xstate.error.actor.schedule.*': {
      description:
        'A schedule actor that failed is stopped and logged; the first reading after its backoff rebuilds it from the file (its run is there); given up at the fifth failure in ten minutes.',
      actions: enqueueActions(({ context, event, enqueue }) => {
        const id = event.type.slice('xstate.error.actor.'.length);
        const scheduleId = id.slice('schedule.'.length);
        const { error } = event as Extract<SchedulerEvent, { error: unknown }>;
        const { record, decision } = decideFailure(
          'schedule',
          context.failures[id],
          clockOf(context),
          describeFailure(error),
        );
        enqueue.stopChild(id);
        enqueue.assign({
          ids: context.ids.filter((i) => i !== scheduleId),
          failures: { ...context.failures, [id]: record },
        });
        const what =
          decision.kind === 'restart'
            ? `rebuilt from the schedules file at the first reading after ${Math.round(decision.delayMs / 1000)} s`
            : 'failed 5 times in ten minutes: not restarted until the listener is; its runs wait';
        enqueue({ type: 'reportFailure', params: { id, error, what } });
      }),
    },
  },
  states: {
    idle: {
      on: {
        TICK: { target: 'reading', actions: assign({ sessions: ({ event }) => byName(event.sessions) }) },
      },
    },
    reading: {
      on: { TICK: { actions: assign({ sessions: ({ event }) => byName(event.sessions) }) } },
      invoke: {
        src: 'readSchedules',
        onDone: {
          target: 'idle',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const { file, now, zone } = event.output;
            const listed = new Set(file.schedules.map((e) => e.id));
            // a failed schedule's record goes when its window passes, or with the schedule
            let failures = pruneFailures(
              context.failures,
              clockOf(context),
              (id) => !listed.has(id.slice('schedule.'.length)),
            );
            const down = (entry: ScheduleEntry) => isDown(failures[scheduleActorId(entry.id)], clockOf(context));
            const live = file.schedules.filter((e) => !down(e));
            for (const id of context.ids) {
              if (!listed.has(id)) {
                enqueue.stopChild(scheduleActorId(id));
                enqueue({ type: 'log', params: { level: 'info', message: `schedule ${id}: removed` } });
              }
            }
            for (const entry of live) {
              if (context.ids.includes(entry.id)) continue;
              const id = scheduleActorId(entry.id);
              enqueue.spawnChild('schedule', { id, input: { entry } });
              // rebuilt after its backoff: no restart is due any more
              const failed = failures[id];
              if (failed?.retryAt) failures = { ...failures, [id]: { ...failed, retryAt: null } };
            }
            enqueue.assign({ ids: live.map((e) => e.id), problem: null, failures });
            if (zone === null || live.length === 0) return; // no schedule to decide on

            let running = Object.keys(context.sessions).filter(isScheduledSessionName).length;
            const skipped: SkippedRun[] = [];
            const decided: string[] = [];
            for (const entry of live) {
              const session = context.sessions[scheduledSessionName(entry)] ?? null;
              const decisions = decideTick(entry.when, entry.seenUntil ?? entry.createdAt, now, zone, {
                previousRunning: session !== null || busy(entry),
                scheduledRunning: running,
              });
              const to = scheduleActorId(entry.id);
              // a child spawned just now gets the tick's facts too (events wait for its start)
              enqueue.sendTo(to, { type: 'TICK', now, session });
              const skips = decisions.filter((d) => d.kind === 'skip');
              for (const d of decisions) {
                if (d.kind === 'start') {
                  running++;
                  enqueue.sendTo(to, { type: 'START', at: d.at, now });
                }
              }
              const last = skips[skips.length - 1];
              if (last?.kind === 'skip' && !decisions.some((d) => d.kind === 'start')) {
                enqueue.sendTo(to, { type: 'SKIP', at: last.at, why: last.why });
              }
              if (last?.kind === 'skip') {
                const session = scheduledSessionName(entry);
                skipped.push({
                  id: entry.id,
                  session,
                  agent: entry.agent,
                  at: last.at,
                  why: last.why,
                  count: skips.length,
                });
              }
              if (decisions.some((d) => d.kind !== 'wait')) decided.push(entry.id);
            }
            if (decided.length > 0) enqueue({ type: 'saveSeen', params: { ids: decided, seenUntil: now } });
            if (skipped.length > 0) {
              enqueue({ type: 'notifySkipped', params: { skipped, zone } });
              for (const s of skipped)
                enqueue({
                  type: 'log',
                  params: { level: 'info', message: `schedule ${s.id}: run skipped (${s.why})` },
                });
            }
          }),
        },
        onError: {
          target: 'idle',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const problem = event.error instanceof Error ? event.error.message : String(event.error);
            if (problem === context.problem) return;
            enqueue.assign({ problem });
            enqueue({ type: 'log', params: { level: 'warn', message: `schedules not read, none run: ${problem}` } });
          }),
        },
      },
    },
  },
});

const byName = (sessions: SessionRecord[]) => Object.fromEntries(sessions.map((r) => [r.name, r]));

/** A run the listener still looks after (its session may not show in this reading yet): the next one waits. */
const busy = (entry: ScheduleEntry) => Boolean(entry.run);
