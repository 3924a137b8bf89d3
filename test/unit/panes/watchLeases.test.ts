/** core/panes/watchLeases.ts: which live panes a listener that starts again resumes, and the file that remembers them. */
import { describe, expect, it } from 'vitest';
import type { DevicePin, PinsFile } from '../../../core/devices/devices.js';
import {
  emptyLeases,
  type LeaseLeft,
  leasesLeft,
  MIN_RESUME_MS,
  type SavedLease,
  watchesToResume,
  withLease,
  withoutLease,
} from '../../../core/panes/watchLeases.js';
import { MAX_LEASE_MS } from '../../../core/protocol/bodies.js';
import { MAX_WATCHES } from '../../../core/sessions/routing.js';

const NOW = 1_700_000_000_000;
const lease = (over: Partial<SavedLease> = {}): SavedLease => ({
  session: 'svc-proj',
  deviceId: 'd_phone',
  connection: 'conn1',
  paneId: '%1',
  until: NOW + 20_000,
  ...over,
});
const pin = (over: Partial<DevicePin> = {}): DevicePin => ({
  deviceId: 'd_phone',
  publicKey: 'KEY-PINNED',
  fingerprint: 'ffff',
  pinnedAt: 1,
  verified: false,
  lastSeq: {},
  ...over,
});

describe('leasesLeft', () => {
  it.each([
    ['20 s left: resumed with 20 s', NOW + 20_000, 20_000],
    ['just enough left', NOW + MIN_RESUME_MS, MIN_RESUME_MS],
    ['too little left to be worth it', NOW + MIN_RESUME_MS - 1, null],
    ['lapsed while the listener was down', NOW - 5_000, null],
    ['a deadline from a clock far ahead: no longer than a device may ask', NOW + 10 * MAX_LEASE_MS, MAX_LEASE_MS],
  ])('%s', (_, until, leaseMs) => {
    const file = withLease(emptyLeases(), lease({ until }), NOW - 60_000);
    const left = leasesLeft(file, NOW);
    expect(left).toEqual(
      leaseMs === null
        ? []
        : [{ session: 'svc-proj', deviceId: 'd_phone', connection: 'conn1', paneId: '%1', leaseMs }],
    );
  });
});

describe('watchesToResume', () => {
  const left = (session = 'svc-proj', deviceId = 'd_phone'): LeaseLeft => ({
    session,
    deviceId,
    connection: 'c',
    paneId: '%1',
    leaseMs: 9_000,
  });
  const pins = (devices: Record<string, DevicePin>): PinsFile => ({ version: 1, devices });
  const changed = { publicKey: 'OTHER', fingerprint: 'eeee', seenAt: 2 };

  it.each([
    ['a device still pinned: sealed for the key pinned now', pins({ d_phone: pin() }), {}, 'KEY-PINNED'],
    ['a verified device', pins({ d_phone: pin({ verified: true }) }), {}, 'KEY-PINNED'],
    ['a device forgotten meanwhile', pins({}), {}, null],
    ['a device whose key the relay changed (unverified)', pins({ d_phone: pin({ changedKey: changed }) }), {}, null],
    ['one the device asked for again already', pins({ d_phone: pin() }), { 'watch.d_phone/svc-proj': {} }, null],
  ])('%s', (_, file, watches, publicKey) => {
    expect(watchesToResume([left()], file, watches)).toEqual(
      publicKey === null ? [] : [{ watchId: 'watch.d_phone/svc-proj', input: { ...left(), publicKey } }],
    );
  });

  it('starts no more than MAX_WATCHES live panes in all', () => {
    const running = Object.fromEntries(Array.from({ length: MAX_WATCHES - 2 }, (_, i) => [`watch.d_other/s${i}`, {}]));
    const leases = ['a', 'b', 'c', 'd'].map((s) => left(`svc-${s}`));
    expect(watchesToResume(leases, pins({ d_phone: pin() }), running).map((w) => w.input.session)).toEqual([
      'svc-a',
      'svc-b',
    ]);
  });
});

describe('the leases file', () => {
  it('keeps one lease per device and session, the latest; drops lapsed ones as it writes; forgets on request', () => {
    let file = withLease(emptyLeases(), lease(), NOW);
    file = withLease(file, lease({ session: 'svc-other', until: NOW + 1_000 }), NOW);
    file = withLease(file, lease({ until: NOW + 30_000 }), NOW);
    expect(Object.values(file.leases).map((l) => [l.session, l.until])).toEqual([
      ['svc-proj', NOW + 30_000],
      ['svc-other', NOW + 1_000],
    ]);
    // Later, when the other one has lapsed, it goes with the next write.
    file = withLease(file, lease({ deviceId: 'd_tablet' }), NOW + 2_000);
    expect(Object.keys(file.leases).sort()).toEqual(['d_phone/svc-proj', 'd_tablet/svc-proj']);
    file = withoutLease(file, 'd_phone', 'svc-proj');
    expect(Object.keys(file.leases)).toEqual(['d_tablet/svc-proj']);
  });
});
