/**
 * Run the compiled `svc` (dist/, built by test/globalSetup.ts) as a real process, with a private HOME and a private
 * tmux socket so tests never touch the user's ~/.svc or tmux server.
 */
import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as pty from 'node-pty';

export const SVC_BIN = resolve(import.meta.dirname, '../../bin/svc.js');

/** Removes `dir`, retried: a process the test just killed (an agent, a listener) may still write its last line. */
const removeNow = (dir: string) => rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });

/**
 * Removes `dir`, trying again for up to 10 s: a program tmux just took down may still be writing there (Claude Code's
 * backups; the fake agent's last log line, written as it ends on the SIGHUP of a killed tmux server), and a removal
 * that has emptied the folder fails when a file comes back before its last step.
 */
export async function removeWhenFree(dir: string): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      return removeNow(dir);
    } catch (e) {
      if (i >= 40) throw e;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export function tempHome(): { home: string; cleanup(): void; removeWhenFree(): Promise<void> } {
  const home = mkdtempSync(join(tmpdir(), 'svc-home-'));
  return { home, cleanup: () => removeNow(home), removeWhenFree: () => removeWhenFree(home) };
}

export function svcEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, ...extra };
  delete env.TMUX;
  delete env.SVC_WS_URL;
  return env;
}

export function runSvc(
  args: string[],
  env: NodeJS.ProcessEnv,
  opts: { cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolvePromise) => {
    execFile(process.execPath, [SVC_BIN, ...args], { env, timeout: 30_000, ...opts }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolvePromise({ code, stdout, stderr });
    });
  });
}

export interface SpawnedSvc {
  child: ChildProcessWithoutNullStreams;
  output(): string;
  /** Resolves with the first output line matching `re`. */
  waitForLine(re: RegExp, timeoutMs?: number): Promise<string>;
  exited: Promise<number | null>;
  /** Signal it, and SIGKILL it if it has not ended within `graceMs` (default 5 s). */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | null>;
}

/** `bin`: an installed `svc` to run as it is (its `#!/usr/bin/env node` finds node on `env`'s PATH). */
export function spawnSvc(args: string[], env: NodeJS.ProcessEnv, opts: { bin?: string } = {}): SpawnedSvc {
  const child = opts.bin
    ? spawn(opts.bin, args, { env, stdio: 'pipe' })
    : spawn(process.execPath, [SVC_BIN, ...args], { env, stdio: 'pipe' });
  let out = '';
  const waiters: { re: RegExp; resolve(line: string): void }[] = [];
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const w of [...waiters]) {
      const line = out.split('\n').find((l) => w.re.test(l));
      if (line !== undefined) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return {
    child,
    output: () => out,
    exited,
    waitForLine(re, timeoutMs = 15_000) {
      const line = out.split('\n').find((l) => re.test(l));
      if (line !== undefined) return Promise.resolve(line);
      return new Promise((res, rej) => {
        const timer = setTimeout(
          () => rej(new Error(`no line matching ${re} within ${timeoutMs} ms; output:\n${out}`)),
          timeoutMs,
        );
        waiters.push({
          re,
          resolve: (l) => {
            clearTimeout(timer);
            res(l);
          },
        });
      });
    },
    async stop(signal = 'SIGTERM', graceMs = 5_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * `svc …` in a real terminal (node-pty, 120×40, xterm): `output()` is every byte it drew. CI is taken out of its
 * environment, which turns the progress line off (core/cli/commandLine.ts progressShown).
 */
export function svcInTerminal(args: string[], env: NodeJS.ProcessEnv) {
  const terminalEnv: NodeJS.ProcessEnv = { ...env, TERM: 'xterm-256color' };
  delete terminalEnv.CI;
  const term = pty.spawn(process.execPath, [SVC_BIN, ...args], {
    name: 'xterm-256color',
    cols: 120,
    rows: 40,
    env: terminalEnv as Record<string, string>,
  });
  let out = '';
  term.onData((d) => {
    out += d;
  });
  const exited = new Promise<number>((r) => term.onExit(({ exitCode }) => r(exitCode)));
  return { term, output: () => out, exited };
}

/** What a terminal keeps of each line of raw output: the text after the line's last wipe (`\r` + erase line). */
export const keptLines = (raw: string) => raw.split('\n').map((line) => line.split('\r\x1b[2K').at(-1) ?? '');
