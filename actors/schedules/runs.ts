/**
 * The listener's side of the schedules (machines/scheduler.ts, machines/schedule.ts): reading the schedules file
 * with the wall clock and the local time zone at each tick, starting a run's tmux session, keeping the file's
 * bookkeeping, and telling the phones what a tick skipped.
 *
 * `SVC_CLOCK_OFFSET_MS` (tests, and trying a schedule out) moves the scheduler's wall clock by that many ms; nothing
 * else in the listener reads it (docs/schedules.md).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fromPromise } from 'xstate';
import { agentById } from '../../core/agents/registry.js';
import { MAX_NOTIFY_CHARS } from '../../core/mcp/ask.js';
import type { ScheduleRequest } from '../../core/protocol/bodies.js';
import type { RefusalCode, SessionRecord } from '../../core/protocol/index.js';
import {
  type BookChange,
  newEntry,
  type ScheduleView,
  type SkippedRun,
  skippedNotice,
  viewSchedule,
} from '../../core/schedules/book.js';
import { luxon } from '../../core/schedules/luxon.js';
import { parseSchedule } from '../../core/schedules/schedule.js';
import { type PastSession, startedProgram } from '../../core/sessions/control.js';
import { activePane } from '../../core/sessions/inventory.js';
import { metaOptions } from '../../core/sessions/launch.js';
import { projectSlug } from '../../core/sessions/project.js';
import type { StartRunInput } from '../../machines/schedule.js';
import type { ScheduleReading } from '../../machines/scheduler.js';
import type { Logger } from '../daemon/logger.js';
import type { Tmux } from '../tmux/tmux.js';
import { onPath } from '../which.js';
import { changeSchedules, readSchedules, ScheduleFileError } from './scheduleFile.js';

export interface ScheduleDeps {
  /** `~/.local/state/svc/schedules`. */
  path: string;
  tmux: Pick<Tmux, 'newSession'>;
  log: Pick<Logger, 'warn' | 'error'>;
  /** Seal a notice for the phones (actors/mcp/asks.ts `event`). */
  notify: (session: string, message: string) => void;
  env?: Readonly<Record<string, string | undefined>>;
  /** The schedules as the phones see them changed (called at a tick, and once at the first). */
  onList?: (views: ScheduleView[]) => void;
}

/** What became of a schedule request from the phone. */
export type PhoneScheduleOutcome = { ok: true; id: string } | { ok: false; code: RefusalCode; message: string };

/** The wall clock's offset for the scheduler (ms): `SVC_CLOCK_OFFSET_MS`, an integer, else 0. */
export function clockOffset(env: Readonly<Record<string, string | undefined>>): number {
  const raw = env.SVC_CLOCK_OFFSET_MS?.trim();
  return raw && /^-?\d{1,13}$/.test(raw) ? Number(raw) : 0;
}

let zoneOf: { tz: string | undefined; zone: string } | null = null;

/**
 * The process's time zone (TZ, else the system's): what the person means by "07:30". Node learns the zone once and
 * again only when TZ is set, so it is asked again only then: luxon makes an `Intl.DateTimeFormat` each time it is
 * asked (0.2 ms, at every 5 s tick of an idle listener).
 */
export function localZone(): string {
  const tz = process.env.TZ;
  if (zoneOf === null || zoneOf.tz !== tz) zoneOf = { tz, zone: luxon().DateTime.local().zoneName };
  return zoneOf.zone;
}

