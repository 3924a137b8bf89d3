/**
 * A listener notice (a missed scheduled run, an approval waiting, a finished turn) is sealed for the phones the relay
 * lists. When that list cannot be read at that moment (the relay starting, a loaded machine) the notice is not lost:
 * it is tried again; when there is truly no phone, it is given up with a line in the log.
 */
import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpRequest } from '../../../actors/daemon/controlSocket.js';
import type { DeviceIdentity } from '../../../actors/devices/deviceKey.js';
import { createAskService } from '../../../actors/mcp/asks.js';
import { createOutbox } from '../../../actors/seal/outbox.js';
import type { ControlReply } from '../../../core/daemon/control.js';
import { emptyPins } from '../../../core/devices/devices.js';
import type { ClientFrame, DeviceListResponse } from '../../../core/protocol/index.js';
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
  const toRelay: ClientFrame[] = [];
  const warnings: string[] = [];
  const log = { info: () => {}, warn: (m: string) => warnings.push(m), error: (m: string) => warnings.push(m) };
  const outbox = createOutbox({ me: await identity('d_computer'), readPins: emptyPins, listDevices, log });
  const asks = createAskService({
    outbox,
    asksPath: join(dir, 'asks.json'),
    send: (event) => sent.push(event as never),
    sendToRelay: (frame) => void toRelay.push(frame),
    log,
  });
  return { asks, sent, warnings, toRelay, dir };
}

describe('asks whose supervisor failed (machines/asks.ts)', () => {
  it('each end failed for its asker and closed for the phones, once', async () => {
    const phone = await identity('d_phone');
    const listed = {
      deviceId: 'd_phone',
      name: 'phone',
      kind: 'app' as const,
      publicKey: phone.publicKey,
      createdAt: 1,
    };
    const { asks, sent, toRelay, dir } = await service(async () => ({ devices: [listed] }));
    const sock = Object.assign(new EventEmitter(), { setTimeout: () => {} }) as unknown as Socket;
    const replies: ControlReply[] = [];
    const request: McpRequest = {
      type: 'ask',
      session: 'svc-proj',
      question: 'deploy?',
      choices: [],
      timeoutSeconds: 60,
    };
    asks.handle(sock, request, (r) => void replies.push(r));
    await waitFor(() => sent.find((e) => e.type === 'ASK.START'), { timeoutMs: 10_000, what: 'the ask started' });
    const id = (replies[0] as { id: string }).id;
    asks.abandon();
    asks.abandon();
    expect(replies.filter((r) => r.type === 'ask.done')).toEqual([
      { ok: true, type: 'ask.done', id, outcome: expect.objectContaining({ state: 'failed', code: 'ask_failed' }) },
    ]);
    expect(toRelay).toEqual([{ type: 'ask.closed', id, state: 'expired' }]);
    // the asks file no longer lists it: a listener started after this one has nothing to close
    expect(JSON.parse(readFileSync(join(dir, 'asks.json'), 'utf8')).asks).toEqual([]);
  });
});

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
