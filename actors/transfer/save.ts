/**
 * Saving a received file under `~/Downloads/Svc/` (core/files/transfer.ts decides the name): the folder made
 * owner-only if it is new, each candidate name created exclusively (`wx`), so an existing file is never overwritten
 * and two transfers of the same name at once get two names. Written to a new file only: a write that fails leaves
 * no half file behind.
 */
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { clashName, MAX_CLASH, safeFileName } from '../../core/files/transfer.js';

export function saveReceived(dir: string, sentName: string, data: Uint8Array): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const name = safeFileName(sentName);
  for (let n = 1; n <= MAX_CLASH; n++) {
    const path = join(dir, clashName(name, n));
    let fd: number;
    try {
      fd = openSync(path, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw err;
    }
    try {
      let at = 0;
      while (at < data.length) at += writeSync(fd, data, at, data.length - at);
      closeSync(fd);
      return path;
    } catch (err) {
      closeSync(fd);
      rmSync(path, { force: true });
      throw err;
    }
  }
  throw new Error(`${MAX_CLASH} files named like ${name} already: not saved`);
}
