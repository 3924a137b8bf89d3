/**
 * Integration-test helpers: a private tmux server (never the user's), the fake agent on PATH under agent names,
 * and a bounded polling helper.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTmux, type NewSessionOptions, type PaneTarget, type Tmux } from '../../actors/tmux/tmux.js';
import type { SessionRecord } from '../../core/protocol/index.js';
import { shellQuote } from '../../core/tmux/tmux.js';

export const TMUX_BIN = process.env.SVC_TEST_TMUX ?? 'tmux';
export const SCREEN_WIDTH = 200;
export const SCREEN_HEIGHT = 50;

/** The fake agent program (`test/fakes/fake-agent.mjs`). */
export const FAKE_AGENT = resolve(dirname(fileURLToPath(import.meta.url)), '../fakes/fake-agent.mjs');

export interface TmuxServer {
  dir: string;
  socketPath: string;
  tmux: Tmux;
  /** Run raw tmux arguments on this server; resolves to stdout, rejects with stderr. */
  run(args: readonly string[], input?: string): Promise<string>;
  /** Shorthands over `tmux`: a detached session running `command` (a shell string or argv). */
  newSession(
    name: string,
    command?: string | readonly string[],
    opts?: Omit<NewSessionOptions, 'name' | 'command'>,
  ): Promise<{ name: string; paneId: string }>;
  /** The pane's screen (by default all of it, trailing blank lines dropped). */
  capture(target: PaneTarget, lines?: number): Promise<string>;
  listSessions(): Promise<SessionRecord[]>;
  cleanup(): Promise<void>;
}

export function runTmux(socketPath: string, args: readonly string[], input?: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = execFile(
      TMUX_BIN,
      ['-u', '-S', socketPath, '-f', '/dev/null', ...args],
      { encoding: 'utf8', timeout: 10_000 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`tmux ${args.join(' ')}: ${stderr || error.message}`)) : resolvePromise(stdout),
    );
    child.stdin?.on('error', () => {});
    child.stdin?.end(input ?? '');
  });
}

/**
 * A tmux server on `<tmpdir>/sock` with no user config, windows of 200x50 by default, and `exit-empty off` so it
 * stays up with no sessions. `dir` (the temp dir) is removed by `cleanup`.
 * `socketPath` may be given to place the server elsewhere (it is still killed by `cleanup`).
 */
export async function startTmuxServer(opts: { socketPath?: string; persistent?: boolean } = {}): Promise<TmuxServer> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-tmux-'));
  const socketPath = opts.socketPath ?? join(dir, 'sock');
  await runTmux(socketPath, [
    'start-server',
    ';',
    'set-option',
    '-g',
    'exit-empty',
    'off',
    ';',
    'set-option',
    '-g',
    'default-size',
    `${SCREEN_WIDTH}x${SCREEN_HEIGHT}`,
  ]);
  const tmux = createTmux({ socketPath, bin: TMUX_BIN, configFile: '/dev/null', persistent: opts.persistent });
  return {
    dir,
    socketPath,
    tmux,
    run: (args, input) => runTmux(socketPath, args, input),
    newSession: (name, command, more = {}) => tmux.newSession({ ...more, name, ...(command ? { command } : {}) }),
    capture: (target, lines = SCREEN_HEIGHT) => tmux.capture(target, lines),
    listSessions: () => tmux.listSessions(),
    async cleanup() {
      tmux.close();
      await endTmuxServer(socketPath);
      // programs in the panes may still write (the fake agent logs its exit) while this runs: retry
      await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
    },
  };
}

/**
 * End the tmux server on `socketPath`, and its clients, for good. `kill-server` is not always enough: tmux exits only
 * once its clients have gone, and a control-mode client whose owner (a listener, this process's own client) went a
 * moment before the kill can hang there with it, both idle for ever; a server and a client were left after each of
 * the README-path tests now and then. So: kill-server, wait for every tmux process on that socket to go, and SIGKILL
 * what is still there after 2 s.
 */
export async function endTmuxServer(socketPath: string): Promise<void> {
  await runTmux(socketPath, ['kill-server']).catch(() => {}); // no server is fine
  const left = await waitFor(() => tmuxProcessesOn(socketPath).length === 0, { timeoutMs: 2000 }).then(
    () => [],
    () => tmuxProcessesOn(socketPath),
  );
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

/** The processes started with `-S socketPath` (a tmux server and its clients), from /proc; none where there is none. */
function tmuxProcessesOn(socketPath: string): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return []; // no /proc (macOS): kill-server alone
  }
  const pids: number[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      const at = argv.indexOf('-S');
      if (at >= 0 && argv[at + 1] === socketPath) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * A shell command that runs the fake agent so that tmux shows `name` as `#{pane_current_command}` (the fake sets
 * `process.title` from `FAKE_AGENT_PROCESS_NAME`), with the given `FAKE_AGENT_*` settings. Node is called by its
 * absolute path, so the pane's PATH does not matter.
 */
export function fakeAgentCommand(name: string, env: Readonly<Record<string, string | number>> = {}): string {
  const vars = Object.entries({ FAKE_AGENT_PROCESS_NAME: name, ...env }).map(([k, v]) => shellQuote(`${k}=${v}`));
  return ['exec', 'env', ...vars, shellQuote(process.execPath), shellQuote(FAKE_AGENT)].join(' ');
}

/** A directory of symlinks to the fake agent, one per name (`claude`, `codex`, …): put it first on PATH. */
export async function fakeAgentBin(dir: string, names: readonly string[]): Promise<string> {
  const bin = join(dir, 'bin');
  await mkdir(bin, { recursive: true });
  for (const name of names) await symlink(FAKE_AGENT, join(bin, name));
  return bin;
}

/**
 * An executable `<dir>/bin/<name>` that runs the fake agent with these `FAKE_AGENT_*` settings: a program found on
 * PATH by its name, as `svc schedule add` and the listener find the real one. Returns its path.
 */
export function fakeAgentScript(dir: string, name: string, env: Readonly<Record<string, string>> = {}): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const path = join(bin, name);
  const vars = Object.entries({ FAKE_AGENT_PROCESS_NAME: name, ...env }).map(([k, v]) => shellQuote(`${k}=${v}`));
  const run = ['exec', 'env', ...vars, shellQuote(process.execPath), shellQuote(FAKE_AGENT), '"$@"'].join(' ');
  writeFileSync(path, `#!/bin/sh\n${run}\n`, { mode: 0o755 });
  return path;
}

/** Poll `fn` until it returns something other than `undefined`/`false`/`null`; throw after `timeoutMs`. */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<Exclude<T, false | null | undefined>> {
  const { timeoutMs = 5000, intervalMs = 25 } = opts;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined && value !== false && value !== null)
        return value as Exclude<T, false | null | undefined>;
      last = value;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= deadline) {
      const detail = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`waitFor${opts.what ? ` (${opts.what})` : ''} timed out after ${timeoutMs} ms; last: ${detail}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
