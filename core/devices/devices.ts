/**
 * Which devices this computer trusts, and what it does with a sealed contact from one (docs/security.md).
 *
 * A device is `unknown` until its first sealed contact whose envelope opens with the key the relay lists for it;
 * that key is then pinned in `~/.svc/devices.json`. Later contacts must come with the same listed key: a different
 * one makes the device `unverified` (said loudly, and every contact refused `subscriber_unverified`) until a person
 * compares safety codes and runs `svc devices verify <id>`. Sequence stamps must increase per device and purpose.
 *
 * Pure: the listener reads the file and the relay's list, opens the envelope, and hands the facts in; changes go
 * back out as operations (`PinOp`) that are applied to the file as it is on disk at that moment, so the listener
 * and `svc devices` can both write it without undoing each other.
 */
import { z } from 'zod/v3';
import { INBOUND_BODIES, type InboundBody, type InboundPurpose } from '../protocol/bodies.js';
import { issueLine, MAX_BODY_CHARS, type RefusalCode } from '../protocol/index.js';

export { type ComputerDecision, decideComputerDevice } from './computerPins.js';

/** The most device actors the listener keeps: a relay inventing device ids cannot grow it without bound. */
export const MAX_DEVICE_ACTORS = 64;

export const DevicePin = z.object({
  deviceId: z.string(),
  /** The pinned public key (base64url raw point). */
  publicKey: z.string(),
  fingerprint: z.string(),
  pinnedAt: z.number().finite(),
  /** A person compared the safety code of this key and said it matches (`svc devices verify`). */
  verified: z.boolean(),
  verifiedAt: z.number().finite().optional(),
  /** The relay listed another key for this device: every contact is refused until a person verifies one. */
  changedKey: z.object({ publicKey: z.string(), fingerprint: z.string(), seenAt: z.number().finite() }).optional(),
  /** Highest sequence stamp accepted from this device, per purpose. */
  lastSeq: z.record(z.string(), z.number().int().safe().nonnegative()),
});
export type DevicePin = z.infer<typeof DevicePin>;

/**
 * Which device a computer is, as first seen (`cli-pins.json`; `svc agent send`). The relay's computer → device
 * mapping is as unsigned as its key list: a computer whose device changes is refused like a changed key.
 */
export const ComputerPin = z.object({
  hookId: z.string(),
  deviceId: z.string(),
  pinnedAt: z.number().finite(),
  /** The relay names another device for this computer: nothing is sealed for it until a person verifies that one. */
  changedDevice: z.object({ deviceId: z.string(), seenAt: z.number().finite() }).optional(),
});
export type ComputerPin = z.infer<typeof ComputerPin>;

export const PinsFile = z.object({
  version: z.literal(1),
  devices: z.record(z.string(), DevicePin),
  /** By hookId. Absent in files written before computers were pinned. */
  computers: z.record(z.string(), ComputerPin).optional(),
});
export type PinsFile = z.infer<typeof PinsFile>;

export function emptyPins(): PinsFile {
  return { version: 1, devices: {} };
}

export type TrustState = 'unknown' | 'pinned' | 'unverified';

export function trustOf(pin: DevicePin | undefined): TrustState {
  if (!pin) return 'unknown';
  return pin.changedKey ? 'unverified' : 'pinned';
}

/** Once any device has been pinned, plaintext requests are refused with `e2ee_required` (spec 5.5). */
export function anyPinned(file: PinsFile): boolean {
  return Object.keys(file.devices).length > 0;
}

// ---------------------------------------------------------------------------
// Changes to the file

export type PinOp =
  /** First sealed contact: pin the key (no-op when the device already has a pin). */
  | { op: 'pin'; deviceId: string; publicKey: string; fingerprint: string; at: number; lastSeq: Record<string, number> }
  /** A stamp was accepted (no-op unless the pinned key is still this one). */
  | { op: 'seq'; deviceId: string; publicKey: string; purpose: string; seq: number }
  /** The relay lists another key for a pinned device. */
  | { op: 'keyChanged'; deviceId: string; publicKey: string; fingerprint: string; at: number }
  /** A person compared the safety code of this key: pin it, verified. A new key starts its stamps afresh. */
  | { op: 'verify'; deviceId: string; publicKey: string; fingerprint: string; at: number }
  /** Dropping a device drops the computers pinned to it too (their next contact is a first one). */
  | { op: 'forget'; deviceId: string }
  /** First time this computer is seen with a device: remember which (no-op when it has a pin). */
  | { op: 'pinComputer'; hookId: string; deviceId: string; at: number }
  /** The relay names another device for a pinned computer. */
  | { op: 'computerMoved'; hookId: string; deviceId: string; at: number }
  /** A person compared the safety code of the device the relay names now: it is the computer's device. */
  | { op: 'verifyComputer'; hookId: string; deviceId: string; at: number };

