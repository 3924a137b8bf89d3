/** core/devices/devices.ts: what a sealed contact does to trust, table by table. */
import { describe, expect, it } from 'vitest';
import { lookupWithRetry } from '../../../actors/seal/e2ee.js';
import {
  anyPinned,
  applyPinOp,
  applyPinOps,
  type ContactFacts,
  type DevicePin,
  DevicesUnavailableError,
  decideComputerDevice,
  decideContact,
  decideTrust,
  emptyPins,
  openFailure,
  trustOf,
} from '../../../core/devices/devices.js';
import { commandTextProblem } from '../../../core/protocol/bodies.js';
import { MAX_BODY_CHARS } from '../../../core/protocol/index.js';

const KEY_A = 'A'.repeat(87);
const KEY_B = 'B'.repeat(87);
const pinA: DevicePin = {
  deviceId: 'd_1',
  publicKey: KEY_A,
  fingerprint: 'aaaa',
  pinnedAt: 1,
  verified: false,
  lastSeq: { 'agent.command': 5 },
};
const command = (seq: number, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ text: 'hi', seq, sentAt: 0, session: 'svc-proj', ...extra });

function facts(over: Partial<ContactFacts<'agent.command'>>): ContactFacts<'agent.command'> {
  return {
    deviceId: 'd_1',
    purpose: 'agent.command',
    pin: undefined,
    listed: { publicKey: KEY_A, fingerprint: 'aaaa' },
    opened: { ok: true, text: command(1) },
    now: 100,
    ...over,
  };
}

describe('decideTrust', () => {
  it.each([
    ['not listed', undefined, null, { ok: false, why: 'not_listed' }],
    ['first contact', undefined, KEY_A, { ok: true, key: KEY_A, firstContact: true }],
    ['pinned, same key', pinA, KEY_A, { ok: true, key: KEY_A, firstContact: false }],
    ['pinned, the relay lists another key', pinA, KEY_B, { ok: false, why: 'key_changed' }],
    [
      'unverified stays refused even when the pinned key is listed again',
      { ...pinA, changedKey: { publicKey: KEY_B, fingerprint: 'bbbb', seenAt: 2 } },
      KEY_A,
      { ok: false, why: 'unverified' },
    ],
  ] as const)('%s', (_, pin, listed, expected) => {
    expect(decideTrust(pin, listed)).toEqual(expected);
  });
});

describe('decideContact', () => {
  it('pins a device on its first sealed contact, with the stamp', () => {
    const d = decideContact(facts({}));
    expect(d.outcome).toMatchObject({ accepted: true, publicKey: KEY_A, body: { text: 'hi', seq: 1 } });
    expect(d.ops).toEqual([
      { op: 'pin', deviceId: 'd_1', publicKey: KEY_A, fingerprint: 'aaaa', at: 100, lastSeq: { 'agent.command': 1 } },
    ]);
    expect(d.alarm).toBeNull();
  });

  it('accepts a higher stamp from a pinned device and records it', () => {
    const d = decideContact(facts({ pin: pinA, opened: { ok: true, text: command(6) } }));
    expect(d.outcome.accepted).toBe(true);
    expect(d.ops).toEqual([{ op: 'seq', deviceId: 'd_1', publicKey: KEY_A, purpose: 'agent.command', seq: 6 }]);
  });

  it.each([
    ['a replayed stamp', 5],
    ['a reordered (older) stamp', 3],
  ])('refuses %s (replayed), changing nothing', (_, seq) => {
    const d = decideContact(facts({ pin: pinA, opened: { ok: true, text: command(seq) } }));
    expect(d.outcome).toMatchObject({ accepted: false, code: 'replayed' });
    expect(d.ops).toEqual([]);
  });

  it('counts stamps per purpose', () => {
    const watch = decideContact({
      ...facts({ pin: pinA }),
      purpose: 'pane.watch',
      opened: { ok: true, text: JSON.stringify({ session: 's', seq: 1, leaseMs: 5_000 }) },
    });
    expect(watch.outcome.accepted).toBe(true);
  });

  it('turns a key change into unverified, loudly, and refuses until verified', () => {
    const d = decideContact(facts({ pin: pinA, listed: { publicKey: KEY_B, fingerprint: 'bbbb' } }));
    expect(d.outcome).toMatchObject({ accepted: false, code: 'subscriber_unverified' });
    expect(d.ops).toEqual([{ op: 'keyChanged', deviceId: 'd_1', publicKey: KEY_B, fingerprint: 'bbbb', at: 100 }]);
    expect(d.alarm).toMatch(/device d_1 changed its key: pinned aaaa, the relay now lists bbbb/);
    // The same change again is refused quietly.
    const pin = applyPinOps({ version: 1, devices: { d_1: pinA } }, d.ops).devices.d_1;
    expect(trustOf(pin)).toBe('unverified');
    const again = decideContact(facts({ pin, listed: { publicKey: KEY_B, fingerprint: 'bbbb' } }));
    expect(again.outcome).toMatchObject({ code: 'subscriber_unverified' });
    expect(again.alarm).toBeNull();
    expect(again.ops).toEqual([]);
  });

  it.each([
    ['not opened', null, /not opened/],
    ['tampered', { ok: false as const, reason: 'tampered' }, /tampered/],
    ['not JSON', { ok: true as const, text: 'hello' }, /not JSON/],
    ['the wrong shape', { ok: true as const, text: JSON.stringify({ text: 'x', seq: 1 }) }, /agent.command body/],
    ['an extra field', { ok: true as const, text: command(1, { extra: 1 }) }, /agent.command body/],
    ['a zero stamp', { ok: true as const, text: command(0) }, /seq/],
  ])('refuses a body %s (bad_seal), pinning nothing', (_, opened, message) => {
    const d = decideContact(facts({ opened }));
    expect(d.outcome).toMatchObject({ accepted: false, code: 'bad_seal' });
    expect((d.outcome as { message: string }).message).toMatch(message);
    expect(d.ops).toEqual([]);
  });

  it('refuses an authentic text over MAX_BODY_CHARS as too_large, not bad_seal, spending no stamp', () => {
    const long = decideContact(
      facts({ opened: { ok: true, text: command(1, { text: 'x'.repeat(MAX_BODY_CHARS + 1) }) } }),
    );
    expect(long.outcome).toMatchObject({ accepted: false, code: 'too_large' });
    expect(long.ops).toEqual([]);
    const atLimit = decideContact(
      facts({ opened: { ok: true, text: command(1, { text: 'x'.repeat(MAX_BODY_CHARS) }) } }),
    );
    expect(atLimit.outcome.accepted).toBe(true);
  });

  it('refuses a device the relay does not list', () => {
    expect(decideContact(facts({ listed: null })).outcome).toMatchObject({ code: 'subscriber_unverified' });
  });
});

