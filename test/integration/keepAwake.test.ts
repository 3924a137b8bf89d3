/**
 * Keep-awake (spec 4.10; Linux beyond the spec, docs/service.md): the real `svc listener` starts the system's
 * keep-awake program beside itself and it ends with the listener; `--no-keep-awake` and `keepAwake: false` start
 * none. The program here is a stand-in for `systemd-inhibit` on PATH that records its arguments and then runs the
 * child it was given (the real `tail --pid`), so its life is the real one.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { startTestRelay, type TestRelay, waitFor } from '../helpers/relay.js';
import type { TmuxServer } from '../helpers/tmux.js';

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc | null = null;
let calls: string;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

beforeEach(async () => {
  let base: NodeJS.ProcessEnv;
  ({ tmux, home, env: base } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'awake' }));
  const bin = join(home.home, 'fake-bin');
  mkdirSync(bin);
  calls = join(home.home, 'inhibit.log');
  const fake = join(bin, 'systemd-inhibit');
  // records "<its pid> <args>", then runs what comes after the options, as systemd-inhibit does
  writeFileSync(
    fake,
    `#!/bin/sh\necho "$$ $*" >> '${calls}'\nwhile [ $# -gt 0 ]; do case "$1" in --*) shift;; *) break;; esac; done\nexec "$@"\n`,
  );
  chmodSync(fake, 0o755);
  env = { ...base, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` };
});

afterEach(async () => {
  await listener?.stop();
  listener = null;
  await tmux.cleanup();
  home.cleanup();
});

describe.runIf(process.platform === 'linux')('keep-awake', () => {
  it('runs beside the listener, bound to its pid, and ends with it', async () => {
    listener = spawnSvc(['listener'], env);
    await listener.waitForLine(/keep-awake: on/);
    // the shell's `>>` makes the file before it writes the line: wait for the whole line
    const wholeLine = () => {
      const text = existsSync(calls) ? readFileSync(calls, 'utf8') : '';
      return text.endsWith('\n') ? text : null;
    };
    const line = await waitFor(wholeLine, { what: 'systemd-inhibit started' });
    const [pid, ...args] = line.trim().split(' ');
    expect(args.join(' ')).toContain('--what=idle:sleep');
    expect(args.join(' ')).toContain(`tail --pid=${listener.child.pid} -f /dev/null`);
    expect(alive(Number(pid))).toBe(true);
    await listener.stop();
    listener = null;
    await waitFor(() => !alive(Number(pid)), { timeoutMs: 10_000, what: 'the keep-awake child gone' });
  });

  it('--no-keep-awake starts nothing, and says so', async () => {
    listener = spawnSvc(['listener', '--no-keep-awake'], env);
    await listener.waitForLine(/keep-awake: off \(--no-keep-awake\)/);
    await listener.waitForLine(/connected to ws:/);
    expect(existsSync(calls)).toBe(false);
  });

  it('keepAwake: false in the config file starts nothing', async () => {
    const file = join(home.home, '.svc', 'config.json');
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), keepAwake: false }), {
      mode: 0o600,
    });
    listener = spawnSvc(['listener'], env);
    await listener.waitForLine(/keep-awake: off \(keepAwake: false\)/);
    expect(existsSync(calls)).toBe(false);
  });
});
