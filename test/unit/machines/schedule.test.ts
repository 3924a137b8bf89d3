/**
 * machines/scheduler.ts and machines/schedule.ts with a simulated clock: every rule of spec 4.8 as a test of its own
 * (the schedules file is in memory, kept by the same core edits the real file gets; times are Europe/Berlin).
 */
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock, sendTo, setup } from 'xstate';
import type { SessionRecord } from '../../../core/protocol/index.js';
import {
  changeBook,
  newEntry,
  type ScheduleEntry,
  type SchedulesFile,
  type SkippedRun,
  scheduledSessionName,
} from '../../../core/schedules/book.js';
import { parseSchedule } from '../../../core/schedules/schedule.js';
import { ENDING_RETRY_MS, type ScheduleKeys, scheduleMachine } from '../../../machines/schedule.js';
import { type ScheduleReading, type SchedulerEvent, schedulerMachine } from '../../../machines/scheduler.js';

const ZONE = 'Europe/Berlin';
const at = (iso: string) => DateTime.fromISO(iso, { zone: ZONE }).toMillis();
const MIN = 60_000;

const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

let ids = 0;
/** A schedule made the way `svc schedule add` makes it, at `created`. */
function entry(opts: Parameters<typeof parseSchedule>[0], created: number): ScheduleEntry {
  const parsed = parseSchedule(opts, created, 0);
  if (!parsed.ok) throw new Error(parsed.problem.message);
  const id = (0xa00000 + ++ids).toString(16);
  return newEntry(parsed.spec, { command: 'claude', cwd: '/src/app', project: 'app', slug: 'app' }, id, created);
}

/** A session as the inventory reports it: the agent in front, reading `state`. */
function session(name: string, state: SessionRecord['state'], command = 'claude'): SessionRecord {
  return {
    name,
    attached: false,
    createdAt: 0,
    activityAt: 0,
    panes: [{ id: '%1', command, active: true }],
    meta: { kind: 'agent', agent: 'A1' },
    state,
  };
}

