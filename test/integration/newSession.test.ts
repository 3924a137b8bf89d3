/**
 * A new session from the phone (issue 30 item 3) through the real listener and relay, the phone's side sealed on
 * the relay's WebSocket: the folders svc ran agents in and the agents on PATH are offered; a start runs the agent as
 * `svc cc --detach` would there (same naming, same metadata) and types the first prompt once, when it reads idle;
 * a folder svc never ran an agent in, a path trick, an agent not installed, and any request while
 * `svc new-session off` holds (or its file is broken) are refused, and nothing is started.
 * `claude` on PATH is the fake agent drawing Claude Code's idle screen (the real one: test/e2e/newSession).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { onPath } from '../../actors/which.js';
import { agentById } from '../../core/agents/registry.js';
import { type LaunchRequest, LaunchResultBody } from '../../core/protocol/bodies.js';
import { NEW_SESSION_TARGET } from '../../core/sessions/newSession.js';
import { runSvc, type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { computerDevice, registerTestDevice, type TestDevice } from '../helpers/devices.js';
import { startTestRelay, type TestRelay, TestSocket } from '../helpers/relay.js';
import { fakeAgentScript, waitFor } from '../helpers/tmux.js';

const PROMPT = 'look at the failing test';

let relay: TestRelay;
let computer: TestComputer;
let me: { id: string; publicKey: string };
let app: TestDevice;
let sock: TestSocket;
let listener: SpawnedSvc;
let env: NodeJS.ProcessEnv;
let project: string;
let agentLog: string;
let seq = 0;

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

beforeEach(async () => {
  computer = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: `box-${Date.now()}` });
  const home = computer.home.home;
  project = join(home, 'web');
  mkdirSync(project);
  execFileSync('git', ['init', '-q', project]);
  agentLog = join(home, 'agent.log');
  const claude = fakeAgentScript(home, 'claude', {
    FAKE_AGENT_PROMPT: '❯',
    FAKE_AGENT_STATUS: '? for shortcuts',
    FAKE_AGENT_LOG: agentLog,
  });
  env = { ...computer.env, PATH: `${dirname(claude)}:${process.env.PATH}` };
  me = await computerDevice(relay, computer.hookId);
  app = await registerTestDevice(relay, 'app', 'phone');
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  sock = await TestSocket.open(relay.wsUrl, relay.apiKey);
  sock.send({ type: 'subscribe', role: 'app', deviceId: app.deviceId });
  await sock.next('subscribed');
});

afterEach(async () => {
  await sock?.close();
  await listener?.stop();
  await computer.tmux.cleanup();
  await computer.home.removeWhenFree();
});

/** Sends a sealed launch request and opens the sealed answer. */
async function ask(launch: LaunchRequest): Promise<LaunchResultBody> {
  const n = ++seq;
  const session = NEW_SESSION_TARGET;
  const envelope = await app.seal('pane.keys', me, { session, seq: n, launch });
  sock.send({ type: 'pane.keys', computer: computer.hookId, session, envelope });
  const result = await sock.next('keys.result', (f) => f.session === session && f.seq === n, 30_000);
  expect(result.envelope, `an answer for ${JSON.stringify(launch)}`).toBeDefined();
  const body = LaunchResultBody.parse(await app.open('launch', result.envelope, me.publicKey));
  expect(body).toMatchObject({ seq: n, op: launch.op });
  expect(result.state).toBe(body.refused ? 'refused' : 'typed');
  return body;
}

const sessions = async () =>
  (await computer.tmux.run(['list-sessions', '-F', '#{session_name}']).catch(() => '')).trim().split('\n').sort();
const option = async (session: string, name: string) =>
  (await computer.tmux.run(['show-options', '-v', '-t', `=${session}:`, name]).catch(() => '')).trim();
/** What the fake agents were sent, in order. */
const submitted = () => {
  let text = '';
  try {
    text = readFileSync(agentLog, 'utf8');
  } catch {
    return [];
  }
  return text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((e) => e.event === 'submit')
    .map((e) => e.text as string);
};

/** `svc cc --detach` in the project, as a person ran it once: from then on svc knows the folder. */
async function ranThereOnce(): Promise<string> {
  const res = await runSvc(['cc', '--detach'], env, { cwd: project });
  expect(res.code, res.stderr).toBe(0);
  await waitFor(async () => (await ask({ op: 'options' })).projects?.length === 1, {
    timeoutMs: 20_000,
    what: 'the folder offered',
  });
  return res.stdout.trim();
}

