/**
 * A device's long-term key pair on this computer (docs/security.md): `~/.svc/device-key.json` for the computer
 * (the listener), `~/.svc/cli-device-key.json` for `svc agent send`. The private key never leaves the file (0600 in
 * the 0700 ~/.svc); the relay gets the public key once (`POST /devices`) and answers with the device id.
 */
import { readFileSync, statSync } from 'node:fs';
import { z } from 'zod/v3';
import { DeviceInfo, type DeviceKind } from '../../core/protocol/index.js';
import {
  exportPrivateKey,
  exportPublicKey,
  generateDeviceKeys,
  importPrivateKey,
  importPublicKey,
  publicKeyOfJwk,
} from '../../core/seal/keys.js';
import { writeFileAtomic } from '../files.js';
import { relayJson } from '../relay/http.js';

const KeyFile = z.object({
  version: z.literal(1),
  publicKey: z.string(),
  privateKey: z.record(z.string(), z.unknown()),
  /** The id the relay at `baseUrl` gave this key; registered again when logging in to another relay. */
  deviceId: z.string().optional(),
  baseUrl: z.string().optional(),
  /** `svc agent send`: the last sequence stamp it used (each send takes the next one). */
  seq: z.number().int().safe().nonnegative().optional(),
});
export type KeyFile = z.infer<typeof KeyFile>;

export interface DeviceIdentity {
  deviceId: string;
  publicKey: string;
  privateKey: CryptoKey;
  publicCryptoKey: CryptoKey;
}

export class DeviceKeyError extends Error {}

/**
 * A file under ~/.svc that holds a key or decides trust must be ours and closed to others (0600): one another user
 * could write could swap a key or a pin. Returns false when there is no file; throws when it is not private.
 */
export function checkPrivateFile(path: string, uid = process.getuid?.() ?? 0): boolean {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new DeviceKeyError(`cannot read ${path}: ${(err as Error).message}`);
  }
  if (st.uid !== uid) throw new DeviceKeyError(`refusing ${path}: owned by uid ${st.uid}, not by you`);
  if (st.mode & 0o077) {
    throw new DeviceKeyError(`refusing ${path}: open to others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 it`);
  }
  return true;
}

/** The key file, or null when there is none. A file that is not ours to read is an error, never replaced. */
export function readKeyFile(path: string): KeyFile | null {
  if (!checkPrivateFile(path)) return null;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new DeviceKeyError(`cannot read ${path}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new DeviceKeyError(`${path} is not JSON; move it away to make a new device key`);
  }
  const parsed = KeyFile.safeParse(data);
  if (!parsed.success) throw new DeviceKeyError(`${path} is not a device key file; move it away to make a new one`);
  return parsed.data;
}

export function writeKeyFile(path: string, file: KeyFile): void {
  writeFileAtomic(path, `${JSON.stringify(file, null, 2)}\n`, 0o600);
}

async function identity(file: KeyFile): Promise<DeviceIdentity> {
  const jwk = file.privateKey as JsonWebKey;
  if (publicKeyOfJwk(jwk) !== file.publicKey) throw new DeviceKeyError('device key file: public key does not match');
  return {
    deviceId: file.deviceId ?? '',
    publicKey: file.publicKey,
    privateKey: await importPrivateKey(jwk, false),
    publicCryptoKey: await importPublicKey(file.publicKey),
  };
}

/** The identity in the file, if it has been registered with the relay at `baseUrl`; no network. */
export async function loadDeviceIdentity(path: string, baseUrl?: string): Promise<DeviceIdentity | null> {
  const file = readKeyFile(path);
  if (!file?.deviceId) return null;
  if (baseUrl !== undefined && file.baseUrl !== baseUrl) return null;
  return identity(file);
}

/**
 * Make the key pair if there is none, and register its public key with the relay at `baseUrl` unless it already
 * is (the relay answers the same device for the same key, so registering again is harmless).
 */
export async function ensureDeviceIdentity(opts: {
  path: string;
  baseUrl: string;
  apiKey: string;
  name: string;
  kind: DeviceKind;
}): Promise<DeviceIdentity & { registered: boolean }> {
  let file = readKeyFile(opts.path);
  if (!file) {
    // Written only once the relay took it: a failed login leaves nothing behind.
    const keys = await generateDeviceKeys(true);
    file = {
      version: 1,
      publicKey: await exportPublicKey(keys.publicKey),
      privateKey: { ...(await exportPrivateKey(keys.privateKey)) },
    };
  }
  let registered = false;
  if (!file.deviceId || file.baseUrl !== opts.baseUrl) {
    const device = await relayJson(DeviceInfo, opts.baseUrl, opts.apiKey, 'POST', '/devices', {
      name: opts.name.slice(0, 128),
      kind: opts.kind,
      publicKey: file.publicKey,
    });
    file = { ...file, deviceId: device.deviceId, baseUrl: opts.baseUrl, seq: file.seq };
    writeKeyFile(opts.path, file);
    registered = true;
  }
  return { ...(await identity(file)), registered };
}

/** Take the next sequence stamp of a key file (persisted before it is used, so a stamp is never used twice). */
export function takeSeq(path: string): number {
  const file = readKeyFile(path);
  if (!file) throw new DeviceKeyError(`${path} is missing`);
  const seq = Math.max(file.seq ?? 0, 0) + 1;
  writeKeyFile(path, { ...file, seq });
  return seq;
}
