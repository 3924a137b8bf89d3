/**
 * The delivery path end to end: the real relay on a loopback port, the real `svc listener` process, real tmux on a
 * private socket, and the fake agent standing in for a real one.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runSvc, type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { api, finalPush, pushStatus, sendPush, startTestRelay, type TestRelay, waitFor } from '../helpers/relay.js';
import { fakeAgentCommand, type TmuxServer } from '../helpers/tmux.js';

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc | null = null;
let hookId: string;

async function startListener(): Promise<SpawnedSvc> {
  const proc = spawnSvc(['listener'], env);
  await proc.waitForLine(/connected to ws:/);
  return proc;
}

const send = (body: string, agentSessionName = 'svc-proj', extra: Record<string, unknown> = {}) =>
  sendPush(relay, agentSessionName, body, extra);

const finalState = (id: number) => finalPush(relay, id);

const screen = (session: string) => tmux.capture(session);

// The relay's clock: the real one, moved forward by a test that needs a push to be older than the replay window.
let relayClockAhead = 0;
const REPLAY_WINDOW_MS = 60_000;

beforeAll(async () => {
  relay = await startTestRelay({ replayWindowMs: REPLAY_WINDOW_MS, now: () => Date.now() + relayClockAhead });
});
afterAll(async () => {
  await relay.close();
});

beforeEach(async () => {
  ({ tmux, home, env, hookId } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'test-box' }));
});

afterEach(async () => {
  await listener?.stop();
  listener = null;
  await tmux.cleanup();
  home.cleanup();
});

describe('svc listener', () => {
  it('types a push into a session running an agent, submits it, and tells the sender', async () => {
    listener = await startListener();
    const id = await send('please run the tests');
    expect((await finalState(id)).state).toBe('injected');
    await waitFor(async () => (await screen('svc-proj')).includes('you said: please run the tests'), {
      what: 'the message to be submitted in the pane',
    });
    expect(listener.output()).toMatch(new RegExp(`push ${id}: typed into svc-proj`));
  });

  it('takes a pane out of copy mode before typing, and says so in its log only', async () => {
    await tmux.run(['copy-mode', '-t', '=svc-proj:']);
    const inMode = async () =>
      (await tmux.run(['display-message', '-p', '-t', '=svc-proj:', '#{pane_in_mode}'])).trim();
    expect(await inMode()).toBe('1');
    listener = await startListener();
    const id = await send('typed past copy mode');
    expect(await finalState(id)).toMatchObject({ state: 'injected' });
    await waitFor(async () => (await screen('svc-proj')).includes('you said: typed past copy mode'), {
      what: 'the message to be submitted in the pane',
    });
    expect(await inMode()).toBe('0');
    expect(listener.output()).toMatch(
      new RegExp(`svc-proj: pane %\\d+ was in a tmux mode .*; leaving it to type push ${id}`),
    );
  });

  it('refuses a message into an approval prompt from the first reading that shows it', async () => {
    // A stand-in for Claude Code that draws screens captured from the real one: idle, then (on SIGUSR1) its
    // approval prompt; it records every byte typed into it.
    const screens = new URL('../fixtures/screens/A1/', import.meta.url);
    const typed = join(home.home, 'typed.log');
    const script = join(home.home, 'asking.mjs');
    writeFileSync(
      script,
      `import { appendFileSync, readFileSync } from 'node:fs';
process.title = 'claude';
const draw = (name) => process.stdout.write('\\x1b[2J\\x1b[H' + readFileSync(new URL(name + '.txt', ${JSON.stringify(screens.href)}), 'utf8').replace(/\\n/g, '\\r\\n'));
process.stdin.setRawMode(true);
process.stdin.on('data', (d) => appendFileSync(${JSON.stringify(typed)}, d));
process.on('SIGUSR1', () => draw('awaiting_approval-1'));
draw('idle-1');
`,
    );
    await tmux.newSession('svc-ask', `node ${script}`);
    const paneCommand = async () =>
      (await tmux.run(['display-message', '-p', '-t', '=svc-ask:', '#{pane_current_command}'])).trim();
    await waitFor(async () => (await paneCommand()) === 'claude', { what: 'the stand-in to name itself claude' });
    listener = await startListener();
    // Read idle on the picker's terms first (two readings, a quiet screen), so the prompt below is new to it.
    const idle = await send('first, while idle', 'svc-ask');
    expect(await finalState(idle)).toMatchObject({ state: 'injected' });
    const pid = Number((await tmux.run(['display-message', '-p', '-t', '=svc-ask:', '#{pane_pid}'])).trim());
    process.kill(pid, 'SIGUSR1');
    await waitFor(async () => /Do you want/.test(await screen('svc-ask')), { what: 'the approval prompt' });
    const before = readFileSync(typed, 'utf8');
    const id = await send('yes, go on', 'svc-ask');
    expect(await finalState(id)).toMatchObject({ state: 'refused', code: 'approval_pending' });
    expect(readFileSync(typed, 'utf8')).toBe(before);
  });

  it('writes its files with the right modes, and the first log line names version and socket', async () => {
    listener = await startListener();
    const dir = join(home.home, '.svc');
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'config.json')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'listener.log')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'listener.pid'), 'utf8').trim()).toBe(String(listener.child.pid));
    expect(readFileSync(join(dir, 'listener.version'), 'utf8').trim()).toMatch(/^\d+\.\d+\.\d+/);
    const firstLine = readFileSync(join(dir, 'listener.log'), 'utf8').split('\n')[0];
    expect(firstLine).toMatch(new RegExp(`listener starting v\\d+\\.\\d+\\.\\d+ ${tmux.socketPath}$`));
    // The key never reaches the log.
    expect(readFileSync(join(dir, 'listener.log'), 'utf8')).not.toContain(relay.apiKey);
  });

  it('writes the remote-origin marker for the pane’s directory before typing', async () => {
    listener = await startListener();
    const id = await send('marked text');
    await finalState(id);
    const markersDir = join(home.home, '.svc', 'remote-origin');
    const { readdirSync } = await import('node:fs');
    const [file] = readdirSync(markersDir);
    const marker = JSON.parse(readFileSync(join(markersDir, file!), 'utf8'));
    const { createHash } = await import('node:crypto');
    expect(marker.sha256).toBe(createHash('sha256').update('marked text').digest('hex'));
    expect(marker.session).toBe('svc-proj');
    expect(Math.abs(marker.epoch - Date.now() / 1000)).toBeLessThan(60);
  });

  it('reports the inventory to the relay, which the app can read', async () => {
    await tmux.newSession('svc-other', fakeAgentCommand('codex'));
    listener = await startListener();
    await listener.waitForLine(
      /reported 2 session\(s\): svc-other, svc-proj|reported 2 session\(s\): svc-proj, svc-other/,
    );
    await listener.waitForLine(/server persisted listener.sessions/);
    const computers = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
    const me = computers.json.computers.find((c: { hookId: string }) => c.hookId === hookId);
    expect(me.sessions.map((s: { name: string }) => s.name).sort()).toEqual(['svc-other', 'svc-proj']);
    // A session that appears is reported within a tick or two.
    await tmux.newSession('svc-third', fakeAgentCommand('claude'));
    await listener.waitForLine(/reported 3 session\(s\)/, 20_000);
  });

  describe('refusals, each by sending the bad thing', () => {
    it('refuses a session name outside [A-Za-z0-9._-]+ (invalid_target)', async () => {
      listener = await startListener();
      const id = await send('x', 'svc-proj;touch /tmp/pwned');
      expect(await finalState(id)).toMatchObject({ state: 'refused', code: 'invalid_target' });
    });

    it('refuses a session tmux does not have (session_not_found)', async () => {
      listener = await startListener();
      const id = await send('x', 'svc-missing');
      expect(await finalState(id)).toMatchObject({ state: 'refused', code: 'session_not_found' });
    });

    it('refuses when an interactive shell is in front (shell_in_front), and types nothing', async () => {
      await tmux.newSession('svc-shell', 'bash --norc --noprofile');
      await waitFor(
        async () => (await tmux.listSessions()).find((s) => s.name === 'svc-shell')?.panes[0]?.command === 'bash',
      );
      listener = await startListener();
      const id = await send('echo should-not-run > /dev/null; echo TYPED', 'svc-shell');
      expect(await finalState(id)).toMatchObject({ state: 'refused', code: 'shell_in_front' });
      expect(await screen('svc-shell')).not.toContain('TYPED');
    });

    it('refuses an empty body (empty_body)', async () => {
      listener = await startListener();
      const id = await send('');
      expect(await finalState(id)).toMatchObject({ state: 'refused', code: 'empty_body' });
    });

    it('rate-limits a burst into one session (rate_limited) and types the rest', async () => {
      listener = await startListener();
      const ids: number[] = [];
      for (let i = 0; i < 14; i++) ids.push(await send(`burst ${i}`));
      const states = await Promise.all(ids.map((id) => finalState(id)));
      const limited = states.filter((s) => s.code === 'rate_limited');
      expect(limited.length).toBeGreaterThan(0);
      expect(states.filter((s) => s.state === 'injected').length).toBeGreaterThanOrEqual(10);
    });

    it('ignores pushes that are not agent.command', async () => {
      listener = await startListener();
      const note = await send('not a command', 'svc-proj', { type: 'note' });
      const cmd = await send('a command');
      expect((await finalState(cmd)).state).toBe('injected');
      expect(['pending', 'delivered']).toContain((await pushStatus(relay, note)).state);
      expect(await screen('svc-proj')).not.toContain('not a command');
    });
  });

  it('reports what the picker shows: agent, label, attachment, shell sessions', async () => {
    // Sessions as the wrapper makes them (tmux options @svc-*), and one svc did not make.
    await tmux.newSession('svc-app', fakeAgentCommand('claude'), {
      options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'app' },
    });
    await tmux.newSession('svc-app-2', fakeAgentCommand('claude'), {
      options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'app' },
    });
    await tmux.newSession('svc-app-sh', 'bash --norc --noprofile', {
      options: { '@svc-kind': 'shell', '@svc-project': 'app' },
    });
    listener = await startListener();
    const me = await waitFor(
      async () => {
        const res = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
        const computer = res.json.computers.find((c: { hookId: string }) => c.hookId === hookId);
        return computer?.sessions?.length === 4 ? computer : null;
      },
      { timeoutMs: 15_000, what: 'the inventory at the relay' },
    );
    const byName = Object.fromEntries(me.sessions.map((s: { name: string }) => [s.name, s]));
    expect(byName['svc-app']).toMatchObject({
      label: 'app · Claude Code',
      agent: 'Claude Code',
      attached: false,
      shell: false,
    });
    expect(byName['svc-app-2']).toMatchObject({ label: 'app · Claude Code #2' });
    expect(byName['svc-app-sh']).toMatchObject({ label: 'app · Shell', shell: true });
    // The fake agent has no trusted screen rules (it is not the real Claude Code), so its state is unknown, never a guess.
    expect(byName['svc-app'].state).toBe('unknown');
  });

  it('types into a shell session only when addressed to this computer, and audits it', async () => {
    await tmux.newSession('svc-app-sh', 'bash --norc --noprofile', {
      options: { '@svc-kind': 'shell', '@svc-project': 'app' },
    });
    listener = await startListener();
    const unaddressed = await send('echo not-addressed', 'svc-app-sh');
    expect(await finalState(unaddressed)).toMatchObject({ state: 'refused', code: 'not_for_this_computer' });
    const id = await send('echo audited-$((6*7))', 'svc-app-sh', { targetComputer: hookId });
    expect((await finalState(id)).state).toBe('injected');
    await waitFor(async () => (await screen('svc-app-sh')).includes('audited-42'));
    const newline = await send('echo a\necho b', 'svc-app-sh', { targetComputer: hookId });
    expect(await finalState(newline)).toMatchObject({ state: 'refused', code: 'shell_input_forbidden' });
    const auditPath = join(home.home, '.local', 'state', 'svc', 'shell-audit.log');
    expect(statSync(auditPath).mode & 0o777).toBe(0o600);
    const lines = readFileSync(auditPath, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /session=svc-app-sh pane=%\d+ kind=insert program=bash text="echo audited-\$\(\(6\*7\)\)"$/,
    );
  });

  it('delivers what it missed while stopped: five pushes typed once, in order; an old one expired', async () => {
    const old = await send('too old to type');
    relayClockAhead += REPLAY_WINDOW_MS + 1_000; // the relay's clock moves past the old one's replay window
    const ids: number[] = [];
    for (let i = 1; i <= 5; i++) ids.push(await send(`missed ${i}`));
    listener = await startListener();
    // (a failure shows the push as the relay has it, what the relay and the listener said of it: it failed twice in
    // CI, under load, with no line from the listener about that push; cause unseen)
    const said = (push: { id: number }) =>
      [
        JSON.stringify(push),
        ...relay.logs.filter((l) => new RegExp(`\\b${push.id}\\b`).test(l)),
        ...listener!
          .output()
          .split('\n')
          .filter((l) => l.includes(`push ${push.id}`) || / error | warn /.test(l)),
      ].join('\n');
    for (const id of ids) {
      const push = await finalState(id);
      expect(push, said(push)).toMatchObject({ state: 'injected' });
    }
    expect((await finalState(old)).state).toBe('expired');
    const text = await screen('svc-proj');
    const order = [1, 2, 3, 4, 5].map((i) => text.indexOf(`you said: missed ${i}`));
    expect(order.every((pos) => pos >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(text).not.toContain('too old');

    // A restart does not type anything again.
    await listener.stop();
    listener = await startListener();
    const next = await send('after restart');
    expect((await finalState(next)).state).toBe('injected');
    const after = await screen('svc-proj');
    for (let i = 1; i <= 5; i++) expect(after.split(`you said: missed ${i}`).length - 1).toBe(1);
  });

  it('reconnects after the relay restarts under it, and the next push is typed', async () => {
    listener = await startListener();
    const before = listener.output().split('connected to').length;
    await relay.restart();
    await waitFor(() => listener!.output().split('connected to').length > before, {
      timeoutMs: 20_000,
      what: 'the listener to reconnect',
    });
    const id = await send('after the relay restart');
    expect((await finalState(id)).state).toBe('injected');
    await waitFor(async () => (await screen('svc-proj')).includes('you said: after the relay restart'));
  });

  it('stops retrying, with a clear line, when the relay refuses its key', async () => {
    const { writeFileSync } = await import('node:fs');
    const path = join(home.home, '.svc', 'config.json');
    const config = JSON.parse(readFileSync(path, 'utf8'));
    writeFileSync(path, JSON.stringify({ ...config, apiKey: 'svc_not-a-real-key' }), { mode: 0o600 });
    const proc = spawnSvc(['listener'], env);
    const code = await proc.exited;
    expect(code).toBe(1);
    expect(proc.output()).toMatch(/relay refused the API key \(HTTP 401\).*not retrying/);
  });

  it('ignores a config file anyone can write, with a warning', async () => {
    const { chmodSync } = await import('node:fs');
    chmodSync(join(home.home, '.svc', 'config.json'), 0o666);
    const res = await runSvc(['listener'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/ignoring .*config.json: writable by anyone/);
    expect(res.stderr).toMatch(/not logged in/);
  });

  it('refuses to start a second listener beside a running one', async () => {
    listener = await startListener();
    const second = await runSvc(['listener'], env);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/already running \(pid \d+\)/);
  });
});
