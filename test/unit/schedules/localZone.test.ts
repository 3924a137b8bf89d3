/**
 * The zone a schedule's "07:30" is read in (actors/schedules/runs.ts `localZone`): the process's, learnt once, and
 * learnt again when TZ changes, as Node itself re-reads the zone then; and read at a tick only when there is a
 * schedule, since learning it makes the listener keep ICU's time-zone data resident.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createActor, toPromise } from 'xstate';
import { localZone, scheduleAdapters } from '../../../actors/schedules/runs.js';
import { changeSchedules } from '../../../actors/schedules/scheduleFile.js';
import { newEntry, type ScheduleView } from '../../../core/schedules/book.js';
import { parseSchedule } from '../../../core/schedules/schedule.js';

const before = process.env.TZ;
afterEach(() => {
  if (before === undefined) delete process.env.TZ;
  else process.env.TZ = before;
});

describe('localZone', () => {
  it('is the zone TZ names, and follows TZ when it changes', () => {
    process.env.TZ = 'Asia/Tokyo';
    expect(localZone()).toBe('Asia/Tokyo');
    expect(localZone()).toBe('Asia/Tokyo');
    process.env.TZ = 'America/New_York';
    expect(localZone()).toBe('America/New_York');
  });

  it('is the system zone again when TZ is removed', () => {
    process.env.TZ = 'Asia/Tokyo';
    expect(localZone()).toBe('Asia/Tokyo');
    delete process.env.TZ;
    expect(localZone()).toBe(new Intl.DateTimeFormat().resolvedOptions().timeZone);
  });
});

describe('a tick of the schedules', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  async function tick(path: string) {
    const lists: ScheduleView[][] = [];
    const adapters = scheduleAdapters({
      path,
      tmux: { newSession: async () => ({ name: 'unused', paneId: '%0' }) },
      log: { warn: () => {}, error: () => {} },
      notify: () => {},
      env: {},
      onList: (views) => lists.push(views),
    });
    const reading = await toPromise(createActor(adapters.readSchedules).start());
    return { reading, lists };
  }

  it('reads no zone while there is no schedule, and the zone once there is one', async () => {
    process.env.TZ = 'Asia/Tokyo';
    const dir = mkdtempSync(join(tmpdir(), 'svc-zone-'));
    dirs.push(dir);
    const path = join(dir, 'schedules');

    const none = await tick(path);
    expect(none.reading.zone).toBeNull();
    expect(none.lists).toEqual([[]]);

    const now = Date.now();
    const parsed = parseSchedule({ agent: 'claude', at: '07:30' }, now, 0);
    if (!parsed.ok) throw new Error(parsed.problem.message);
    const where = { command: 'claude', cwd: dir, project: 'app', slug: 'app' };
    changeSchedules(path, { kind: 'add', entry: newEntry(parsed.spec, where, 'a00001', now) });

    const one = await tick(path);
    expect(one.reading.zone).toBe('Asia/Tokyo');
    expect(one.lists[0]?.map((v) => v.id)).toEqual(['a00001']);
  });
});
