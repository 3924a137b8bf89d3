/**
 * The background listener (spec 4.4 rule 4, part 9) with the compiled CLI: the first wrapper run starts it, later
 * runs start none, two concurrent first runs start one, an older daemon is restarted, a newer one left alone, a
 * daemon with no PID file is found in the process list, `svc listener --stop` / `--restart`, and `svc verify`.
 * HOME is a temp dir logged in to a relay address nobody listens on (the daemon keeps retrying, which is enough).
 * Every daemon a test starts is killed after it.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hasExited } from '../../actors/daemon/daemonFiles.js';
import { VERSION } from '../../core/daemon/version.js';
import { SVC_BIN, svcEnv, tempHome } from '../helpers/cli.js';
import { daemonsOf, killDaemonsOf } from '../helpers/daemons.js';
import { fakeAgentBin, startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let proj: string;
let env: NodeJS.ProcessEnv;
const svcDir = () => join(home.home, '.svc');
const pidFile = () => join(svcDir(), 'listener.pid');
const versionFile = () => join(svcDir(), 'listener.version');

function svc(
  args: string[],
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [SVC_BIN, ...args],
      { cwd: proj, env: { ...env, ...extraEnv }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** Running: not gone, and not a zombie waiting for init to reap it. */
const alive = (pid: number) => !hasExited(pid);

const daemons = () => daemonsOf(home.home);

const readPid = () => Number(readFileSync(pidFile(), 'utf8').trim());

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

beforeEach(async () => {
  tmux = await startTmuxServer();
  home = tempHome();
  proj = join(home.home, 'proj');
  mkdirSync(proj);
  const bin = await fakeAgentBin(tmux.dir, ['claude']);
  env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath, PATH: `${bin}:${process.env.PATH}` });
  mkdirSync(svcDir(), { mode: 0o700 });
  const port = await closedPort();
  writeFileSync(
    join(svcDir(), 'config.json'),
    JSON.stringify({
      apiKey: 'svc_test_key',
      hookId: 'hook-test',
      baseUrl: `http://127.0.0.1:${port}`,
      wsUrl: `ws://127.0.0.1:${port}/ws`,
    }),
    { mode: 0o600 },
  );
});

afterEach(async (ctx) => {
  // a failure shows what the daemons said (the home is removed below)
  if (ctx.task.result?.state === 'fail')
    process.stderr.write(
      `listener.log:\n${existsSync(join(svcDir(), 'listener.log')) ? readFileSync(join(svcDir(), 'listener.log'), 'utf8') : '(none)'}\n`,
    );
  await killDaemonsOf(home.home);
  await tmux.cleanup();
  home.cleanup();
});

