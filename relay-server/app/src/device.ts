/**
 * This phone as a device: its record in IndexedDB, and the keys the relay lists for computers (pinned on first use,
 * as the listener pins ours). Sealing itself is in crypto.ts, loaded when first needed (it brings zod along).
 */
import type { DeviceInfo, DeviceListResponse } from '../../../core/protocol.js';
import { request } from './api.js';
import { type DeviceRecord, getKv, setKv } from './db.js';

/** A name the person will recognise in `svc devices`: the browser and the system it runs on. */
export function deviceName(ua = navigator.userAgent): string {
  const browser = /Edg\//.test(ua)
    ? 'Edge'
    : /Firefox\//.test(ua)
      ? 'Firefox'
      : /Chrome\/|Chromium\//.test(ua)
        ? 'Chrome'
        : /Safari\//.test(ua)
          ? 'Safari'
          : 'Browser';
  const system = /iPhone|iPad/.test(ua)
    ? 'iPhone'
    : /Android/.test(ua)
      ? 'Android'
      : /Mac OS X/.test(ua)
        ? 'Mac'
        : /Windows/.test(ua)
          ? 'Windows'
          : /Linux/.test(ua)
            ? 'Linux'
            : 'phone';
  return `${browser} on ${system}`;
}

export const loadDevice = () => getKv<DeviceRecord>('device');

// ---------------------------------------------------------------------------
// Computers' keys

export interface KeyView {
  deviceId: string;
  name: string;
  /** What the relay lists now. */
  listed: string;
  /** What this phone pinned on first sight. */
  pinned: string;
  /** The relay lists another key than the pinned one: nothing is sealed for it until a person accepts it. */
  changed: boolean;
}

type Pins = Record<string, string>;

/** The account's devices, with each computer key compared to the one pinned here (first sight pins it). */
export async function refreshKeys(token: string): Promise<Map<string, KeyView>> {
  const { devices } = await request<DeviceListResponse>('GET', '/devices', { token });
  const pins = (await getKv<Pins>('pins')) ?? {};
  let changedPins = false;
  const out = new Map<string, KeyView>();
  for (const d of devices as DeviceInfo[]) {
    if (d.kind !== 'computer') continue;
    if (!pins[d.deviceId]) {
      pins[d.deviceId] = d.publicKey;
      changedPins = true;
    }
    const pinned = pins[d.deviceId]!;
    out.set(d.deviceId, {
      deviceId: d.deviceId,
      name: d.name,
      listed: d.publicKey,
      pinned,
      changed: pinned !== d.publicKey,
    });
  }
  if (changedPins) await setKv('pins', pins);
  return out;
}

/** After comparing safety codes: trust the key the relay lists now. */
export async function acceptKey(deviceId: string, publicKey: string): Promise<void> {
  const pins = (await getKv<Pins>('pins')) ?? {};
  pins[deviceId] = publicKey;
  await setKv('pins', pins);
}

/** Why a message, key or watch was not sealed: the app never falls back to plaintext. */
export class SealRefused extends Error {}
