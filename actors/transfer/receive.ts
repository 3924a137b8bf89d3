/**
 * Receiving a file sent from the phone (spec 4.11.4; docs/files.md "File transfer"): sealed chunks through the
 * relay, appended in order to `~/.svc/incoming/<id>.part` (0600) with where it stands beside it, so a transfer cut
 * by a dropped connection (or a listener restart) resumes from what arrived. When the last byte is in and its
 * SHA-256 is the one announced, it is placed under `~/Downloads/Svc/` with its own name made safe, never
 * overwriting (`name (2).ext` on a clash; exclusive link or copy), and a desktop notice says where.
 * core/files/transfer.ts decides; this carries it out.
 */
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  constants,
  copyFileSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod/v3';
import {
  clashName,
  decideChunk,
  MAX_CLASH,
  pendingProblem,
  safeFileName,
  TRANSFER_IDLE_MS,
  type TransferState,
} from '../../core/files/transfer.js';
import type { TransferChunk } from '../../core/protocol/bodies.js';
import { ensurePrivateDir, writeFileAtomic } from '../files.js';

const State = z.object({
  id: z.string(),
  device: z.string(),
  name: z.string(),
  size: z.number().finite(),
  sha256: z.string(),
  received: z.number().finite(),
});

export type TransferAnswer =
  | { ok: true; received: number; savedAs?: string }
  | { ok: false; code: string; message: string; received?: number };

/** Places `part` at the first free name for `sentName` in `dir`: never over an existing file. */
export function placeReceived(dir: string, sentName: string, part: string): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const name = safeFileName(sentName);
  for (let n = 1; n <= MAX_CLASH; n++) {
    const path = join(dir, clashName(name, n));
    try {
      try {
        linkSync(part, path); // atomic, and fails if the name exists
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
        copyFileSync(part, path, constants.COPYFILE_EXCL);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw err;
    }
    rmSync(part, { force: true });
    return path;
  }
  throw new Error(`${MAX_CLASH} files named like ${name} already: not saved`);
}

export interface ReceiveDeps {
  /** `~/.svc/incoming`: partial transfers. */
  incoming: string;
  /** `~/Downloads/Svc`. */
  downloads: string;
  /** The desktop notice (actors/transfer/notice.ts). */
  notice: (title: string, body: string) => void;
  /** Says what was cleaned up (abandoned transfers). */
  log?: (line: string) => void;
  now?: () => number;
}

export function createReceiver(deps: ReceiveDeps) {
  const paths = (device: string, id: string) => {
    const base = join(deps.incoming, `${device.replace(/[^A-Za-z0-9_-]/g, '_')}-${id}`);
    return { part: `${base}.part`, state: `${base}.json` };
  };
  const readState = (path: string): TransferState | null => {
    try {
      const parsed = State.safeParse(JSON.parse(readFileSync(path, 'utf8')));
      return parsed.success ? parsed.data : null;
    } catch {
      return null;
    }
  };
  const now = deps.now ?? Date.now;

  /**
   * Deletes transfers that received nothing for TRANSFER_IDLE_MS (their `.part` and state, and a part file with no
   * state), and returns the unfinished ones left, by device.
   */
  const sweep = (): Map<string, TransferState[]> => {
    const left = new Map<string, TransferState[]>();
    let names: string[];
    try {
      names = readdirSync(deps.incoming);
    } catch {
      return left;
    }
    for (const name of names) {
      const base = name.replace(/\.(part|json)$/, '');
      if (base === name) continue;
      const part = join(deps.incoming, `${base}.part`);
      const state = join(deps.incoming, `${base}.json`);
      const touched = Math.max(
        statSync(part, { throwIfNoEntry: false })?.mtimeMs ?? 0,
        statSync(state, { throwIfNoEntry: false })?.mtimeMs ?? 0,
      );
      if (touched === 0) continue; // gone meanwhile (its other half already swept)
      const held = readState(state);
      if (now() - touched > TRANSFER_IDLE_MS || (!held && name.endsWith('.part'))) {
        rmSync(part, { force: true });
        rmSync(state, { force: true });
        deps.log?.(
          `file transfer ${base} abandoned (nothing for ${Math.round((now() - touched) / 60_000)} min): deleted`,
        );
        continue;
      }
      if (held && name.endsWith('.json')) left.set(held.device, [...(left.get(held.device) ?? []), held]);
    }
    return left;
  };
  sweep();

  return {
    /** One chunk (or a status question) of a transfer from `device`. */
    take(device: string, chunk: TransferChunk): TransferAnswer {
      ensurePrivateDir(deps.incoming);
      const where = paths(device, chunk.id);
      let state = readState(where.state);
      // what is on disk is the truth: a state ahead of its part file (a crash between the two) goes back to it
      if (state) {
        const onDisk = statSync(where.part, { throwIfNoEntry: false })?.size ?? 0;
        if (onDisk !== state.received) state = { ...state, received: Math.min(onDisk, state.size) };
      }
      const data = chunk.data ? Buffer.from(chunk.data, 'base64') : Buffer.alloc(0);
      const d = decideChunk(state, { ...chunk, bytes: data.length }, device);
      if (d.kind === 'refuse') return { ok: false, code: d.code, message: d.message, received: state?.received ?? 0 };
      if (d.kind === 'status' || d.kind === 'duplicate') return { ok: true, received: state?.received ?? 0 };
      if (d.start) {
        const problem = pendingProblem(sweep().get(device) ?? [], chunk.size);
        if (problem) return { ok: false, ...problem, received: 0 };
        rmSync(where.part, { force: true });
      }
      appendFileSync(where.part, data, { mode: 0o600 });
      const next: TransferState = {
        id: chunk.id,
        device,
        name: chunk.name,
        size: chunk.size,
        sha256: chunk.sha256,
        received: (state?.received ?? 0) + data.length,
      };
      // the state goes down with the first chunk: from then on the transfer counts against the device's limits
      if (next.received < next.size) {
        writeFileAtomic(where.state, `${JSON.stringify(next)}\n`, 0o600, false);
        return { ok: true, received: next.received };
      }
      // complete: the bytes must be the ones announced, else nothing is saved
      const sum = createHash('sha256').update(readFileSync(where.part)).digest('hex');
      rmSync(where.state, { force: true });
      if (sum !== chunk.sha256) {
        rmSync(where.part, { force: true });
        return { ok: false, code: 'bad_transfer', message: 'the bytes that arrived are not the file that was sent' };
      }
      const saved = placeReceived(deps.downloads, chunk.name, where.part);
      deps.notice('File received', `${safeFileName(chunk.name)} is in ${saved}`);
      return { ok: true, received: next.received, savedAs: saved };
    },
  };
}