describe('applyPinOp', () => {
  const file = { version: 1 as const, devices: { d_1: pinA } };

  it('pins only a device without a pin', () => {
    const op = { op: 'pin', deviceId: 'd_1', publicKey: KEY_B, fingerprint: 'b', at: 9, lastSeq: {} } as const;
    expect(applyPinOp(file, op)).toBe(file);
    expect(applyPinOp(emptyPins(), op).devices.d_1).toMatchObject({ publicKey: KEY_B, verified: false });
  });

  it('raises a stamp only for the pinned key, never lowers it', () => {
    const seq = (publicKey: string, n: number) =>
      applyPinOp(file, { op: 'seq', deviceId: 'd_1', publicKey, purpose: 'agent.command', seq: n });
    expect(seq(KEY_A, 9).devices.d_1?.lastSeq['agent.command']).toBe(9);
    expect(seq(KEY_A, 2).devices.d_1?.lastSeq['agent.command']).toBe(5);
    expect(seq(KEY_B, 9)).toBe(file);
  });

  it('verify: the same key keeps its stamps; a new key is pinned afresh; an unknown device is pinned verified', () => {
    const same = applyPinOp(file, { op: 'verify', deviceId: 'd_1', publicKey: KEY_A, fingerprint: 'aaaa', at: 7 });
    expect(same.devices.d_1).toMatchObject({ verified: true, verifiedAt: 7, lastSeq: { 'agent.command': 5 } });
    const changed = applyPinOp(
      { version: 1, devices: { d_1: { ...pinA, changedKey: { publicKey: KEY_B, fingerprint: 'bbbb', seenAt: 3 } } } },
      { op: 'verify', deviceId: 'd_1', publicKey: KEY_B, fingerprint: 'bbbb', at: 8 },
    ).devices.d_1!;
    expect(changed).toMatchObject({ publicKey: KEY_B, verified: true, pinnedAt: 8, lastSeq: {} });
    expect(changed.changedKey).toBeUndefined();
    expect(trustOf(changed)).toBe('pinned');
    const fresh = applyPinOp(emptyPins(), { op: 'verify', deviceId: 'd_2', publicKey: KEY_B, fingerprint: 'b', at: 1 });
    expect(fresh.devices.d_2).toMatchObject({ verified: true });
  });

  it('forget removes the pin; no pins left means plaintext is allowed again', () => {
    const gone = applyPinOp(file, { op: 'forget', deviceId: 'd_1' });
    expect(gone.devices).toEqual({});
    expect(anyPinned(file)).toBe(true);
    expect(anyPinned(gone)).toBe(false);
  });
});

