/**
 * The path a new user takes, which the other tests' private sockets never take: a computer just booted (no tmux
 * server has run, so `$TMUX_TMPDIR/tmux-<uid>/` does not exist), a HOME without `~/.svc`, no `LANG`, no
 * `SVC_TMUX_SOCKET` and no `-S`: the wrapper, `svc sh`, `--wt` and the listener the wrapper starts all use tmux's
 * default socket, in an empty `TMUX_TMPDIR` made for the test (never the real user's server).
 * Then the README's order: `svc up` in one terminal, `svc cc --detach` and the rest in another.
 */
import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TRANSFER_CHUNK_BYTES } from '../../core/files/transfer.js';
import { FileResultBody, HistoryChunkBody, type LaunchRequest, LaunchResultBody } from '../../core/protocol/bodies.js';
import { claudeProjectDir } from '../../core/sessions/control.js';
import { NEW_SESSION_TARGET } from '../../core/sessions/newSession.js';
import { removeWhenFree, type SpawnedSvc, SVC_BIN, spawnSvc, svcEnv } from '../helpers/cli.js';
import { daemonsOf, killDaemonsOf } from '../helpers/daemons.js';
import { computerDevice, databaseHolds, registerTestDevice } from '../helpers/devices.js';
import { api, finalPush, startTestRelay, type TestRelay, TestSocket } from '../helpers/relay.js';
import { endTmuxServer, fakeAgentBin, runTmux, waitFor } from '../helpers/tmux.js';

const UID = process.getuid?.() ?? 0;

let root: string;
let home: string;
let tmuxTmp: string;
let proj: string;
let env: NodeJS.ProcessEnv;
let relay: TestRelay | null = null;
let up: SpawnedSvc | null = null;

const socketDir = () => join(tmuxTmp, `tmux-${UID}`);
const defaultSocket = () => join(socketDir(), 'default');

function svc(args: string[], cwd = proj): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SVC_BIN, ...args], { cwd, env, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** The pane's screen on the default socket of the test's TMUX_TMPDIR. */
const capture = (session: string) => runTmux(defaultSocket(), ['capture-pane', '-p', '-t', `=${session}:`]);

/** As a person would: once the program is in front (a shell in front of an agent session refuses the push). */
async function inFront(session: string, program: string) {
  await waitFor(
    async () =>
      (
        await runTmux(defaultSocket(), ['display-message', '-p', '-t', `=${session}:`, '#{pane_current_command}'])
      ).trim() === program,
    { timeoutMs: 15_000, what: `${program} in front in ${session}` },
  );
}

/** A plain push as the README's curl sends it, addressed to this computer (shell sessions take only those). */
async function typedInto(baseUrl: string, key: string, session: string, body: string, seen: string) {
  const hookId = JSON.parse(readFileSync(join(home, '.svc', 'config.json'), 'utf8')).hookId as string;
  const sent = await api(baseUrl, 'POST', '/pushes/send', {
    key,
    body: { type: 'agent.command', agentSessionName: session, body, targetComputer: hookId },
  });
  expect(sent.status).toBe(200);
  await waitFor(async () => (await capture(session)).includes(seen), {
    timeoutMs: 20_000,
    what: `"${seen}" in ${session}`,
  }).catch(async (err) => {
    const r = await api(baseUrl, 'GET', `/pushes/${sent.json.id}`, { key });
    const log = existsSync(join(home, '.svc', 'listener.log'))
      ? readFileSync(join(home, '.svc', 'listener.log'), 'utf8')
      : '';
    throw new Error(`${err.message}; the relay says ${JSON.stringify(r.json)}\n${log}${up?.output() ?? ''}`);
  });
}

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'svc-first-'));
  home = join(root, 'home');
  tmuxTmp = join(root, 'tmux-tmp');
  proj = join(root, 'proj');
  mkdirSync(home);
  mkdirSync(tmuxTmp);
  mkdirSync(proj);
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: proj });
  writeFileSync(join(proj, 'README'), 'x\n');
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'add', '.'], { cwd: proj });
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'first'], { cwd: proj });
  const bin = await fakeAgentBin(root, ['claude']);
  env = svcEnv(home, { TMUX_TMPDIR: tmuxTmp, PATH: `${bin}:${process.env.PATH}`, SHELL: '/bin/sh' });
  for (const name of Object.keys(env))
    if (name === 'LANG' || name === 'LANGUAGE' || name.startsWith('LC_') || name.startsWith('SVC_')) delete env[name];
});