describe('the background listener', () => {
  it('two concurrent first runs start exactly one daemon; later runs start none', async () => {
    const [a, b] = await Promise.all([svc(['cc', '--detach']), svc(['cc', '--detach'])]);
    expect([a.code, b.code]).toEqual([0, 0]);
    expect([a.stdout, b.stdout].sort()).toEqual(['svc-proj\n', 'svc-proj-2\n']);
    expect(a.stderr + b.stderr).toBe('');

    const running = daemons();
    expect(running).toHaveLength(1);
    expect(readPid()).toBe(running[0]);
    expect(readFileSync(versionFile(), 'utf8').trim()).toBe(VERSION);
    const log = readFileSync(join(svcDir(), 'listener.log'), 'utf8').split('\n');
    // started with the socket the wrapper used
    expect(log[0]).toMatch(new RegExp(`listener starting v${VERSION} ${tmux.socketPath}$`));
    expect(log.filter((l) => l.includes('listener starting'))).toHaveLength(1); // each line once in the log

    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj-3\n', stderr: '' });
    expect(daemons()).toEqual(running);
  });

  it('restarts a daemon older than the CLI, with the stale line; leaves a newer one alone', async () => {
    await svc(['cc', '--detach']);
    const first = readPid();
    writeFileSync(versionFile(), '0.0.9\n');
    const stale = await svc(['cc', '--detach']);
    expect(stale.code).toBe(0);
    expect(stale.stderr).toBe(`listener 0.0.9 is stale - restarting on ${VERSION}\n`);
    expect(alive(first)).toBe(false);
    const second = readPid();
    expect(second).not.toBe(first);
    expect(daemons()).toEqual([second]);
    expect(readFileSync(versionFile(), 'utf8').trim()).toBe(VERSION);

    writeFileSync(versionFile(), '99.0.0\n');
    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stderr: '' });
    expect(daemons()).toEqual([second]);
  });

  it('starts the daemon on the node the wrapper runs on, not on the first node on PATH', async () => {
    // A `node` first on PATH that notes each run, then runs the real one (the fake agent's `#!/usr/bin/env node`
    // goes through it too).
    const decoy = join(home.home, 'decoy-bin');
    const runs = join(home.home, 'decoy-runs');
    mkdirSync(decoy);
    writeFileSync(join(decoy, 'node'), `#!/bin/sh\necho "$*" >> '${runs}'\nexec '${process.execPath}' "$@"\n`, {
      mode: 0o755,
    });
    expect(await svc(['cc', '--detach'], { PATH: `${decoy}:${env.PATH}` })).toMatchObject({ code: 0, stderr: '' });
    const pid = readPid();
    expect(daemons()).toEqual([pid]);
    expect(realpathSync(`/proc/${pid}/exe`)).toBe(realpathSync(process.execPath));
    const decoyRuns = existsSync(runs) ? readFileSync(runs, 'utf8') : '';
    expect(decoyRuns).not.toContain('listener');
  });

  it('starts the daemon with the listener’s node flags (core/daemon/nodeFlags.ts: young generation capped, no optimizing compilers)', async () => {
    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stderr: '' });
    const pid = readPid();
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    expect(argv.slice(1)).toEqual(['--max-semi-space-size=1', '--no-opt', '--no-maglev', SVC_BIN, 'listener']);
  });

  it('finds the daemon in the process list when the PID file and the control socket are missing', async () => {
    await svc(['cc', '--detach']);
    const pid = readPid();
    // by its control socket first (the witness of any listener, the one inside `svc up` too)
    expect(JSON.parse((await svc(['verify', '--json'])).stdout).listener).toMatchObject({
      pid,
      from: { source: 'control socket' },
    });
    rmSync(pidFile());
    rmSync(join(svcDir(), 'listener.sock')); // as a daemon from before the socket, or one that could not make it
    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stderr: '' });
    expect(daemons()).toEqual([pid]);

    const verify = JSON.parse((await svc(['verify', '--json'])).stdout);
    expect(verify.listener).toMatchObject({ running: true, pid, from: { source: 'process list' } });

    const stop = await svc(['listener', '--stop']);
    expect(stop).toMatchObject({ code: 0, stdout: `svc: listener ${pid} stopped\n` });
    expect(alive(pid)).toBe(false);
  });

  it('svc listener --stop and --restart', async () => {
    expect((await svc(['listener', '--stop'])).stdout).toBe('svc: no listener is running\n');
    await svc(['cc', '--detach']);
    const first = readPid();
    const restart = await svc(['listener', '--restart']);
    expect(restart.code).toBe(0);
    const second = readPid();
    expect(second).not.toBe(first);
    expect(restart.stderr).toBe(
      `svc: listener ${second} started (v${VERSION}); log ${join(svcDir(), 'listener.log')}\n`,
    );
    expect(alive(first)).toBe(false);
    expect(daemons()).toEqual([second]);

    expect(await svc(['listener', '--stop'])).toMatchObject({ code: 0, stdout: `svc: listener ${second} stopped\n` });
    expect(alive(second)).toBe(false);
    expect(existsSync(pidFile())).toBe(false);
    expect(daemons()).toEqual([]);
  });

  it('takes over a lock left by a run that died', async () => {
    const dead = Number(execFileSync(process.execPath, ['-p', 'process.pid'], { encoding: 'utf8' }).trim());
    writeFileSync(join(svcDir(), 'listener.lock'), `${dead}\n`);
    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stderr: '' });
    expect(daemons()).toHaveLength(1);
    expect(existsSync(join(svcDir(), 'listener.lock'))).toBe(false);
  });

  it('svc verify --json: each value with where it came from', async () => {
    const before = await svc(['verify', '--json']);
    expect(before.code).toBe(1);
    const r0 = JSON.parse(before.stdout);
    expect(r0.ok).toBe(false);
    expect(r0.listener).toMatchObject({ ok: false, running: false, pid: null });
    expect(r0.problems).toContain(
      'the listener is not running: start it with `svc listener --restart` (or any `svc cc`), or `svc listener`',
    );

    await svc(['cc', '--detach']);
    const after = await svc(['verify', '--json'], { SVC_WS_URL: 'ws://ignored.example/ws' });
    expect(after.code).toBe(0);
    const r = JSON.parse(after.stdout);
    const config = join(svcDir(), 'config.json');
    expect(r).toMatchObject({
      ok: true,
      version: VERSION,
      tmux: { ok: true, from: { source: 'PATH' } },
      socket: { path: tmux.socketPath, from: { source: 'env', where: 'SVC_TMUX_SOCKET' } },
      config: { path: config, status: 'ok' },
      login: { ok: true, hookId: 'hook-test', apiKey: 'set', from: { source: 'file', where: config } },
      listener: { ok: true, running: true, pid: readPid(), version: VERSION, age: 'same' },
      service: { state: 'not installed' },
      wsUrl: { stage: 'local', from: { source: 'file', where: config } }, // the file wins over SVC_WS_URL
      baseUrl: { from: { source: 'file', where: config } },
      problems: [],
    });
    expect(r.tmux.version).toMatch(/^tmux \d/);
    expect(after.stdout).not.toContain('svc_test_key');

    const human = await svc(['verify']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(new RegExp(`^ok {4}listener  running, pid ${readPid()}, v${VERSION}`, 'm'));
    expect(human.stdout).toMatch(/^ok {4}relay {5}ws:\/\/127\.0\.0\.1:\d+\/ws \(stage local; from file /m);
  });
});
