/**
 * Sealing (spec part 5, 4.11.1; docs/security.md): versioned multi-recipient envelopes, ECDH P-256 + HKDF-SHA256 +
 * AES-256-GCM on WebCrypto (core/seal/webcrypto.ts). One implementation for the listener, the CLI, the relay's tests and
 * the web app, so it runs unchanged in Node and in a browser: no `node:` import, no Buffer, Uint8Array only.
 * Device key pairs, fingerprints and safety codes are in core/seal/keys.ts; the error in core/seal/error.ts.
 *
 * The one exception to core/'s "no randomness" rule: keys, salts and IVs come from `crypto.getRandomValues` and
 * `crypto.subtle.generateKey`, because a sealing function that took its randomness as an argument would invite
 * callers to reuse it.
 *
 * Envelope (JSON-safe, every byte field base64url without padding):
 *   { v: 1, purpose, from, salt (16 B), iv (12 B), ct, to: [{ device, wrap (iv 12 B || AES-GCM(content key) 48 B) }] }
 *
 *   header    = UTF-8(JSON.stringify([1, purpose, from, [to[0].device, to[1].device, …]]))   (order as in `to`)
 *   ct        = AES-256-GCM(contentKey, iv, plaintext, AAD = header)
 *   pairwise  = HKDF-SHA256(ECDH(sender, recipient), salt, info = "svc/v1/<purpose>/<from>/<recipient>")
 *   wrap_i    = iv_i || AES-256-GCM(pairwise_i, iv_i, contentKey,
 *                                   AAD = UTF-8(JSON.stringify([1, purpose, from, [ids…], b64url(SHA-256(iv || ct))])))
 *
 * Nothing here logs, and no error message carries key material or plaintext.
 */
import { base64urlLength, base64urlMaxBytes, decodeBase64url, encodeBase64url } from '../base64url.js';
import { SealError } from './error.js';
import { requireKey } from './keys.js';
import { concat, randomBytes, subtle, utf8 } from './webcrypto.js';

export const SEAL_VERSION = 1;

export const SEAL_PURPOSES = [
  'agent.command',
  'pane.watch',
  'pane.frame',
  'pane.keys',
  'history.chunk',
  'file',
  'test',
  // svc_ask and svc_notify (core/mcp/ask.ts)
  'ask.question',
  'ask.answer',
  'notify',
  // an approval prompt on a session's screen (core/protocol/bodies.ts ApprovalCardBody)
  'approval',
  // a computer's schedules, with the inventory (core/protocol/bodies.ts SchedulesBody)
  'schedules',
  // what a new session from the phone can be, and what became of one (core/protocol/bodies.ts LaunchResultBody)
  'launch',
] as const;
export type SealPurpose = (typeof SEAL_PURPOSES)[number];

/** Device ids (sender and recipients): no `/`, so `svc/v1/<purpose>/<from>/<to>` can be read only one way. */
export const DEVICE_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;
/** Most recipient devices one envelope may name. */
export const MAX_RECIPIENTS = 64;
/** Largest `ct` field, in base64url characters (8 MiB). */
export const MAX_CT_CHARS = 8 * 1024 * 1024;
const TAG_BYTES = 16;
/** Largest plaintext `seal` accepts: what fits in MAX_CT_CHARS with the GCM tag. */
export const MAX_PLAINTEXT_BYTES = base64urlMaxBytes(MAX_CT_CHARS) - TAG_BYTES;

const SALT_BYTES = 16;
const IV_BYTES = 12;
const CONTENT_KEY_BYTES = 32;
const WRAP_BYTES = IV_BYTES + CONTENT_KEY_BYTES + TAG_BYTES;

export interface Envelope {
  v: 1;
  purpose: SealPurpose;
  /** sender device id */
  from: string;
  salt: string;
  iv: string;
  ct: string;
  /** per-recipient wrapped content key: base64url of iv || ciphertext */
  to: { device: string; wrap: string }[];
}

