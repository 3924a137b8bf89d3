/**
 * Which tmux socket the listener talks to (spec 4.15), as pure decisions; `actors/tmux/socket.ts` does the IO.
 *
 * Order:
 * 1. `SVC_TMUX_SOCKET` (explicit: used as given, not probed). A value without `/` is a `-L` label and means
 *    `<tmpdir>/tmux-<uid>/<label>`.
 * 2. The default socket, `${TMUX_TMPDIR:-/tmp}/tmux-<uid>/default`; if it answers, stop.
 * 3. Every socket file in the per-user `tmux-<uid>/` directories under `$TMUX_TMPDIR`, `/tmp`, `$TMPDIR` and
 *    `$XDG_RUNTIME_DIR` (the user's shell may have had a TMUX_TMPDIR the daemon does not see), first that answers.
 *    A directory not owned by the uid or open to others is skipped, as tmux itself refuses it.
 * 4. Only if none answers: the sockets `lsof -a -U -c tmux` shows held by running tmux processes.
 *    (`-a`: without it lsof ORs the selections and lists every Unix socket on the machine.)
 */

import { byCodeUnits } from '../order.js';

export type SocketSource = 'env' | 'default' | 'scan' | 'lsof';

export interface SocketChoice {
  path: string;
  source: SocketSource;
}

export type SocketEnv = Readonly<Record<string, string | undefined>>;

export interface DirEntry {
  name: string;
  /** The entry is a Unix socket. */
  socket: boolean;
}

export interface DirListing {
  /** Owner uid and mode bits of the directory itself. */
  owner: number;
  mode: number;
  entries: readonly DirEntry[];
}

const trimSlash = (p: string): string => (p.length > 1 ? p.replace(/\/+$/, '') : p);
const nonEmpty = (v: string | undefined): string | undefined => (v && v.trim() !== '' ? v : undefined);

/** The directory tmux itself would use for this environment: `${TMUX_TMPDIR:-/tmp}/tmux-<uid>`. */
export function defaultSocketDir(env: SocketEnv, uid: number): string {
  return `${trimSlash(nonEmpty(env.TMUX_TMPDIR) ?? '/tmp')}/tmux-${uid}`;
}

export function defaultSocketPath(env: SocketEnv, uid: number): string {
  return `${defaultSocketDir(env, uid)}/default`;
}

/** `SVC_TMUX_SOCKET` resolved to a path, or null when unset. */
export function explicitSocket(env: SocketEnv, uid: number): string | null {
  const value = nonEmpty(env.SVC_TMUX_SOCKET)?.trim();
  if (!value) return null;
  return value.includes('/') ? value : `${defaultSocketDir(env, uid)}/${value}`;
}

/** The per-user directories to scan, in order, without duplicates. */
export function userSocketDirs(env: SocketEnv, uid: number): string[] {
  const bases = [nonEmpty(env.TMUX_TMPDIR), '/tmp', nonEmpty(env.TMPDIR), nonEmpty(env.XDG_RUNTIME_DIR)];
  const dirs: string[] = [];
  for (const base of bases) {
    if (!base) continue;
    const dir = `${trimSlash(base)}/tmux-${uid}`;
    if (!dirs.includes(dir)) dirs.push(dir);
  }
  return dirs;
}

/** tmux's own rule: the directory belongs to the user and others have no access. */
export function dirTrusted(listing: Pick<DirListing, 'owner' | 'mode'>, uid: number): boolean {
  return listing.owner === uid && (listing.mode & 0o007) === 0;
}

/** What `lstat` says of a socket directory; null when it does not exist. */
export interface DirFacts {
  directory: boolean;
  owner: number;
  mode: number;
}

export type SocketDirDecision = { action: 'create' } | { action: 'use' } | { action: 'refuse'; message: string };

/**
 * Before a call that may start a tmux server on `socketPath`: tmux creates its per-user directory
 * (`tmux-<uid>`, mode 0700) only when it picks the socket itself; given `-S` it does not, prints `error creating …`
 * and exits 0. So for a socket in a `tmux-<uid>` directory svc does what tmux would: create it when missing, and
 * refuse one that is not a directory, belongs to someone else or is open to others (tmux's own rule: it
 * accepts group bits). A socket elsewhere (an explicit `SVC_TMUX_SOCKET` path) is left to tmux.
 */
export function decideSocketDir(socketPath: string, facts: DirFacts | null, uid: number): SocketDirDecision {
  const dir = socketPath.slice(0, socketPath.lastIndexOf('/')) || '/';
  if (!dir.endsWith(`/tmux-${uid}`)) return { action: 'use' };
  if (!facts) return { action: 'create' };
  const fix = 'remove it or set TMUX_TMPDIR to a directory of yours';
  if (!facts.directory) return { action: 'refuse', message: `tmux socket directory ${dir} is not a directory: ${fix}` };
  if (facts.owner !== uid)
    return {
      action: 'refuse',
      message: `tmux socket directory ${dir} belongs to uid ${facts.owner}, not you (uid ${uid}): ${fix}`,
    };
  if ((facts.mode & 0o007) !== 0)
    return {
      action: 'refuse',
      message: `tmux socket directory ${dir} is open to others (mode ${(facts.mode & 0o777).toString(8).padStart(4, '0')}; tmux refuses it too): chmod 700 ${dir}`,
    };
  return { action: 'use' };
}

/**
 * Socket files to probe in the scan stage, in order: directory order as given, then `default` first and the
 * rest by name within a directory. Paths in `exclude` (already probed) are left out.
 */
export function scanCandidates(
  uid: number,
  listings: readonly { dir: string; listing: DirListing | null }[],
  exclude: readonly string[] = [],
): string[] {
  const out: string[] = [];
  for (const { dir, listing } of listings) {
    if (!listing || !dirTrusted(listing, uid)) continue;
    const names = listing.entries
      .filter((e) => e.socket)
      .map((e) => e.name)
      .sort((a, b) => (a === 'default' ? -1 : b === 'default' ? 1 : byCodeUnits(a, b)));
    for (const name of names) {
      const path = `${dir}/${name}`;
      if (!exclude.includes(path) && !out.includes(path)) out.push(path);
    }
  }
  return out;
}

/**
 * Socket paths from `lsof -a -U -c tmux -F n` output (`n/tmp/tmux-501/default type=STREAM`); the plain table
 * format (path in the NAME column) is read too. Only absolute paths, no duplicates, in order.
 */
export function parseLsofSockets(output: string, exclude: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const raw of output.split('\n')) {
    const line = raw.trimEnd();
    let name: string | undefined;
    if (line.startsWith('n')) name = line.slice(1);
    else {
      const at = line.indexOf(' /');
      if (at >= 0 && /\bunix\b/.test(line)) name = line.slice(at + 1);
    }
    if (!name?.startsWith('/')) continue;
    const path = name.replace(/(\s+type=\w+)?(\s+\([A-Z_]+\))?$/, '');
    if (path && !exclude.includes(path) && !out.includes(path)) out.push(path);
  }
  return out;
}