describe('commandTextProblem: the one size limit, where a message is sealed', () => {
  it.each([
    ['empty', '', 'empty_body'],
    ['one character', 'x', null],
    ['exactly MAX_BODY_CHARS', 'x'.repeat(MAX_BODY_CHARS), null],
    ['one more', 'x'.repeat(MAX_BODY_CHARS + 1), 'too_large'],
    // Characters as JavaScript counts them (UTF-16 code units): an emoji is two.
    ['emoji past the limit', '😀'.repeat(MAX_BODY_CHARS / 2 + 1), 'too_large'],
  ])('%s', (_, text, code) => {
    expect(commandTextProblem(text)?.code ?? null).toBe(code);
  });
});

describe('lookupWithRetry: the device list read again before giving up', () => {
  it('answers once a later try succeeds', async () => {
    let calls = 0;
    const read = async () => {
      if (++calls < 3) throw new Error('fetch failed');
      return 'list';
    };
    expect(await lookupWithRetry(read, [0, 0, 0])).toBe('list');
    expect(calls).toBe(3);
  });

  it('gives up after the last wait with DevicesUnavailableError, which is refused devices_unavailable', async () => {
    let calls = 0;
    const error = await lookupWithRetry(async () => {
      calls++;
      throw new Error('connect ECONNREFUSED 127.0.0.1:1');
    }, [0, 0]).catch((e: unknown) => e);
    expect(calls).toBe(3);
    expect(error).toBeInstanceOf(DevicesUnavailableError);
    expect(openFailure(error, 'agent.command')).toEqual({
      code: 'devices_unavailable',
      message: "could not read the relay's device list: connect ECONNREFUSED 127.0.0.1:1",
    });
    expect(openFailure(new Error('bad'), 'pane.keys').code).toBe('bad_seal');
  });
});

describe('which device a computer is', () => {
  it.each([
    ['first sight pins it', undefined, 'd_1', { ok: true, firstContact: true }],
    ['the pinned device', { hookId: 'c_1', deviceId: 'd_1', pinnedAt: 1 }, 'd_1', { ok: true, firstContact: false }],
    [
      'another device',
      { hookId: 'c_1', deviceId: 'd_1', pinnedAt: 1 },
      'd_2',
      { ok: false, why: 'moved', pinnedDevice: 'd_1' },
    ],
    [
      'another device, already seen',
      { hookId: 'c_1', deviceId: 'd_1', pinnedAt: 1, changedDevice: { deviceId: 'd_2', seenAt: 2 } },
      'd_2',
      { ok: false, why: 'moved', pinnedDevice: 'd_1' },
    ],
  ] as const)('%s', (_name, pin, listed, decision) => {
    expect(decideComputerDevice(pin, listed)).toEqual(decision);
  });

  it('pins once, records a move once, takes the new device on verify, and forgets it with its device', () => {
    let file = applyPinOps(emptyPins(), [
      { op: 'pinComputer', hookId: 'c_1', deviceId: 'd_1', at: 1 },
      { op: 'pinComputer', hookId: 'c_1', deviceId: 'd_9', at: 2 },
    ]);
    expect(file.computers).toEqual({ c_1: { hookId: 'c_1', deviceId: 'd_1', pinnedAt: 1 } });
    const moved = applyPinOp(file, { op: 'computerMoved', hookId: 'c_1', deviceId: 'd_2', at: 3 });
    expect(moved.computers?.c_1?.changedDevice).toEqual({ deviceId: 'd_2', seenAt: 3 });
    expect(applyPinOp(moved, { op: 'computerMoved', hookId: 'c_1', deviceId: 'd_2', at: 4 })).toBe(moved);
    expect(applyPinOp(file, { op: 'computerMoved', hookId: 'c_1', deviceId: 'd_1', at: 4 })).toBe(file);
    file = applyPinOp(moved, { op: 'verifyComputer', hookId: 'c_1', deviceId: 'd_2', at: 5 });
    expect(file.computers?.c_1).toEqual({ hookId: 'c_1', deviceId: 'd_2', pinnedAt: 5 });
    // Device ops keep the computers; forgetting the device drops the computer pinned to it.
    const withKey = applyPinOp(file, {
      op: 'pin',
      deviceId: 'd_2',
      publicKey: KEY_A,
      fingerprint: 'a',
      at: 6,
      lastSeq: {},
    });
    expect(withKey.computers?.c_1?.deviceId).toBe('d_2');
    const forgotten = applyPinOp(withKey, { op: 'forget', deviceId: 'd_2' });
    expect(forgotten.devices).toEqual({});
    expect(forgotten.computers).toBeUndefined();
  });
});
