/**
 * One cross-process lock for the files under ~/.svc that several svc processes change: `<path>.lock`, created
 * exclusively (`O_EXCL`, 0600) and holding the holder's pid. Users: the listener's start and stop
 * (`listener.lock`), `svc agent send`'s stamps (`cli-device-key.json.lock`), the pinned devices
 * (`devices.json.lock`, `cli-pins.json.lock`).
 *
 * A lock is taken over when its holder has died, when it stayed empty for 10 s (a holder that died between creating
 * and writing it), or, when the caller gives `maxAgeMs`, once it is older than that (a holder that hangs, or a dead
 * holder's pid now used by another process). A takeover removes the lock only if it is still the one it judged.
 */
import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { hasExited } from './daemon/daemonFiles.js';

export class LockBusyError extends Error {}

export interface LockOptions {
  /** How long to wait for a live holder before giving up with `LockBusyError`. */
  waitMs: number;
  /** A lock older than this is taken over whoever holds it; unset: a live holder keeps it as long as it needs. */
  maxAgeMs?: number;
}

const EMPTY_STALE_MS = 10_000;
const POLL_MS = 20;

interface Holder {
  text: string;
  ino: number;
  mtimeMs: number;
}

function readHolder(lock: string): Holder | null {
  try {
    const st = statSync(lock);
    return { text: readFileSync(lock, 'utf8'), ino: st.ino, mtimeMs: st.mtimeMs };
  } catch {
    return null;
  }
}

function isStale(holder: Holder, maxAgeMs: number | undefined): boolean {
  const age = Date.now() - holder.mtimeMs;
  if (maxAgeMs !== undefined && age > maxAgeMs) return true;
  const pid = Number.parseInt(holder.text.trim(), 10);
  return Number.isInteger(pid) && pid > 0 ? hasExited(pid) : age > EMPTY_STALE_MS;
}

const sameHolder = (a: Holder | null, b: Holder): boolean =>
  a !== null && a.ino === b.ino && a.text === b.text && a.mtimeMs === b.mtimeMs;

/** One attempt, without waiting: true when this process now holds `lock`. */
export function tryLock(lock: string, maxAgeMs?: number): boolean {
  // Twice at most: once more after removing a stale lock (or after the holder let go between open and read).
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(lock, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = readHolder(lock);
      if (holder === null) continue;
      if (!isStale(holder, maxAgeMs)) return false;
      if (sameHolder(readHolder(lock), holder)) rmSync(lock, { force: true });
      continue;
    }
    try {
      writeSync(fd, `${process.pid}\n`);
    } finally {
      closeSync(fd);
    }
    return true;
  }
  return false;
}

/** Let go of `lock`, if this process still holds it (it may have been taken over after `maxAgeMs`). */
export function unlock(lock: string): void {
  if (readHolder(lock)?.text.trim() === String(process.pid)) rmSync(lock, { force: true });
}

/** Tries until it holds the lock, yielding the pause before each new try; throws once `waitMs` is over. */
function* acquire(lock: string, opts: LockOptions): Generator<number, void> {
  const deadline = Date.now() + opts.waitMs;
  while (!tryLock(lock, opts.maxAgeMs)) {
    if (Date.now() >= deadline) {
      const pid = readHolder(lock)?.text.trim();
      throw new LockBusyError(`another svc holds ${lock} (pid ${pid || '?'}); try again`);
    }
    yield POLL_MS;
  }
}

/** Run `fn` holding `<path>.lock`. */
export async function withFileLock<T>(path: string, opts: LockOptions, fn: () => Promise<T>): Promise<T> {
  const lock = `${path}.lock`;
  for (const ms of acquire(lock, opts)) await new Promise((resolve) => setTimeout(resolve, ms));
  try {
    return await fn();
  } finally {
    unlock(lock);
  }
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Run `fn` holding `<path>.lock`, waiting without returning to the event loop: for a read-modify-write of a small
 * file (milliseconds), done where the caller cannot wait asynchronously (an XState action in the listener).
 */
export function withFileLockSync<T>(path: string, opts: LockOptions, fn: () => T): T {
  const lock = `${path}.lock`;
  for (const ms of acquire(lock, opts)) Atomics.wait(pause, 0, 0, ms);
  try {
    return fn();
  } finally {
    unlock(lock);
  }
}
