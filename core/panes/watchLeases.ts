/**
 * Live panes outlive a restart of the listener, within their leases (docs/protocol.md "Live panes"). A pane.watch
 * is the device's sealed, stamped request to see a pane until a deadline; the listener keeps that deadline in
 * `~/.svc/watches.json` (actors/panes/watchLeases.ts), and when it starts again (an upgrade, `svc listener --restart`, a
 * crash) it resumes the streams whose deadline has not passed, sealed with the key pinned for the device *now*. The
 * relay has no part in it: it cannot start or prolong a stream (it cannot replay a request: stamps), only route.
 * Pure.
 */
import { z } from 'zod/v3';
import { type PinsFile, trustOf } from '../devices/devices.js';
import { MAX_LEASE_MS } from '../protocol/bodies.js';
import { DeviceId, SessionName } from '../protocol/index.js';
import { MAX_WATCHES, watchId } from '../sessions/routing.js';

/** A lease closer to its end than this is not worth resuming: the stream would stop at once. */
export const MIN_RESUME_MS = 1_000;

export const SavedLease = z.object({
  session: SessionName,
  deviceId: DeviceId,
  /** The relay's id of the app connection that asked; answers go to every connection of the device anyway. */
  connection: z.string().min(1).max(64),
  /** The pane shown (tmux pane ids last as long as the tmux server). */
  paneId: z.string().regex(/^%\d+$/),
  /** Epoch ms on this computer's clock: the lease ends here unless the device renews it. */
  until: z.number().finite(),
});
export type SavedLease = z.infer<typeof SavedLease>;

export const LeasesFile = z.object({ version: z.literal(1), leases: z.record(z.string(), SavedLease) });
export type LeasesFile = z.infer<typeof LeasesFile>;

export const emptyLeases = (): LeasesFile => ({ version: 1, leases: {} });
export const leaseKey = (deviceId: string, session: string) => `${deviceId}/${session}`;

/** The file with this lease recorded (replacing the device's lease on that session), and the lapsed ones gone. */
export function withLease(file: LeasesFile, lease: SavedLease, now: number): LeasesFile {
  const leases = Object.fromEntries(Object.entries(file.leases).filter(([, l]) => l.until > now));
  return { version: 1, leases: { ...leases, [leaseKey(lease.deviceId, lease.session)]: lease } };
}

/** The file without the device's lease on that session. */
export function withoutLease(file: LeasesFile, deviceId: string, session: string): LeasesFile {
  const { [leaseKey(deviceId, session)]: _gone, ...leases } = file.leases;
  return { version: 1, leases };
}

/** A stream that may start again: what `watch.<device>/<session>` needs but the key, with what is left of its lease. */
export interface LeaseLeft {
  session: string;
  deviceId: string;
  connection: string;
  paneId: string;
  leaseMs: number;
}

/**
 * The leases with at least MIN_RESUME_MS left, when the listener starts. What is left is capped at the longest lease
 * a device can ask for, so a deadline written under a clock far ahead does not make a stream endless.
 */
export function leasesLeft(file: LeasesFile, now: number): LeaseLeft[] {
  const out: LeaseLeft[] = [];
  for (const { until, ...lease } of Object.values(file.leases)) {
    const left = until - now;
    if (left >= MIN_RESUME_MS) out.push({ ...lease, leaseMs: Math.min(left, MAX_LEASE_MS) });
  }
  return out;
}

/** A stream to start again: `watch.<device>/<session>`'s id and input. */
export interface ResumedWatch {
  watchId: string;
  input: LeaseLeft & { publicKey: string };
}

/**
 * The streams to start, once the listener is connected: those of devices still pinned with a key nobody has
 * disputed, sealed for the key pinned now (a device forgotten, or whose key changed, meanwhile sees no screen); not
 * one already running (asked again meanwhile), and no more than MAX_WATCHES in all.
 */
export function watchesToResume(
  leases: readonly LeaseLeft[],
  pins: PinsFile,
  watches: Readonly<Record<string, unknown>>,
): ResumedWatch[] {
  const out: ResumedWatch[] = [];
  let running = Object.keys(watches).length;
  for (const lease of leases) {
    const pin = pins.devices[lease.deviceId];
    const id = watchId(lease.deviceId, lease.session);
    if (!pin || trustOf(pin) !== 'pinned' || id in watches || running >= MAX_WATCHES) continue;
    out.push({ watchId: id, input: { ...lease, publicKey: pin.publicKey } });
    running++;
  }
  return out;
}
