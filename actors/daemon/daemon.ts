/**
 * The background listener (spec 4.4 rule 4, part 9): one per computer, started by the first wrapper run, found
 * again through `~/.svc/listener.pid` (or, when that file is missing, the process list), restarted when it is
 * older than the CLI, stopped by `svc listener --stop`.
 *
 * Two wrapper runs at once must not start two daemons: everything that looks for the daemon and starts or stops
 * it holds `~/.svc/listener.lock` (actors/fileLock.ts), created with `O_EXCL` (`wx`) and holding the holder's pid.
 * A lock whose holder is gone (it crashed) is taken over. The daemon writes its own pid and version files (actors/daemon/daemonFiles.ts);
 * the starter waits, still holding the lock, until the pid file names the new process.
 */
import { execFile, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveConfig } from '../../core/daemon/config.js';
import { type DaemonAge, daemonAge, listenerPidsFromPs, PS_COLUMNS, staleLine } from '../../core/daemon/daemon.js';
import { nodeFlagsFor } from '../../core/daemon/nodeFlags.js';
import type { SvcPaths } from '../../core/daemon/paths.js';
import { withFileLock } from '../fileLock.js';
import { ensurePrivateDir } from '../files.js';
import { readConfigFile } from './configFile.js';
import { runningListener } from './controlSocket.js';
import { hasExited, isListenerProcess, readPid } from './daemonFiles.js';

export interface DaemonContext {
  home: string;
  paths: SvcPaths;
  env: NodeJS.ProcessEnv;
  /** The CLI's version (core/daemon/version.ts). */
  cliVersion: string;
  /** The script a daemon is started from: `node <entry> listener`. */
  entry: string;
  /** Given to a started daemon as `SVC_TMUX_SOCKET` (the socket the wrapper used); unset: the daemon discovers. */
  socketPath?: string | undefined;
  /** Waits, for tests; defaults are generous because a loaded machine starts node slowly. */
  startTimeoutMs?: number;
  stopTimeoutMs?: number;
  lockTimeoutMs?: number;
}

export interface FoundListener {
  pid: number;
  via: 'socket' | 'pidfile' | 'ps';
  /** The version it runs (its answer, else `listener.version`); null when unknown. */
  version: string | null;
  /** `up`: it runs inside `svc up`, which cannot be restarted from here; `listener`: the daemon (or unknown). */
  host: 'listener' | 'up';
  /** The tmux server it watches, when it said (its control socket answered). */
  tmuxSocket?: string;
}

export type EnsureStatus = 'running' | 'newer' | 'started' | 'restarted' | 'not-logged-in' | 'failed';

export interface EnsureResult {
  status: EnsureStatus;
  pid: number | null;
  /** Lines for the person (stderr), e.g. the stale-restart line of spec 9.2. */
  lines: string[];
}

export const NOT_LOGGED_IN_LINE =
  'svc: the listener was not started: not logged in (run `svc login --url <relay> --key <apiKey>` or `svc up` first)';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The package root (dist/actors/daemon/daemon.js → ../../..). */
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The script this CLI runs from, as a daemon should be started. */
export function defaultEntry(argv1: string | undefined = process.argv[1]): string {
  if (!argv1) return resolve(PACKAGE_ROOT, 'bin/svc.js');
  try {
    return realpathSync(argv1);
  } catch {
    return resolve(argv1);
  }
}

/** Every spelling of the entry script a daemon's command line may show. */
export function entryScripts(entry: string): string[] {
  const out = new Set<string>([entry, resolve(PACKAGE_ROOT, 'bin/svc.js'), resolve(PACKAGE_ROOT, 'dist/cli/main.js')]);
  try {
    out.add(realpathSync(entry));
  } catch {
    // a path that no longer exists is still matched as given
  }
  return [...out];
}

export function isLoggedIn(paths: SvcPaths, env: NodeJS.ProcessEnv): boolean {
  const config = resolveConfig(readConfigFile(paths.config), env, {}, paths.config);
  return Boolean(config.apiKey.value && config.hookId.value);
}

function readVersion(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim() || null;
  } catch {
    return null;
  }
}

function psOutput(): Promise<string> {
  return new Promise((res) => {
    execFile(
      'ps',
      ['-ww', '-eo', PS_COLUMNS],
      { encoding: 'utf8', maxBuffer: 32 * 1024 * 1024, timeout: 10_000 },
      (_e, out) => res(String(out ?? '')),
    );
  });
}

/** On Linux a process's HOME is readable from /proc; elsewhere (or when unreadable) any HOME is accepted. */
function hasHome(pid: number, home: string): boolean {
  let environ: string;
  try {
    environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
  } catch {
    return true;
  }
  const entry = environ.split('\0').find((kv) => kv.startsWith('HOME='));
  return entry === undefined || resolve(entry.slice(5)) === resolve(home);
}

