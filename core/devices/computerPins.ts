/**
 * Which device a computer is, as a sender first saw it (`svc agent send` in cli-pins.json, the app in IndexedDB).
 * The relay's computer → device mapping is as unsigned as its key list: a computer whose device changes is refused
 * like a changed key until a person compares the new safety code (docs/security.md "Pinning a computer's device").
 * No zod here: the app's first chunk imports it.
 */

export type ComputerDecision = { ok: true; firstContact: boolean } | { ok: false; why: 'moved'; pinnedDevice: string };

/**
 * Whether the device the relay names for a computer is the one pinned for it: the first one seen is pinned; any
 * other is refused until a person compares its safety code (the relay, or a key of the account, could have
 * repointed the computer at a device whose key it holds).
 */
export function decideComputerDevice(pin: { deviceId: string } | undefined, listedDevice: string): ComputerDecision {
  if (!pin) return { ok: true, firstContact: true };
  if (pin.deviceId !== listedDevice) return { ok: false, why: 'moved', pinnedDevice: pin.deviceId };
  return { ok: true, firstContact: false };
}
