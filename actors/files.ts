/**
 * Small, careful file helpers for ~/.svc: owner-only modes, atomic replace (write a temp file, fsync, rename) so a
 * crash never leaves a half-written file.
 */
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

/** Create a directory (and parents) and make sure the leaf is 0700. */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

/**
 * Replace `path` atomically. `durable` (the default) fsyncs before the rename, so the new content survives a crash;
 * files that only advise (the remote-origin marker) skip it: the rename alone never leaves a half-written file.
 */
export function writeFileAtomic(path: string, data: string, mode = 0o600, durable = true): void {
  ensurePrivateDir(dirname(path));
  replaceFile(path, data, mode, durable);
}

/**
 * `writeFileAtomic` in a folder that is not svc's to make private (a service manager's, e.g. /etc/systemd/system):
 * the folder must exist and keeps its mode.
 */
export function replaceFile(path: string, data: string, mode: number, durable = true): void {
  const tmp = `${path}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w', mode);
  try {
    writeSync(fd, data);
    if (durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}

/**
 * Write `path` in place, owner-only: no temp file, no rename, and no truncation to zero (ext4 treats a rename over a
 * file and a truncate-then-rewrite as "replace" and flushes at once: 0.5-2 ms each here, on the path of every push;
 * docs/benchmarks.md). The bytes go over the old ones from the start and the file is cut to their length. Not atomic:
 * for a file whose reader can tell a torn copy (the ledger's checksummed slots, actors/sessions/ledgerFile.ts) or
 * that only advises and is written whole before anyone is told to read it (the remote-origin marker). `durable`
 * fsyncs before returning.
 */
export function writeFileInPlace(path: string, data: string, opts: { mode?: number; durable?: boolean } = {}): void {
  const mode = opts.mode ?? 0o600;
  ensurePrivateDir(dirname(path));
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT, mode);
  try {
    fchmodSync(fd, mode); // an existing file keeps its mode through open
    const bytes = Buffer.from(data);
    writeSync(fd, bytes, 0, bytes.length, 0);
    ftruncateSync(fd, bytes.length);
    if (opts.durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * A state file of svc's own that does not read (not JSON, or not its shape): moved aside to `<path>.broken` (the
 * previous one replaced) so it is neither lost nor read again, and what happened said in one line. `what` says what
 * starting without it means.
 */
export function setAsideBroken(path: string, why: string, what: string, log: { warn(m: string): void }): void {
  try {
    renameSync(path, `${path}.broken`);
    log.warn(`${path} does not read (${why}): moved to ${path}.broken; ${what}`);
  } catch (err) {
    log.warn(`${path} does not read (${why}) and could not be moved aside (${(err as Error).message}); ${what}`);
  }
}