/**
 * The listener of this HOME, whoever started it: the one answering on the control socket (the daemon, a
 * foreground `svc listener` or the one inside `svc up`), else the pid file, else a process-list search for the
 * entry script (spec 9.4; a daemon from before the socket, or one whose socket could not be made).
 */
export async function findListener(
  ctx: Pick<DaemonContext, 'paths' | 'home' | 'entry'>,
): Promise<FoundListener | null> {
  const answer = await runningListener(ctx.paths.dir);
  if (answer)
    return {
      pid: answer.pid,
      via: 'socket',
      // listener.version is what spec 9.2 compares; the answer when the file is missing
      version: readVersion(ctx.paths.version) ?? answer.version,
      host: answer.host ?? 'listener',
      tmuxSocket: answer.tmuxSocket,
    };
  const version = readVersion(ctx.paths.version);
  const pid = readPid(ctx.paths.pid);
  if (pid && isListenerProcess(pid)) return { pid, via: 'pidfile', version, host: 'listener' };
  const pids = listenerPidsFromPs(await psOutput(), entryScripts(ctx.entry), process.pid).filter(
    (p) => !hasExited(p) && hasHome(p, ctx.home),
  );
  return pids[0] ? { pid: pids[0], via: 'ps', version, host: 'listener' } : null;
}

// ---------------------------------------------------------------------------
// The lock

/** Run `fn` holding `~/.svc/listener.lock` (actors/fileLock.ts); a live holder keeps it as long as it needs. */
export async function withListenerLock<T>(paths: SvcPaths, fn: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  ensurePrivateDir(paths.dir);
  return withFileLock(join(paths.dir, 'listener'), { waitMs: timeoutMs }, fn);
}

function readFileSafe(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------
// Start, stop

/** Start `node <flags> <entry> listener` (core/daemon/nodeFlags.ts) in the background, stdout and stderr appended to listener.log; wait for its pid file. */
async function spawnListener(ctx: DaemonContext): Promise<{ pid: number | null; line?: string }> {
  ensurePrivateDir(ctx.paths.dir);
  const out = openSync(ctx.paths.log, 'a', 0o600);
  const env: NodeJS.ProcessEnv = { ...ctx.env, SVC_LISTENER_BACKGROUND: '1' };
  if (ctx.socketPath) env.SVC_TMUX_SOCKET = ctx.socketPath;
  delete env.TMUX; // the daemon is not inside anyone's pane
  // The node this CLI runs on (its native modules are built for it), never the first `node` on PATH.
  const child = spawn(process.execPath, [...nodeFlagsFor(['listener']), ctx.entry, 'listener'], {
    detached: true,
    stdio: ['ignore', out, out],
    env,
    cwd: ctx.home,
  });
  closeSync(out);
  let exited: number | null | undefined;
  child.on('exit', (code) => {
    exited = code;
  });
  child.on('error', () => {
    exited = -1;
  });
  child.unref();
  const pid = child.pid ?? null;
  // deadlines on the monotonic clock: a wall clock stepped forward must not cut a wait short
  const deadline = performance.now() + (ctx.startTimeoutMs ?? 15_000);
  while (pid !== null && exited === undefined && performance.now() < deadline) {
    if (readPid(ctx.paths.pid) === pid) {
      await answering(ctx, pid, () => exited !== undefined);
      return { pid };
    }
    await sleep(25);
  }
  if (pid !== null && readPid(ctx.paths.pid) === pid) return { pid };
  const last = (readFileSafe(ctx.paths.log) ?? '').trimEnd().split('\n').at(-1) ?? '';
  return {
    pid: null,
    line:
      exited !== undefined
        ? `svc: the listener exited at start (see ${ctx.paths.log}): ${last}`
        : `svc: the listener did not write ${ctx.paths.pid} in time (see ${ctx.paths.log})`,
  };
}

/**
 * Until the new listener answers on its control socket (tens of ms after its pid file), so that a `svc listener
 * --status` or `svc verify` right after `svc cc` finds it answering. At most `READY_WAIT_MS`: a listener that could
 * not make its socket still runs, and is found by its pid file.
 */
async function answering(ctx: DaemonContext, pid: number, exited: () => boolean): Promise<void> {
  const deadline = performance.now() + READY_WAIT_MS;
  while (!exited() && performance.now() < deadline) {
    if ((await runningListener(ctx.paths.dir, 500))?.pid === pid) return;
    await sleep(25);
  }
}
const READY_WAIT_MS = 3_000;

/** SIGTERM, wait for the exit (SIGKILL after `stopTimeoutMs`), remove the pid file if it still names the pid. */
async function stopPid(ctx: DaemonContext, pid: number): Promise<string | null> {
  let note: string | null = null;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // already gone
  }
  const deadline = performance.now() + (ctx.stopTimeoutMs ?? 10_000);
  while (!hasExited(pid) && performance.now() < deadline) await sleep(25);
  if (!hasExited(pid)) {
    note = `svc: listener ${pid} did not stop within ${Math.round((ctx.stopTimeoutMs ?? 10_000) / 1000)} s: killed`;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
    const killDeadline = performance.now() + 5_000;
    while (!hasExited(pid) && performance.now() < killDeadline) await sleep(25);
  }
  if (readPid(ctx.paths.pid) === pid) rmSync(ctx.paths.pid, { force: true });
  return note;
}