export function scheduleAdapters(deps: ScheduleDeps) {
  const offset = clockOffset(deps.env ?? process.env);
  const change = (c: BookChange) => {
    try {
      changeSchedules(deps.path, c);
    } catch (err) {
      deps.log.error(`could not update the schedules file ${deps.path}: ${(err as Error).message}`);
    }
  };
  let listed: string | null = null;
  return {
    readSchedules: fromPromise<ScheduleReading>(async () => {
      const file = readSchedules(deps.path);
      const now = Date.now() + offset;
      // Learning the zone wakes ICU's time-zone data, about 8 MiB the listener would then keep resident
      // (docs/benchmarks.md, "ICU, and where the rest is"): only a schedule needs it.
      const zone = file.schedules.length > 0 ? localZone() : null;
      const reading: ScheduleReading = { file, now, zone };
      const views = zone === null ? [] : file.schedules.map((e) => viewSchedule(e, now, zone));
      const text = JSON.stringify(views);
      if (text !== listed) {
        listed = text;
        deps.onList?.(views);
      }
      return reading;
    }),
    startRun: fromPromise<void, StartRunInput>(async ({ input }) => {
      const { entry, session } = input;
      if (!existsSync(entry.cwd)) throw new Error(`its folder ${entry.cwd} is gone`);
      const meta = { kind: 'agent' as const, agent: entry.agent, project: entry.project, label: 'scheduled' };
      await deps.tmux.newSession({
        name: session,
        cwd: entry.cwd,
        command: [entry.command],
        options: metaOptions(meta),
      });
    }),
    persist: (_: unknown, { id, patch }: { id: string; patch: Extract<BookChange, { kind: 'runtime' }>['patch'] }) =>
      change({ kind: 'runtime', id, patch }),
    saveSeen: (_: unknown, { ids, seenUntil }: { ids: string[]; seenUntil: number }) => {
      for (const id of ids) change({ kind: 'runtime', id, patch: { seenUntil } });
    },
    notifySkipped: (_: unknown, { skipped, zone }: { skipped: SkippedRun[]; zone: string }) => {
      const first = skipped[0];
      if (first) deps.notify(first.session, skippedNotice(skipped, zone).slice(0, MAX_NOTIFY_CHARS));
    },
    /**
     * A schedule request from the phone (spec 4.8.9). `add` makes one for session `name`, run where it ran, with the
     * program it ran (the phone never chooses a directory, command or arguments): `live` is the running session of
     * that name, `past` the past session svc remembers. `rm` removes one.
     */
    fromPhone(
      name: string,
      request: ScheduleRequest,
      live: SessionRecord | undefined,
      past: PastSession | undefined,
    ): PhoneScheduleOutcome {
      try {
        if (request.action === 'rm') {
          changeSchedules(deps.path, { kind: 'remove', id: request.id });
          return { ok: true, id: request.id };
        }
        const pane = live ? activePane(live) : undefined;
        const source =
          live?.meta?.kind === 'agent' && live.meta.agent && pane?.path && live.parent === undefined
            ? {
                agent: live.meta.agent,
                cwd: pane.path,
                project: live.meta.project,
                program: startedProgram(pane.startCommand),
              }
            : past
              ? { agent: past.agent, cwd: past.cwd, project: past.project, program: past.program }
              : null;
        const agent = source ? agentById(source.agent) : undefined;
        if (!source || !agent)
          return { ok: false, code: 'session_not_found', message: `${name} is not an agent session svc ran here` };
        const command = source.program ?? onPath(agent.command, deps.env?.PATH ?? process.env.PATH);
        if (!command)
          return { ok: false, code: 'not_supported', message: `${agent.command} is not on the listener's PATH` };
        const { action: _add, ...opts } = request;
        const now = Date.now() + offset;
        const parsed = parseSchedule({ agent: agent.id, ...opts }, now, readSchedules(deps.path).schedules.length);
        if (!parsed.ok) return { ok: false, code: parsed.problem.code, message: parsed.problem.message };
        const project = source.project ?? source.cwd.split('/').pop() ?? 'project';
        const id = freshId(readSchedules(deps.path).schedules.map((e) => e.id));
        const where = { command, cwd: source.cwd, project, slug: projectSlug(project) };
        changeSchedules(deps.path, { kind: 'add', entry: newEntry(parsed.spec, where, id, now) });
        return { ok: true, id };
      } catch (err) {
        const code = err instanceof ScheduleFileError && err.code !== 'bad_schedules_file' ? err.code : 'inject_failed';
        return { ok: false, code, message: (err as Error).message.slice(0, 200) };
      }
    },
  };
}

/** Six hex digits no schedule has. */
export function freshId(taken: readonly string[]): string {
  for (;;) {
    const id = randomBytes(3).toString('hex');
    if (!taken.includes(id)) return id;
  }
}
