/**
 * The schedules file (`~/.local/state/svc/schedules`, spec 2.6): what `svc schedule add` wrote, and what the listener
 * keeps of each schedule's runs, so a listener that restarts rebuilds every `schedule.<id>` actor from it and tmux.
 * Pure: its shape, the edits the command and the listener make, the name of a schedule's session, and the lines
 * `svc schedule` prints. actors/schedules/scheduleFile.ts reads and writes it under its lock.
 */
import { z } from 'zod/v3';
import { agentById, agentForPane } from '../agents/registry.js';
import type { SessionRecord } from '../protocol/index.js';
import { activePane } from '../sessions/inventory.js';
import { luxon } from './luxon.js';
import { MAX_SCHEDULES, nextRun, type ScheduleSpec, type When } from './schedule.js';

/** `a3f09c`: six hex digits, part of the session name. */
export const ScheduleId = z.string().regex(/^[0-9a-f]{6}$/);

const WhenSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('at'),
    hour: z.number().int().min(0).max(23),
    minute: z.number().int().min(0).max(59),
    days: z.array(z.number().int().min(1).max(7)).min(1).max(7),
  }),
  z.object({ kind: z.literal('every'), ms: z.number().int().safe().positive(), from: z.number().finite() }),
]);

/** How a run ended or why it did not start: shown by `svc schedule` and the app as the last result. */
export const RUN_RESULTS = [
  'started',
  'ended',
  'exited',
  'end_blocked',
  'missed',
  'previous_running',
  'too_many_running',
  'start_failed',
] as const;
export type RunResult = (typeof RUN_RESULTS)[number];

export const ScheduleEntry = z.object({
  id: ScheduleId,
  /** Registry id (`A1`). */
  agent: z.string().max(16),
  /** The program the agent starts with, as `svc schedule add` found it (`claude`, or an absolute path). */
  command: z.string().min(1).max(4096),
  /** Where the agent runs: the directory `svc schedule add` ran in. */
  cwd: z.string().min(1).max(4096),
  /** The project's name and slug (core/sessions/project.ts): the session is `svc-<slug>-sched-<id>`. */
  project: z.string().max(128),
  slug: z.string().regex(/^[A-Za-z0-9_-]{1,40}$/),
  when: WhenSchema,
  prompt: z.string().min(1).max(4000).optional(),
  maxRuntimeMs: z.number().int().safe().positive(),
  /** Epoch ms. */
  createdAt: z.number().finite(),
  /** The listener's: the last tick that decided a run (epoch ms); runs at or before it are never decided again. */
  seenUntil: z.number().finite().optional(),
  /** The listener's: the run whose session it started and still looks after. */
  run: z
    .object({
      session: z.string().max(128),
      at: z.number().finite(),
      startedAt: z.number().finite(),
      prompted: z.boolean(),
      /** A tick has seen its session (before that, a reading older than the start does not count as "gone"). */
      seen: z.boolean().optional(),
      endingSince: z.number().finite().optional(),
      /**
       * How max-runtime ends it (docs/schedules.md): `exit`, the agent's own exit command, typed again each minute;
       * `term`, SIGTERM to the pane's process, once the exit command did not end it within a minute (or the agent
       * has none).
       */
      endWith: z.enum(['exit', 'term']).optional(),
    })
    .nullable()
    .optional(),
  /** The listener's: what happened to the last run that was due. */
  last: z
    .object({ at: z.number().finite(), result: z.enum(RUN_RESULTS), note: z.string().max(300).optional() })
    .optional(),
});
export type ScheduleEntry = z.infer<typeof ScheduleEntry>;
export type ScheduleRun = NonNullable<ScheduleEntry['run']>;

export const SchedulesFile = z.object({ version: z.literal(1), schedules: z.array(ScheduleEntry).max(MAX_SCHEDULES) });
export type SchedulesFile = z.infer<typeof SchedulesFile>;

export const emptySchedules = (): SchedulesFile => ({ version: 1, schedules: [] });

/** The tmux session of a schedule's runs: one name per schedule, so "the previous run still exists" is a lookup. */
export const scheduledSessionName = (e: Pick<ScheduleEntry, 'slug' | 'id'>) => `svc-${e.slug}-sched-${e.id}`;
/** Whether a session name is one svc gives scheduled runs (counted for the three-at-once cap). */
export const isScheduledSessionName = (name: string) => /^svc-[A-Za-z0-9_-]+-sched-[0-9a-f]{6}$/.test(name);

