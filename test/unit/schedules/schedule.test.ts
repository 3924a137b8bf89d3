/**
 * Schedule rules (spec 4.8, 8; core/schedules/schedule.ts): parsing `svc schedule add`, the next run in local time
 * across daylight-saving changes, and what a tick starts or skips (the window, a sleeping laptop, the clock jumping,
 * one session per schedule, three at once).
 */
import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { scheduleZone } from '../../../core/schedules/book.js';
import {
  decideTick,
  endDue,
  MAX_SCHEDULES,
  nextRun,
  parseDays,
  parseDuration,
  parseSchedule,
  type When,
} from '../../../core/schedules/schedule.js';

const BERLIN = 'Europe/Berlin';
const NY = 'America/New_York';
/** Epoch ms of a local wall-clock time in `zone`. */
const at = (iso: string, zone = BERLIN) => DateTime.fromISO(iso, { zone }).toMillis();
/** The local wall-clock time of epoch ms in `zone`, with its offset. */
const local = (ms: number | null, zone = BERLIN) => (ms === null ? null : DateTime.fromMillis(ms, { zone }).toISO());
const daily = (hour: number, minute: number, days = [1, 2, 3, 4, 5, 6, 7]): When => ({
  kind: 'at',
  hour,
  minute,
  days,
});

describe('parsing svc schedule add', () => {
  const now = at('2026-11-24T10:00');
  it.each([
    [
      '--at alone is daily',
      { agent: 'A1', at: '07:30' },
      { kind: 'at', hour: 7, minute: 30, days: [1, 2, 3, 4, 5, 6, 7] },
    ],
    [
      'weekdays',
      { agent: 'A1', at: '7:05', days: 'weekdays' },
      { kind: 'at', hour: 7, minute: 5, days: [1, 2, 3, 4, 5] },
    ],
    [
      'a list of days',
      { agent: 'A5', at: '23:59', days: 'fri,mon,wed' },
      { kind: 'at', hour: 23, minute: 59, days: [1, 3, 5] },
    ],
    ['--every from creation', { agent: 'A2', every: '90m' }, { kind: 'every', ms: 90 * 60_000, from: now }],
  ] as const)('%s', (_what, opts, when) => {
    const r = parseSchedule(opts, now, 0);
    expect(r).toMatchObject({ ok: true, spec: { when, maxRuntimeMs: 2 * 3_600_000 } });
  });

  it.each([
    ['--every under 15 minutes', { agent: 'A1', every: '10m' }, 'bad_schedule'],
    ['--every with --at', { agent: 'A1', every: '1h', at: '07:00' }, 'bad_schedule'],
    ['no time', { agent: 'A1', days: 'daily' }, 'bad_schedule'],
    ['a time that does not exist', { agent: 'A1', at: '24:00' }, 'bad_schedule'],
    ['an unknown day', { agent: 'A1', at: '07:00', days: 'mon,funday' }, 'bad_schedule'],
    ['max-runtime under 5m', { agent: 'A1', at: '07:00', maxRuntime: '4m' }, 'bad_schedule'],
    ['max-runtime over 24h', { agent: 'A1', at: '07:00', maxRuntime: '25h' }, 'bad_schedule'],
    ['a prompt for opencode (A5)', { agent: 'A5', at: '07:00', prompt: 'go' }, 'prompt_not_accepted'],
    ['an empty prompt', { agent: 'A1', at: '07:00', prompt: ' ' }, 'bad_schedule'],
  ] as const)('refuses %s', (_what, opts, code) => {
    expect(parseSchedule(opts, now, 0)).toMatchObject({ ok: false, problem: { code } });
  });

  it(`refuses a schedule beyond ${MAX_SCHEDULES}, and takes max-runtime in range`, () => {
    expect(parseSchedule({ agent: 'A1', at: '07:00' }, now, MAX_SCHEDULES)).toMatchObject({
      ok: false,
      problem: { code: 'too_many_schedules' },
    });
    expect(
      parseSchedule({ agent: 'A1', at: '07:00', maxRuntime: '1h30m', prompt: 'run the checks' }, now, 19),
    ).toMatchObject({
      ok: true,
      spec: { maxRuntimeMs: 90 * 60_000, prompt: 'run the checks' },
    });
  });

  it('durations and days', () => {
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('5m')).toBe(300_000);
    expect(parseDuration('90s')).toBeNull();
    expect(parseDuration('')).toBeNull();
    expect(parseDays('weekends')).toEqual([6, 7]);
    expect(parseDays('mon,mon,sun')).toEqual([1, 7]);
  });
});