export function applyPinOp(file: PinsFile, op: PinOp): PinsFile {
  if (op.op === 'pinComputer' || op.op === 'computerMoved' || op.op === 'verifyComputer') {
    return applyComputerOp(file, op);
  }
  const devices = { ...file.devices };
  const pin = devices[op.deviceId];
  switch (op.op) {
    case 'pin':
      if (pin) return file;
      devices[op.deviceId] = {
        deviceId: op.deviceId,
        publicKey: op.publicKey,
        fingerprint: op.fingerprint,
        pinnedAt: op.at,
        verified: false,
        lastSeq: { ...op.lastSeq },
      };
      break;
    case 'seq':
      if (!pin || pin.publicKey !== op.publicKey) return file;
      devices[op.deviceId] = {
        ...pin,
        lastSeq: { ...pin.lastSeq, [op.purpose]: Math.max(pin.lastSeq[op.purpose] ?? 0, op.seq) },
      };
      break;
    case 'keyChanged':
      if (!pin || pin.publicKey === op.publicKey || pin.changedKey?.publicKey === op.publicKey) return file;
      devices[op.deviceId] = {
        ...pin,
        changedKey: { publicKey: op.publicKey, fingerprint: op.fingerprint, seenAt: op.at },
      };
      break;
    case 'verify': {
      const sameKey = pin?.publicKey === op.publicKey;
      devices[op.deviceId] = {
        deviceId: op.deviceId,
        publicKey: op.publicKey,
        fingerprint: op.fingerprint,
        pinnedAt: sameKey && pin ? pin.pinnedAt : op.at,
        verified: true,
        verifiedAt: op.at,
        lastSeq: sameKey && pin ? pin.lastSeq : {},
      };
      break;
    }
    case 'forget': {
      const computers = Object.values(file.computers ?? {}).filter((c) => c.deviceId !== op.deviceId);
      if (!pin && computers.length === Object.keys(file.computers ?? {}).length) return file;
      delete devices[op.deviceId];
      return withComputers({ version: 1, devices }, Object.fromEntries(computers.map((c) => [c.hookId, c])));
    }
  }
  return withComputers({ version: 1, devices }, file.computers);
}

const withComputers = (file: PinsFile, computers: PinsFile['computers']): PinsFile =>
  computers && Object.keys(computers).length > 0 ? { ...file, computers } : file;

type ComputerOp = Extract<PinOp, { op: 'pinComputer' | 'computerMoved' | 'verifyComputer' }>;

function applyComputerOp(file: PinsFile, op: ComputerOp): PinsFile {
  const computers = { ...file.computers };
  const pin = computers[op.hookId];
  switch (op.op) {
    case 'pinComputer':
      if (pin) return file;
      computers[op.hookId] = { hookId: op.hookId, deviceId: op.deviceId, pinnedAt: op.at };
      break;
    case 'computerMoved':
      if (!pin || pin.deviceId === op.deviceId || pin.changedDevice?.deviceId === op.deviceId) return file;
      computers[op.hookId] = { ...pin, changedDevice: { deviceId: op.deviceId, seenAt: op.at } };
      break;
    case 'verifyComputer':
      computers[op.hookId] = { hookId: op.hookId, deviceId: op.deviceId, pinnedAt: op.at };
      break;
  }
  return { ...file, computers };
}

export function applyPinOps(file: PinsFile, ops: readonly PinOp[]): PinsFile {
  return ops.reduce(applyPinOp, file);
}

// ---------------------------------------------------------------------------
// A sealed contact

export type TrustDecision =
  | { ok: true; key: string; firstContact: boolean }
  | { ok: false; why: 'not_listed' | 'key_changed' | 'unverified' };

/**
 * Which key to trust for a contact from a device: the pinned one when the relay still lists it, the listed one on
 * first contact. Anything else is refused: the relay's list is unsigned, so a changed key is exactly what a relay
 * swapping keys would show.
 */
export function decideTrust(pin: DevicePin | undefined, listedKey: string | null): TrustDecision {
  if (listedKey === null) return { ok: false, why: 'not_listed' };
  if (!pin) return { ok: true, key: listedKey, firstContact: true };
  if (pin.changedKey) return { ok: false, why: 'unverified' };
  if (pin.publicKey !== listedKey) return { ok: false, why: 'key_changed' };
  return { ok: true, key: pin.publicKey, firstContact: false };
}

export interface ContactFacts<P extends InboundPurpose = InboundPurpose> {
  deviceId: string;
  purpose: P;
  /** The pin as the file holds it now. */
  pin: DevicePin | undefined;
  /** What the relay's device list says for this device (refetched when unknown or changed), or null. */
  listed: { publicKey: string; fingerprint: string } | null;
  /** The envelope opened with the listed key: its text, or why it did not open. Null when not tried. */
  opened: { ok: true; text: string } | { ok: false; reason: string } | null;
  now: number;
}

