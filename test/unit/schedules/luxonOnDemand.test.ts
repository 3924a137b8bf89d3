/**
 * luxon (core/schedules/luxon.ts) loads the first time a schedule's date is computed: the listener's code, imported
 * and ticking with no schedule, never loads it (about 1.3 MiB of an idle listener: docs/benchmarks.md, "Idle
 * memory"). Its own test file, so that no other test has loaded it in this process first.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { createActor, toPromise } from 'xstate';
import '../../../actors/listener.js';
import { scheduleAdapters } from '../../../actors/schedules/runs.js';
import { nextRun, parseSchedule } from '../../../core/schedules/schedule.js';

const require = createRequire(import.meta.url);
const luxonLoaded = () => require.resolve('luxon') in require.cache;

it('is not loaded by the listener until a schedule needs a date', async () => {
  expect(luxonLoaded()).toBe(false);
  const dir = mkdtempSync(join(tmpdir(), 'svc-luxon-'));
  try {
    const adapters = scheduleAdapters({
      path: join(dir, 'schedules'),
      tmux: { newSession: async () => ({ name: 'unused', paneId: '%0' }) },
      log: { warn: () => {}, error: () => {} },
      notify: () => {},
      env: {},
      onList: () => {},
    });
    const reading = await toPromise(createActor(adapters.readSchedules).start());
    expect(reading.zone).toBeNull();
    expect(luxonLoaded()).toBe(false);

    const parsed = parseSchedule({ agent: 'claude', at: '07:30' }, Date.UTC(2026, 0, 5, 12), 0);
    if (!parsed.ok) throw new Error(parsed.problem.message);
    // 07:30 in Tokyo is 22:30 UTC the day before: the next one after noon UTC on 5 January is that evening.
    expect(nextRun(parsed.spec.when, Date.UTC(2026, 0, 5, 12), 'Asia/Tokyo')).toBe(Date.UTC(2026, 0, 5, 22, 30));
    expect(luxonLoaded()).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