describe('the next run, in local time', () => {
  it('weekdays at 07:30: Friday evening → Monday morning', () => {
    expect(local(nextRun(daily(7, 30, [1, 2, 3, 4, 5]), at('2026-11-27T20:00'), BERLIN))).toBe(
      '2026-11-30T07:30:00.000+01:00',
    );
  });

  it('spring forward: 02:30 does not exist that night, so it runs at 03:30 (the first minute after it)', () => {
    expect(local(nextRun(daily(2, 30), at('2026-03-28T12:00'), BERLIN))).toBe('2026-03-29T03:30:00.000+02:00');
    // and the night after, at 02:30 again
    expect(local(nextRun(daily(2, 30), at('2026-03-29T12:00'), BERLIN))).toBe('2026-03-30T02:30:00.000+02:00');
    // 07:30 keeps its wall-clock time across the change: 23 real hours after the day before's
    const before = nextRun(daily(7, 30), at('2026-03-28T00:00'), BERLIN)!;
    const after = nextRun(daily(7, 30), before, BERLIN)!;
    expect(after - before).toBe(23 * 3_600_000);
  });

  it('fall back: 01:30 happens twice in New York, and runs once, at the first', () => {
    const first = nextRun(daily(1, 30), at('2026-11-01T00:00', NY), NY)!;
    expect(local(first, NY)).toBe('2026-11-01T01:30:00.000-04:00');
    expect(local(nextRun(daily(1, 30), first, NY), NY)).toBe('2026-11-02T01:30:00.000-05:00');
  });

  it('--every counts real time from creation, through a DST change', () => {
    const created = at('2026-10-25T01:00');
    const when: When = { kind: 'every', ms: 3_600_000, from: created };
    const runs = [nextRun(when, created, BERLIN)!];
    runs.push(nextRun(when, runs[0]!, BERLIN)!);
    runs.push(nextRun(when, runs[1]!, BERLIN)!);
    expect(runs.map((r) => local(r))).toEqual([
      '2026-10-25T02:00:00.000+02:00',
      '2026-10-25T02:00:00.000+01:00',
      '2026-10-25T03:00:00.000+01:00',
    ]);
  });
});

describe('a listener tick', () => {
  const when = daily(7, 30);
  const idle = { previousRunning: false, scheduledRunning: 0 };
  const seven30 = at('2026-11-24T07:30');

  it('waits before its time, and starts within 2 minutes of it', () => {
    expect(decideTick(when, seven30 - 60_000, seven30 - 5_000, BERLIN, idle)).toEqual([{ kind: 'wait' }]);
    expect(decideTick(when, seven30 - 5_000, seven30 + 5_000, BERLIN, idle)).toEqual([{ kind: 'start', at: seven30 }]);
    expect(decideTick(when, seven30 - 5_000, seven30 + 119_000, BERLIN, idle)).toEqual([
      { kind: 'start', at: seven30 },
    ]);
  });

  it('never starts late: seen 3 minutes after (a laptop that slept through it) is a missed run', () => {
    expect(decideTick(when, seven30 - 5_000, seven30 + 180_000, BERLIN, idle)).toEqual([
      { kind: 'skip', at: seven30, why: 'missed' },
    ]);
  });

  it('asleep for three days: each missed run is reported, none started', () => {
    const out = decideTick(when, seven30 - 5_000, seven30 + 3 * 86_400_000 - 3_600_000, BERLIN, idle);
    expect(out.map((d) => d.kind)).toEqual(['skip', 'skip', 'skip']);
  });

  it('the clock jumping back does not run a time again', () => {
    // the tick saw up to 07:31; the clock goes back to 07:29 then on to 07:31 again
    expect(decideTick(when, seven30 + 60_000, seven30 - 60_000, BERLIN, idle)).toEqual([{ kind: 'wait' }]);
  });

  it('one session per schedule, and at most three scheduled sessions at once', () => {
    expect(
      decideTick(when, seven30 - 5_000, seven30 + 5_000, BERLIN, { previousRunning: true, scheduledRunning: 1 }),
    ).toEqual([{ kind: 'skip', at: seven30, why: 'previous_running' }]);
    expect(
      decideTick(when, seven30 - 5_000, seven30 + 5_000, BERLIN, { previousRunning: false, scheduledRunning: 3 }),
    ).toEqual([{ kind: 'skip', at: seven30, why: 'too_many_running' }]);
  });

  it('max-runtime: ends once it has run that long', () => {
    expect(endDue(seven30, 3_600_000, seven30 + 3_599_999)).toBe(false);
    expect(endDue(seven30, 3_600_000, seven30 + 3_600_000)).toBe(true);
  });
});

describe('the time zone schedules run in', () => {
  it.each([
    ['Europe/Paris', 'Europe/Paris', { ok: true, zone: 'Europe/Paris' }],
    ['America/New_York', 'EST5EDT', { ok: true, zone: 'America/New_York' }],
    [
      undefined,
      'Mars/Olympus',
      { ok: false, message: expect.stringMatching(/^the time zone "Mars\/Olympus" \(TZ\) is not one svc knows/) },
    ],
    [undefined, 'UTC0', { ok: false, message: expect.stringMatching(/"UTC0" \(TZ\)/) }],
    ['Etc/Unknown', undefined, { ok: false, message: expect.stringMatching(/of this system \(Etc\/Unknown\)/) }],
    ['Etc/Unknown', '', { ok: false, message: expect.stringMatching(/of this system/) }],
  ] as const)('Intl reads %j from TZ=%j', (resolved, tz, want) => {
    expect(scheduleZone(resolved, tz)).toEqual(want);
  });
});