/** A new entry for `spec`, started from `where`; `id` is fresh (the caller checks it is not taken). */
export function newEntry(
  spec: ScheduleSpec,
  where: { command: string; cwd: string; project: string; slug: string },
  id: string,
  now: number,
): ScheduleEntry {
  return {
    id,
    ...where,
    agent: spec.agent,
    when: spec.when,
    maxRuntimeMs: spec.maxRuntimeMs,
    createdAt: now,
    ...(spec.prompt !== undefined ? { prompt: spec.prompt } : {}),
  };
}

export type BookChange =
  | { kind: 'add'; entry: ScheduleEntry }
  | { kind: 'remove'; id: string }
  /** The listener's bookkeeping of one schedule's runs; a schedule removed meanwhile is left removed. */
  | { kind: 'runtime'; id: string; patch: Pick<ScheduleEntry, 'seenUntil' | 'run' | 'last'> };

export type BookResult =
  | { ok: true; file: SchedulesFile; changed: boolean }
  | { ok: false; code: 'too_many_schedules' | 'no_such_schedule'; message: string };

export function changeBook(file: SchedulesFile, change: BookChange): BookResult {
  const list = file.schedules;
  switch (change.kind) {
    case 'add':
      if (list.length >= MAX_SCHEDULES)
        return {
          ok: false,
          code: 'too_many_schedules',
          message: `at most ${MAX_SCHEDULES} schedules; remove one first`,
        };
      return { ok: true, changed: true, file: { version: 1, schedules: [...list, change.entry] } };
    case 'remove': {
      if (!list.some((e) => e.id === change.id))
        return { ok: false, code: 'no_such_schedule', message: `no schedule ${change.id} (svc schedule lists them)` };
      return { ok: true, changed: true, file: { version: 1, schedules: list.filter((e) => e.id !== change.id) } };
    }
    case 'runtime': {
      const at = list.findIndex((e) => e.id === change.id);
      if (at < 0) return { ok: true, changed: false, file };
      const next = [...list];
      next[at] = { ...list[at]!, ...change.patch };
      return { ok: true, changed: true, file: { version: 1, schedules: next } };
    }
  }
}

/**
 * Whether a scheduled run's prompt may be typed now (spec 4.8.6): the session's agent is the program in front of
 * its pane, and its screen rules read it as idle.
 */
export function promptable(entry: Pick<ScheduleEntry, 'agent'>, record: SessionRecord | null): boolean {
  const pane = record ? activePane(record) : undefined;
  if (!record || !pane || record.state !== 'idle' || pane.inMode) return false;
  return agentForPane(pane)?.id === entry.agent;
}

