/**
 * `svc listener 2>&1 | head -6`: the reader of the listener's output goes away. The listener must not spin on
 * EPIPE (each error logged to the closed pipe raising another), and must stop cleanly, with a bounded log.
 * Real relay, real listener process, real tmux on a private socket.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SVC_BIN } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';

let relay: TestRelay;
let computer: TestComputer | null = null;
let child: ChildProcess | null = null;

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});
afterEach(async () => {
  // Only the process this test spawned; before the fix it would spin forever.
  if (child?.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  child = null;
  await computer?.tmux.cleanup();
  computer?.home.cleanup();
  computer = null;
});

describe('the listener on a closed pipe', () => {
  it('stops within a second of its output pipe closing, with a bounded log', async () => {
    computer = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'pipe-box' });
    const proc = spawn(process.execPath, [SVC_BIN, 'listener'], {
      env: computer.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
    // Read the first lines, as `head -6` would, then go away.
    let seen = '';
    await new Promise<void>((resolve) => {
      proc.stderr?.on('data', (chunk: Buffer) => {
        seen += chunk.toString();
        if (/connected to ws:/.test(seen)) resolve();
      });
    });
    proc.stderr?.destroy();
    proc.stdout?.destroy();

    // Anything the listener logs now goes to a closed pipe: a new session makes it report (and log) the inventory.
    await computer.tmux.newSession('svc-other', 'sleep 600');
    const code = await Promise.race([exited, new Promise<'running'>((r) => setTimeout(() => r('running'), 8_000))]);
    const exitedAt = Date.now();
    expect(code).toBe(0);

    const logFile = join(computer.home.home, '.svc', 'listener.log');
    const log = readFileSync(logFile, 'utf8');
    const closedLine = log.split('\n').find((l) => /stderr closed \(EPIPE\): stopping/.test(l));
    expect(closedLine, log).toBeDefined();
    // From noticing the closed pipe to the process gone: under a second.
    expect(exitedAt - Date.parse(closedLine!.split(' ')[0]!)).toBeLessThan(1_000);
    expect(statSync(logFile).size).toBeLessThan(64 * 1024);
    expect(log).not.toMatch(/uncaught/);
    expect(log).toMatch(/listener stopped \(exit 0\)/);
  });
});
