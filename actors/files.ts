/**
 * Small, careful file helpers for ~/.svc: owner-only modes, atomic replace (write a temp file, fsync, rename) so a
 * crash never leaves a half-written file.
 */
import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
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