/**
 * Spec 4.4 rule 4, 9.2: make sure this HOME's daemon runs. Alive and not older than the CLI: nothing. Older:
 * restarted, with the `listener <old> is stale - restarting on <new>` line. Newer: left alone. None: started.
 * Not logged in: nothing is started, and one line says so.
 */
export async function ensureListener(ctx: DaemonContext): Promise<EnsureResult> {
  if (!isLoggedIn(ctx.paths, ctx.env)) return { status: 'not-logged-in', pid: null, lines: [NOT_LOGGED_IN_LINE] };
  return withListenerLock(
    ctx.paths,
    async () => {
      const found = await findListener(ctx);
      const lines: string[] = [];
      let status: EnsureStatus = 'started';
      if (found) {
        const age: DaemonAge = daemonAge(found.version, ctx.cliVersion);
        if (ctx.socketPath && found.tmuxSocket && found.tmuxSocket !== ctx.socketPath)
          lines.push(otherServerLine(found, ctx.socketPath));
        if (found.host === 'up') {
          // `svc up` serves the relay too: never stopped from here, and never doubled by a daemon beside it
          if (age === 'older') lines.push(upOlderLine(found, ctx.cliVersion));
          return { status: age === 'newer' ? 'newer' : 'running', pid: found.pid, lines };
        }
        if (age !== 'older') return { status: age === 'newer' ? 'newer' : 'running', pid: found.pid, lines };
        lines.push(staleLine(found.version ?? '?', ctx.cliVersion));
        const note = await stopPid(ctx, found.pid);
        if (note) lines.push(note);
        status = 'restarted';
      }
      const started = await spawnListener(ctx);
      if (started.line) lines.push(started.line);
      return { status: started.pid === null ? 'failed' : status, pid: started.pid, lines };
    },
    ctx.lockTimeoutMs,
  );
}

function otherServerLine(found: FoundListener, socketPath: string): string {
  const fix = found.host === 'up' ? 'start `svc up` from this shell' : 'run `svc listener --restart` from this shell';
  return `svc: the listener (pid ${found.pid}) watches the tmux server ${found.tmuxSocket}, not ${socketPath} where this session is: the phone will not see it; ${fix}, or set SVC_TMUX_SOCKET`;
}

function upOlderLine(found: FoundListener, cliVersion: string): string {
  return `svc: the listener inside \`svc up\` (pid ${found.pid}) runs v${found.version ?? '?'}, older than this CLI (v${cliVersion}): restart \`svc up\` to update it`;
}

/** `svc listener --stop`: the stopped pid, or null when none was running. */
export async function stopListener(ctx: DaemonContext): Promise<{ pid: number | null; lines: string[] }> {
  return withListenerLock(
    ctx.paths,
    async () => {
      const found = await findListener(ctx);
      if (!found) return { pid: null, lines: ['svc: no listener is running'] };
      const note = await stopPid(ctx, found.pid);
      return { pid: found.pid, lines: [...(note ? [note] : []), `svc: listener ${found.pid} stopped`] };
    },
    ctx.lockTimeoutMs,
  );
}

/** `svc listener --restart`: stop the running daemon (if any) and start one on this CLI, whatever the versions. */
export async function restartListener(ctx: DaemonContext): Promise<EnsureResult> {
  if (!isLoggedIn(ctx.paths, ctx.env)) return { status: 'not-logged-in', pid: null, lines: [NOT_LOGGED_IN_LINE] };
  return withListenerLock(
    ctx.paths,
    async () => {
      const lines: string[] = [];
      const found = await findListener(ctx);
      if (found) {
        const note = await stopPid(ctx, found.pid);
        if (note) lines.push(note);
      }
      const started = await spawnListener(ctx);
      if (started.line) lines.push(started.line);
      else lines.push(`svc: listener ${started.pid} started (v${ctx.cliVersion}); log ${ctx.paths.log}`);
      return { status: started.pid === null ? 'failed' : found ? 'restarted' : 'started', pid: started.pid, lines };
    },
    ctx.lockTimeoutMs,
  );
}
