/**
 * A device's long-term ECDH P-256 key pair (docs/security.md): make one, export and import it (raw public point,
 * private JWK), check that a key is what it claims, and show a key to a person (fingerprint, safety code).
 * WebCrypto only (core/seal/webcrypto.ts), so it runs in Node and in a browser; core/seal/seal.ts seals with these keys.
 *
 * Nothing here logs, and no error message carries key material.
 */
import { base64urlLength, decodeBase64url, encodeBase64url } from '../base64url.js';
import { SealError } from './error.js';
import { compareBytes, concat, equalBytes, subtle, utf8 } from './webcrypto.js';

export interface DeviceKeys {
  publicKey: CryptoKey;
  privateKey: CryptoKey;
}

const P256 = { name: 'ECDH', namedCurve: 'P-256' } as const;
const PUBLIC_KEY_BYTES = 65;
const COORDINATE_BYTES = 32;

/** PBKDF2 iterations of the safety code (see safetyCode and docs/security.md). Changing it changes every code. */
export const SAFETY_CODE_ITERATIONS = 100_000;
const SAFETY_CODE_SALT = 'svc/v1/safety-code';

// ---------------------------------------------------------------------------
// Checking keys

function isEcdhKey(key: unknown, type: 'public' | 'private'): key is CryptoKey {
  if (typeof key !== 'object' || key === null) return false;
  const k = key as { type?: unknown; algorithm?: { name?: unknown; namedCurve?: unknown } };
  return k.type === type && k.algorithm?.name === 'ECDH' && k.algorithm.namedCurve === 'P-256';
}

/** The key, or SealError('bad_key') naming `who` when it is not an ECDH P-256 key of that type. */
export function requireKey(key: unknown, type: 'public' | 'private', who: string): CryptoKey {
  if (!isEcdhKey(key, type)) throw new SealError('bad_key', `${who} is not an ECDH P-256 ${type} key`);
  return key;
}

// P-256 (FIPS 186-4 D.1.2.3): y² = x³ - 3x + b over GF(p).
const P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;

function bigint(bytes: Uint8Array): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

/** Checked here as well as by importKey, so junk is refused the same way in every runtime. */
function onCurve(x: Uint8Array, y: Uint8Array): boolean {
  const X = bigint(x);
  const Y = bigint(y);
  if (X >= P || Y >= P) return false;
  return (Y * Y - (X * X * X - 3n * X + B)) % P === 0n;
}

function rawPublicKey(b64: string): Uint8Array<ArrayBuffer> {
  let raw: Uint8Array<ArrayBuffer>;
  try {
    raw = decodeBase64url(b64);
  } catch {
    throw new SealError('bad_key', 'public key is not base64url');
  }
  if (raw.length !== PUBLIC_KEY_BYTES || raw[0] !== 0x04) {
    throw new SealError('bad_key', 'public key is not an uncompressed P-256 point (65 bytes, 0x04 first)');
  }
  if (!onCurve(raw.subarray(1, 33), raw.subarray(33))) throw new SealError('bad_key', 'public key is not on P-256');
  return raw;
}

// ---------------------------------------------------------------------------
// Keys

/** ECDH P-256. `extractable` false for browsers (private key non-extractable, kept in IndexedDB). */
export async function generateDeviceKeys(extractable: boolean): Promise<DeviceKeys> {
  const pair = (await subtle().generateKey(P256, extractable, ['deriveBits'])) as CryptoKeyPair;
  return { publicKey: pair.publicKey, privateKey: pair.privateKey };
}

/** Public key as base64url of the raw uncompressed point (65 bytes). */
export async function exportPublicKey(key: CryptoKey): Promise<string> {
  requireKey(key, 'public', 'key');
  return encodeBase64url(new Uint8Array(await subtle().exportKey('raw', key)));
}

/** Throws SealError('bad_key') on junk, a wrong length, a compressed point, or a point not on P-256. */
export async function importPublicKey(b64: string): Promise<CryptoKey> {
  const raw = rawPublicKey(b64);
  try {
    return await subtle().importKey('raw', raw, P256, true, []);
  } catch {
    throw new SealError('bad_key', 'public key was refused by WebCrypto');
  }
}

/** For the listener/CLI to store its private key in a 0600 file. Throws SealError('bad_key') if not extractable. */
export async function exportPrivateKey(key: CryptoKey): Promise<JsonWebKey> {
  requireKey(key, 'private', 'key');
  if (!key.extractable) throw new SealError('bad_key', 'private key is not extractable');
  try {
    return await subtle().exportKey('jwk', key);
  } catch {
    throw new SealError('bad_key', 'private key could not be exported');
  }
}