export interface Sender {
  id: string;
  privateKey: CryptoKey;
  /** Not used by `seal`; lets one object describe a device both as a sender and as a recipient. */
  publicKey?: CryptoKey;
}

export interface Recipient {
  id: string;
  publicKey: CryptoKey;
}

export interface OpenOptions {
  envelope: unknown;
  purpose: SealPurpose;
  me: { id: string; privateKey: CryptoKey };
  /** The key the caller trusts for `envelope.from` (from its own pinned device list, never from the envelope). */
  senderPublicKey: CryptoKey;
}

// ---------------------------------------------------------------------------
// Envelope check (hand-written, no schema library: the service worker opens envelopes and stays small; the zod
// schema for frames and HTTP bodies wraps this check, core/seal/envelopeSchema.ts)

const B64URL = /^[A-Za-z0-9_-]*$/;
const ENVELOPE_KEYS = new Set(['v', 'purpose', 'from', 'salt', 'iv', 'ct', 'to']);
const RECIPIENT_KEYS = new Set(['device', 'wrap']);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function refuse(where: string, why: string): never {
  throw new SealError('bad_envelope', `${where}: ${why}`);
}

function strictKeys(value: Record<string, unknown>, allowed: Set<string>, where: string): void {
  for (const key of Object.keys(value)) if (!allowed.has(key)) refuse(where, `unrecognized key "${key}"`);
}

function deviceIdAt(value: unknown, where: string): string {
  if (typeof value !== 'string' || !DEVICE_ID_RE.test(value)) refuse(where, 'not a device id');
  return value;
}

function bytesAt(value: unknown, bytes: number, where: string): string {
  if (typeof value !== 'string' || value.length !== base64urlLength(bytes) || !B64URL.test(value))
    refuse(where, `not ${bytes} bytes of base64url`);
  return value;
}

/**
 * The envelope as it travels, checked: strict (an unknown field is refused, so nothing unauthenticated rides along),
 * every byte field base64url of its exact length, 1 to MAX_RECIPIENTS recipients, none twice. Throws
 * `bad_envelope` saying where.
 */
export function checkEnvelope(input: unknown): Envelope {
  if (!isRecord(input)) refuse('envelope', 'not an object');
  strictKeys(input, ENVELOPE_KEYS, 'envelope');
  if (input.v !== SEAL_VERSION) refuse('v', `not ${SEAL_VERSION}`);
  if (!(SEAL_PURPOSES as readonly unknown[]).includes(input.purpose)) refuse('purpose', 'not a purpose');
  deviceIdAt(input.from, 'from');
  bytesAt(input.salt, SALT_BYTES, 'salt');
  bytesAt(input.iv, IV_BYTES, 'iv');
  const ct = input.ct;
  if (typeof ct !== 'string' || ct.length < base64urlLength(TAG_BYTES) || ct.length > MAX_CT_CHARS || !B64URL.test(ct))
    refuse('ct', 'not a ciphertext');
  const to = input.to;
  if (!Array.isArray(to) || to.length < 1 || to.length > MAX_RECIPIENTS)
    refuse('to', `not 1 to ${MAX_RECIPIENTS} recipients`);
  const seen = new Set<string>();
  to.forEach((recipient: unknown, i) => {
    if (!isRecord(recipient)) refuse(`to.${i}`, 'not an object');
    strictKeys(recipient, RECIPIENT_KEYS, `to.${i}`);
    const device = deviceIdAt(recipient.device, `to.${i}.device`);
    bytesAt(recipient.wrap, WRAP_BYTES, `to.${i}.wrap`);
    if (seen.has(device)) refuse('to', 'duplicate recipient device');
    seen.add(device);
  });
  return input as unknown as Envelope;
}

// ---------------------------------------------------------------------------
// Small helpers

function decodeField(text: string, what: string): Uint8Array<ArrayBuffer> {
  try {
    return decodeBase64url(text);
  } catch {
    throw new SealError('bad_envelope', `${what} is not canonical base64url`);
  }
}

// ---------------------------------------------------------------------------
// Seal and open

