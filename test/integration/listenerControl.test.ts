import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { hasExited } from '../../actors/daemon/daemonFiles.js';
import { runSvc, type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { daemonsOf, killDaemonsOf } from '../helpers/daemons.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { type TmuxServer, waitFor } from '../helpers/tmux.js';

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc | null = null;
const sock = () => join(home.home, '.svc', 'listener.sock');

const daemons = () => daemonsOf(home.home);

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

beforeEach(async () => {
  ({ tmux, home, env } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'box' }));
});

afterEach(async () => {
  await listener?.stop('SIGKILL');
  listener = null;
  await killDaemonsOf(home.home);
  await tmux.cleanup();
  home.cleanup();
});

async function startForeground(): Promise<SpawnedSvc> {
  const proc = spawnSvc(['listener'], env);
  await proc.waitForLine(/connected to ws:/);
  await proc.waitForLine(/control socket /);
  return proc;
}

describe('svc listener through the control socket', () => {
  it('--status answers from the daemon itself; --stop asks it to stop', async () => {
    const none = await runSvc(['listener', '--status'], env);
    expect(none).toMatchObject({ code: 1, stdout: '', stderr: 'svc: no listener is running\n' });

    listener = await startForeground();
    const pid = listener.child.pid!;
    const status = await waitFor(
      async () => {
        const res = await runSvc(['listener', '--status'], env);
        return /1 session\(s\)/.test(res.stdout) ? res : null;
      },
      { timeoutMs: 15_000, what: 'the status to count the session' },
    );
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(
      new RegExp(
        `^listener ${pid} running v\\d+\\.\\d+\\.\\d+\\S* for \\d+ s; relay connection\\.online\\.[^;]*; 1 session\\(s\\); tmux ${tmux.socketPath}\\n$`,
      ),
    );
    const json = JSON.parse((await runSvc(['listener', '--status', '--json'], env)).stdout);
    expect(json).toMatchObject({ running: true, pid, via: 'socket', status: { pid, sessions: 1 } });

    const stop = await runSvc(['listener', '--stop'], env);
    expect(stop).toMatchObject({ code: 0, stdout: `svc: listener ${pid} stopped\n` });
    expect(await listener.exited).toBe(0);
    expect(listener.output()).toMatch(/stop asked on the control socket[\s\S]*listener stopped \(exit 0\)/);
    expect(existsSync(sock())).toBe(false);
    expect(existsSync(join(home.home, '.svc', 'listener.pid'))).toBe(false);
  });

  it('falls back to the pid file and signals when the socket does not answer', async () => {
    listener = await startForeground();
    const pid = listener.child.pid!;
    rmSync(sock());
    const status = await runSvc(['listener', '--status'], env);
    expect(status).toMatchObject({ code: 0 });
    expect(status.stdout).toMatch(new RegExp(`^listener ${pid} running v.* its control socket does not answer\\)\\n$`));
    expect(JSON.parse((await runSvc(['listener', '--status', '--json'], env)).stdout)).toMatchObject({
      via: 'pidfile',
      status: null,
    });
    const stop = await runSvc(['listener', '--stop'], env);
    expect(stop).toMatchObject({ code: 0, stdout: `svc: listener ${pid} stopped\n` });
    expect(hasExited(pid)).toBe(true);
    expect(listener.output()).not.toContain('stop asked on the control socket');
  });

  it('--restart stops the running daemon through its socket and starts one on this CLI', async () => {
    const first = await runSvc(['listener', '--restart'], env);
    expect(first.code).toBe(0);
    const firstPid = Number(readFileSync(join(home.home, '.svc', 'listener.pid'), 'utf8'));
    const viaSocket = await waitFor(
      async () => JSON.parse((await runSvc(['listener', '--status', '--json'], env)).stdout).via === 'socket',
      { timeoutMs: 15_000, what: 'the background daemon to answer on its socket' },
    );
    expect(viaSocket).toBe(true);
    const again = await runSvc(['listener', '--restart'], env);
    expect(again.code).toBe(0);
    const secondPid = Number(readFileSync(join(home.home, '.svc', 'listener.pid'), 'utf8'));
    expect(secondPid).not.toBe(firstPid);
    expect(hasExited(firstPid)).toBe(true);
    // the first daemon was asked on its socket, and stopped in order
    expect(readFileSync(join(home.home, '.svc', 'listener.log'), 'utf8')).toMatch(
      /stop asked on the control socket[\s\S]*listener stopped \(exit 0\)/,
    );
    await waitFor(
      async () => JSON.parse((await runSvc(['listener', '--status', '--json'], env)).stdout).status?.pid === secondPid,
      { timeoutMs: 15_000, what: 'the new daemon to answer' },
    );
    expect(daemons()).toEqual([secondPid]);
    expect(await runSvc(['listener', '--stop'], env)).toMatchObject({
      code: 0,
      stdout: `svc: listener ${secondPid} stopped\n`,
    });
  });
});
