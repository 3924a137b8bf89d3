/**
 * Sticky REMOTE through the real listener (spec 4.13, docs/agents.md "Sticky REMOTE"): the real relay on loopback,
 * real tmux, the compiled `svc listener`, and a fake agent whose prompt-submit and Stop hooks run the real
 * `svc remote-hook claude` as Claude Code runs a command hook (inside the pane, so `$TMUX_PANE` is set).
 * A message from the phone puts the session in REMOTE (the listener's state and the phone's inventory say so),
 * a prompt typed at the keyboard takes it out, a muted project is never flagged, and the Stop hook tells the phone
 * the turn finished, sealed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { controlRequest } from '../../actors/daemon/controlSocket.js';
import { writeMarker } from '../../actors/sessions/marker.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { runSvc, type SpawnedSvc, SVC_BIN, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { computerDevice, databaseHolds, registerTestDevice, type TestDevice } from '../helpers/devices.js';
import { api, sendPush, startTestRelay, type TestRelay, TestSocket } from '../helpers/relay.js';
import { fakeAgentCommand, type TmuxServer, waitFor } from '../helpers/tmux.js';

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc | null = null;
let sockets: TestSocket[] = [];
let key: string;
let computer: { id: string; publicKey: string };
let app: TestDevice;
let agentLog: string;

const SESSION = 'svc-hooked';
const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

async function remoteRegion(session: string): Promise<string | undefined> {
  const res = await runSvc(['debug', 'state', '--json'], env);
  if (res.code !== 0) throw new Error(`svc debug state: ${res.stderr}`);
  const actors = JSON.parse(res.stdout).actors as { id: string; value: Record<string, string> | null }[];
  return actors.find((a) => a.id === `session.${session}`)?.value?.remote;
}

/** The hook events the fake agent ran, with what `svc remote-hook` printed for each. */
function hookRuns(): { hookEvent: string; output?: string }[] {
  try {
    return readFileSync(agentLog, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((e) => e.event === 'hook');
  } catch {
    return [];
  }
}

async function appSocket(): Promise<TestSocket> {
  const sock = await TestSocket.open(relay.wsUrl, key);
  sockets.push(sock);
  sock.send({ type: 'subscribe', role: 'app', deviceId: app.deviceId });
  await sock.next('subscribed');
  return sock;
}

/** The session as the app reads it from the relay (GET /computers). */
async function phoneSees(): Promise<{ name: string; remote?: boolean } | undefined> {
  const res = await api(relay.url, 'GET', '/computers', { key });
  const computers = res.json.computers as { sessions: { name: string; remote?: boolean }[] }[];
  return computers.flatMap((c) => c.sessions).find((s) => s.name === SESSION);
}

/** Type at the keyboard, as a person at the computer does (no marker). */
async function typeAtKeyboard(text: string) {
  await tmux.run(['send-keys', '-t', SESSION, '-l', text]);
  await tmux.run(['send-keys', '-t', SESSION, 'Enter']);
}

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

beforeEach(async () => {
  key = (await relay.createAccount()).apiKey;
  ({ tmux, home, env } = await loggedInComputer({ url: relay.url, apiKey: key, name: 'box' }));
  const hookId = JSON.parse(readFileSync(join(home.home, '.svc', 'config.json'), 'utf8')).hookId as string;
  computer = await computerDevice({ url: relay.url, apiKey: key }, hookId);
  app = await registerTestDevice({ url: relay.url, apiKey: key }, 'app', 'phone');
  agentLog = join(home.home, 'agent.log');
  const hook = `HOME=${sh(home.home)} ${sh(process.execPath)} ${sh(SVC_BIN)} remote-hook claude`;
  await tmux.newSession(SESSION, fakeAgentCommand('claude', { FAKE_AGENT_HOOK: hook, FAKE_AGENT_LOG: agentLog }));
  await waitFor(async () => (await tmux.capture(SESSION)).includes('›'), { what: 'the fake agent' });
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  await listener.waitForLine(/control socket/);
});

afterEach(async () => {
  for (const s of sockets) await s.close();
  sockets = [];
  await listener?.stop();
  listener = null;
  await tmux.cleanup();
  // the fake agent's hooks (`svc remote-hook claude`) outlive its pane for a moment and still write under ~/.svc
  await home.removeWhenFree();
});

describe('sticky REMOTE through the listener', () => {
  it('a message from the phone puts the session in REMOTE; a prompt at the keyboard takes it out', async () => {
    await waitFor(async () => (await remoteRegion(SESSION)) === 'local', {
      timeoutMs: 15_000,
      what: 'the session actor',
    });
    const text = `from the phone ${randomBytes(4).toString('hex')}`;
    await sendPush({ url: relay.url, apiKey: key }, SESSION, text);

    // the agent's hook saw the phone's text: the model is told, the listener's session actor is in REMOTE
    await waitFor(async () => (await tmux.capture(SESSION)).includes('context: The person is driving this session'), {
      timeoutMs: 20_000,
      what: 'the REMOTE context in the agent',
    });
    await waitFor(async () => (await remoteRegion(SESSION)) === 'remote', { timeoutMs: 10_000, what: 'REMOTE' });
    // and the phone's inventory says so
    await waitFor(async () => (await phoneSees())?.remote === true, { timeoutMs: 15_000, what: 'REMOTE on the phone' });

    // the same words typed at the keyboard: not flagged, and REMOTE ends
    await typeAtKeyboard(text);
    await waitFor(() => hookRuns().filter((h) => h.hookEvent === 'UserPromptSubmit').length === 2, {
      timeoutMs: 15_000,
      what: 'the second prompt hook',
    });
    const prompts = hookRuns().filter((h) => h.hookEvent === 'UserPromptSubmit');
    expect(prompts[0]!.output).toMatch(/additionalContext/);
    expect(prompts[1]!.output).toBe('');
    await waitFor(async () => (await remoteRegion(SESSION)) === 'local', { timeoutMs: 10_000, what: 'local again' });
    await waitFor(async () => (await phoneSees())?.remote === undefined, {
      timeoutMs: 15_000,
      what: 'local on the phone',
    });
  }, 90_000);

  it('REMOTE outlives a restart of the listener (~/.svc/remote.json, 0600); the keyboard still ends it', async () => {
    await waitFor(async () => (await remoteRegion(SESSION)) === 'local', { timeoutMs: 15_000, what: 'the actor' });
    await sendPush({ url: relay.url, apiKey: key }, SESSION, `from the phone ${randomBytes(4).toString('hex')}`);
    await waitFor(async () => (await remoteRegion(SESSION)) === 'remote', { timeoutMs: 20_000, what: 'REMOTE' });
    const file = join(home.home, '.svc', 'remote.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')).sessions)).toEqual([SESSION]);

    await listener!.stop();
    listener = spawnSvc(['listener'], env);
    await listener.waitForLine(/control socket/);
    await waitFor(async () => (await remoteRegion(SESSION)) === 'remote', {
      timeoutMs: 15_000,
      what: 'REMOTE after the restart',
    });
    await waitFor(async () => (await phoneSees())?.remote === true, { timeoutMs: 15_000, what: 'REMOTE on the phone' });

    await typeAtKeyboard('at the keyboard again');
    await waitFor(async () => (await remoteRegion(SESSION)) === 'local', { timeoutMs: 15_000, what: 'local again' });
    expect(JSON.parse(readFileSync(file, 'utf8')).sessions).toEqual({});
  }, 90_000);

  it('the Stop hook tells the phone the turn finished, sealed', async () => {
    const sock = await appSocket();
    await waitFor(async () => (await remoteRegion(SESSION)) === 'local', {
      timeoutMs: 15_000,
      what: 'the session actor',
    });
    const text = `do the thing ${randomBytes(4).toString('hex')}`;
    await typeAtKeyboard(text);
    const frame = await sock.next('notify.new', (f) => f.kind === 'turn' && f.session === SESSION, 20_000);
    expect(await app.open('notify', frame.envelope, computer.publicKey)).toMatchObject({
      kind: 'turn',
      session: SESSION,
      message: 'finished its turn',
    });
    expect(JSON.stringify(frame)).not.toContain(text);
    expect(databaseHolds(relay.dataDir, text)).toBe(false);
  }, 90_000);

  it('another local process cannot put a session in REMOTE: not by the control socket, not by a marker file', async () => {
    await waitFor(async () => (await remoteRegion(SESSION)) === 'local', {
      timeoutMs: 15_000,
      what: 'the session actor',
    });
    // a hook request of its own, naming the session, with and without a made-up hash
    const svcDir = join(home.home, '.svc');
    for (const sha256 of [undefined, createHash('sha256').update('anything').digest('hex')]) {
      const reply = await controlRequest(
        svcDir,
        { type: 'hook', event: 'remote', agent: 'claude', session: SESSION, ...(sha256 ? { sha256 } : {}) },
        'hook',
      );
      expect(reply).toMatchObject({ outcome: 'ignored', session: SESSION });
    }
    // a marker written by hand for text then typed at the keyboard: the agent's hook matches it, the listener does not
    const paneDir = (await tmux.run(['display-message', '-p', '-t', SESSION, '#{pane_current_path}'])).trim();
    const text = `forged ${randomBytes(4).toString('hex')}`;
    writeMarker(svcPaths(home.home).markers, SESSION, paneDir, text);
    await typeAtKeyboard(text);
    await waitFor(() => hookRuns().some((h) => h.hookEvent === 'UserPromptSubmit'), {
      timeoutMs: 20_000,
      what: 'the prompt hook',
    });
    await waitFor(
      () => /hook asked REMOTE for svc-hooked for a text the listener did not type/.test(listener!.output()),
      {
        what: 'the listener ignoring it',
      },
    );
    expect(await remoteRegion(SESSION)).toBe('local');
    expect((await phoneSees())?.remote).toBeUndefined();
  }, 90_000);

  it('a muted project is never flagged, and REMOTE never starts there', async () => {
    const paneDir = (await tmux.run(['display-message', '-p', '-t', SESSION, '#{pane_current_path}'])).trim();
    const muted = await runSvc(['mute'], env, { cwd: paneDir });
    expect(muted.stdout).toMatch(/^muted: /);
    await waitFor(async () => (await remoteRegion(SESSION)) === 'local', {
      timeoutMs: 15_000,
      what: 'the session actor',
    });
    await sendPush({ url: relay.url, apiKey: key }, SESSION, `from the phone ${randomBytes(4).toString('hex')}`);
    await waitFor(() => hookRuns().some((h) => h.hookEvent === 'UserPromptSubmit'), {
      timeoutMs: 20_000,
      what: 'the prompt hook',
    });
    expect(hookRuns().find((h) => h.hookEvent === 'UserPromptSubmit')!.output).toBe('');
    expect(await remoteRegion(SESSION)).toBe('local');
    expect((await runSvc(['mute', '--list'], env)).stdout).toContain(`muted: ${paneDir}`);
  }, 90_000);
});
