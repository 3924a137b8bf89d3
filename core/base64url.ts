/**
 * base64url without padding (RFC 4648 §5), on Uint8Array only: runs unchanged in Node and in a browser (no `node:`
 * import, no atob/btoa binary strings). Where Node's `Buffer` is there (the listener, the relay, the CLI) its native
 * codec does the work: 10-20x faster than the loops below, which matters for a phone's file in sealed chunks,
 * above all in the listener, which runs without V8's optimizing compilers (core/daemon/nodeFlags.ts). The loops
 * are the browser's, and decide every refusal.
 *
 * Decoding is strict, because sealed envelopes arrive from an untrusted relay: characters outside the alphabet,
 * padding, whitespace, an impossible length (n % 4 === 1) and non-zero trailing bits are all refused. So every byte
 * string has exactly one accepted text form, and a flipped character can never decode to the same bytes.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const ENCODE = new Uint8Array(64);
const DECODE = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) {
  const code = ALPHABET.charCodeAt(i);
  ENCODE[i] = code;
  DECODE[code] = i;
}

const ascii = new TextDecoder();

/** What this file uses of Node's `Buffer` class, when the global is there (typed here: the app has no Node types). */
type NativeBuffer = Uint8Array & { toString(encoding: 'base64url'): string };
interface NativeBufferClass {
  from(buffer: ArrayBufferLike, byteOffset: number, length: number): NativeBuffer;
  from(text: string, encoding: 'base64url'): NativeBuffer;
}
const native = (globalThis as { Buffer?: NativeBufferClass }).Buffer;

/** Number of base64url characters (no padding) that encode `byteLength` bytes. */
export function base64urlLength(byteLength: number): number {
  return Math.floor(byteLength / 3) * 4 + [0, 2, 3][byteLength % 3]!;
}

/** Largest number of bytes whose encoding fits in `chars` base64url characters. */
export function base64urlMaxBytes(chars: number): number {
  const rest = chars % 4;
  return Math.floor(chars / 4) * 3 + (rest === 0 ? 0 : rest - 1);
}

export function encodeBase64url(bytes: Uint8Array): string {
  if (native) return native.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
  return encodePortable(bytes);
}

/** Strict decoder: throws SyntaxError on anything but the canonical unpadded base64url form of some bytes. */
export function decodeBase64url(text: string): Uint8Array<ArrayBuffer> {
  if (native && typeof text === 'string') {
    // Node's decoder skips what is not base64url; the text is taken only when it is exactly what the bytes encode
    // to. Anything else goes to the portable decoder, which says what is wrong with it.
    const bytes = native.from(text, 'base64url');
    if (bytes.toString('base64url') === text) return new Uint8Array(bytes);
  }
  return decodePortable(text);
}

/** The codec without Node (a browser's), exported for its tests. */
export function encodePortable(bytes: Uint8Array): string {
  const out = new Uint8Array(base64urlLength(bytes.length));
  let o = 0;
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[o++] = ENCODE[n >>> 18]!;
    out[o++] = ENCODE[(n >>> 12) & 63]!;
    out[o++] = ENCODE[(n >>> 6) & 63]!;
    out[o++] = ENCODE[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]!;
    out[o++] = ENCODE[n >>> 2]!;
    out[o++] = ENCODE[(n & 3) << 4]!;
  } else if (rest === 2) {
    const n = (bytes[i]! << 8) | bytes[i + 1]!;
    out[o++] = ENCODE[n >>> 10]!;
    out[o++] = ENCODE[(n >>> 4) & 63]!;
    out[o++] = ENCODE[(n & 15) << 2]!;
  }
  return ascii.decode(out);
}

function value(text: string, index: number): number {
  const code = text.charCodeAt(index);
  const v = code < 128 ? DECODE[code]! : -1;
  if (v < 0) throw new SyntaxError(`invalid base64url character at ${index}`);
  return v;
}

export function decodePortable(text: string): Uint8Array<ArrayBuffer> {
  if (typeof text !== 'string') throw new SyntaxError('base64url input is not a string');
  const rest = text.length % 4;
  if (rest === 1) throw new SyntaxError('invalid base64url length');
  const out = new Uint8Array(base64urlMaxBytes(text.length));
  let o = 0;
  let i = 0;
  for (; i + 3 < text.length; i += 4) {
    const n = (value(text, i) << 18) | (value(text, i + 1) << 12) | (value(text, i + 2) << 6) | value(text, i + 3);
    out[o++] = n >>> 16;
    out[o++] = (n >>> 8) & 255;
    out[o++] = n & 255;
  }
  if (rest === 2) {
    const a = value(text, i);
    const b = value(text, i + 1);
    if (b & 15) throw new SyntaxError('non-canonical base64url (trailing bits set)');
    out[o++] = (a << 2) | (b >>> 4);
  } else if (rest === 3) {
    const a = value(text, i);
    const b = value(text, i + 1);
    const c = value(text, i + 2);
    if (c & 3) throw new SyntaxError('non-canonical base64url (trailing bits set)');
    out[o++] = (a << 2) | (b >>> 4);
    out[o++] = ((b & 15) << 4) | (c >>> 2);
  }
  return out;
}

/** True when `text` is the canonical base64url form of some bytes (optionally of exactly `byteLength` bytes). */
export function isBase64url(text: string, byteLength?: number): boolean {
  if (typeof text !== 'string') return false;
  if (byteLength !== undefined && text.length !== base64urlLength(byteLength)) return false;
  try {
    decodeBase64url(text);
    return true;
  } catch {
    return false;
  }
}
