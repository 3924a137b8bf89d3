/**
 * machines/device.ts with a fake `openSealed`: trust moves unknown → pinned → unverified → (verified) pinned, and
 * stamps are checked in arrival order. The facts a contact gathers are scripted per call.
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock, setup } from 'xstate';
import { applyPinOps, type DevicePin, DevicesUnavailableError, type PinOp } from '../../../core/devices/devices.js';
import {
  type Contact,
  type DeviceResult,
  deviceMachine,
  type OpenSealedInput,
  type OpenSealedOutput,
} from '../../../machines/device.js';
import type { LogParams } from '../../../machines/log.js';

const KEY_A = 'A'.repeat(87);
const KEY_B = 'B'.repeat(87);
const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

/** A parent that keeps what the device tells it; the device's pins live in a fake file. */
function harness(initial?: DevicePin) {
  const state = {
    file: { version: 1 as const, devices: initial ? { d_1: initial } : ({} as Record<string, DevicePin>) },
    listed: KEY_A as string | null,
    /** Thrown by openSealed instead of answering (the device list could not be read, …). */
    fail: null as Error | null,
    results: [] as DeviceResult[],
    logs: [] as LogParams[],
    opened: [] as OpenSealedInput[],
  };
  const device = deviceMachine.provide({
    actors: {
      openSealed: fromPromise<OpenSealedOutput, OpenSealedInput>(async ({ input }) => {
        state.opened.push(input);
        if (state.fail) throw state.fail;
        const env = input.envelope as { key: string; text: string };
        const listed = state.listed ? { publicKey: state.listed, fingerprint: state.listed.slice(0, 4) } : null;
        return {
          pin: state.file.devices.d_1,
          listed,
          // The envelope opens only with the key it was sealed with.
          opened:
            listed && env.key === listed.publicKey ? { ok: true, text: env.text } : { ok: false, reason: 'tampered' },
          now: 1_000,
        };
      }),
    },
    actions: {
      log: (_, p) => {
        state.logs.push(p);
      },
      persistPins: (_, p: { ops: PinOp[] }) => {
        state.file = applyPinOps(state.file, p.ops);
      },
    },
  });
  const parent = setup({ actors: { device } }).createMachine({
    invoke: { id: 'device.d_1', systemId: 'device.d_1', src: 'device', input: { deviceId: 'd_1', pin: initial } },
    on: {
      'DEVICE.RESULT': {
        actions: ({ event }) => {
          state.results.push(event as unknown as DeviceResult);
        },
      },
    },
  });
  const actor = createActor(parent, { clock: new SimulatedClock() });
  actor.start();
  const child = () => actor.getSnapshot().children['device.d_1']!;
  const contact = (seq: number, key = KEY_A, id = seq): Contact => ({
    ref: { kind: 'watch', session: 's', connection: `c${id}` },
    purpose: 'agent.command',
    envelope: { key, text: JSON.stringify({ text: 'hi', seq, sentAt: 0, session: 's' }) },
  });
  const send = (c: Contact) => child().send({ type: 'CONTACT', contact: c });
  const trust = () => (child().getSnapshot() as { value: { trust: string } }).value.trust;
  return { state, send, contact, trust, child };
}