function jwkCoordinates(jwk: JsonWebKey): { x: Uint8Array; y: Uint8Array } {
  if (typeof jwk !== 'object' || jwk === null || jwk.kty !== 'EC' || jwk.crv !== 'P-256') {
    throw new SealError('bad_key', 'not a P-256 EC JWK');
  }
  const coordinate = (text: unknown, name: string): Uint8Array => {
    if (typeof text !== 'string' || text.length !== base64urlLength(COORDINATE_BYTES)) {
      throw new SealError('bad_key', `JWK field ${name} is missing or has the wrong length`);
    }
    try {
      return decodeBase64url(text);
    } catch {
      throw new SealError('bad_key', `JWK field ${name} is not base64url`);
    }
  };
  const x = coordinate(jwk.x, 'x');
  const y = coordinate(jwk.y, 'y');
  if (!onCurve(x, y)) throw new SealError('bad_key', 'JWK public point is not on P-256');
  return { x, y };
}

/** The public key (base64url raw point) recorded in a private or public P-256 JWK. */
export function publicKeyOfJwk(jwk: JsonWebKey): string {
  const { x, y } = jwkCoordinates(jwk);
  return encodeBase64url(concat(new Uint8Array([0x04]), x, y));
}

/**
 * Import a private key stored by `exportPrivateKey`. Also proves that the JWK's `d` belongs to its `x`/`y`
 * (one ECDH each way with a throwaway key), so a damaged key file fails here with `bad_key` instead of making
 * every later `open` fail with `tampered`.
 */
export async function importPrivateKey(jwk: JsonWebKey, extractable = false): Promise<CryptoKey> {
  jwkCoordinates(jwk);
  if (typeof jwk.d !== 'string' || jwk.d.length !== base64urlLength(COORDINATE_BYTES)) {
    throw new SealError('bad_key', 'JWK field d is missing or has the wrong length');
  }
  const clean: JsonWebKey = { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y, d: jwk.d };
  let privateKey: CryptoKey;
  try {
    privateKey = await subtle().importKey('jwk', clean, P256, extractable, ['deriveBits']);
  } catch {
    throw new SealError('bad_key', 'private key was refused by WebCrypto');
  }
  const publicKey = await importPublicKey(publicKeyOfJwk(clean));
  const probe = await generateDeviceKeys(false);
  let matches = false;
  try {
    const [a, b] = await Promise.all([
      subtle().deriveBits({ name: 'ECDH', public: probe.publicKey }, privateKey, 256),
      subtle().deriveBits({ name: 'ECDH', public: publicKey }, probe.privateKey, 256),
    ]);
    matches = equalBytes(new Uint8Array(a), new Uint8Array(b));
  } catch {
    // falls through to bad_key
  }
  if (!matches) {
    throw new SealError('bad_key', 'JWK private part does not match its public point');
  }
  return privateKey;
}

// ---------------------------------------------------------------------------
// Comparing keys

/**
 * Short safety code from two public keys (order-independent): 16 decimal digits in 4 groups, e.g.
 * '4821 0937 5512 6604'. Input: the two raw 65-byte keys sorted bytewise, concatenated; 16 bytes of
 * PBKDF2-HMAC-SHA256 over them (salt 'svc/v1/safety-code', SAFETY_CODE_ITERATIONS); each group is one big-endian
 * uint32 mod 10000. The iterations make a key-swapping relay pay for every candidate key it tries while hunting
 * for two swaps that show the same code on both sides (docs/security.md).
 */
export async function safetyCode(publicKeyA: string, publicKeyB: string): Promise<string> {
  const a = rawPublicKey(publicKeyA);
  const b = rawPublicKey(publicKeyB);
  const [first, second] = compareBytes(a, b) <= 0 ? [a, b] : [b, a];
  const material = await subtle().importKey('raw', concat(first, second), 'PBKDF2', false, ['deriveBits']);
  const bits = await subtle().deriveBits(
    { name: 'PBKDF2', hash: 'SHA-256', salt: utf8.encode(SAFETY_CODE_SALT), iterations: SAFETY_CODE_ITERATIONS },
    material,
    128,
  );
  const view = new DataView(bits);
  const groups: string[] = [];
  for (let i = 0; i < 4; i++) groups.push(String(view.getUint32(i * 4) % 10_000).padStart(4, '0'));
  return groups.join(' ');
}

/** Stable short fingerprint of one public key (for logs and lists): first 8 bytes of SHA-256, hex, 'ab12 cd34 ef56 7890'. */
export async function fingerprint(publicKey: string): Promise<string> {
  const digest = new Uint8Array(await subtle().digest('SHA-256', rawPublicKey(publicKey)));
  const hex = Array.from(digest.subarray(0, 8), (byte) => byte.toString(16).padStart(2, '0')).join('');
  return hex.match(/.{4}/g)!.join(' ');
}
