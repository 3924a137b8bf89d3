/**
 * The one way the listener seals for the phones (docs/security.md): asks, notifications, approval cards, schedules
 * and history go to every phone it seals for and to this computer; an answer to one device's request (a file view, a
 * new session) to that device alone, with the key this computer pinned for it; a live pane's frame to the device that
 * watches it, with the key the relay listed when the watch began.
 *
 * Who the phones are is decided in one place too (core/mcp/ask.ts `chooseRecipients`): the pinned devices whose key
 * the relay still lists unchanged, or before any is pinned the app devices it lists.
 */
import { fromPromise } from 'xstate';
import { emptyPins, type PinsFile } from '../../core/devices/devices.js';
import { chooseRecipients, type Recipient } from '../../core/mcp/ask.js';
import type { DeviceListResponse } from '../../core/protocol/index.js';
import { type Envelope, type SealPurpose, seal } from '../../core/seal/seal.js';
import type { SealFrameInput } from '../../machines/paneWatch.js';
import type { DeviceIdentity } from '../devices/deviceKey.js';
import { cryptoKey } from './e2ee.js';

export interface OutboxDeps {
  /** This computer's device key; without it nothing is sealed. */
  me: DeviceIdentity | null;
  readPins: () => PinsFile;
  /** The relay's device list (GET /devices). */
  listDevices: () => Promise<DeviceListResponse>;
  /**
   * Pins the listed phones that paired with this computer's own link (actors/devices/pairings.ts), before the
   * recipients are chosen; the pins as they are after it.
   */
  pinPaired?: (pins: PinsFile, listed: DeviceListResponse['devices']) => Promise<PinsFile>;
  log: { warn(m: string): void };
}

/** What goes to every phone: an ask, a notification, a card, the schedules, a history chunk. */
export type PhonesPurpose = Extract<
  SealPurpose,
  'ask.question' | 'notify' | 'approval' | 'schedules' | 'history.chunk'
>;
/** What goes to one device alone: the answer to its request, a live pane's frame. */
export type DevicePurpose = Extract<SealPurpose, 'file' | 'launch' | 'pane.frame'>;

export function createOutbox(deps: OutboxDeps) {
  /** Whether the last reading of the relay's device list failed (the pins alone were sealed for). */
  let listUnread = false;

  /** The phones to seal for: the relay's list when it answers, else the pins alone; none without a device key. */
  const recipients = async (): Promise<Recipient[]> => {
    const me = deps.me;
    if (!me) return [];
    let pins: PinsFile;
    try {
      pins = deps.readPins();
    } catch {
      pins = emptyPins();
    }
    let listed: DeviceListResponse['devices'];
    try {
      listed = (await deps.listDevices()).devices;
      listUnread = false;
    } catch (err) {
      listUnread = true;
      deps.log.warn(`device list unavailable (${(err as Error).message}): sealing for the pinned devices only`);
      listed = Object.values(pins.devices).map((p) => ({ ...p, kind: 'app', name: p.deviceId }) as never);
    }
    if (deps.pinPaired) {
      try {
        pins = await deps.pinPaired(pins, listed);
      } catch (err) {
        deps.log.warn(`could not pin the phones paired with this computer's link: ${(err as Error).message}`);
      }
    }
    return chooseRecipients(pins.devices, listed, me.deviceId);
  };

  const sealTo = async (
    purpose: SealPurpose,
    body: object,
    to: readonly { deviceId: string; publicKey: string }[],
    self: boolean,
  ): Promise<Envelope> => {
    const me = deps.me;
    if (!me) throw new Error('this computer has no device key');
    const recipients = await Promise.all(
      to.map(async (r) => ({ id: r.deviceId, publicKey: await cryptoKey(r.publicKey) })),
    );
    return seal({
      purpose,
      from: { id: me.deviceId, privateKey: me.privateKey },
      to: self ? [{ id: me.deviceId, publicKey: me.publicCryptoKey }, ...recipients] : recipients,
      plaintext: JSON.stringify(body),
    });
  };

  return {
    me: deps.me,
    recipients,
    /** Whether the last reading of the relay's device list failed. */
    listUnread: () => listUnread,
    /** `body` sealed for the phones `to` (from `recipients`) and this computer. */
    forPhones: (purpose: PhonesPurpose, body: object, to: readonly Recipient[]) => sealTo(purpose, body, to, true),
    /** `body` sealed for the phones now and this computer; null without a device key or a phone. */
    async toPhones(purpose: PhonesPurpose, body: object): Promise<Envelope | null> {
      if (!deps.me) return null;
      const to = await recipients();
      return to.length === 0 ? null : sealTo(purpose, body, to, true);
    },
    /** `body` sealed for one device alone, with the key given (a live pane's, listed when its watch began). */
    forDevice: (purpose: DevicePurpose, body: object, device: { deviceId: string; publicKey: string }) =>
      sealTo(purpose, body, [device], false),
    /** `body` sealed for one device alone, with the key this computer pinned for it; throws when there is none. */
    async forPinned(purpose: DevicePurpose, body: object, deviceId: string): Promise<Envelope> {
      let pin: PinsFile['devices'][string] | undefined;
      try {
        pin = deps.readPins().devices[deviceId];
      } catch {
        pin = undefined;
      }
      if (!pin) throw new Error(`no pinned key for ${deviceId}`);
      return sealTo(purpose, body, [{ deviceId, publicKey: pin.publicKey }], false);
    },
  };
}

export type Outbox = ReturnType<typeof createOutbox>;

/** `sealFrame` for `watch.<…>`: the frame body sealed for that one device, with the key its watch began with. */
export function sealFrameLogic(outbox: Pick<Outbox, 'forDevice'>) {
  return fromPromise<Envelope, SealFrameInput>(({ input }) => outbox.forDevice('pane.frame', input.body, input));
}

/** An envelope as the machines carry it (a plain record they do not look into). */
export const sealedRecord = (envelope: Envelope | null) => envelope as unknown as Record<string, unknown> | null;
