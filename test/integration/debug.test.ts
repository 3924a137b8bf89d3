/**
 * `svc debug state` and `svc debug events` against a real listener: the compiled CLI with a temp HOME, real tmux on
 * a private socket, the real relay on loopback. The answers come through the listener's control socket.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runSvc, type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { api, startTestRelay, type TestRelay, waitFor } from '../helpers/relay.js';
import type { TmuxServer } from '../helpers/tmux.js';

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc | null = null;

interface ActorJson {
  key: string;
  id: string;
  parent: string | null;
  machine: string | null;
  value: unknown;
  state: string | null;
  summary: Record<string, unknown>;
}

async function state(): Promise<ActorJson[]> {
  const res = await runSvc(['debug', 'state', '--json'], env);
  if (res.code !== 0) throw new Error(`svc debug state: ${res.stderr}`);
  return JSON.parse(res.stdout).actors;
}

const sessionActors = (actors: ActorJson[]) => actors.filter((a) => a.id.startsWith('session.'));

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

beforeEach(async () => {
  ({ tmux, home, env } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'test-box' }));
  await tmux.newSession('svc-cat', 'cat');
});

afterEach(async () => {
  await listener?.stop();
  listener = null;
  await tmux.cleanup();
  home.cleanup();
});

describe('svc debug state', () => {
  it('lists one session.<name> actor per tmux session, each in the state tmux shows', async () => {
    listener = spawnSvc(['listener'], env);
    await listener.waitForLine(/connected to ws:/);
    await listener.waitForLine(/control socket /);
    const actors = await waitFor(
      async () => {
        const list = await state();
        return sessionActors(list).length === 2 ? list : null;
      },
      { timeoutMs: 20_000, what: 'both session actors' },
    );
    const sessions = sessionActors(actors);
    expect(sessions.map((a) => a.id).sort()).toEqual(['session.svc-cat', 'session.svc-proj']);
    const root = actors.find((a) => a.parent === null)!;
    // the root's regions: the supervisors of its singletons, each with its child up
    expect(root).toMatchObject({
      id: 'listener',
      machine: 'listener',
      state:
        'running.relay.up, running.inventory.up, running.pins.up, running.sessions.up, running.devices.up, running.schedules.up, running.worktrees.up, running.watches.up, running.asks.up',
    });
    // the supervisors' own children are theirs: the worktrees' scan waits for its next turn
    expect(actors.find((a) => a.id === 'worktrees')).toMatchObject({ machine: 'worktrees', parent: root.key });
    const supervisor = actors.find((a) => a.id === 'sessions')!;
    expect(supervisor).toMatchObject({ machine: 'sessions', parent: root.key });
    for (const s of sessions) expect(s).toMatchObject({ machine: 'session', parent: supervisor.key });
    const proj = sessions.find((a) => a.id === 'session.svc-proj')!;
    // the agent region is what the inventory read from the screen (unknown until the screen rules trust it)
    const agentRegion = { idle: 'idle', working: 'working', awaiting_approval: 'awaitingApproval' }[
      String(proj.summary.state)
    ];
    expect(proj.value).toMatchObject({
      attachment: 'detached',
      agent: agentRegion ?? 'unknown',
      remote: 'local',
      approval: 'none',
      delivery: 'ready',
    });
    expect(proj.summary).toMatchObject({ agent: 'Claude Code', foreground: 'claude', queued: 0, typing: null });
    const cat = sessions.find((a) => a.id === 'session.svc-cat')!;
    expect(cat.value).toMatchObject({ attachment: 'detached', agent: 'unknown', delivery: 'ready' });
    expect(cat.summary).toMatchObject({ agent: null, foreground: 'cat' });
    expect(actors.find((a) => a.id === 'relay')).toMatchObject({
      state: 'connection.online.watchdog.quiet, connection.online.results.waiting',
    });
    // nothing secret in the answer
    const text = JSON.stringify(actors);
    expect(text).not.toContain(relay.apiKey);

    // a session that ends takes its actor with it
    await tmux.run(['kill-session', '-t', 'svc-cat']);
    await waitFor(async () => sessionActors(await state()).length === 1, {
      timeoutMs: 15_000,
      what: 'the svc-cat actor to go',
    });

    // the human-readable tree
    const printed = await runSvc(['debug', 'state'], env);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/^listener\s+listener\s+running\.relay\.up, running\.inventory\.up/m);
    expect(printed.stdout).toMatch(/^[├└]── worktrees\s+worktrees\s+waiting/m);
    expect(printed.stdout).toMatch(
      /[├└]── session\.svc-proj\s+session\s+attachment\.detached, agent\.\w+, remote\.local/,
    );
  });

  it('says what to do when no listener runs', async () => {
    const res = await runSvc(['debug', 'state'], env);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^svc: no control socket at .*listener\.sock: is the listener running\?/);
  });
});

describe('svc debug events', () => {
  it('prints the transitions a push causes, as they happen', async () => {
    listener = spawnSvc(['listener'], env);
    await listener.waitForLine(/connected to ws:/);
    await listener.waitForLine(/control socket /);
    await waitFor(async () => sessionActors(await state()).length === 2, { timeoutMs: 15_000, what: 'sessions' });
    const follow = spawnSvc(['debug', 'events', '--follow', '--limit', '0'], env);
    try {
      // give the follower a moment to subscribe: a transition of the inventory tick shows it is live
      await follow.waitForLine(/inventory/, 15_000);
      const res = await api(relay.url, 'POST', '/pushes/send', {
        key: relay.apiKey,
        body: { type: 'agent.command', agentSessionName: 'svc-proj', body: 'secret words typed' },
      });
      expect(res.status).toBe(200);
      const line = await follow.waitForLine(/session\.svc-proj {2}PUSH {2}/, 15_000);
      expect(line).toMatch(/delivery\.ready → .*delivery\.injecting/);
      await follow.waitForLine(/session\.svc-proj {2}xstate\.done\.actor\..* → .*delivery\.ready/, 15_000);
      expect(follow.output()).not.toContain('secret words');
    } finally {
      await follow.stop('SIGINT');
    }
    const recent = await runSvc(['debug', 'events', '--json', '--limit', '500'], env);
    const events = recent.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.some((e) => e.actor === 'session.svc-proj' && e.event === 'PUSH')).toBe(true);
  });
});
