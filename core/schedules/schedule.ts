/**
 * Scheduled sessions (spec 4.8, 8): what `svc schedule add` accepts, when a schedule runs next, and what a listener
 * tick does with a run that is due. Pure: the time zone is an argument and every date computation goes through
 * luxon (daylight-saving changes included); the listener's schedule actors and the command carry it out.
 *
 * Decisions where the spec is silent (docs/schedules.md):
 * - `--at HH:MM` that does not exist on a spring-forward night (02:30 in Europe/Berlin) runs at the first minute
 *   that exists after it (03:30, as luxon moves it); one that happens twice on a fall-back night runs once, at the
 *   first (earlier offset).
 * - `--at` without `--days` means daily; `--days` without `--at` is refused (no time to run at).
 * - `--every` counts real elapsed time from creation (a DST change does not move it); with `--at`/`--days` it is
 *   refused: one kind of schedule at a time.
 */
import { PROMPT_AGENTS } from '../agents/registry.js';
import { luxon } from './luxon.js';

export const MAX_SCHEDULES = 20;
export const MAX_SCHEDULED_RUNNING = 3;
/** A run starts only if seen within this long after its time (spec 4.8.2: "within 2 minutes"). */
export const START_WINDOW_MS = 2 * 60_000;
export const MIN_EVERY_MS = 15 * 60_000;
export const MAX_RUNTIME = { min: 5 * 60_000, max: 24 * 3_600_000, default: 2 * 3_600_000 } as const;

const DAY_NAMES = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;

export type When =
  /** Local wall-clock time on the given ISO weekdays (1 = Monday … 7 = Sunday). */
  | { kind: 'at'; hour: number; minute: number; days: number[] }
  /** Every `ms` from `from` (epoch ms, the creation). */
  | { kind: 'every'; ms: number; from: number };

export interface ScheduleSpec {
  agent: string;
  when: When;
  prompt?: string;
  maxRuntimeMs: number;
}

export type ScheduleProblem = { code: 'bad_schedule' | 'prompt_not_accepted' | 'too_many_schedules'; message: string };

/** `30m`, `2h`, `1h30m`, `90s` is not accepted: minutes and hours only. */
export function parseDuration(text: string): number | null {
  const m = /^(?:(\d{1,3})h)?(?:(\d{1,4})m)?$/.exec(text.trim());
  if (!m || (m[1] === undefined && m[2] === undefined)) return null;
  return (Number(m[1] ?? 0) * 60 + Number(m[2] ?? 0)) * 60_000;
}

/** `daily`, `weekdays`, `weekends` or a comma list of `mon`…`sun`: ISO weekdays, sorted. */
export function parseDays(text: string): number[] | null {
  const t = text.trim().toLowerCase();
  if (t === 'daily') return [1, 2, 3, 4, 5, 6, 7];
  if (t === 'weekdays') return [1, 2, 3, 4, 5];
  if (t === 'weekends') return [6, 7];
  const days = t.split(',').map((d) => DAY_NAMES.indexOf(d.trim() as (typeof DAY_NAMES)[number]) + 1);
  if (days.length === 0 || days.some((d) => d === 0)) return null;
  return [...new Set(days)].sort((a, b) => a - b);
}

/** What `svc schedule add` was given, checked against spec 4.8 and 8; `existing`: how many schedules there are. */
export function parseSchedule(
  opts: { agent: string; at?: string; days?: string; every?: string; prompt?: string; maxRuntime?: string },
  now: number,
  existing: number,
): { ok: true; spec: ScheduleSpec } | { ok: false; problem: ScheduleProblem } {
  const bad = (message: string) => ({ ok: false as const, problem: { code: 'bad_schedule' as const, message } });
  if (existing >= MAX_SCHEDULES)
    return {
      ok: false,
      problem: { code: 'too_many_schedules', message: `at most ${MAX_SCHEDULES} schedules; remove one first` },
    };
  if (opts.prompt !== undefined && !PROMPT_AGENTS.has(opts.agent))
    return {
      ok: false,
      problem: {
        code: 'prompt_not_accepted',
        message: 'only Claude Code, Codex, Gemini CLI and pi take a scheduled --prompt (spec 7.7)',
      },
    };
  if (opts.prompt !== undefined && opts.prompt.trim() === '') return bad('--prompt is empty');
  let maxRuntimeMs: number = MAX_RUNTIME.default;
  if (opts.maxRuntime !== undefined) {
    const d = parseDuration(opts.maxRuntime);
    if (d === null || d < MAX_RUNTIME.min || d > MAX_RUNTIME.max)
      return bad(`--max-runtime ${opts.maxRuntime}: between 5m and 24h (e.g. 90m, 2h)`);
    maxRuntimeMs = d;
  }
  let when: When;
  if (opts.every !== undefined) {
    if (opts.at !== undefined || opts.days !== undefined) return bad('--every cannot go with --at or --days');
    const ms = parseDuration(opts.every);
    if (ms === null || ms < MIN_EVERY_MS) return bad(`--every ${opts.every}: at least 15m (e.g. 30m, 2h)`);
    when = { kind: 'every', ms, from: now };
  } else {
    if (opts.at === undefined) return bad('say when: --at HH:MM [--days …] or --every <N>m|<N>h');
    const m = /^([01]?\d|2[0-3]):([0-5]\d)$/.exec(opts.at.trim());
    if (!m) return bad(`--at ${opts.at}: a local time HH:MM, 00:00 to 23:59`);
    const days = parseDays(opts.days ?? 'daily');
    if (!days) return bad(`--days ${opts.days}: daily, weekdays, weekends or a list like mon,wed,fri`);
    when = { kind: 'at', hour: Number(m[1]), minute: Number(m[2]), days };
  }
  return {
    ok: true,
    spec: { agent: opts.agent, when, maxRuntimeMs, ...(opts.prompt !== undefined ? { prompt: opts.prompt } : {}) },
  };
}