const DAY = ['', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

/** `weekdays 07:30`, `every 90m`: how a schedule's time reads. */
export function describeWhen(when: When): string {
  if (when.kind === 'every') {
    const m = Math.round(when.ms / 60_000);
    return m % 60 === 0 ? `every ${m / 60}h` : `every ${m}m`;
  }
  const hhmm = `${String(when.hour).padStart(2, '0')}:${String(when.minute).padStart(2, '0')}`;
  const d = when.days.join(',');
  const days =
    d === '1,2,3,4,5,6,7'
      ? 'daily'
      : d === '1,2,3,4,5'
        ? 'weekdays'
        : d === '6,7'
          ? 'weekends'
          : when.days.map((n) => DAY[n]).join(',');
  return `${days} ${hhmm}`;
}

const durationText = (ms: number) => {
  const m = Math.round(ms / 60_000);
  return m % 60 === 0 ? `${m / 60}h` : m > 60 ? `${Math.floor(m / 60)}h${m % 60}m` : `${m}m`;
};

const RESULT_TEXT: Record<RunResult, string> = {
  started: 'running',
  ended: 'ended at its max-runtime',
  exited: 'the agent ended by itself',
  end_blocked: 'max-runtime reached, could not be ended',
  missed: 'missed (the listener did not see its time)',
  previous_running: 'skipped: the previous run was still there',
  too_many_running: 'skipped: three scheduled sessions were running',
  start_failed: 'could not start',
};

/** One schedule as `svc schedule --json` and the app show it. */
export interface ScheduleView {
  id: string;
  agent: string;
  agentName: string;
  project: string;
  cwd: string;
  session: string;
  when: string;
  prompt: string | null;
  maxRuntime: string;
  /** Epoch ms of the next run, or null. */
  next: number | null;
  last: { at: number; result: RunResult; text: string; note?: string } | null;
  running: boolean;
}

export function viewSchedule(e: ScheduleEntry, now: number, zone: string): ScheduleView {
  return {
    id: e.id,
    agent: e.agent,
    agentName: agentById(e.agent)?.name ?? e.agent,
    project: e.project,
    cwd: e.cwd,
    session: scheduledSessionName(e),
    when: describeWhen(e.when),
    prompt: e.prompt ?? null,
    maxRuntime: durationText(e.maxRuntimeMs),
    next: nextRun(e.when, Math.max(now, e.seenUntil ?? 0), zone),
    last: e.last ? { ...e.last, text: RESULT_TEXT[e.last.result] } : null,
    running: Boolean(e.run),
  };
}

/**
 * The time zone schedules run in: the system's, as Node reads `TZ` or the system (`resolved`, from Intl); or why
 * not, naming it, when it is not a zone svc can use (`TZ=Mars/Olympus`, a machine with no zone): a time of day in
 * it would silently mean UTC.
 */
export function scheduleZone(
  resolved: string | undefined,
  tz: string | undefined,
): { ok: true; zone: string } | { ok: false; message: string } {
  if (resolved && resolved !== 'Etc/Unknown' && luxon().IANAZone.isValidZone(resolved))
    return { ok: true, zone: resolved };
  const named = tz ? `"${tz}" (TZ)` : `of this system (${resolved ?? 'none'})`;
  return {
    ok: false,
    message: `the time zone ${named} is not one svc knows, so a time of day would mean UTC: set TZ to a zone such as Europe/Paris or UTC`,
  };
}

/** `svc schedule`: a line per schedule, times in `zone`. */
export function scheduleLines(file: SchedulesFile, now: number, zone: string): string[] {
  if (file.schedules.length === 0) return ['no schedules (svc schedule add <agent> --at HH:MM to make one)'];
  const time = (ms: number | null) =>
    ms === null ? '-' : luxon().DateTime.fromMillis(ms, { zone }).toFormat('ccc yyyy-LL-dd HH:mm');
  return file.schedules.flatMap((e) => {
    const v = viewSchedule(e, now, zone);
    const last = v.last ? `${time(v.last.at)} ${v.last.text}${v.last.note ? ` (${v.last.note})` : ''}` : 'never ran';
    return [
      `${v.id}  ${v.agentName} in ${v.project}  ${v.when}  max ${v.maxRuntime}${v.prompt ? `  prompt "${v.prompt.slice(0, 40)}"` : ''}`,
      `        next ${time(v.next)} · last ${last}${v.running ? ` · running as ${v.session}` : ''}`,
    ];
  });
}

/** A run that a tick skipped: told to the phones in one batched notice per tick (spec 4.8.8, 6). */
export interface SkippedRun {
  id: string;
  session: string;
  agent: string;
  at: number;
  why: Extract<RunResult, 'missed' | 'previous_running' | 'too_many_running'>;
  /** How many runs of this schedule the tick found skipped (a laptop asleep through several). */
  count: number;
}

/** The one notice of a tick's skipped runs: a line per schedule, oldest time first. */
export function skippedNotice(skipped: readonly SkippedRun[], zone: string): string {
  const lines = [...skipped]
    .sort((a, b) => a.at - b.at)
    .map((s) => {
      const time = luxon().DateTime.fromMillis(s.at, { zone }).toFormat('ccc HH:mm');
      const name = agentById(s.agent)?.name ?? s.agent;
      const more = s.count > 1 ? ` (and ${s.count - 1} earlier run${s.count > 2 ? 's' : ''})` : '';
      return `${name} ${s.id} at ${time}: ${RESULT_TEXT[s.why]}${more}`;
    });
  return `${skipped.length === 1 ? 'A scheduled run was' : `${skipped.length} scheduled runs were`} not started:\n${lines.join('\n')}`;
}
