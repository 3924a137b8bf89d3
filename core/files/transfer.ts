/**
 * Where a file sent from the phone lands (spec 2.6, 4.11.4; issue 13 part 5): `~/Downloads/Svc/` under its own name,
 * made safe — no directories, no control characters, never `.`/`..`, not longer than a file system takes — and on a
 * clash `name (2).ext`, `name (3).ext`, …; never overwriting (the IO side creates exclusively:
 * actors/transfer/receive.ts placeReceived). Pure.
 */

/** The largest file the phone may send (spec 8 is silent: decided here, docs/files.md). */
export const MAX_TRANSFER_BYTES = 100 * 1024 * 1024;
/** Longest name kept, in UTF-8 bytes (most file systems take 255). */
export const MAX_NAME_BYTES = 200;
/** How many `(n)` names are tried before giving up. */
export const MAX_CLASH = 999;

const utf8 = new TextEncoder();

/** Cuts `text` to at most `bytes` UTF-8 bytes without splitting a character. */
function cutBytes(text: string, bytes: number): string {
  let out = '';
  for (const ch of text) {
    if (utf8.encode(out + ch).length > bytes) break;
    out += ch;
  }
  return out;
}

/** The name and its extension (`.tar.gz` counts as `.gz`; a leading dot is part of the name: `.env`). */
export function splitExt(name: string): { stem: string; ext: string } {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? { stem: name.slice(0, dot), ext: name.slice(dot) } : { stem: name, ext: '' };
}

/**
 * The sender's name made safe: only the last part of any path (`../x` → `x`, `a/b` → `b`, `C:\\x` → `x`), control
 * characters and the Unicode direction overrides dropped, spaces at the ends and trailing dots trimmed; what is left
 * empty, `.` or `..` becomes `file`. Long names keep their extension.
 */
export function safeFileName(sent: string): string {
  const last = sent.split(/[/\\]/).at(-1) ?? '';
  // C0/C1 controls, DEL, and bidi overrides that could disguise an extension
  const clean = last
    .replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, '')
    .trim()
    .replace(/[. ]+$/, '');
  if (clean === '' || clean === '.' || clean === '..') return 'file';
  if (utf8.encode(clean).length <= MAX_NAME_BYTES) return clean;
  const { stem, ext } = splitExt(clean);
  const keptExt = utf8.encode(ext).length <= 20 ? ext : '';
  return cutBytes(stem, MAX_NAME_BYTES - utf8.encode(keptExt).length) + keptExt;
}

/** The `n`th name to try for `name`: the name itself, then `name (2).ext`, `name (3).ext`, … */
export function clashName(name: string, n: number): string {
  if (n <= 1) return name;
  const { stem, ext } = splitExt(name);
  return `${stem} (${n})${ext}`;
}

/** Why a transfer of `bytes` is refused, or null. */
export function transferProblem(bytes: number): { code: 'too_large' | 'empty_body'; message: string } | null {
  if (bytes === 0) return { code: 'empty_body', message: 'the file is empty' };
  if (bytes > MAX_TRANSFER_BYTES)
    return { code: 'too_large', message: `the file is ${bytes} bytes; at most ${MAX_TRANSFER_BYTES} can be sent` };
  return null;
}

/** Raw bytes of one chunk (base64 in its sealed body: well under the relay's 1 MiB frames). */
export const TRANSFER_CHUNK_BYTES = 192 * 1024;

/** Where a transfer stands on the computer: what was received of it so far. */
export interface TransferState {
  id: string;
  /** The device sending it: another device cannot add to it. */
  device: string;
  name: string;
  size: number;
  sha256: string;
  received: number;
}

export type ChunkDecision =
  /** Start (a new transfer) or go on: append the chunk's bytes. */
  | { kind: 'append'; start: boolean }
  /** A chunk already received (sent again after a dropped connection): nothing to write, answer where it stands. */
  | { kind: 'duplicate' }
  /** No data: the sender asks where the transfer stands (to resume). */
  | { kind: 'status' }
  | { kind: 'refuse'; code: 'too_large' | 'empty_body' | 'bad_transfer'; message: string };

/**
 * What to do with one chunk (`offset`, `bytes` long; 0 bytes: a status question) of transfer `chunk.id` from
 * `device`, given what the computer holds of it (`state`, null: nothing yet).
 */
export function decideChunk(
  state: TransferState | null,
  chunk: { id: string; size: number; sha256: string; offset: number; bytes: number },
  device: string,
): ChunkDecision {
  const problem = transferProblem(chunk.size);
  if (problem) return { kind: 'refuse', ...problem };
  if (state && (state.device !== device || state.size !== chunk.size || state.sha256 !== chunk.sha256))
    return { kind: 'refuse', code: 'bad_transfer', message: 'another transfer has this id' };
  if (chunk.bytes === 0) return { kind: 'status' };
  const received = state?.received ?? 0;
  if (chunk.offset + chunk.bytes <= received) return { kind: 'duplicate' };
  if (chunk.offset !== received)
    return {
      kind: 'refuse',
      code: 'bad_transfer',
      message: `expected the bytes from ${received}, got ${chunk.offset}`,
    };
  if (chunk.offset + chunk.bytes > chunk.size)
    return { kind: 'refuse', code: 'bad_transfer', message: 'more bytes than the size it announced' };
  return { kind: 'append', start: state === null };
}

/** Unfinished transfers one device may have on the computer at once. */
export const MAX_PENDING_TRANSFERS = 4;
/** The sizes they announced, together, at most (a device cannot make the computer hold more for it). */
export const MAX_PENDING_BYTES = 2 * MAX_TRANSFER_BYTES;
/** An unfinished transfer that received nothing for this long is abandoned: its partial file is deleted. */
export const TRANSFER_IDLE_MS = 30 * 60_000;

/**
 * Why a device may not start one more transfer of `size` bytes while it has `pending` unfinished ones (their
 * announced sizes), or null.
 */
export function pendingProblem(
  pending: readonly { size: number }[],
  size: number,
): { code: 'transfer_limit'; message: string } | null {
  if (pending.length >= MAX_PENDING_TRANSFERS)
    return {
      code: 'transfer_limit',
      message: `${pending.length} files from this phone are still arriving; finish or wait for them (unfinished ones go after ${TRANSFER_IDLE_MS / 60_000} min)`,
    };
  const held = pending.reduce((sum, p) => sum + p.size, 0);
  if (held + size > MAX_PENDING_BYTES)
    return {
      code: 'transfer_limit',
      message: `files from this phone still arriving hold ${held} bytes; at most ${MAX_PENDING_BYTES} at once`,
    };
  return null;
}