describe('device machine', () => {
  it('unknown → pinned on the first sealed contact that opens with the listed key', async () => {
    const h = harness();
    expect(h.trust()).toBe('unknown');
    h.send(h.contact(1));
    await flush();
    expect(h.trust()).toBe('pinned');
    expect(h.state.results[0]).toMatchObject({ outcome: { accepted: true, publicKey: KEY_A }, trust: 'pinned' });
    expect(h.state.file.devices.d_1).toMatchObject({ publicKey: KEY_A, lastSeq: { 'agent.command': 1 } });
    expect(h.state.logs.some((l) => /device d_1 pinned/.test(l.message))).toBe(true);
  });

  it.each([
    [
      'the device list could not be read: temporary, not tampering',
      new DevicesUnavailableError('fetch failed'),
      'devices_unavailable',
    ],
    ['anything else that stops opening', new Error('this computer has no device key'), 'bad_seal'],
  ])('refuses a contact it could not open at all: %s', async (_, error, code) => {
    const h = harness();
    h.state.fail = error;
    h.send(h.contact(1));
    await flush();
    expect(h.state.results[0]?.outcome).toMatchObject({ accepted: false, code });
    expect(h.trust()).toBe('unknown');
    // The next contact is opened normally once the list can be read again.
    h.state.fail = null;
    h.send(h.contact(2));
    await flush();
    expect(h.state.results[1]?.outcome).toMatchObject({ accepted: true });
  });

  it('does not pin on a contact that does not open (bad_seal)', async () => {
    const h = harness();
    h.send(h.contact(1, KEY_B));
    await flush();
    expect(h.trust()).toBe('unknown');
    expect(h.state.results[0]?.outcome).toMatchObject({ accepted: false, code: 'bad_seal' });
    expect(h.state.file.devices).toEqual({});
  });

  it('handles contacts one at a time, in order: a reordered stamp is refused (replayed)', async () => {
    const h = harness();
    h.send(h.contact(2));
    h.send(h.contact(1));
    h.send(h.contact(2, KEY_A, 3));
    h.send(h.contact(3));
    await flush();
    expect(h.state.results.map((r) => (r.outcome.accepted ? 'ok' : r.outcome.code))).toEqual([
      'ok',
      'replayed',
      'replayed',
      'ok',
    ]);
    expect(h.state.file.devices.d_1?.lastSeq['agent.command']).toBe(3);
  });

  it('key change → unverified (loud), refused until verify; then pinned and verified', async () => {
    const h = harness();
    h.send(h.contact(1));
    await flush();
    h.state.listed = KEY_B; // the relay now lists another key
    h.send(h.contact(2, KEY_B));
    await flush();
    expect(h.trust()).toBe('unverified');
    expect(h.state.results[1]?.outcome).toMatchObject({ accepted: false, code: 'subscriber_unverified' });
    expect(h.state.logs.filter((l) => l.level === 'error').map((l) => l.message)).toEqual([
      expect.stringMatching(/^device d_1 changed its key: pinned AAAA, the relay now lists BBBB/),
    ]);
    // The old key is refused too while unverified.
    h.send(h.contact(3, KEY_B));
    await flush();
    expect(h.state.results[2]?.outcome).toMatchObject({ code: 'subscriber_unverified' });

    // `svc devices verify d_1` writes the file; the listener passes the new pin on.
    h.state.file = applyPinOps(h.state.file, [
      { op: 'verify', deviceId: 'd_1', publicKey: KEY_B, fingerprint: 'BBBB', at: 2_000 },
    ]);
    h.child().send({ type: 'PIN.SYNC', pin: h.state.file.devices.d_1 });
    await flush();
    expect(h.trust()).toBe('pinned');
    expect((h.child().getSnapshot() as { context: { pin: DevicePin } }).context.pin.verified).toBe(true);
    h.send(h.contact(1, KEY_B, 9)); // a new key starts its stamps afresh
    await flush();
    expect(h.state.results[3]?.outcome).toMatchObject({ accepted: true, publicKey: KEY_B });
  });

  it('rebuilds from the file: a device pinned before a restart starts pinned, with its stamps', async () => {
    const pin: DevicePin = {
      deviceId: 'd_1',
      publicKey: KEY_A,
      fingerprint: 'AAAA',
      pinnedAt: 1,
      verified: true,
      lastSeq: { 'agent.command': 7 },
    };
    const h = harness(pin);
    expect(h.trust()).toBe('pinned');
    h.send(h.contact(7));
    await flush();
    expect(h.state.results[0]?.outcome).toMatchObject({ code: 'replayed' });
  });

  it('a forgotten device is unknown again', async () => {
    const h = harness();
    h.send(h.contact(1));
    await flush();
    h.child().send({ type: 'PIN.SYNC', pin: undefined });
    await flush();
    expect(h.trust()).toBe('unknown');
  });
});
