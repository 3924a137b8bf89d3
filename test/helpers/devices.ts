/**
 * A device for tests, as an app or another computer would be: its own key pair, registered on the relay, sealing
 * for a computer and opening what the computer seals for it. And the relay's SQLite files searched byte for byte.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportPublicKey, generateDeviceKeys, importPublicKey } from '../../core/seal/keys.js';
import { type Envelope, openText, type SealPurpose, seal } from '../../core/seal/seal.js';
import { api, type TestRelay } from './relay.js';

export interface TestDevice {
  deviceId: string;
  publicKey: string;
  privateKey: CryptoKey;
  /** Seal `body` (JSON) for a recipient. */
  seal(purpose: SealPurpose, to: { id: string; publicKey: string }, body: unknown): Promise<Envelope>;
  /** Open what `from` sealed for this device. */
  open(purpose: SealPurpose, envelope: unknown, fromPublicKey: string): Promise<unknown>;
}

export async function registerTestDevice(
  relay: Pick<TestRelay, 'url' | 'apiKey'>,
  kind: 'app' | 'cli' | 'computer' = 'app',
  name = `test ${kind}`,
): Promise<TestDevice> {
  const keys = await generateDeviceKeys(false);
  const publicKey = await exportPublicKey(keys.publicKey);
  const res = await api(relay.url, 'POST', '/devices', { key: relay.apiKey, body: { name, kind, publicKey } });
  if (res.status !== 200) throw new Error(`POST /devices answered ${res.status}: ${JSON.stringify(res.json)}`);
  const deviceId = res.json.deviceId as string;
  return {
    deviceId,
    publicKey,
    privateKey: keys.privateKey,
    seal: async (purpose, to, body) =>
      seal({
        purpose,
        from: { id: deviceId, privateKey: keys.privateKey },
        to: [{ id: to.id, publicKey: await importPublicKey(to.publicKey) }],
        plaintext: JSON.stringify(body),
      }),
    open: async (purpose, envelope, fromPublicKey) =>
      JSON.parse(
        await openText({
          envelope,
          purpose,
          me: { id: deviceId, privateKey: keys.privateKey },
          senderPublicKey: await importPublicKey(fromPublicKey),
        }),
      ),
  };
}

/** The computer's device as the relay lists it (after `svc login`). */
export async function computerDevice(
  relay: Pick<TestRelay, 'url' | 'apiKey'>,
  hookId: string,
): Promise<{ id: string; publicKey: string }> {
  const computers = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
  const deviceId = computers.json.computers.find((c: { hookId: string }) => c.hookId === hookId)?.deviceId;
  if (!deviceId) throw new Error(`computer ${hookId} has no device`);
  const devices = await api(relay.url, 'GET', '/devices', { key: relay.apiKey });
  const device = devices.json.devices.find((d: { deviceId: string }) => d.deviceId === deviceId);
  return { id: deviceId, publicKey: device.publicKey };
}

/** Every file of the relay's SQLite database (the main file and its WAL), as bytes. */
export function relayDatabaseBytes(dataDir: string): Buffer {
  const files = ['relay.db', 'relay.db-wal', 'relay.db-shm'].map((f) => join(dataDir, f)).filter(existsSync);
  return Buffer.concat(files.map((f) => readFileSync(f)));
}

/** Whether `text` occurs in the relay's database files, as UTF-8 or UTF-16 (either byte order). */
export function databaseHolds(dataDir: string, text: string): boolean {
  const bytes = relayDatabaseBytes(dataDir);
  return [Buffer.from(text, 'utf8'), Buffer.from(text, 'utf16le'), Buffer.from(text, 'utf16le').swap16()].some(
    (needle) => bytes.includes(needle),
  );
}
