/**
 * This phone as a device: its record in IndexedDB, and the keys the relay lists for computers (pinned on first use,
 * as the listener pins ours). Sealing itself is in crypto.ts, loaded when first needed (it brings zod along).
 */
import { decideComputerDevice } from '../../../core/devices/computerPins.js';
import type { DeviceInfo } from '../../../core/protocol/index.js';
import { request } from './api.js';
import { type DeviceRecord, getKv, setKv } from './db.js';
import type { ComputerInfo } from './inventory.js';

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
  /**
   * Set when the relay names another device for a computer than the one pinned for it here: `deviceId` and `listed`
   * are the new device's, `pinned` the key of the device it was (`movedFrom`), and `changed` is true.
   */
  movedFrom?: string;
  /** The computer (hookId) a moved device is named for. */
  hookId?: string;
}

/** Key pins: device id → public key. Computer pins: hookId → the device id first seen for that computer. */
type Pins = Record<string, string>;

export interface Keys {
  /** Computer devices by device id. */
  keys: Map<string, KeyView>;
  /** Computers the relay now names another device for, by hookId: refused until a person accepts the new one. */
  moved: Map<string, KeyView>;
}

/**
 * The account's devices, with each computer key compared to the one pinned here, and each computer's device
 * compared to the one pinned for it (first sight pins both). The relay could otherwise repoint a computer at a
 * device whose key it holds, which looks like a device seen for the first time.
 */
export async function refreshKeys(token: string, computers: readonly ComputerInfo[]): Promise<Keys> {
  const { devices } = await request('DeviceListResponse', 'GET', '/devices', { token });
  const pins = (await getKv<Pins>('pins')) ?? {};
  const computerPins = (await getKv<Pins>('computerPins')) ?? {};
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
  const moved = new Map<string, KeyView>();
  let changedComputers = false;
  for (const c of computers) {
    const now = c.deviceId ? out.get(c.deviceId) : undefined;
    if (!c.deviceId || !now) continue;
    const was = computerPins[c.hookId];
    const decision = decideComputerDevice(was ? { deviceId: was } : undefined, c.deviceId);
    if (decision.ok && decision.firstContact) {
      computerPins[c.hookId] = c.deviceId;
      changedComputers = true;
    } else if (!decision.ok) {
      const from = decision.pinnedDevice;
      const pinned = pins[from] ?? '';
      moved.set(c.hookId, { ...now, name: c.name, pinned, changed: true, movedFrom: from, hookId: c.hookId });
    }
  }
  if (changedComputers) await setKv('computerPins', computerPins);
  return { keys: out, moved };
}

/**
 * After comparing safety codes: trust the key the relay lists now, and, for a computer that moved, that this
 * device is that computer from now on.
 */
export async function acceptKey(deviceId: string, publicKey: string, hookId?: string): Promise<void> {
  const pins = (await getKv<Pins>('pins')) ?? {};
  pins[deviceId] = publicKey;
  await setKv('pins', pins);
  if (hookId === undefined) return;
  const computerPins = (await getKv<Pins>('computerPins')) ?? {};
  computerPins[hookId] = deviceId;
  await setKv('computerPins', computerPins);
}

/** Why a message, key or watch was not sealed: the app never falls back to plaintext. */
export class SealRefused extends Error {}

/**
 * Why something sealed did not open on this phone, in words (issue 30 item 4): `what` is what it was ("This question").
 * A phone paired with a computer's own link is sealed for from the start; another one from its first message or
 * Watch (or once `svc devices verify` ran on the computer).
 */
export function unopenedText(what: string, error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  switch (code) {
    case 'not_for_me':
      return `${what} was not sealed for this phone: the computer did not know this phone yet. Send it a message or Watch a session from here, and what comes next is sealed for this phone too.`;
    case 'tampered':
      return `${what} did not open: it was changed on the way, or it came with a key that is not the one this phone knows for the computer.`;
    case 'no_key':
      return `${what} did not open: this phone has no key for that computer yet.`;
    default:
      return `${what} did not open on this phone: it is damaged, or from another version of svc.`;
  }
}
