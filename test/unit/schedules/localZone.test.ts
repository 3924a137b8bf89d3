/**
 * The zone a schedule's "07:30" is read in (actors/schedules/runs.ts `localZone`): the process's, learnt once, and
 * learnt again when TZ changes, as Node itself re-reads the zone then.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { localZone } from '../../../actors/schedules/runs.js';

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