describe('a new session from the phone', () => {
  it('offers the folders svc ran agents in and the agents installed; starts one there and types its first prompt once', async () => {
    expect((await ask({ op: 'options' })).projects).toEqual([]);
    const first = await ranThereOnce();
    expect(first).toBe('svc-web');

    const options = await ask({ op: 'options' });
    expect(options.projects).toEqual([
      { cwd: realpathSync(project), name: 'web', at: expect.any(Number), agents: ['A1'] },
    ]);
    expect(options.agents).toContainEqual({ id: 'A1', name: 'Claude Code', prompt: true });

    const started = await ask({ op: 'start', cwd: realpathSync(project), agent: 'A1', prompt: PROMPT });
    // named and labelled as `svc cc --detach` there names a second one
    expect(started.started).toBe('svc-web-2');
    expect(await sessions()).toContain('svc-web-2');
    expect(await option('svc-web-2', '@svc-agent')).toBe('A1');
    expect(await option('svc-web-2', '@svc-project')).toBe('web');
    expect(await option('svc-web-2', '@svc-kind')).toBe('agent');
    const cwd = await computer.tmux.run(['display-message', '-p', '-t', '=svc-web-2:', '#{pane_current_path}']);
    expect(cwd.trim()).toBe(realpathSync(project));

    await waitFor(() => submitted().includes(PROMPT), { timeoutMs: 30_000, what: 'the first prompt typed' });
    await listener.waitForLine(/svc-web-2: first prompt typed/);
    expect(submitted().filter((t) => t === PROMPT)).toHaveLength(1);
    expect(listener.output()).toMatch(/new session A1 in .*web, asked by .*: started svc-web-2/);
  });

  it('refuses a folder svc never ran an agent in, a path trick, an agent not installed: nothing starts', async () => {
    await ranThereOnce();
    const before = await sessions();
    const missing = ['A2', 'A3', 'A4', 'A5', 'A6'].find((id) => !onPath(agentById(id)!.command, env.PATH));
    expect(missing, 'an agent svc knows that is not installed here').toBeDefined();
    const refused: [LaunchRequest, RegExp][] = [
      [{ op: 'start', cwd: computer.home.home, agent: 'A1' }, /svc has not run an agent in that folder/],
      [{ op: 'start', cwd: `${realpathSync(project)}/../web`, agent: 'A1' }, /svc has not run an agent in that folder/],
      [{ op: 'start', cwd: realpathSync(project), agent: missing! }, /is not on the computer's PATH/],
    ];
    for (const [request, message] of refused) {
      const r = await ask(request);
      expect(r, JSON.stringify(request)).toMatchObject({
        refused: 'not_supported',
        message: expect.stringMatching(message),
      });
      expect(r.started).toBeUndefined();
    }
    expect(await sessions()).toEqual(before);
    expect(listener.output()).toMatch(/new session A1 in .*, asked by .*: refused not_supported/);
  });

  it('starts it in a new worktree of a branch (as --wt does); a branch git will not take reaches the phone in words', async () => {
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: project });
    writeFileSync(join(project, 'README.md'), '# web\n');
    git('add', '.');
    git('commit', '-qm', 'first');
    await ranThereOnce();
    const cwd = realpathSync(project);
    const started = await ask({ op: 'start', cwd, agent: 'A1', branch: 'fix-login' });
    expect(started.started).toBe('svc-web-wt-fix-login');
    const worktree = await option('svc-web-wt-fix-login', '@svc-worktree');
    expect(worktree).not.toBe('');
    expect(git('worktree', 'list').toString()).toContain(worktree);
    expect(git('-C', worktree, 'branch', '--show-current').toString().trim()).toBe('fix-login');

    const before = await sessions();
    const bad = await ask({ op: 'start', cwd, agent: 'A1', branch: 'no..dots' });
    expect(bad).toMatchObject({ refused: 'inject_failed', message: expect.stringMatching(/no\.\.dots/) });
    expect(await sessions()).toEqual(before);
  });

  it('svc new-session off refuses every request at once; on allows them again; a broken file keeps it off', async () => {
    await ranThereOnce();
    const off = await runSvc(['new-session', 'off'], env);
    expect(off.stdout).toMatch(/off on this computer/);
    const r = await ask({ op: 'start', cwd: realpathSync(project), agent: 'A1' });
    expect(r).toMatchObject({ refused: 'not_supported', message: expect.stringMatching(/off on this computer/) });
    expect(await ask({ op: 'options' })).toMatchObject({ refused: 'not_supported' });
    expect((await runSvc(['new-session'], env)).stdout).toMatch(/off on this computer/);

    expect((await runSvc(['new-session', 'on'], env)).stdout).toMatch(/: on/);
    expect((await ask({ op: 'options' })).projects).toHaveLength(1);

    writeFileSync(join(computer.home.home, '.svc', 'new-session.json'), '{ off: nope');
    expect(await ask({ op: 'options' })).toMatchObject({ refused: 'not_supported' });
    await listener.waitForLine(/new-session\.json is not a new-session settings file/);
    const status = await runSvc(['new-session'], env);
    expect(status.stderr).toMatch(/not a new-session settings file/);
    expect(status.stdout).toMatch(/off on this computer/);
  });
});
