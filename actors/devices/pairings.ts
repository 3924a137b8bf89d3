/**
 * `~/.svc/pairings.json` (0600): the secrets of the pairing links this computer made (core/devices/pairingProof.ts),
 * kept `KEEP_MS` (a phone paired while the listener was away is found when it comes back), each until the phone it
 * paired is pinned. And the listener's use of them: a phone the relay lists, not pinned yet, whose proof one of them
 * makes, is pinned (actors/devices/pins.ts `updatePins`) before anything is sealed.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod/v3';
import { encodeBase64url } from '../../core/base64url.js';
import type { PinOp, PinsFile } from '../../core/devices/devices.js';
import { provenBy } from '../../core/devices/pairingProof.js';
import type { DeviceInfo } from '../../core/protocol/index.js';
import { fingerprint } from '../../core/seal/keys.js';
import { withFileLockSync } from '../fileLock.js';
import { ensurePrivateDir, writeFileAtomic } from '../files.js';
import { updatePins } from './pins.js';

/** How long a link's secret is kept: a phone claims within minutes; the listener may see it days later. */
export const KEEP_MS = 30 * 24 * 3600_000;
/** At most this many kept (the newest). */
export const MAX_PAIRINGS = 50;

const PairingsFile = z.object({
  version: z.literal(1),
  pairings: z.array(z.object({ secret: z.string(), createdAt: z.number().finite() })).max(1000),
});
type PairingsFile = z.infer<typeof PairingsFile>;

const LOCK = { waitMs: 10_000, maxAgeMs: 5_000 };

function read(path: string): PairingsFile {
  try {
    const parsed = PairingsFile.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    if (parsed.success) return parsed.data;
  } catch {
    // none yet, or not ours: started afresh (a secret lost only means that phone pins at its first contact)
  }
  return { version: 1, pairings: [] };
}

function change(path: string, fn: (file: PairingsFile) => PairingsFile): void {
  ensurePrivateDir(dirname(path));
  withFileLockSync(path, LOCK, () => {
    writeFileAtomic(path, `${JSON.stringify(fn(read(path)))}\n`, 0o600);
  });
}

/** A new link's secret, kept before the link is shown. */
export function newPairingSecret(path: string, now = Date.now()): string {
  const secret = encodeBase64url(new Uint8Array(randomBytes(32)));
  change(path, (file) => ({
    version: 1,
    pairings: [...file.pairings.filter((p) => now - p.createdAt < KEEP_MS), { secret, createdAt: now }].slice(
      -MAX_PAIRINGS,
    ),
  }));
  return secret;
}

export function pairingSecrets(path: string, now = Date.now()): string[] {
  return read(path)
    .pairings.filter((p) => now - p.createdAt < KEEP_MS)
    .map((p) => p.secret);
}

/**
 * Pin the listed phones that came with this computer's pairing link and are not pinned yet; returns the pins as
 * they are after it (the same object when nothing changed). A proof that no secret makes pins nothing.
 */
export async function pinPairedPhones(opts: {
  pinsPath: string;
  pairingsPath: string;
  pins: PinsFile;
  listed: readonly DeviceInfo[];
  myDeviceId: string;
  log: { info(m: string): void; warn(m: string): void };
  now?: number;
}): Promise<PinsFile> {
  const proven = opts.listed.filter((d) => d.kind === 'app' && d.pairingProof && d.deviceId !== opts.myDeviceId);
  if (proven.length === 0) return opts.pins;
  const secrets = pairingSecrets(opts.pairingsPath, opts.now);
  if (secrets.length === 0) return opts.pins;
  const ops: PinOp[] = [];
  const used: string[] = [];
  for (const d of proven) {
    const secret = await provenBy(secrets, d.publicKey, d.pairingProof!).catch(() => null);
    if (!secret) continue;
    // spent whether or not it pins now: a phone pinned by its first message, then forgotten, is not pinned again
    used.push(secret);
    if (opts.pins.devices[d.deviceId]) continue;
    ops.push({
      op: 'pin',
      deviceId: d.deviceId,
      publicKey: d.publicKey,
      fingerprint: await fingerprint(d.publicKey),
      at: opts.now ?? Date.now(),
      lastSeq: {},
    });
    opts.log.info(`phone ${d.name} (${d.deviceId}) pinned: it paired with this computer's link`);
  }
  if (used.length > 0)
    change(opts.pairingsPath, (file) => ({
      version: 1,
      pairings: file.pairings.filter((p) => !used.includes(p.secret)),
    }));
  return ops.length === 0 ? opts.pins : updatePins(opts.pinsPath, ops);
}
