/**
 * A listener notice (a missed scheduled run, an approval waiting, a finished turn) is sealed for the phones the relay
 * lists. When that list cannot be read at that moment (the relay starting, a loaded machine) the notice is not lost:
 * it is tried again; when there is truly no phone, it is given up with a line in the log.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DeviceIdentity } from '../../../actors/devices/deviceKey.js';
import { createAskService } from '../../../actors/mcp/asks.js';
import { emptyPins } from '../../../core/devices/devices.js';
import type { DeviceListResponse } from '../../../core/protocol/index.js';
import { exportPublicKey, generateDeviceKeys } from '../../../core/seal/keys.js';
import { waitFor } from '../../helpers/relay.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function identity(deviceId: string): Promise<DeviceIdentity> {
  const keys = await generateDeviceKeys(false);
  return {
    deviceId,
    publicKey: await exportPublicKey(keys.publicKey),
    privateKey: keys.privateKey,
    publicCryptoKey: keys.publicKey,
  };
}

async function service(listDevices: () => Promise<DeviceListResponse>) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-asks-'));
  dirs.push(dir);
  const sent: { type: string; frame?: { type: string; session: string } }[] = [];
  const warnings: string[] = [];
  const asks = createAskService({
    me: await identity('d_computer'),
    readPins: emptyPins,
    listDevices,
    asksPath: join(dir, 'asks.json'),
    send: (event) => sent.push(event as never),
    sendToRelay: () => {},
    log: { info: () => {}, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) },
  });
  return { asks, sent, warnings };
}

describe('a listener notice', () => {
  it('is sealed and sent once the relay’s device list can be read again', async () => {
    const phone = await identity('d_phone');
    let calls = 0;
    const { asks, sent, warnings } = await service(async () => {
      calls++;
      if (calls === 1) throw new Error('relay answered HTTP 503');
      return {
        devices: [{ deviceId: 'd_phone', name: 'phone', kind: 'app', publicKey: phone.publicKey, createdAt: 1 }],
      };
    });
    asks.event('svc-nightly', 'schedule', 'Claude Code 1a2b3c at 07:30: missed');
    await waitFor(() => sent.find((e) => e.type === 'NOTIFY.SEND'), { timeoutMs: 10_000, what: 'the notice sent' });
    expect(sent.find((e) => e.type === 'NOTIFY.SEND')?.frame).toMatchObject({
      type: 'notify.new',
      session: 'svc-nightly',
    });
    expect(calls).toBe(2);
    expect(warnings.join('\n')).toMatch(/device list unavailable \(relay answered HTTP 503\)/);
  });

  it('with no phone listed at all, is given up at once, and said so', async () => {
    let calls = 0;
    const { asks, sent, warnings } = await service(async () => {
      calls++;
      return { devices: [] };
    });
    asks.event('svc-nightly', 'schedule', 'missed');
    await waitFor(() => warnings.some((w) => w.includes('not sent')), { timeoutMs: 5_000, what: 'the warning' });
    expect(warnings).toContain('schedule notice for svc-nightly not sent: no phone to seal it for');
    expect(sent.filter((e) => e.type === 'NOTIFY.SEND')).toEqual([]);
    expect(calls).toBe(1);
  });
});