function headerAad(purpose: SealPurpose, from: string, ids: string[]): Uint8Array<ArrayBuffer> {
  return utf8.encode(JSON.stringify([SEAL_VERSION, purpose, from, ids]));
}

async function wrapAad(
  purpose: SealPurpose,
  from: string,
  ids: string[],
  iv: Uint8Array,
  ct: Uint8Array,
): Promise<Uint8Array<ArrayBuffer>> {
  const digest = new Uint8Array(await subtle().digest('SHA-256', concat(iv, ct)));
  return utf8.encode(JSON.stringify([SEAL_VERSION, purpose, from, ids, encodeBase64url(digest)]));
}

async function pairwiseKey(
  privateKey: CryptoKey,
  publicKey: CryptoKey,
  salt: Uint8Array<ArrayBuffer>,
  purpose: SealPurpose,
  from: string,
  to: string,
): Promise<CryptoKey> {
  let shared: ArrayBuffer;
  try {
    shared = await subtle().deriveBits({ name: 'ECDH', public: publicKey }, privateKey, 256);
  } catch {
    throw new SealError('bad_key', 'ECDH failed (key of the wrong kind or usage)');
  }
  const ikm = await subtle().importKey('raw', shared, 'HKDF', false, ['deriveKey']);
  new Uint8Array(shared).fill(0);
  return subtle().deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt, info: utf8.encode(`svc/v${SEAL_VERSION}/${purpose}/${from}/${to}`) },
    ikm,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  );
}

function checkId(id: unknown, who: string): string {
  if (typeof id !== 'string' || !DEVICE_ID_RE.test(id)) {
    throw new SealError('bad_envelope', `${who} id must match ${DEVICE_ID_RE.source}`);
  }
  return id;
}

/** Seal `plaintext` (string → UTF-8) for one or more recipients. The order of `to` is kept and authenticated. */
export async function seal(opts: {
  purpose: SealPurpose;
  from: Sender;
  to: Recipient[];
  plaintext: Uint8Array | string;
}): Promise<Envelope> {
  const { purpose, from, to } = opts;
  if (!SEAL_PURPOSES.includes(purpose)) throw new SealError('bad_envelope', 'unknown purpose');
  const fromId = checkId(from?.id, 'sender');
  requireKey(from.privateKey, 'private', 'sender private key');
  if (!Array.isArray(to) || to.length < 1 || to.length > MAX_RECIPIENTS) {
    throw new SealError('bad_envelope', `between 1 and ${MAX_RECIPIENTS} recipients`);
  }
  const ids = to.map((r) => checkId(r?.id, 'recipient'));
  if (new Set(ids).size !== ids.length) throw new SealError('bad_envelope', 'duplicate recipient device');
  for (const r of to) requireKey(r.publicKey, 'public', `public key of recipient ${r.id}`);
  if (typeof opts.plaintext !== 'string' && !(opts.plaintext instanceof Uint8Array)) {
    throw new SealError('bad_envelope', 'plaintext must be a string or a Uint8Array');
  }
  // A copy: the caller's bytes may change while we await, and may sit on a SharedArrayBuffer.
  const plaintext = typeof opts.plaintext === 'string' ? utf8.encode(opts.plaintext) : new Uint8Array(opts.plaintext);
  if (plaintext.length > MAX_PLAINTEXT_BYTES) {
    throw new SealError('bad_envelope', `plaintext larger than ${MAX_PLAINTEXT_BYTES} bytes`);
  }

  const salt = randomBytes(SALT_BYTES);
  const iv = randomBytes(IV_BYTES);
  const rawContentKey = randomBytes(CONTENT_KEY_BYTES);
  try {
    const contentKey = await subtle().importKey('raw', rawContentKey, 'AES-GCM', false, ['encrypt']);
    const ct = new Uint8Array(
      await subtle().encrypt(
        { name: 'AES-GCM', iv, additionalData: headerAad(purpose, fromId, ids) },
        contentKey,
        plaintext,
      ),
    );
    const aad = await wrapAad(purpose, fromId, ids, iv, ct);
    const wraps = await Promise.all(
      to.map(async (r, i) => {
        const key = await pairwiseKey(from.privateKey, r.publicKey, salt, purpose, fromId, ids[i]!);
        const wrapIv = randomBytes(IV_BYTES);
        const wrapped = await subtle().encrypt(
          { name: 'AES-GCM', iv: wrapIv, additionalData: aad },
          key,
          rawContentKey,
        );
        return { device: ids[i]!, wrap: encodeBase64url(concat(wrapIv, new Uint8Array(wrapped))) };
      }),
    );
    return {
      v: SEAL_VERSION,
      purpose,
      from: fromId,
      salt: encodeBase64url(salt),
      iv: encodeBase64url(iv),
      ct: encodeBase64url(ct),
      to: wraps,
    };
  } finally {
    rawContentKey.fill(0);
  }
}

