/**
 * `svc relay …` run in-process through citty against a temp data dir (output captured), and once as the built binary.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from 'citty';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import relayCommand from '../../cli/commands/relay/index.js';
import { SVC_BIN } from '../helpers/cli.js';
import { api, waitFor } from '../helpers/relay.js';

let root: string;
let dataDir: string;
const children: ChildProcess[] = [];

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-relay-cli-'));
  dataDir = join(root, 'relay');
});

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  process.exitCode = undefined;
  vi.restoreAllMocks();
  await rm(root, { recursive: true, force: true });
});

/** Run `svc relay <args>` and return what it printed and its exit code. */
async function svcRelay(...args: string[]): Promise<{ stdout: string; stderr: string; exitCode: number }> {
  let stdout = '';
  let stderr = '';
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    stdout += String(chunk);
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    stderr += String(chunk);
    return true;
  });
  process.exitCode = undefined;
  try {
    await runCommand(relayCommand, { rawArgs: args });
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  const exitCode = Number(process.exitCode ?? 0);
  process.exitCode = undefined;
  return { stdout, stderr, exitCode };
}

it('creates an account and keys, and serves them until SIGTERM', async () => {
  const account = await svcRelay('account', 'create', '--data', dataDir, '--json');
  expect(account.exitCode).toBe(0);
  const { accountId, apiKey } = JSON.parse(account.stdout);
  expect(Object.keys(JSON.parse(account.stdout))).toEqual(['accountId', 'apiKey']);
  expect(apiKey).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);

  const key = await svcRelay(
    'key',
    'create',
    '--data',
    dataDir,
    '--account',
    accountId,
    '--scopes',
    'push:read',
    '--json',
  );
  expect(key.exitCode).toBe(0);
  const created = JSON.parse(key.stdout);
  expect(created).toEqual({ keyId: expect.stringMatching(/^key_/), apiKey: expect.any(String), scopes: ['push:read'] });

  const before = new Set(process.listeners('SIGTERM'));
  const serve = await svcRelay('serve', '--port', '0', '--data', dataDir, '--replay-window', '30');
  expect(serve.exitCode).toBe(0);
  const ready = /^relay listening on (http:\/\/127\.0\.0\.1:\d+)\n$/.exec(serve.stdout);
  expect(ready).not.toBeNull();
  const url = ready?.[1] as string;

  expect((await api(url, 'GET', '/computers', { key: apiKey })).status).toBe(200);
  const reader = await api(url, 'POST', '/pushes/send', {
    key: created.apiKey,
    body: { type: 'agent.command', agentSessionName: 's', body: 'b' },
  });
  expect(reader.status).toBe(403);

  const stop = process.listeners('SIGTERM').find((l) => !before.has(l));
  expect(stop).toBeDefined();
  (stop as () => void)();
  await waitFor(
    () =>
      fetch(`${url}/healthz`).then(
        () => false,
        () => true,
      ),
    { what: 'the relay to stop' },
  );
});

it('prints human text without --json', async () => {
  const account = await svcRelay('account', 'create', '--data', dataDir);
  expect(account.stdout).toMatch(/^account acc_[0-9a-f]+\nAPI key .*\nsvc_\S+\n$/);
});

it('refuses an unknown scope or account with one line and exit code 1', async () => {
  const { accountId } = JSON.parse((await svcRelay('account', 'create', '--data', dataDir, '--json')).stdout);
  const badScope = await svcRelay('key', 'create', '--data', dataDir, '--account', accountId, '--scopes', 'push:all');
  expect(badScope).toMatchObject({ exitCode: 1, stdout: '' });
  expect(badScope.stderr).toMatch(/^svc: unknown scope "push:all".*\n$/);
  const badAccount = await svcRelay(
    'key',
    'create',
    '--data',
    dataDir,
    '--account',
    'acc_nope',
    '--scopes',
    'push:read',
  );
  expect(badAccount).toMatchObject({ exitCode: 1, stdout: '', stderr: 'svc: no account acc_nope\n' });
  const noAccount = await svcRelay('key', 'create', '--data', dataDir);
  expect(noAccount.exitCode).toBe(1);
  const badPort = await svcRelay('serve', '--port', 'eighty', '--data', dataDir);
  expect(badPort).toMatchObject({ exitCode: 1, stdout: '' });
  expect(badPort.stderr.split('\n')).toHaveLength(2);
});

it('runs as the built `svc relay serve`: one ready line, default data dir under HOME, clean exit on signals', async () => {
  const env = { ...process.env, HOME: root };
  const made = spawnSync(process.execPath, [SVC_BIN, 'relay', 'account', 'create', '--json'], {
    env,
    encoding: 'utf8',
  });
  expect(made.status).toBe(0);
  const { apiKey } = JSON.parse(made.stdout);
  expect(statSync(join(root, '.svc', 'relay', 'relay.db')).mode & 0o777).toBe(0o600);

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    const child = spawn(process.execPath, [SVC_BIN, 'relay', 'serve', '--port', '0'], { env });
    children.push(child);
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const line = await waitFor(() => /^relay listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(stdout), {
      what: 'the ready line',
      timeoutMs: 15_000,
    });
    const url = line[1] as string;
    expect((await api(url, 'GET', '/computers', { key: apiKey })).status).toBe(200);
    child.kill(signal);
    expect(await exited).toBe(0);
    expect(stdout).toBe(`relay listening on ${url}\n`);
  }
});