function harness(entries: ScheduleEntry[], start: number) {
  const clock = new SimulatedClock();
  clock.set(start);
  // the wall clock the listener reads: the simulated clock, plus the jumps back a test makes (NTP, a person)
  let skew = 0;
  const wall = () => clock.now() + skew;
  let file: SchedulesFile = { version: 1, schedules: entries };
  const change = (c: Parameters<typeof changeBook>[1]) => {
    const r = changeBook(file, c);
    if (r.ok) file = r.file;
  };
  const started: string[] = [];
  const keys: ScheduleKeys[] = [];
  const notices: SkippedRun[][] = [];
  let startFails = false;
  /** Schedule ids whose next write throws after it is made: a bug in the actor, its file already written. */
  const failAfterWrite = new Set<string>();
  /** Schedule ids whose next write throws before it is made (the file is left as it was). */
  const failBeforeWrite = new Set<string>();
  const failures: { id: string; what: string }[] = [];
  const scheduler = schedulerMachine.provide({
    actors: {
      // as actors/schedules/runs.ts: no zone is learned while the file holds no schedule
      readSchedules: fromPromise<ScheduleReading>(async () => ({
        file,
        now: wall(),
        zone: file.schedules.length > 0 ? ZONE : null,
      })),
      schedule: scheduleMachine.provide({
        actors: {
          startRun: fromPromise(async ({ input }) => {
            if (startFails) throw new Error('tmux: no server');
            started.push(input.session);
          }),
        },
        actions: {
          persist: (_, { id, patch }) => {
            if (failBeforeWrite.delete(id)) throw new Error(`a bug in schedule ${id}, before its write`);
            change({ kind: 'runtime', id, patch });
            if (failAfterWrite.delete(id)) throw new Error(`a bug in schedule ${id}`);
          },
        },
      }),
    },
    actions: {
      saveSeen: (_, { ids: list, seenUntil }) => {
        for (const id of list) change({ kind: 'runtime', id, patch: { seenUntil } });
      },
      notifySkipped: (_, { skipped }) => void notices.push(skipped),
      reportFailure: (_, { id, what }) => void failures.push({ id, what }),
    },
  });
  // the listener's part: it forwards ticks and results, and receives what is to be typed
  const parent = setup({ types: { events: {} as SchedulerEvent }, actors: { scheduler } }).createMachine({
    invoke: { src: 'scheduler', id: 'scheduler', input: { now: () => clock.now() } },
    on: {
      TICK: { actions: sendTo('scheduler', ({ event }) => event) },
      'SCHEDULE.KEYS_RESULT': { actions: sendTo('scheduler', ({ event }) => event) },
      'SCHEDULE.KEYS': { actions: ({ event }) => void keys.push(event as ScheduleKeys) },
    },
  });
  const actor = createActor(parent, { clock });
  actor.start();
  let live: SessionRecord[] = [];
  const h = {
    clock,
    started,
    keys,
    notices,
    file: () => file,
    failures,
    failStarts: () => {
      startFails = true;
    },
    failAfterWrite: (id: string) => void failAfterWrite.add(id),
    failBeforeWrite: (id: string) => void failBeforeWrite.add(id),
    /** Schedule `id`'s actor fails now, as xstate tells the scheduler of it. */
    failActor: async (id: string) => {
      const scheduler = actor.getSnapshot().children.scheduler;
      scheduler?.send({ type: `xstate.error.actor.schedule.${id}`, error: new Error('a bug') });
      await flush();
    },
    add: (e: ScheduleEntry) => change({ kind: 'add', entry: e }),
    remove: (id: string) => change({ kind: 'remove', id }),
    /** tmux shows these sessions from now on. */
    show: (...sessions: SessionRecord[]) => {
      live = sessions;
    },
    /** The wall clock moves to `when` (forward, or back as a clock set back does), and the listener ticks. */
    tickAt: async (when: number) => {
      if (when >= wall()) clock.increment(when - wall());
      else skew -= wall() - when;
      actor.send({ type: 'TICK', sessions: live });
      await flush();
    },
    result: async (id: string, ok: boolean, code?: string) => {
      actor.send({ type: 'SCHEDULE.KEYS_RESULT', id, ok, ...(code ? { code } : {}) });
      await flush();
    },
    state: (id: string) => {
      const scheduler = actor.getSnapshot().children.scheduler;
      const child = scheduler?.getSnapshot().children[`schedule.${id}`];
      return (child?.getSnapshot() as { value?: unknown } | undefined)?.value;
    },
    last: (id: string) => file.schedules.find((e) => e.id === id)?.last,
  };
  return h;
}

