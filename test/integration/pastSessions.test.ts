/**
 * After a reboot the phone offers the sessions that were running (spec 3, reboot row): the real listener remembers
 * svc's agent sessions in ~/.svc/past-sessions.json; the tmux server goes (a restart), a new listener starts, and
 * the relay's inventory shows the session as ended and resumable. Real relay, real tmux, real `svc listener`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionRecord } from '../../core/protocol/index.js';
import { type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { api, startTestRelay, type TestRelay } from '../helpers/relay.js';
import { fakeAgentCommand, startTmuxServer, type TmuxServer, waitFor } from '../helpers/tmux.js';

let relay: TestRelay;
let tmux: TmuxServer;
let home: { cleanup(): void };
let env: NodeJS.ProcessEnv;
let hookId: string;
let listener: SpawnedSvc | undefined;

const inventory = async (): Promise<SessionRecord[]> => {
  const c = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
  return c.json.computers.find((x: { hookId: string }) => x.hookId === hookId)?.sessions ?? [];
};

beforeAll(async () => {
  relay = await startTestRelay();
  ({ tmux, home, env, hookId } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' }));
});

afterAll(async () => {
  await listener?.stop();
  await tmux?.cleanup();
  home?.cleanup();
  await relay?.close();
});

describe('past sessions across a restart', () => {
  it('offers the agent sessions that ran before the restart, resumable, and never a plain one', async () => {
    await tmux.newSession('svc-proj-2', fakeAgentCommand('claude'), {
      options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
    });
    listener = spawnSvc(['listener'], env);
    await listener.waitForLine(/connected to ws:/);
    await waitFor(async () => (await inventory()).some((s) => s.name === 'svc-proj-2'), {
      timeoutMs: 15_000,
      what: 'the session reported',
    });
    await listener.stop();
    // the computer restarts: tmux and its sessions are gone
    await tmux.cleanup();
    tmux = await startTmuxServer({ socketPath: env.SVC_TMUX_SOCKET });
    listener = spawnSvc(['listener'], env);
    await listener.waitForLine(/connected to ws:/);
    const past = await waitFor(
      async () => (await inventory()).find((s) => s.name === 'svc-proj-2' && s.ended !== undefined),
      { timeoutMs: 15_000, what: 'the past session reported' },
    );
    expect(past).toMatchObject({ panes: [], resumable: true, meta: { agent: 'A1', project: 'proj' } });
    // svc-proj of the helper had no svc metadata: not svc's session, not offered
    expect((await inventory()).map((s) => s.name)).toEqual(['svc-proj-2']);
  });
});