afterEach(async () => {
  await up?.stop('SIGINT');
  up = null;
  await killDaemonsOf(home);
  await endTmuxServer(defaultSocket());
  await relay?.close();
  relay = null;
  // the fake agent logs its end (FAKE_AGENT_LOG under root) as the killed server's SIGHUP reaches it
  await removeWhenFree(root);
});

describe('a first run on a computer just booted (the default tmux socket, no server, no ~/.svc, no LANG)', () => {
  it.each([
    [
      'svc cc --detach',
      ['cc', '--detach'],
      'svc-proj',
      'claude',
      'hello from the phone',
      'you said: hello from the phone',
    ],
    ['svc sh --detach', ['sh', '--detach'], 'svc-proj-sh', 'sh', 'echo typed-$((6*7))', 'typed-42'],
    [
      'svc cc --wt feat/x --detach',
      ['cc', '--wt', 'feat/x', '--detach'],
      'svc-proj-wt-feat-x',
      'claude',
      'hello worktree',
      'you said: hello worktree',
    ],
  ])('%s works the first time, and the listener it starts types a push', async (_, args, name, program, body, seen) => {
    relay = await startTestRelay();
    expect(existsSync(join(home, '.svc'))).toBe(false);
    expect(await svc(['login', '--url', relay.url, '--key', relay.apiKey])).toMatchObject({ code: 0 });
    expect(existsSync(socketDir())).toBe(false);

    const run = await svc(args);
    expect(run).toMatchObject({ code: 0, stdout: `${name}\n`, stderr: '' });

    // the socket directory as tmux makes it: 0700, ours
    const dir = statSync(socketDir());
    expect(dir.mode & 0o777).toBe(0o700);
    expect(dir.uid).toBe(UID);
    expect(await runTmux(defaultSocket(), ['has-session', '-t', `=${name}`])).toBe('');
    // the listener the wrapper started watches the same server
    // (the daemon writes its pid file, which the wrapper waits for, a moment before its first log line)
    const first = await waitFor(() => readFileSync(join(home, '.svc', 'listener.log'), 'utf8').split('\n')[0], {
      what: 'the first line of listener.log',
    });
    expect(first).toMatch(new RegExp(`listener starting v\\S+ ${defaultSocket()}$`));
    expect(daemonsOf(home)).toHaveLength(1);

    await inFront(name, program);
    await typedInto(relay.url, relay.apiKey, name, body, seen);
  });

  it('svc cc --detach with a first prompt: the relay gets the program only, never the prompt', async () => {
    relay = await startTestRelay();
    expect(await svc(['login', '--url', relay.url, '--key', relay.apiKey])).toMatchObject({ code: 0 });
    const secret = `rotate the prod db password to pw-${randomBytes(6).toString('hex')}`;
    expect(await svc(['cc', '--detach', secret])).toMatchObject({ code: 0, stdout: 'svc-proj\n' });
    // the pane really was started with the prompt
    expect(await runTmux(defaultSocket(), ['display', '-p', '-t', '=svc-proj:', '#{pane_start_command}'])).toContain(
      'pw-',
    );
    const pane = await waitFor(
      async () => {
        const list = await api(relay!.url, 'GET', '/computers', { key: relay!.apiKey });
        const sessions = (
          list.json.computers as { sessions?: { name: string; panes: { startCommand?: string }[] }[] }[]
        ).flatMap((c) => c.sessions ?? []);
        return sessions.find((x) => x.name === 'svc-proj')?.panes[0];
      },
      { what: 'svc-proj in the relay’s inventory' },
    );
    expect(pane.startCommand).toBe('claude');
    const listed = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
    expect(JSON.stringify(listed.json)).not.toContain('pw-');
    expect(databaseHolds(relay.dataDir, secret.slice(-12))).toBe(false);
  });

  it('an empty answer from tmux is an error that says what tmux said', async () => {
    // A socket path given in a directory that does not exist: tmux prints `error creating …` and exits 0.
    env.SVC_TMUX_SOCKET = join(root, 'missing', 'sock');
    const run = await svc(['sh', '--detach']);
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: `svc: could not create svc-proj-sh: tmux created no session (tmux said: error creating ${env.SVC_TMUX_SOCKET} (No such file or directory))\n`,
    });
  });

  it('refuses a socket directory open to others in one line, as tmux would', async () => {
    mkdirSync(socketDir());
    chmodSync(socketDir(), 0o777);
    const run = await svc(['cc', '--detach']);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      `svc: could not create svc-proj: tmux socket directory ${socketDir()} is open to others (mode 0777; tmux refuses it too): chmod 700 ${socketDir()}\n`,
    );
  });
});