describe('schedules (spec 4.8)', () => {
  it('4.8.1 times are local: a weekday 07:30 schedule starts at 07:30 Berlin time, on the spring-forward Monday too', async () => {
    const e = entry({ agent: 'A1', at: '07:30', days: 'weekdays' }, at('2026-03-27T12:00'));
    const h = harness([e], at('2026-03-27T12:00'));
    await h.tickAt(at('2026-03-27T12:00')); // Friday noon: nothing due
    expect(h.started).toEqual([]);
    await h.tickAt(at('2026-03-28T07:30')); // Saturday: not a weekday
    expect(h.started).toEqual([]);
    // the clocks went forward on Sunday 29 March; Monday 07:30 CEST is 05:30 UTC
    expect(new Date(at('2026-03-30T07:30')).toISOString()).toBe('2026-03-30T05:30:00.000Z');
    await h.tickAt(at('2026-03-30T07:30') + 20_000);
    expect(h.started).toEqual([scheduledSessionName(e)]);
    expect(h.state(e.id)).toEqual({ running: 'typed' });
  });

  it('4.8.1 --every counts from creation, and 15 minutes is the least', async () => {
    const created = at('2026-11-24T10:07');
    expect(parseSchedule({ agent: 'A1', every: '14m' }, created, 0).ok).toBe(false);
    const e = entry({ agent: 'A1', every: '15m' }, created);
    const h = harness([e], created);
    await h.tickAt(created + 14 * MIN);
    expect(h.started).toEqual([]);
    await h.tickAt(created + 15 * MIN + 5_000);
    expect(h.started).toHaveLength(1);
  });

  it('4.8.2 a run seen within 2 minutes starts; one seen later is missed, never started late, and told', async () => {
    const e = entry({ agent: 'A1', at: '09:00' }, at('2026-11-24T08:00'));
    const h = harness([e], at('2026-11-24T08:00'));
    await h.tickAt(at('2026-11-24T08:59:58'));
    // the laptop slept from 08:59:58 to 09:03
    await h.tickAt(at('2026-11-24T09:03'));
    expect(h.started).toEqual([]);
    expect(h.state(e.id)).toBe('skipped');
    expect(h.last(e.id)).toMatchObject({ result: 'missed', at: at('2026-11-24T09:00') });
    expect(h.notices).toEqual([[expect.objectContaining({ id: e.id, why: 'missed' })]]);
    // later ticks do not start it either
    await h.tickAt(at('2026-11-24T09:03:05'));
    expect(h.started).toEqual([]);
    // the next day, seen at 09:01:59, it starts
    await h.tickAt(at('2026-11-25T09:01:59'));
    expect(h.started).toHaveLength(1);
  });

  it('4.8.2 the clock jumping back does not run a time twice', async () => {
    const e = entry({ agent: 'A1', at: '09:00' }, at('2026-11-24T08:00'));
    const h = harness([e], at('2026-11-24T08:00'));
    await h.tickAt(at('2026-11-24T09:00:30'));
    expect(h.started).toHaveLength(1);
    h.show(session(scheduledSessionName(e), 'idle'));
    await h.tickAt(at('2026-11-24T09:01'));
    h.show();
    await h.tickAt(at('2026-11-24T09:02')); // the agent exited
    await h.tickAt(at('2026-11-24T08:58')); // NTP set the clock back
    await h.tickAt(at('2026-11-24T09:00:10'));
    expect(h.started).toHaveLength(1);
  });

  it('4.8.3 one session per schedule: a run is skipped while the previous run’s session is still there', async () => {
    const created = at('2026-11-24T10:00');
    const e = entry({ agent: 'A1', every: '30m', maxRuntime: '2h' }, created);
    const h = harness([e], created);
    await h.tickAt(created + 30 * MIN);
    h.show(session(scheduledSessionName(e), 'working'));
    await h.tickAt(created + 31 * MIN);
    await h.tickAt(created + 60 * MIN + 1_000);
    expect(h.started).toHaveLength(1);
    expect(h.notices.at(-1)).toEqual([expect.objectContaining({ id: e.id, why: 'previous_running' })]);
    // the run's own actor still looks after its session
    expect(h.state(e.id)).toMatchObject({ running: expect.anything() });
  });

  it('4.8.4 at most three scheduled sessions at once: a fourth is skipped, all told in one notice (4.8.8)', async () => {
    const created = at('2026-11-24T06:00');
    const four = [1, 2, 3, 4].map(() => entry({ agent: 'A1', at: '07:00' }, created));
    const other = entry({ agent: 'A1', at: '06:30' }, created);
    const h = harness([...four, other], created);
    await h.tickAt(at('2026-11-24T06:30:10'));
    h.show(session(scheduledSessionName(other), 'working'));
    await h.tickAt(at('2026-11-24T07:00:10'));
    expect(h.started).toHaveLength(1 + 2);
    const [notice, ...more] = h.notices;
    expect(more).toEqual([]);
    expect(notice!.map((s) => s.why)).toEqual(['too_many_running', 'too_many_running']);
  });

  it('4.8.5 at most 20 schedules', () => {
    let file: SchedulesFile = { version: 1, schedules: [] };
    for (let i = 0; i < 20; i++) {
      const r = changeBook(file, { kind: 'add', entry: entry({ agent: 'A1', at: '07:00' }, 0) });
      if (!r.ok) throw new Error(r.message);
      file = r.file;
    }
    expect(changeBook(file, { kind: 'add', entry: entry({ agent: 'A1', at: '07:00' }, 0) })).toMatchObject({
      ok: false,
      code: 'too_many_schedules',
    });
    expect(parseSchedule({ agent: 'A1', at: '07:00' }, 0, 20)).toMatchObject({
      ok: false,
      problem: { code: 'too_many_schedules' },
    });
  });

  it('a schedule actor that fails is rebuilt from the file after its backoff and carries on its run; the others run on', async () => {
    const created = at('2026-11-24T07:00');
    const a = entry({ agent: 'A1', at: '07:30', prompt: 'a' }, created);
    const b = entry({ agent: 'A1', at: '07:30', prompt: 'b' }, created);
    const h = harness([a, b], created);
    // a's write of its started run lands, then the actor throws
    h.failAfterWrite(a.id);
    await h.tickAt(at('2026-11-24T07:30:03'));
    expect(h.failures).toEqual([
      { id: `schedule.${a.id}`, what: 'rebuilt from the schedules file at the first reading after 1 s' },
    ]);
    expect(h.state(a.id)).toBeUndefined();
    expect(h.state(b.id)).toEqual({ running: 'pending' });
    h.show(session(scheduledSessionName(a), 'idle'), session(scheduledSessionName(b), 'idle'));
    await h.tickAt(at('2026-11-24T07:30:08'));
    // rebuilt from its run in the file: its prompt typed once, not started again
    expect(h.state(a.id)).toEqual({ running: 'typing' });
    expect(h.started).toEqual([scheduledSessionName(a), scheduledSessionName(b)]);
    expect(h.keys.map((k) => k.text).sort()).toEqual(['a', 'b']);
  });

  it('a schedule actor that fails before writing down the run it started takes its session as the run when rebuilt', async () => {
    const created = at('2026-11-24T07:00');
    const e = entry({ agent: 'A1', at: '07:30', prompt: 'once', maxRuntime: '1h' }, created);
    const h = harness([e], created);
    h.failBeforeWrite(e.id);
    await h.tickAt(at('2026-11-24T07:30:03'));
    expect(h.started).toEqual([scheduledSessionName(e)]);
    expect(h.failures.map((f) => f.id)).toEqual([`schedule.${e.id}`]);
    expect(h.file().schedules[0]?.run).toBeUndefined();
    h.show(session(scheduledSessionName(e), 'idle'));
    await h.tickAt(at('2026-11-24T07:30:08'));
    // rebuilt with no run: the reading shows its session, which it now looks after; never started a second time
    expect(h.state(e.id)).toEqual({ running: 'pending' });
    expect(h.file().schedules[0]?.run).toMatchObject({ session: scheduledSessionName(e), prompted: false });
    await h.tickAt(at('2026-11-24T07:30:13'));
    expect(h.keys.map((k) => k.text)).toEqual(['once']);
    expect(h.started).toEqual([scheduledSessionName(e)]);
    // its max-runtime counts from when it was taken: ended an hour on
    await h.result(e.id, true);
    await h.tickAt(at('2026-11-24T08:30:09'));
    expect(h.state(e.id)).toBe('ending');
    expect(h.keys.map((k) => k.control ?? k.text)).toEqual(['once', 'end']);
  });

  it('a schedule actor that fails with its prompt in flight is rebuilt without typing the prompt again', async () => {
    const created = at('2026-11-24T07:00');
    const e = entry({ agent: 'A1', at: '07:30', prompt: 'once' }, created);
    const h = harness([e], created);
    await h.tickAt(at('2026-11-24T07:30:03'));
    h.show(session(scheduledSessionName(e), 'idle'));
    await h.tickAt(at('2026-11-24T07:30:08'));
    expect(h.keys.map((k) => k.text)).toEqual(['once']);
    await h.failActor(e.id);
    expect(h.failures.map((f) => f.id)).toEqual([`schedule.${e.id}`]);
    await h.result(e.id, true); // typed meanwhile: nobody to tell
    await h.tickAt(at('2026-11-24T07:30:13'));
    await h.tickAt(at('2026-11-24T07:30:18'));
    expect(h.state(e.id)).toEqual({ running: 'typed' });
    expect(h.keys.map((k) => k.text)).toEqual(['once']);
  });

  it('4.8.6 the prompt is typed once, only when the agent is in front and reads idle', async () => {
    const created = at('2026-11-24T07:00');
    const e = entry({ agent: 'A1', at: '07:30', prompt: 'run the nightly checks' }, created);
    const name = scheduledSessionName(e);
    const h = harness([e], created);
    await h.tickAt(at('2026-11-24T07:30:03'));
    await h.tickAt(at('2026-11-24T07:30:08')); // the session is not in a reading yet
    h.show(session(name, 'working')); // still starting up
    await h.tickAt(at('2026-11-24T07:30:13'));
    h.show(session(name, 'idle', 'bash')); // a shell in front (the agent not started yet)
    await h.tickAt(at('2026-11-24T07:30:18'));
    expect(h.keys).toEqual([]);
    h.show(session(name, 'idle'));
    await h.tickAt(at('2026-11-24T07:30:23'));
    expect(h.keys).toEqual([
      {
        type: 'SCHEDULE.KEYS',
        id: e.id,
        session: name,
        text: 'run the nightly checks',
        keys: ['Enter'],
        at: at('2026-11-24T07:30:23'),
      },
    ]);
    // refused (the screen changed under it): tried again on the next idle tick, not before
    await h.result(e.id, false, 'prompt_changed');
    await h.tickAt(at('2026-11-24T07:30:28'));
    expect(h.keys).toHaveLength(2);
    await h.result(e.id, true);
    expect(h.file().schedules[0]!.run).toMatchObject({ prompted: true });
    await h.tickAt(at('2026-11-24T07:30:33'));
    await h.tickAt(at('2026-11-24T07:31:33'));
    expect(h.keys).toHaveLength(2);
    // an agent that does not take a prompt is refused at `add`
    expect(parseSchedule({ agent: 'A5', at: '07:30', prompt: 'x' }, created, 0)).toMatchObject({
      ok: false,
      problem: { code: 'prompt_not_accepted' },
    });
  });

  it('4.8.7 max-runtime asks the agent to end (its exit command), a minute on SIGTERM to its process, then done', async () => {
    const created = at('2026-11-24T07:00');
    const e = entry({ agent: 'A1', at: '07:30', maxRuntime: '1h' }, created);
    const name = scheduledSessionName(e);
    const h = harness([e], created);
    await h.tickAt(at('2026-11-24T07:30:05'));
    h.show(session(name, 'working'));
    await h.tickAt(at('2026-11-24T08:29:59'));
    expect(h.keys).toEqual([]);
    await h.tickAt(at('2026-11-24T08:30:05'));
    expect(h.keys).toEqual([
      {
        type: 'SCHEDULE.KEYS',
        id: e.id,
        session: name,
        text: '',
        keys: [],
        control: 'end',
        at: at('2026-11-24T08:30:05'),
      },
    ]);
    expect(h.state(e.id)).toBe('ending');
    expect(h.file().schedules[0]!.run).toMatchObject({ endWith: 'exit' });
    // busy with a prompt: the exit command is refused; a minute later its process is sent SIGTERM, never a kill
    await h.result(e.id, false, 'approval_pending');
    expect(h.last(e.id)).toMatchObject({ result: 'end_blocked' });
    await h.tickAt(at('2026-11-24T08:30:05') + ENDING_RETRY_MS / 2);
    expect(h.keys).toHaveLength(1);
    await h.tickAt(at('2026-11-24T08:30:05') + ENDING_RETRY_MS);
    expect(h.keys.map((k) => k.control)).toEqual(['end', 'term']);
    expect(h.file().schedules[0]!.run).toMatchObject({ endWith: 'term' });
    // still there a minute on: SIGTERM again
    await h.tickAt(at('2026-11-24T08:30:05') + 2 * ENDING_RETRY_MS);
    expect(h.keys.map((k) => k.control)).toEqual(['end', 'term', 'term']);
    h.show();
    await h.tickAt(at('2026-11-24T08:32:30'));
    expect(h.state(e.id)).toBe('done');
    // svc schedule and the app say how it ended
    expect(h.last(e.id)).toMatchObject({ result: 'ended', note: expect.stringMatching(/^SIGTERM to its process/) });
    expect(h.file().schedules[0]!.run).toBeNull();
  });

  it('a listener restarted while a run was ending sends nothing at once; the tick a minute on sends SIGTERM', async () => {
    const e: ScheduleEntry = {
      ...entry({ agent: 'A1', at: '07:30', maxRuntime: '1h' }, at('2026-11-24T07:00')),
      seenUntil: at('2026-11-24T07:30:05'),
      run: {
        session: 'x',
        at: at('2026-11-24T07:30'),
        startedAt: at('2026-11-24T07:30:05'),
        prompted: true,
        endingSince: at('2026-11-24T08:30:05'),
        endWith: 'exit',
      },
    };
    e.run!.session = scheduledSessionName(e);
    const h = harness([e], at('2026-11-24T08:30:30'));
    h.show(session(e.run!.session, 'idle'));
    await h.tickAt(at('2026-11-24T08:30:30'));
    expect(h.state(e.id)).toBe('ending');
    expect(h.keys).toEqual([]); // the exit command was typed before the restart: not again at once
    await h.tickAt(at('2026-11-24T08:31:10'));
    expect(h.keys.map((k) => k.control)).toEqual(['term']);
  });

  it('max-runtime ended by the exit command says so; an agent with none gets SIGTERM at once', async () => {
    const created = at('2026-11-24T07:00');
    const pi = entry({ agent: 'A4', at: '07:30', maxRuntime: '1h' }, created);
    const other = entry({ agent: 'A8', at: '07:40', maxRuntime: '1h' }, created);
    const h = harness([pi, other], created);
    await h.tickAt(at('2026-11-24T07:30:05'));
    h.show(session(scheduledSessionName(pi), 'idle'));
    await h.tickAt(at('2026-11-24T07:40:05'));
    h.show(session(scheduledSessionName(pi), 'idle'), session(scheduledSessionName(other), 'idle'));
    await h.tickAt(at('2026-11-24T08:40:05'));
    expect(h.keys.map((k) => [k.id, k.control])).toEqual([
      [pi.id, 'end'],
      [other.id, 'end'],
    ]);
    // the listener has no exit command for A8: SIGTERM at once, not a minute later
    await h.result(other.id, false, 'not_supported');
    expect(h.keys.map((k) => [k.id, k.control]).at(-1)).toEqual([other.id, 'term']);
    h.show();
    await h.tickAt(at('2026-11-24T08:40:30'));
    expect(h.last(pi.id)).toMatchObject({ result: 'ended', note: 'its exit command /quit' });
    expect(h.last(other.id)).toMatchObject({ result: 'ended', note: expect.stringMatching(/^SIGTERM/) });
  });

  it('a listener restart rebuilds each schedule from the file: a run keeps its start time and max-runtime', async () => {
    const e: ScheduleEntry = {
      ...entry({ agent: 'A1', at: '07:30', maxRuntime: '1h', prompt: 'go' }, at('2026-11-24T07:00')),
      seenUntil: at('2026-11-24T07:30:05'),
      run: {
        session: 'svc-app-sched-x',
        at: at('2026-11-24T07:30'),
        startedAt: at('2026-11-24T07:30:05'),
        prompted: true,
      },
    };
    e.run!.session = scheduledSessionName(e);
    const h = harness([e], at('2026-11-24T08:00'));
    h.show(session(e.run!.session, 'idle'));
    await h.tickAt(at('2026-11-24T08:00'));
    expect(h.state(e.id)).toEqual({ running: 'typed' });
    expect(h.keys).toEqual([]); // prompted before the restart: not typed again
    await h.tickAt(at('2026-11-24T08:30:06'));
    expect(h.keys).toEqual([expect.objectContaining({ control: 'end' })]);
    expect(h.started).toEqual([]);
  });

  it('removing a schedule stops its actor and leaves its session running; a start that fails is the last result', async () => {
    const created = at('2026-11-24T07:00');
    const e = entry({ agent: 'A1', at: '07:30' }, created);
    const f = entry({ agent: 'A1', at: '07:45' }, created);
    const h = harness([e, f], created);
    await h.tickAt(at('2026-11-24T07:30:05'));
    h.show(session(scheduledSessionName(e), 'working'));
    h.remove(e.id);
    await h.tickAt(at('2026-11-24T07:30:10'));
    expect(h.state(e.id)).toBeUndefined();
    h.failStarts();
    await h.tickAt(at('2026-11-24T07:45:10'));
    expect(h.state(f.id)).toBe('done');
    expect(h.last(f.id)).toMatchObject({ result: 'start_failed', note: 'tmux: no server' });
    // the last one removed: its actor stops too, and nothing starts at the time it had
    h.remove(f.id);
    await h.tickAt(at('2026-11-25T07:45:10'));
    expect(h.state(f.id)).toBeUndefined();
    expect(h.started).toEqual([scheduledSessionName(e)]);
  });
});