export type ContactOutcome<P extends InboundPurpose = InboundPurpose> =
  | { accepted: true; body: InboundBody<P>; publicKey: string }
  | {
      accepted: false;
      code: Extract<
        RefusalCode,
        'subscriber_unverified' | 'bad_seal' | 'replayed' | 'too_large' | 'devices_unavailable'
      >;
      message: string;
    };

export interface ContactDecision<P extends InboundPurpose = InboundPurpose> {
  outcome: ContactOutcome<P>;
  ops: PinOp[];
  /** A line to log loudly (a key change), or null. */
  alarm: string | null;
}

/** Everything the listener decides about one sealed contact, in order: trust, opening, shape, stamp. */
export function decideContact<P extends InboundPurpose>(facts: ContactFacts<P>): ContactDecision<P> {
  const { deviceId, purpose, pin, listed, opened, now } = facts;
  const refuse = (
    code: 'subscriber_unverified' | 'bad_seal' | 'replayed' | 'too_large',
    message: string,
    ops: PinOp[] = [],
  ) => ({
    outcome: { accepted: false as const, code, message },
    ops,
    alarm: null as string | null,
  });
  const trust = decideTrust(pin, listed?.publicKey ?? null);
  if (!trust.ok) {
    if (trust.why === 'not_listed') {
      return refuse('subscriber_unverified', `device ${deviceId} is not in the account's device list`);
    }
    // A key not seen before for this device (not the pinned one, not the change already recorded) is news.
    const isNewChange =
      listed && pin && listed.publicKey !== pin.publicKey && listed.publicKey !== pin.changedKey?.publicKey;
    const ops: PinOp[] = isNewChange
      ? [{ op: 'keyChanged', deviceId, publicKey: listed.publicKey, fingerprint: listed.fingerprint, at: now }]
      : [];
    const decision = refuse(
      'subscriber_unverified',
      `device ${deviceId} changed its key; refused until \`svc devices verify ${deviceId}\``,
      ops,
    );
    if (isNewChange) {
      decision.alarm =
        `device ${deviceId} changed its key: pinned ${pin.fingerprint}, the relay now lists ${listed.fingerprint}; ` +
        `refusing it (subscriber_unverified) until a person compares the safety code and runs ` +
        `\`svc devices verify ${deviceId}\``;
    }
    return decision;
  }
  if (!opened) return refuse('bad_seal', 'sealed body was not opened');
  if (!opened.ok) return refuse('bad_seal', `sealed body did not open: ${opened.reason}`);
  let json: unknown;
  try {
    json = JSON.parse(opened.text);
  } catch {
    return refuse('bad_seal', 'sealed body is not JSON');
  }
  const parsed = INBOUND_BODIES[purpose].safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || 'body';
    // Authentic, and only too long: a sender that skipped the check where it sealed (core/protocol/bodies.ts).
    if (purpose === 'agent.command' && where === 'text' && issue?.code === 'too_big') {
      return refuse('too_large', `sealed ${purpose} text is over ${MAX_BODY_CHARS} characters`);
    }
    return refuse('bad_seal', `sealed ${purpose} body: ${issueLine(parsed.error, 'body')}`);
  }
  const body = parsed.data as InboundBody<P>;
  const last = pin?.lastSeq[purpose] ?? 0;
  if (body.seq <= last) {
    return refuse('replayed', `sequence stamp ${body.seq} is not above ${last}, the last one from ${deviceId}`);
  }
  const ops: PinOp[] = trust.firstContact
    ? [
        {
          op: 'pin',
          deviceId,
          publicKey: trust.key,
          fingerprint: listed!.fingerprint,
          at: now,
          lastSeq: { [purpose]: body.seq },
        },
      ]
    : [{ op: 'seq', deviceId, publicKey: trust.key, purpose, seq: body.seq }];
  return { outcome: { accepted: true, body, publicKey: trust.key }, ops, alarm: null };
}

/**
 * The relay's device list could not be read (the relay restarting, the network), even after retrying: nothing is
 * known about the sender, so nothing is decided about it. Temporary, and no sign of tampering.
 */
export class DevicesUnavailableError extends Error {
  override readonly name = 'DevicesUnavailableError';
}

/** How long to wait before each new try to read the device list (about 4 s in all, a relay restart's length). */
export const DEVICE_LIST_RETRY_MS: readonly number[] = [250, 500, 1_000, 2_000];

/**
 * What a sealed contact that could not be opened at all is refused with: `devices_unavailable` (temporary, send it
 * again) when the device list could not be read, else `bad_seal`.
 */
export function openFailure(
  error: unknown,
  purpose: string,
): { code: 'devices_unavailable' | 'bad_seal'; message: string } {
  if (error instanceof DevicesUnavailableError) {
    return { code: 'devices_unavailable', message: `could not read the relay's device list: ${error.message}` };
  }
  return { code: 'bad_seal', message: `could not open a sealed ${purpose}: ${String(error).slice(0, 200)}` };
}
