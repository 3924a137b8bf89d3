/**
 * WebCrypto and byte helpers for sealing (core/seal/seal.ts, core/seal/keys.ts): `globalThis.crypto.subtle`, so the same
 * code runs in Node and in a browser. No `node:` import, no Buffer, Uint8Array only.
 *
 * `randomBytes` (with `generateKey` in core/seal/keys.ts) is the one exception to core/'s "no randomness" rule; see
 * core/seal/seal.ts for why.
 */

export const utf8 = new TextEncoder();

export function subtle(): SubtleCrypto {
  const s = globalThis.crypto?.subtle;
  if (!s) throw new Error('WebCrypto (globalThis.crypto.subtle) is not available');
  return s;
}

export function randomBytes(bytes: number): Uint8Array<ArrayBuffer> {
  return globalThis.crypto.getRandomValues(new Uint8Array(bytes));
}

export function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Constant-time for equal lengths: compares every byte whatever the first difference. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** Bytewise order (negative, 0, positive), shorter first on a common prefix. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] !== b[i]) return a[i]! - b[i]!;
  }
  return a.length - b.length;
}
