/**
 * A phone paired with this computer's own link is trusted from the moment it pairs (issue 30 item 4). `svc pair` (and
 * `svc up`) put a secret beside the pairing code in the link's fragment (`#pair=<code>.<secret>`), which the browser
 * never sends anywhere; the computer keeps the secret (`~/.svc/pairings.json`). The phone claims the code with its
 * public key and a proof: HMAC-SHA256 under the secret of that key. The relay stores the proof with the device and
 * lists it; the listener, finding a listed phone it has not pinned whose proof its secret makes, pins that phone's key
 * at once: questions, cards, schedules, history and notifications are sealed for it before it has ever sent anything.
 *
 * The relay sees the proof, never the secret: it cannot make a proof for a key of its own, and a proof it copies to
 * another device names the phone's key, which only the phone can use. Other devices the relay lists are pinned as
 * before, on their first sealed contact or by `svc devices verify` (core/devices/devices.ts).
 *
 * WebCrypto only: the app runs the same code.
 */
import { decodeBase64url, encodeBase64url } from '../base64url.js';
import { subtle, utf8 } from '../seal/webcrypto.js';

/** 32 random bytes, base64url: the secret in the link, and the proof's length too. */
export const PAIRING_SECRET_RE = /^[A-Za-z0-9_-]{43}$/;

/** The link's fragment: the code, then (from links made by this version on) the secret. */
export const PAIR_FRAGMENT_RE = /^#pair=([A-Za-z0-9_-]{22})(?:\.([A-Za-z0-9_-]{43}))?$/;

const LABEL = 'svc pairing proof v1\n';

/** The proof a phone holding `secret` gives for its `publicKey` (base64url of the raw point). */
export async function pairingProof(secret: string, publicKey: string): Promise<string> {
  const key = await subtle().importKey('raw', decodeBase64url(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  return encodeBase64url(new Uint8Array(await subtle().sign('HMAC', key, utf8.encode(LABEL + publicKey))));
}

/** Which of `secrets` made `proof` for `publicKey`; null when none did. */
export async function provenBy(secrets: readonly string[], publicKey: string, proof: string): Promise<string | null> {
  for (const secret of secrets) if ((await pairingProof(secret, publicKey)) === proof) return secret;
  return null;
}
