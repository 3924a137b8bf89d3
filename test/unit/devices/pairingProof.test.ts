/**
 * A phone paired with this computer's own link is pinned from the moment the listener sees it (issue 30 item 4,
 * core/devices/pairingProof.ts, actors/devices/pairings.ts): its proof must be the one the link's secret makes for
 * its own key; a proof for another key, under another secret, or none, pins nothing.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KEEP_MS, newPairingSecret, pairingSecrets, pinPairedPhones } from '../../../actors/devices/pairings.js';
import { readPins } from '../../../actors/devices/pins.js';
import { emptyPins } from '../../../core/devices/devices.js';
import { PAIR_FRAGMENT_RE, pairingProof, provenBy } from '../../../core/devices/pairingProof.js';
import { exportPublicKey, generateDeviceKeys } from '../../../core/seal/keys.js';

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'svc-pairings-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const phoneKey = async () => exportPublicKey((await generateDeviceKeys(false)).publicKey);
const quiet = { info: () => {}, warn: () => {} };

describe('the pairing proof', () => {
  it('is made by the link’s secret for the phone’s own key, and by nothing else', async () => {
    const dir = temp();
    const secret = newPairingSecret(join(dir, 'pairings.json'));
    const other = newPairingSecret(join(dir, 'pairings.json'));
    const key = await phoneKey();
    const proof = await pairingProof(secret, key);
    expect(proof).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await pairingProof(secret, key)).toBe(proof);
    expect(await provenBy([other, secret], key, proof)).toBe(secret);
    expect(await provenBy([other], key, proof)).toBeNull();
    expect(await provenBy([secret], await phoneKey(), proof)).toBeNull();
  });

  it('rides in the link’s fragment after the code; a link of an earlier svc has none', () => {
    const code = 'A'.repeat(22);
    const secret = 'b'.repeat(43);
    expect(PAIR_FRAGMENT_RE.exec(`#pair=${code}.${secret}`)?.slice(1)).toEqual([code, secret]);
    expect(PAIR_FRAGMENT_RE.exec(`#pair=${code}`)?.slice(1)).toEqual([code, undefined]);
    expect(PAIR_FRAGMENT_RE.test(`#pair=${code}.short`)).toBe(false);
    expect(PAIR_FRAGMENT_RE.test(`#pair=${code}.${secret}x`)).toBe(false);
  });

  it('the secrets are kept private, for KEEP_MS', () => {
    const path = join(temp(), 'pairings.json');
    const secret = newPairingSecret(path, 1_000);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(pairingSecrets(path, 2_000)).toEqual([secret]);
    expect(pairingSecrets(path, 1_000 + KEEP_MS)).toEqual([]);
  });
});

describe('pinning the phones that paired with this computer’s link', () => {
  it('pins a listed phone whose proof the secret makes, once; the secret is spent', async () => {
    const dir = temp();
    const pinsPath = join(dir, 'devices.json');
    const pairingsPath = join(dir, 'pairings.json');
    const secret = newPairingSecret(pairingsPath);
    const mine = await phoneKey();
    const forged = await phoneKey();
    const listed = [
      { deviceId: 'd_phone2', name: 'Pixel', kind: 'app' as const, publicKey: mine, createdAt: 1 },
      { deviceId: 'd_other', name: 'tablet', kind: 'app' as const, publicKey: await phoneKey(), createdAt: 1 },
      // the relay copying the phone's proof onto a key of its own
      { deviceId: 'd_relay', name: 'x', kind: 'app' as const, publicKey: forged, createdAt: 1 },
    ];
    const proof = await pairingProof(secret, mine);
    listed[0] = { ...listed[0]!, pairingProof: proof } as never;
    listed[2] = { ...listed[2]!, pairingProof: proof } as never;
    const logs: string[] = [];
    const pins = await pinPairedPhones({
      pinsPath,
      pairingsPath,
      pins: emptyPins(),
      listed,
      myDeviceId: 'd_computer',
      log: { info: (m) => logs.push(m), warn: (m) => logs.push(m) },
    });
    expect(Object.keys(pins.devices)).toEqual(['d_phone2']);
    expect(pins.devices.d_phone2).toMatchObject({ publicKey: mine, verified: false });
    expect(Object.keys(readPins(pinsPath).devices)).toEqual(['d_phone2']);
    expect(logs.join('\n')).toMatch(/phone Pixel \(d_phone2\) pinned: it paired with this computer's link/);
    expect(pairingSecrets(pairingsPath)).toEqual([]);
    expect(readFileSync(pairingsPath, 'utf8')).not.toContain(secret);
  });

  it('pins nothing without a proof, with a wrong one, or for a device already pinned', async () => {
    const dir = temp();
    const pinsPath = join(dir, 'devices.json');
    const pairingsPath = join(dir, 'pairings.json');
    const secret = newPairingSecret(pairingsPath);
    const key = await phoneKey();
    const base = { deviceId: 'd_p', name: 'p', kind: 'app' as const, publicKey: key, createdAt: 1 };
    const run = (listed: never[]) =>
      pinPairedPhones({ pinsPath, pairingsPath, pins: emptyPins(), listed, myDeviceId: 'd_c', log: quiet });
    expect((await run([base as never])).devices).toEqual({});
    expect((await run([{ ...base, pairingProof: 'x'.repeat(43) } as never])).devices).toEqual({});
    expect(
      (await run([{ ...base, kind: 'computer', pairingProof: await pairingProof(secret, key) } as never])).devices,
    ).toEqual({});
    expect(pairingSecrets(pairingsPath)).toEqual([secret]);
  });

  it('spends the secret of a phone pinned already (by its first message): forgotten later, it is not pinned again', async () => {
    const dir = temp();
    const pinsPath = join(dir, 'devices.json');
    const pairingsPath = join(dir, 'pairings.json');
    const secret = newPairingSecret(pairingsPath);
    const key = await phoneKey();
    const listed = [
      {
        deviceId: 'd_p',
        name: 'p',
        kind: 'app' as const,
        publicKey: key,
        createdAt: 1,
        pairingProof: await pairingProof(secret, key),
      },
    ];
    const pinned = await pinPairedPhones({
      pinsPath,
      pairingsPath,
      pins: emptyPins(),
      listed,
      myDeviceId: 'd_c',
      log: quiet,
    });
    expect(Object.keys(pinned.devices)).toEqual(['d_p']);
    const again = newPairingSecret(pairingsPath);
    const already = await pinPairedPhones({
      pinsPath,
      pairingsPath,
      pins: pinned,
      listed: [{ ...listed[0]!, pairingProof: await pairingProof(again, key) }],
      myDeviceId: 'd_c',
      log: quiet,
    });
    expect(already).toBe(pinned);
    expect(pairingSecrets(pairingsPath)).toEqual([]);
  });
});
