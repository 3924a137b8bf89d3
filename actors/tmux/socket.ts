/**
 * Tmux socket discovery (spec 4.15): the order is decided in `core/tmux/socket.ts`; this file probes.
 * `probe`, `listDir` and `lsof` are injectable (tests); the defaults are the real thing.
 */
import { execFile } from 'node:child_process';
import { lstat, readdir, stat } from 'node:fs/promises';
import {
  type DirListing,
  defaultSocketPath,
  explicitSocket,
  parseLsofSockets,
  type SocketChoice,
  type SocketEnv,
  scanCandidates,
  userSocketDirs,
} from '../../core/tmux/socket.js';

export interface DiscoverOptions {
  env: SocketEnv;
  uid: number;
  /** Does a tmux server answer on this socket? */
  probe?: (socketPath: string) => Promise<boolean>;
  /** The directory's owner, mode and entries; null when it does not exist or cannot be read. */
  listDir?: (dir: string) => Promise<DirListing | null>;
  /** Output of `lsof -a -U -c tmux -F n` ('' when lsof is missing or finds nothing). */
  lsof?: () => Promise<string>;
}

function execText(bin: string, args: string[], timeoutMs: number): Promise<{ ok: boolean; stdout: string }> {
  return new Promise((resolve) => {
    const child = execFile(bin, args, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (e, out) =>
      resolve({ ok: !e, stdout: String(out ?? '') }),
    );
    child.stdin?.on('error', () => {});
    child.stdin?.end();
  });
}

/** `tmux -S <path> list-sessions` succeeds (list-sessions never starts a server). */
export function tmuxProbe(bin = 'tmux', timeoutMs = 3000): (socketPath: string) => Promise<boolean> {
  return async (socketPath) => (await execText(bin, ['-S', socketPath, 'list-sessions'], timeoutMs)).ok;
}

export async function readSocketDir(dir: string): Promise<DirListing | null> {
  try {
    const info = await stat(dir);
    if (!info.isDirectory()) return null;
    const names = await readdir(dir);
    const entries = await Promise.all(
      names.map(async (name) => {
        const s = await lstat(`${dir}/${name}`).catch(() => null);
        return { name, socket: s?.isSocket() ?? false };
      }),
    );
    return { owner: info.uid, mode: info.mode & 0o777, entries };
  } catch {
    return null;
  }
}

export function runLsof(bin = 'lsof', timeoutMs = 5000): () => Promise<string> {
  // lsof exits 1 when it finds nothing; its output is still what we want.
  return async () => (await execText(bin, ['-a', '-U', '-c', 'tmux', '-F', 'n'], timeoutMs)).stdout;
}

export async function discoverTmuxSocket(options: DiscoverOptions): Promise<SocketChoice | null> {
  const { env, uid, probe = tmuxProbe(), listDir = readSocketDir, lsof = runLsof() } = options;

  const explicit = explicitSocket(env, uid);
  if (explicit) return { path: explicit, source: 'env' };

  const tried: string[] = [];
  const firstAnswering = async (paths: readonly string[]): Promise<string | null> => {
    for (const path of paths) {
      tried.push(path);
      if (await probe(path)) return path;
    }
    return null;
  };

  const byDefault = await firstAnswering([defaultSocketPath(env, uid)]);
  if (byDefault) return { path: byDefault, source: 'default' };

  const dirs = userSocketDirs(env, uid);
  const listings = await Promise.all(dirs.map(async (dir) => ({ dir, listing: await listDir(dir) })));
  const scanned = await firstAnswering(scanCandidates(uid, listings, tried));
  if (scanned) return { path: scanned, source: 'scan' };

  const fromLsof = await firstAnswering(parseLsofSockets(await lsof().catch(() => ''), tried));
  if (fromLsof) return { path: fromLsof, source: 'lsof' };
  return null;
}
