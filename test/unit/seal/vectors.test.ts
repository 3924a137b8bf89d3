/**
 * Compatibility: envelopes, safety codes and fingerprints made once by test/fixtures/generate-seal-vectors.mjs
 * with fixed keys. Every build must still open every stored envelope and compute the same codes; a failure here
 * means the change breaks devices already in the field. Do not regenerate the vectors to make this pass.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { decodeBase64url } from '../../../core/base64url.js';
import { Envelope } from '../../../core/seal/envelopeSchema.js';
import type { SealErrorCode } from '../../../core/seal/error.js';
import {
  fingerprint,
  importPrivateKey,
  importPublicKey,
  publicKeyOfJwk,
  SAFETY_CODE_ITERATIONS,
  safetyCode,
} from '../../../core/seal/keys.js';
import { open, SEAL_VERSION, type SealPurpose } from '../../../core/seal/seal.js';

type Name = 'laptop' | 'phone' | 'tablet';
interface Vectors {
  sealVersion: number;
  safetyCodeIterations: number;
  devices: Record<Name, { id: string; privateKey: JsonWebKey; publicKey: string }>;
  envelopes: {
    name: string;
    purpose: SealPurpose;
    from: Name;
    to: Name[];
    plaintext: { utf8: string } | { base64url: string };
    envelope: unknown;
  }[];
  failures: {
    name: string;
    openAs: Name;
    sender: Name;
    purpose: SealPurpose;
    envelope: unknown;
    code: SealErrorCode;
  }[];
  safetyCodes: { a: Name; b: Name; code: string }[];
  fingerprints: Record<Name, string>;
}

const vectors: Vectors = JSON.parse(
  readFileSync(resolve(import.meta.dirname, '../../fixtures/seal-vectors.json'), 'utf8'),
) as Vectors;
const keys = {} as Record<Name, { privateKey: CryptoKey; publicKey: CryptoKey }>;

beforeAll(async () => {
  for (const [name, d] of Object.entries(vectors.devices) as [Name, Vectors['devices'][Name]][]) {
    keys[name] = { privateKey: await importPrivateKey(d.privateKey), publicKey: await importPublicKey(d.publicKey) };
  }
});

const bytesOf = (p: Vectors['envelopes'][number]['plaintext']) =>
  'utf8' in p ? new TextEncoder().encode(p.utf8) : decodeBase64url(p.base64url);

describe('seal vectors', () => {
  it('were made by this format', () => {
    expect(vectors.sealVersion).toBe(SEAL_VERSION);
    expect(vectors.safetyCodeIterations).toBe(SAFETY_CODE_ITERATIONS);
    expect(vectors.envelopes.length).toBeGreaterThanOrEqual(5);
  });

  it('store each device’s public key consistently with its private JWK', () => {
    for (const d of Object.values(vectors.devices)) expect(publicKeyOfJwk(d.privateKey)).toBe(d.publicKey);
  });

  describe.each(vectors.envelopes)('$name', (vector) => {
    it('is a valid envelope', () => {
      expect(Envelope.safeParse(vector.envelope).success).toBe(true);
    });

    it.each(vector.to)('opens for %s', async (name) => {
      const opened = await open({
        envelope: vector.envelope,
        purpose: vector.purpose,
        me: { id: vectors.devices[name].id, privateKey: keys[name].privateKey },
        senderPublicKey: keys[vector.from].publicKey,
      });
      expect(opened).toEqual(bytesOf(vector.plaintext));
    });
  });

  it.each(vectors.failures)('$name fails with $code', async (f) => {
    await expect(
      open({
        envelope: f.envelope,
        purpose: f.purpose,
        me: { id: vectors.devices[f.openAs].id, privateKey: keys[f.openAs].privateKey },
        senderPublicKey: keys[f.sender].publicKey,
      }),
    ).rejects.toMatchObject({ name: 'SealError', code: f.code });
  });

  it.each(vectors.safetyCodes)('safety code $a / $b is $code', async ({ a, b, code }) => {
    expect(await safetyCode(vectors.devices[a].publicKey, vectors.devices[b].publicKey)).toBe(code);
  });

  it.each(Object.keys(vectors.fingerprints) as Name[])('fingerprint of %s', async (name) => {
    expect(await fingerprint(vectors.devices[name].publicKey)).toBe(vectors.fingerprints[name]);
  });
});
