/**
 * Everything that needs core/seal/seal.ts and core/seal/keys.ts (and so zod): pairing with a fresh key pair, sealing for a computer, opening
 * what it sealed, safety codes. A separate chunk: the agents list draws before it arrives.
 */
import { pairingProof } from '../../../core/devices/pairingProof.js';
import type { PairingClaimResponse } from '../../../core/protocol/index.js';
import { exportPublicKey, generateDeviceKeys, importPublicKey } from '../../../core/seal/keys.js';
import { openText, type SealPurpose, seal } from '../../../core/seal/seal.js';
import { type RelayError, request } from './api.js';
import { type DeviceRecord, setKv } from './db.js';
import { deviceName, type KeyView, SealRefused } from './device.js';

export { commandTextProblem } from '../../../core/protocol/limits.js';
export { fingerprint, safetyCode } from '../../../core/seal/keys.js';

export type PairOutcome =
  | { ok: true; device: DeviceRecord }
  | { ok: false; reason: 'used' | 'expired' | 'invalid' | 'error'; message: string };

/**
 * Claim a pairing code with a fresh key pair, and with the proof of it under the link's secret when the link held one
 * (the computer that made the link then seals for this phone at once: core/devices/pairingProof.ts); the device,
 * token and keys are stored before this returns.
 */
export async function pair(code: string, secret?: string): Promise<PairOutcome> {
  const keys = await generateDeviceKeys(false);
  const publicKeyText = await exportPublicKey(keys.publicKey);
  const name = deviceName();
  let answer: PairingClaimResponse;
  try {
    const proof = secret ? await pairingProof(secret, publicKeyText) : undefined;
    answer = await request('PairingClaimResponse', 'POST', '/pairings/claim', {
      body: { code, name, publicKey: publicKeyText, ...(proof ? { proof } : {}) },
    });
  } catch (error) {
    const e = error as RelayError;
    if (e.code === 'pairing_used') return { ok: false, reason: 'used', message: e.message };
    if (e.code === 'pairing_expired') return { ok: false, reason: 'expired', message: e.message };
    if (e.status === 404 || e.status === 400) return { ok: false, reason: 'invalid', message: e.message };
    return { ok: false, reason: 'error', message: e.message };
  }
  const device: DeviceRecord = {
    deviceId: answer.deviceId,
    name: answer.name,
    token: answer.token,
    privateKey: keys.privateKey,
    publicKey: keys.publicKey,
    publicKeyText,
    pairedAt: Date.now(),
  };
  await setKv('device', device);
  return { ok: true, device };
}

const imported = new Map<string, Promise<CryptoKey>>();
function keyOf(text: string): Promise<CryptoKey> {
  let key = imported.get(text);
  if (!key) {
    key = importPublicKey(text);
    imported.set(text, key);
  }
  return key;
}

/** Seal a body for one computer's pinned key. Refuses (never falls back to plaintext) when there is none. */
export async function sealFor(
  me: DeviceRecord,
  key: KeyView | undefined,
  purpose: SealPurpose,
  body: unknown,
): Promise<unknown> {
  if (!key) throw new SealRefused('this computer has no key yet: update svc on it (the app only sends encrypted)');
  if (key.movedFrom) {
    throw new SealRefused(
      `the relay names another device for ${key.name}: compare the safety code on the Device screen`,
    );
  }
  if (key.changed) {
    throw new SealRefused(`the relay lists a new key for ${key.name}: compare the safety code on the Device screen`);
  }
  return seal({
    purpose,
    from: { id: me.deviceId, privateKey: me.privateKey },
    to: [{ id: key.deviceId, publicKey: await keyOf(key.pinned) }],
    plaintext: JSON.stringify(body),
  });
}

/** Open something a computer sealed for this phone, with the pinned key. */
export async function openFrom(me: DeviceRecord, key: KeyView, purpose: SealPurpose, envelope: unknown) {
  const text = await openText({
    envelope,
    purpose,
    me: { id: me.deviceId, privateKey: me.privateKey },
    senderPublicKey: await keyOf(key.pinned),
  });
  return JSON.parse(text) as unknown;
}