describe('svc up, then svc cc, svc sh and --wt in another terminal', () => {
  async function startUp(more: NodeJS.ProcessEnv = {}, port = 0) {
    up = spawnSvc(['up', '--port', String(port)], { ...env, ...more });
    // the first start's banner (`  relay  http://…`), or a later one's (`svc is up: web app … · relay http://…`)
    const line = await up.waitForLine(/(?:^\s+|· )relay\s+http:\/\/127\.0\.0\.1:\d+/, 30_000);
    await up.waitForLine(/connected to ws:/, 30_000);
    const url = /http:\/\/127\.0\.0\.1:\d+/.exec(line)![0];
    const key = JSON.parse(readFileSync(join(home, '.svc', 'config.json'), 'utf8')).apiKey as string;
    return { url, key, pid: up.child.pid! };
  }

  const serving = async (url: string) => (await fetch(`${url}/healthz`)).status === 200;
  /** Whether `svc up`'s relay database (under ~/.svc/relay) holds `text` in the clear. */
  const relayHolds = (text: string) => databaseHolds(join(home, '.svc', 'relay'), text);

  it('finds the listener inside svc up: one listener, the relay still serving at the end', async () => {
    const { url, key, pid } = await startUp();

    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj\n', stderr: '' });
    expect(await svc(['sh', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj-sh\n', stderr: '' });
    expect(await svc(['cc', '--wt', 'feat/x', '--detach'])).toMatchObject({
      code: 0,
      stdout: 'svc-proj-wt-feat-x\n',
      stderr: '',
    });
    expect(daemonsOf(home)).toEqual([]); // no background listener beside svc up's

    const verify = await svc(['verify']);
    expect(verify.stdout).toMatch(
      new RegExp(`^ok\\s+listener\\s+running inside \`svc up\`, pid ${pid}, .*\\(from control socket `, 'm'),
    );
    expect(verify.code).toBe(0);

    const status = await svc(['listener', '--status']);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^listener ${pid} running inside \`svc up\``));

    // the session actor appears with the next inventory reading
    const state = await waitFor(
      async () => {
        const s = await svc(['debug', 'state']);
        return s.code === 0 && /session\.svc-proj\b/.test(s.stdout) ? s : null;
      },
      { timeoutMs: 20_000, what: 'svc debug state to show session.svc-proj' },
    );
    expect(state.stdout).toMatch(/^listener\b/m);
    // each family's supervisor runs under the root, in a region that restarts it (docs/architecture.md)
    expect(state.stdout).toMatch(
      /running\.sessions\.up, running\.devices\.up, running\.schedules\.up, running\.worktrees\.up, running\.watches\.up, running\.asks\.up/,
    );
    for (const supervisor of ['sessions', 'devices', 'scheduler', 'worktrees', 'watches', 'asks'])
      expect(state.stdout).toMatch(new RegExp(`^[├└]── ${supervisor}\\s+${supervisor}\\s`, 'm'));

    await inFront('svc-proj', 'claude');
    await typedInto(url, key, 'svc-proj', 'hello beside svc up', 'you said: hello beside svc up');

    // the listener's calls go through one control-mode client on the default socket, which is nobody's attachment
    const clients = await runTmux(defaultSocket(), ['list-clients', '-F', '#{client_control_mode} #{client_flags}']);
    expect(clients.trim().split('\n')).toEqual([expect.stringMatching(/^1 .*ignore-size,no-output/)]);
    const { json } = await api(url, 'GET', '/computers', { key });
    const listed = json.computers[0].sessions as { name: string; attached: boolean }[];
    expect(listed.filter((x) => x.attached)).toEqual([]);
    expect(listed.map((x) => x.name)).toEqual(expect.arrayContaining(['svc-proj', 'svc-proj-sh']));

    expect(await serving(url)).toBe(true);
    expect(up!.child.exitCode).toBeNull();
    expect(up!.output()).not.toMatch(/another listener|listener stopped/);
    // through a pipe: the pairing link alone, no QR code, no escape codes; the relay is on loopback, which is said
    // with the ways a phone gets in
    expect(up!.output()).toMatch(/^ {2}http:\/\/127\.0\.0\.1:\d+\/#pair=\S+$/m);
    expect(up!.output()).toMatch(/a phone cannot open it, so no QR code/);
    expect(up!.output()).toMatch(/^ {2}svc up --lan /m);
    expect(up!.output()).not.toMatch(/\x1b|[▀▄█]/);
  });

  it('svc up with a session actor that fails (SVC_FAULT): its push is refused, the other typed; svc verify says so; rebuilt', async () => {
    // a test-only switch (actors/debug/faults.ts): the session actor of svc-proj throws once, as it starts typing
    const { url, key } = await startUp({ SVC_FAULT: 'action:session.svc-proj' });
    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj\n' });
    expect(await svc(['sh', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj-sh\n' });
    await inFront('svc-proj', 'claude');
    const hookId = JSON.parse(readFileSync(join(home, '.svc', 'config.json'), 'utf8')).hookId as string;
    const push = async (session: string, body: string) => {
      const body_ = { type: 'agent.command', agentSessionName: session, body, targetComputer: hookId };
      const sent = await api(url, 'POST', '/pushes/send', { key, body: body_ });
      expect(sent.status).toBe(200);
      return waitFor(
        async () => {
          const { json } = await api(url, 'GET', `/pushes/${sent.json.id}`, { key });
          return json.state === 'pending' || json.state === 'delivered' ? null : json;
        },
        { timeoutMs: 20_000, what: `push "${body}" to end` },
      );
    };

    expect(await push('svc-proj', 'lost to a bug')).toMatchObject({ state: 'refused', code: 'inject_failed' });
    const log = () => readFileSync(join(home, '.svc', 'listener.log'), 'utf8');
    await waitFor(() => /child session\.svc-proj failed handling PUSH: rebuilt from tmux/.test(log()), {
      what: 'the failure in the listener log',
    });
    await typedInto(url, key, 'svc-proj-sh', 'echo beside-a-failure', 'beside-a-failure');

    // rebuilt from tmux after its backoff: svc debug state lists its actor again (its actors, not the failure record,
    // which names it too); svc verify names the failure
    const actors = async () => {
      const state = await svc(['debug', 'state', '--json']);
      return state.code === 0 ? (JSON.parse(state.stdout).actors as { id: string }[]).map((a) => a.id) : [];
    };
    await waitFor(async () => (await actors()).includes('session.svc-proj'), {
      timeoutMs: 20_000,
      what: 'session.svc-proj to be back',
    });
    const verify = await svc(['verify']);
    expect(verify.stdout).toMatch(/ok {4}child {5}session\.svc-proj failed 1 time\(s\) in 10 min, restarted/);
    await typedInto(url, key, 'svc-proj', 'after the restart', 'you said: after the restart');
    expect(await capture('svc-proj')).not.toContain('lost to a bug');
    expect(await serving(url)).toBe(true);
    expect(up!.child.exitCode).toBeNull();
  });

  it('svc up, then svc schedule add: the run starts on the default socket, svc schedule lists it, rm keeps it', async () => {
    // svc up's wall clock for schedules is 15 minutes and 10 seconds ahead (SVC_CLOCK_OFFSET_MS, docs/schedules.md):
    // the first tick after the schedule is made is its first run's time
    await startUp({ SVC_CLOCK_OFFSET_MS: String(15 * 60_000 + 10_000) });
    const add = await svc(['schedule', 'add', 'cc', '--every', '15m', '--json']);
    expect(add.code).toBe(0);
    expect(add.stderr).toBe(''); // svc up's listener is found: no "no listener" warning
    const { id, session } = JSON.parse(add.stdout) as { id: string; session: string };
    expect(session).toBe(`svc-proj-sched-${id}`);
    expect(statSync(join(home, '.local', 'state', 'svc', 'schedules')).mode & 0o777).toBe(0o600);

    await waitFor(async () => (await runTmux(defaultSocket(), ['has-session', '-t', `=${session}`])) === '', {
      timeoutMs: 30_000,
      what: 'the scheduled session on the default socket',
    });
    await inFront(session, 'claude');
    const list = await waitFor(
      async () => {
        const r = await svc(['schedule']);
        return /running as svc-proj-sched-/.test(r.stdout) ? r.stdout : null;
      },
      { timeoutMs: 20_000, what: 'svc schedule to say it runs' },
    );
    expect(list).toMatch(new RegExp(`^${id}  Claude Code in proj  every 15m  max 2h$`, 'm'));

    expect(await svc(['schedule', 'rm', id])).toMatchObject({ code: 0, stdout: `removed schedule ${id}\n` });
    expect((await svc(['schedule'])).stdout).toMatch(/^no schedules/);
    // a session the schedule started keeps running
    expect(await runTmux(defaultSocket(), ['has-session', '-t', `=${session}`])).toBe('');
  });

  it('svc up, then svc cc: what the agent writes to its transcript reaches a paired phone, sealed', async () => {
    const { url, key } = await startUp();
    const phone = await registerTestDevice({ url, apiKey: key }, 'app', 'phone');
    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj\n' });
    await inFront('svc-proj', 'claude');
    // what Claude Code 2.1.197 writes to its store under HOME for this folder (the fake agent writes none itself)
    const store = join(home, '.claude', 'projects', claudeProjectDir(proj));
    mkdirSync(store, { recursive: true });
    copyFileSync(
      'test/fixtures/transcripts/A1/session.jsonl',
      join(store, '9f7cad6b-8561-4da3-baa0-ecdb6906eb73.jsonl'),
    );
    const hookId = JSON.parse(readFileSync(join(home, '.svc', 'config.json'), 'utf8')).hookId as string;
    const me = await computerDevice({ url, apiKey: key }, hookId);
    const page = await waitFor(
      async () => {
        const r = await api(url, 'GET', `/history?computer=${hookId}&session=svc-proj`, { key });
        return r.json.chunks?.length > 0 ? r.json : null;
      },
      { timeoutMs: 20_000, what: 'the session history on the relay' },
    );
    const items = (
      await Promise.all(
        page.chunks.map(async (c: { envelope: unknown }) =>
          HistoryChunkBody.parse(await phone.open('history.chunk', c.envelope, me.publicKey)),
        ),
      )
    ).flatMap((b) => b.items);
    expect(items).toContainEqual({ k: 'prompt', text: 'hello there' });
    expect(items).toContainEqual(
      expect.objectContaining({ k: 'tool', name: 'Bash', target: 'touch svc-approval-probe.txt' }),
    );
    expect(existsSync(join(home, '.svc', 'relay', 'relay.db'))).toBe(true);
    expect(relayHolds('hello there')).toBe(false);
    expect(relayHolds('svc-approval-probe')).toBe(false);
  });

  it('svc up, then svc cc: a paired phone lists and reads the project and sends a file to ~/Downloads/Svc', async () => {
    const { url, key } = await startUp();
    const phone = await registerTestDevice({ url, apiKey: key }, 'app', 'phone');
    writeFileSync(join(proj, 'notes.md'), 'planted-in-notes\n'); // untracked, not ignored: listed too
    writeFileSync(join(proj, '.env'), 'TOKEN=never-shown\n');
    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj\n' });
    await inFront('svc-proj', 'claude');
    const hookId = JSON.parse(readFileSync(join(home, '.svc', 'config.json'), 'utf8')).hookId as string;
    const me = await computerDevice({ url, apiKey: key }, hookId);
    // the phone offers a session once the relay lists it
    await waitFor(
      async () => {
        const { json } = await api(url, 'GET', '/computers', { key });
        const sessions = json.computers?.find((c: { hookId: string }) => c.hookId === hookId)?.sessions ?? [];
        return sessions.some((s: { name: string }) => s.name === 'svc-proj') || null;
      },
      { timeoutMs: 20_000, what: 'svc-proj listed by the relay' },
    );
    const sock = await TestSocket.open(`${url.replace(/^http/, 'ws')}/ws`, key);
    try {
      sock.send({ type: 'subscribe', role: 'app', deviceId: phone.deviceId });
      await sock.next('subscribed');
      let seq = 0;
      /** One sealed request in pane.keys, as the app sends it, and its sealed answer opened. */
      const request = async (body: Record<string, unknown>) => {
        const n = ++seq;
        const envelope = await phone.seal('pane.keys', me, { session: 'svc-proj', seq: n, ...body });
        sock.send({ type: 'pane.keys', computer: hookId, session: 'svc-proj', envelope });
        const result = await sock.next('keys.result', (f) => f.session === 'svc-proj' && f.seq === n, 20_000);
        expect(result.envelope, `an answer to ${JSON.stringify(body).slice(0, 80)}`).toBeDefined();
        return FileResultBody.parse(await phone.open('file', result.envelope, me.publicKey));
      };

      const list = await request({ file: { op: 'list' } });
      expect(list.entries!.map((e) => e.path)).toEqual(expect.arrayContaining(['README', 'notes.md', '.env']));
      expect(list.entries!.find((e) => e.path === '.env')).toMatchObject({ secret: true });
      expect(await request({ file: { op: 'read', path: 'notes.md' } })).toMatchObject({ text: 'planted-in-notes\n' });
      const secret = await request({ file: { op: 'read', path: '.env' } });
      expect(secret.refused).toBe('secret_file');
      expect(JSON.stringify(secret)).not.toContain('never-shown');
      expect((await request({ file: { op: 'read', path: '../home/.svc/config.json' } })).refused).toBe('bad_path');

      const data = randomBytes(300 * 1024); // two chunks
      const sha256 = createHash('sha256').update(data).digest('hex');
      const id = randomBytes(8).toString('hex');
      let last: FileResultBody | null = null;
      for (let offset = 0; offset < data.length; offset += TRANSFER_CHUNK_BYTES) {
        const bytes = data.subarray(offset, offset + TRANSFER_CHUNK_BYTES);
        const transfer = { id, name: 'photo.jpg', size: data.length, sha256, offset, data: bytes.toString('base64') };
        last = await request({ transfer });
      }
      const downloads = join(home, 'Downloads', 'Svc');
      expect(last).toMatchObject({ savedAs: join(downloads, 'photo.jpg') });
      expect(readFileSync(join(downloads, 'photo.jpg')).equals(data)).toBe(true);

      const log = await svc(['file-view', 'log']);
      expect(log.code).toBe(0);
      expect(log.stdout).toMatch(/notes\.md/);
      expect(relayHolds('planted-in-notes')).toBe(false);

      // turned off for this project from the terminal: the next request is refused
      expect(await svc(['file-view', 'off'])).toMatchObject({ code: 0 });
      expect(await request({ file: { op: 'read', path: 'notes.md' } })).toMatchObject({ refused: 'file_view_off' });
    } finally {
      await sock.close();
    }
  });

  it('svc up, then svc cc: a paired phone starts a new session there, its first message typed; svc new-session off', async () => {
    // the fake draws Claude Code's idle status line: the first message waits for it
    env = { ...env, FAKE_AGENT_PROMPT: '❯', FAKE_AGENT_STATUS: '? for shortcuts' };
    const { url, key } = await startUp();
    const phone = await registerTestDevice({ url, apiKey: key }, 'app', 'phone');
    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj\n' });
    const hookId = JSON.parse(readFileSync(join(home, '.svc', 'config.json'), 'utf8')).hookId as string;
    const me = await computerDevice({ url, apiKey: key }, hookId);
    const sock = await TestSocket.open(`${url.replace(/^http/, 'ws')}/ws`, key);
    try {
      sock.send({ type: 'subscribe', role: 'app', deviceId: phone.deviceId });
      await sock.next('subscribed');
      let seq = 0;
      const launch = async (request: LaunchRequest) => {
        const n = ++seq;
        const session = NEW_SESSION_TARGET;
        const envelope = await phone.seal('pane.keys', me, { session, seq: n, launch: request });
        sock.send({ type: 'pane.keys', computer: hookId, session, envelope });
        const result = await sock.next('keys.result', (f) => f.session === session && f.seq === n, 30_000);
        return LaunchResultBody.parse(await phone.open('launch', result.envelope, me.publicKey));
      };
      const offered = await waitFor(
        async () => {
          const o = await launch({ op: 'options' });
          return o.projects?.length ? o : null;
        },
        { timeoutMs: 20_000, what: 'the project offered' },
      );
      const cwd = offered.projects![0]!.cwd;
      expect(cwd).toBe(realpathSync(proj));
      const started = await launch({ op: 'start', cwd, agent: 'A1', prompt: 'from the phone, first' });
      expect(started.started).toBe('svc-proj-2');
      await waitFor(async () => (await capture('svc-proj-2')).includes('you said: from the phone, first'), {
        timeoutMs: 30_000,
        what: 'the first message typed into svc-proj-2 on the default socket',
      });
      expect(relayHolds('from the phone, first')).toBe(false);

      expect(await svc(['new-session', 'off'])).toMatchObject({ code: 0 });
      expect(await launch({ op: 'start', cwd, agent: 'A1' })).toMatchObject({ refused: 'not_supported', off: true });
    } finally {
      await sock.close();
    }
  });

  /** The fake agent's events (FAKE_AGENT_LOG), in order. */
  const fakeEvents = (log: string) =>
    existsSync(log)
      ? readFileSync(log, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { event: string; text?: string })
      : [];
  /** A plain push as the README's curl sends it; its final state on the relay. */
  async function pushed(url: string, key: string, body: string) {
    const hookId = JSON.parse(readFileSync(join(home, '.svc', 'config.json'), 'utf8')).hookId as string;
    const sent = await api(url, 'POST', '/pushes/send', {
      key,
      body: { type: 'agent.command', agentSessionName: 'svc-proj', body, targetComputer: hookId },
    });
    expect(sent.status).toBe(200);
    return { id: sent.json.id as number, final: () => finalPush({ url, apiKey: key }, sent.json.id, 30_000) };
  }

  /**
   * `svc up`, then `svc cc --detach` with the fake agent drawing Claude Code's idle status line, each answer taking a
   * turn of `turnMs` with the spinner in the title; once it is idle. Its events go to `log`.
   */
  async function claudeWithTurns(turnMs: number) {
    const log = join(root, 'agent.log');
    env = {
      ...env,
      FAKE_AGENT_PROMPT: '❯',
      FAKE_AGENT_STATUS: '? for shortcuts',
      FAKE_AGENT_TURN_MS: String(turnMs),
      FAKE_AGENT_LOG: log,
    };
    const { url, key } = await startUp();
    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj\n' });
    await inFront('svc-proj', 'claude');
    await waitFor(async () => (await capture('svc-proj')).includes('? for shortcuts'), { what: 'the agent idle' });
    return { url, key, log };
  }

  /** Until `svc debug state` shows one push held by svc-proj's actor for the agent's turn. */
  const heldForTurn = () =>
    waitFor(
      async () => {
        const r = await svc(['debug', 'state', '--json']);
        const { actors } = JSON.parse(r.stdout) as { actors: { id: string; summary: { afterTurn?: number } }[] };
        return actors.find((a) => a.id === 'session.svc-proj')?.summary.afterTurn === 1;
      },
      { timeoutMs: 15_000, what: 'the second push held for the turn' },
    );

  it('svc up, then svc cc: a push sent while Claude Code is in a turn is typed after it, never queued in it', async () => {
    const { url, key, log } = await claudeWithTurns(8_000);

    const first = await pushed(url, key, 'start the work');
    expect(await first.final()).toMatchObject({ state: 'injected' });
    const second = await pushed(url, key, 'and then the docs');
    // held by the listener until the turn is over: `svc debug state` says so, and the agent has not seen it
    await heldForTurn();
    expect(fakeEvents(log).map((e) => e.event)).not.toContain('queued');
    expect(await capture('svc-proj')).not.toContain('and then the docs');
    expect(await second.final()).toMatchObject({ state: 'injected' });
    await waitFor(async () => (await capture('svc-proj')).includes('you said: and then the docs'), {
      timeoutMs: 20_000,
      what: 'the second message answered',
    });
    // each typed once, the second as a turn of its own: nothing was queued inside the first turn
    const events = fakeEvents(log).filter((e) => e.event === 'submit' || e.event === 'queued');
    expect(events).toEqual([
      expect.objectContaining({ event: 'submit', text: 'start the work' }),
      expect.objectContaining({ event: 'submit', text: 'and then the docs' }),
    ]);
  });

  it('svc up stopped while a push waits for the turn: the next svc up reports it listener_stopped, never typed', {
    timeout: 90_000,
  }, async () => {
    const { log, ...first } = await claudeWithTurns(60_000);
    expect(await (await pushed(first.url, first.key, 'a long job')).final()).toMatchObject({ state: 'injected' });
    const waiting = await pushed(first.url, first.key, 'and after it, this');
    await heldForTurn();
    // Ctrl-C while the agent is still in its turn; svc up again, at the same address (as without --port: its login
    // and the listener's ledger are this relay's)
    await up!.stop('SIGINT');
    up = null;
    const again = await startUp({}, Number(new URL(first.url).port));
    const settled = await finalPush({ url: again.url, apiKey: again.key }, waiting.id, 30_000).catch((e) => {
      throw new Error(`${(e as Error).message}\n${up?.output()}`);
    });
    expect(settled).toMatchObject({
      state: 'refused',
      code: 'listener_stopped',
    });
    expect(fakeEvents(log).filter((e) => e.event === 'submit' || e.event === 'queued')).toEqual([
      expect.objectContaining({ event: 'submit', text: 'a long job' }),
    ]);
  });

  it('svc up, then svc codex: an approval dialog that comes up after the paste does not get its Enter', async () => {
    const log = join(root, 'agent.log');
    // the fake puts Codex's approval dialog up right after the first paste, as the agent asking while a message is
    // on its way
    env = { ...env, FAKE_AGENT_DIALOG_ON_PASTE: '1', FAKE_AGENT_LOG: log };
    await fakeAgentBin(root, ['codex']);
    const { url, key } = await startUp();
    expect(await svc(['codex', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj\n' });
    await inFront('svc-proj', 'codex');
    const push = await pushed(url, key, 'and then tidy up');
    // typed (its text is in the agent), not submitted: the listener says why
    expect(await push.final()).toMatchObject({ state: 'injected' });
    await up!.waitForLine(/svc-proj: an approval prompt came up after the paste; its Enter was not sent/, 15_000);
    expect(await capture('svc-proj')).toContain('Would you like to run the following command?');
    expect(fakeEvents(log).map((e) => e.event)).toEqual(['ready', 'paste']);
    // the dialog is still the person's to answer: Escape cancels it
    await runTmux(defaultSocket(), ['send-keys', '-t', '=svc-proj:', 'Escape']);
    await waitFor(() => fakeEvents(log).some((e) => e.event === 'cancel'), { what: 'the dialog cancelled' });
    expect(fakeEvents(log).map((e) => e.event)).toEqual(['ready', 'paste', 'cancel']);
  });

  it('takes over from a background listener an earlier svc cc started for another relay', async () => {
    relay = await startTestRelay();
    expect(await svc(['login', '--url', relay.url, '--key', relay.apiKey])).toMatchObject({ code: 0 });
    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj\n' });
    const [before] = daemonsOf(home);
    expect(before).toBeGreaterThan(0);

    const { url, key, pid } = await startUp();
    expect(up!.output()).toContain(
      `svc: stopped the background listener (pid ${before}); this \`svc up\` runs the listener now`,
    );
    expect(daemonsOf(home)).toEqual([]);
    expect((await svc(['listener', '--status'])).stdout).toMatch(new RegExp(`^listener ${pid} running inside`));
    await inFront('svc-proj', 'claude');
    await typedInto(url, key, 'svc-proj', 'hello from the new relay', 'you said: hello from the new relay');
  });

  it('keeps serving when its listener is stopped; the next svc cc starts one in the background', async () => {
    const { url, key } = await startUp();
    const stop = await svc(['listener', '--stop']);
    expect(stop).toMatchObject({
      code: 0,
      stdout: `svc: the listener inside \`svc up\` (pid ${up!.child.pid}) stopped; \`svc up\` keeps serving the relay\n`,
    });
    await up!.waitForLine(/the listener stopped .*the relay keeps serving at/);
    expect(await serving(url)).toBe(true);

    expect(await svc(['cc', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj\n', stderr: '' });
    expect(daemonsOf(home)).toHaveLength(1);
    await inFront('svc-proj', 'claude');
    await typedInto(url, key, 'svc-proj', 'hello again', 'you said: hello again');
    expect(up!.child.exitCode).toBeNull();
  });
});