/** The scheduled times of `when` in (`after`, `until`], epoch ms, oldest first, in time zone `zone`. */
export function runsBetween(when: When, after: number, until: number, zone: string): number[] {
  const out: number[] = [];
  if (until <= after) return out;
  if (when.kind === 'every') {
    const k = Math.max(1, Math.floor((after - when.from) / when.ms) + 1);
    for (let t = when.from + k * when.ms; t <= until && out.length < 1000; t += when.ms) out.push(t);
    return out;
  }
  // day by day in local time, from the day before `after` (a run late in the evening may be for that day)
  let day = luxon().DateTime.fromMillis(after, { zone }).startOf('day').minus({ days: 1 });
  const last = luxon().DateTime.fromMillis(until, { zone }).endOf('day');
  for (; day <= last && out.length < 1000; day = day.plus({ days: 1 })) {
    if (!when.days.includes(day.weekday)) continue;
    const t = day.set({ hour: when.hour, minute: when.minute, second: 0, millisecond: 0 }).toMillis();
    if (t > after && t <= until) out.push(t);
  }
  return out;
}

/** The next scheduled time after `after` (epoch ms), in `zone`; null when there is none within a year. */
export function nextRun(when: When, after: number, zone: string): number | null {
  if (when.kind === 'every') return runsBetween(when, after, after + when.ms, zone)[0] ?? null;
  return runsBetween(when, after, after + 8 * 24 * 3_600_000, zone)[0] ?? null;
}

export type TickDecision =
  | { kind: 'wait' }
  /** Start the run of time `at`. */
  | { kind: 'start'; at: number }
  /** `at` was due and is skipped (spec 4.8.2-4): reported in the tick's batched push. */
  | { kind: 'skip'; at: number; why: 'missed' | 'previous_running' | 'too_many_running' };

/**
 * One listener tick for one schedule at `now`: the runs due since `seenUntil` (the last tick that looked) are
 * started or skipped. Only the newest due run may start, and only within START_WINDOW_MS of its time; older ones,
 * and a newest one seen too late (a laptop asleep through it, the clock jumping forward), are missed — never started
 * late. A run is skipped when the previous run's session still exists, or MAX_SCHEDULED_RUNNING already run.
 */
export function decideTick(
  when: When,
  seenUntil: number,
  now: number,
  zone: string,
  facts: { previousRunning: boolean; scheduledRunning: number },
): TickDecision[] {
  const due = runsBetween(when, seenUntil, now, zone);
  if (due.length === 0) return [{ kind: 'wait' }];
  const out: TickDecision[] = due.slice(0, -1).map((at) => ({ kind: 'skip', at, why: 'missed' }));
  const at = due[due.length - 1]!;
  if (now - at > START_WINDOW_MS) out.push({ kind: 'skip', at, why: 'missed' });
  else if (facts.previousRunning) out.push({ kind: 'skip', at, why: 'previous_running' });
  else if (facts.scheduledRunning >= MAX_SCHEDULED_RUNNING) out.push({ kind: 'skip', at, why: 'too_many_running' });
  else out.push({ kind: 'start', at });
  return out;
}

/** When a run started at `startedAt` must be ended (spec 4.8.7), the way the app's End does: never a kill. */
export const endDue = (startedAt: number, maxRuntimeMs: number, now: number): boolean =>
  now - startedAt >= maxRuntimeMs;