/** Structure first: a hostile or broken envelope gets `bad_version` / `bad_envelope`, never a crash. */
function parseEnvelope(input: unknown): Envelope {
  const v = isRecord(input) ? input.v : undefined;
  if (typeof v === 'number' && v !== SEAL_VERSION) throw new SealError('bad_version', `envelope version ${v}`);
  return checkEnvelope(input);
}

/**
 * Open an envelope addressed to `me`; `senderPublicKey` is the key the caller trusts for `envelope.from`.
 * Success proves the envelope was sealed by the holder of the private key of `senderPublicKey` (or by `me`) for
 * exactly this purpose, sender and recipient list, and that not one byte changed.
 */
export async function open(opts: OpenOptions): Promise<Uint8Array> {
  const { purpose, me, senderPublicKey } = opts;
  const envelope = parseEnvelope(opts.envelope);
  if (envelope.purpose !== purpose) {
    throw new SealError('wrong_purpose', `envelope is for ${envelope.purpose}, expected ${purpose}`);
  }
  const slot = envelope.to.find((r) => r.device === me?.id);
  if (!slot) throw new SealError('not_for_me', 'this device is not a recipient');
  requireKey(me.privateKey, 'private', 'my private key');
  requireKey(senderPublicKey, 'public', 'sender public key');

  const salt = decodeField(envelope.salt, 'salt');
  const iv = decodeField(envelope.iv, 'iv');
  const ct = decodeField(envelope.ct, 'ct');
  const wrap = decodeField(slot.wrap, 'wrap');
  const ids = envelope.to.map((r) => r.device);

  const key = await pairwiseKey(me.privateKey, senderPublicKey, salt, purpose, envelope.from, me.id);
  let rawContentKey: Uint8Array<ArrayBuffer>;
  try {
    rawContentKey = new Uint8Array(
      await subtle().decrypt(
        {
          name: 'AES-GCM',
          iv: wrap.subarray(0, IV_BYTES),
          additionalData: await wrapAad(purpose, envelope.from, ids, iv, ct),
        },
        key,
        wrap.subarray(IV_BYTES),
      ),
    );
  } catch {
    throw new SealError('tampered', 'wrapped key did not authenticate (changed envelope or wrong sender key)');
  }
  try {
    if (rawContentKey.length !== CONTENT_KEY_BYTES) throw new SealError('tampered', 'content key has the wrong size');
    const contentKey = await subtle().importKey('raw', rawContentKey, 'AES-GCM', false, ['decrypt']);
    try {
      return new Uint8Array(
        await subtle().decrypt(
          { name: 'AES-GCM', iv, additionalData: headerAad(purpose, envelope.from, ids) },
          contentKey,
          ct,
        ),
      );
    } catch {
      throw new SealError('tampered', 'content did not authenticate');
    }
  } finally {
    rawContentKey.fill(0);
  }
}

/** `open`, then strict UTF-8 decoding (invalid UTF-8 → `bad_envelope`). */
export async function openText(opts: OpenOptions): Promise<string> {
  const bytes = await open(opts);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new SealError('bad_envelope', 'plaintext is not UTF-8');
  }
}
