/**
 * A relay that sends garbage: the listener logs it, survives, and still types the next good push.
 * (The real relay never sends such frames; this stands in for a broken or hostile one.)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { ensurePrivateDir } from '../../actors/files.js';
import { type SpawnedSvc, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { waitFor } from '../helpers/relay.js';
import { fakeAgentCommand, startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const fn of cleanup.reverse()) await fn();
  cleanup = [];
});

type Frame = Record<string, unknown> & { type?: unknown };

/** A WebSocket server standing in for the relay: `onFrame` sees each JSON frame the listener sends. */
async function fakeRelay(onFrame: (ws: WebSocket, frame: Frame) => void): Promise<{ port: number }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  cleanup.push(() => new Promise((r) => wss.close(() => r())));
  await new Promise((r) => wss.once('listening', r));
  wss.on('connection', (ws) => ws.on('message', (data) => onFrame(ws, JSON.parse(data.toString()) as Frame)));
  return { port: (wss.address() as { port: number }).port };
}

function subscribed(ws: WebSocket): void {
  ws.send(
    JSON.stringify({
      type: 'subscribed',
      role: 'listener',
      computer: 'c_x',
      replayed: 0,
      expired: 0,
      replayWindowMs: 60_000,
    }),
  );
}

/** `svc listener` logged in to the fake relay on `port`, on the test's tmux server. */
function startListener(port: number, tmux: TmuxServer, baseUrl = `http://127.0.0.1:${port}`): SpawnedSvc {
  const home = tempHome();
  cleanup.push(async () => home.cleanup());
  ensurePrivateDir(join(home.home, '.svc'));
  writeFileSync(
    join(home.home, '.svc', 'config.json'),
    JSON.stringify({
      apiKey: 'svc_k',
      hookId: 'c_x',
      baseUrl,
      wsUrl: `ws://127.0.0.1:${port}/ws`,
    }),
    { mode: 0o600 },
  );
  const listener = spawnSvc(['listener'], svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath }));
  cleanup.push(async () => {
    await listener.stop();
  });
  return listener;
}

describe('listener against a hostile relay', () => {
  it('survives malformed frames and keeps working', async () => {
    const tmux: TmuxServer = await startTmuxServer();
    cleanup.push(() => tmux.cleanup());
    await tmux.newSession('svc-proj', fakeAgentCommand('claude'));

    const results: unknown[] = [];
    const { port } = await fakeRelay((ws, frame) => {
      if (frame.type === 'push.result') results.push(frame);
      if (frame.type !== 'subscribe') return;
      subscribed(ws);
      ws.send('this is not json');
      ws.send(Buffer.from([0, 1, 2, 3]), { binary: true });
      ws.send(JSON.stringify({ type: 'push.new' })); // no push
      ws.send(JSON.stringify({ type: 'push.new', push: { id: -4, body: 7 } }));
      ws.send(JSON.stringify({ type: 'something.else', x: 1 }));
      ws.send(JSON.stringify([1, 2, 3]));
      ws.send(`{"type":"push.new","push":${'['.repeat(5000)}${']'.repeat(5000)}}`);
      const push = {
        id: 1,
        type: 'agent.command',
        agentSessionName: 'svc-proj',
        body: 'still alive',
        targetComputer: null,
        createdAt: Date.now(),
        ageMs: 0,
        replay: false,
      };
      ws.send(JSON.stringify({ type: 'push.new', push }));
    });

    const listener = startListener(port, tmux);

    await waitFor(() => results.length > 0, { timeoutMs: 15_000, what: 'the push result' });
    expect(results).toEqual([{ type: 'push.result', id: 1, state: 'injected' }]);
    await waitFor(async () => (await tmux.capture('svc-proj')).includes('you said: still alive'));
    expect(listener.child.exitCode).toBeNull();
    expect(listener.output()).toMatch(/relay sent a bad_json/);
    expect(listener.output()).toMatch(/relay sent a bad_frame/);
  });

  it('a relay that drops the connection in the middle of a frame: the listener reconnects and types the next push', async () => {
    const tmux: TmuxServer = await startTmuxServer();
    cleanup.push(() => tmux.cleanup());
    await tmux.newSession('svc-proj', fakeAgentCommand('claude'));
    const push = (id: number, body: string) => ({
      type: 'push.new',
      push: {
        id,
        type: 'agent.command',
        agentSessionName: 'svc-proj',
        body,
        targetComputer: null,
        createdAt: Date.now(),
        ageMs: 0,
        replay: false,
      },
    });
    let connections = 0;
    const results: unknown[] = [];
    const { port } = await fakeRelay((ws, frame) => {
      if (frame.type === 'push.result') results.push(frame);
      if (frame.type !== 'subscribe') return;
      connections++;
      subscribed(ws);
      if (connections === 1) {
        // a text frame's header saying 200 bytes, then 20 of them, and the connection gone
        const socket = (ws as unknown as { _socket: import('node:net').Socket })._socket;
        const payload = Buffer.from(JSON.stringify(push(1, 'cut short')).padEnd(200, ' '));
        socket.write(Buffer.concat([Buffer.from([0x81, 126, 0, 200]), payload.subarray(0, 20)]));
        socket.destroy();
        return;
      }
      ws.send(JSON.stringify(push(2, 'after the cut')));
    });
    const listener = startListener(port, tmux);
    await waitFor(() => results.length > 0, { timeoutMs: 20_000, what: 'the push after the reconnect' });
    expect(results).toEqual([{ type: 'push.result', id: 2, state: 'injected' }]);
    await waitFor(async () => (await tmux.capture('svc-proj')).includes('you said: after the cut'));
    expect(await tmux.capture('svc-proj')).not.toContain('cut short');
    expect(connections).toBe(2);
    expect(listener.child.exitCode).toBeNull();
  });

  it('a rejected listener.sessions is logged with its reason and sent again at the next poll (spec 6, 7)', async () => {
    const tmux: TmuxServer = await startTmuxServer();
    cleanup.push(() => tmux.cleanup());
    await tmux.newSession('svc-proj', fakeAgentCommand('claude'));
    const reports: { seq: number; names: unknown[] }[] = [];
    const { port } = await fakeRelay((ws, frame) => {
      if (frame.type === 'subscribe') subscribed(ws);
      if (frame.type !== 'listener.sessions') return;
      const names = (frame.sessions as { name?: unknown }[]).map((r) => r.name);
      reports.push({ seq: frame.seq as number, names });
      // the first report that lists svc-two is refused, as a relay missing the computer's record would
      const ok = !names.includes('svc-two') || reports.filter((r) => r.names.includes('svc-two')).length > 1;
      const reason = ok ? {} : { reason: 'no such computer' };
      ws.send(JSON.stringify({ type: 'sessions.result', seq: frame.seq, ok, ...reason }));
    });
    const listener = startListener(port, tmux);
    await listener.waitForLine(/server persisted listener\.sessions/);

    await tmux.newSession('svc-two', fakeAgentCommand('claude'));
    await listener.waitForLine(/server rejected listener\.sessions: no such computer/);
    // nothing changes in tmux now: without the retry the next report would be the heartbeat, 2 minutes later
    const withTwo = () => reports.filter((r) => r.names.includes('svc-two'));
    await waitFor(() => withTwo().length >= 2, { timeoutMs: 20_000, what: 'the report sent again' });
    const [refused, again] = withTwo() as [(typeof reports)[0], (typeof reports)[0]];
    expect(again.names).toEqual(refused.names);
    await listener.waitForLine(new RegExp(`server persisted listener\\.sessions \\(seq ${again.seq}\\)`));
    expect(listener.child.exitCode).toBeNull();
  });

  it('a baseUrl on another stage than the wsUrl is said at start (spec 2.5), and the socket still connects', async () => {
    const tmux: TmuxServer = await startTmuxServer();
    cleanup.push(() => tmux.cleanup());
    const { port } = await fakeRelay((ws, frame) => {
      if (frame.type === 'subscribe') subscribed(ws);
    });
    const listener = startListener(port, tmux, 'https://relay.example.invalid');
    const said = await listener.waitForLine(/are not the same relay/);
    expect(said).toMatch(
      /warn\s+baseUrl https:\/\/relay\.example\.invalid \(stage relay\.example\.invalid\) and wsUrl/,
    );
    await listener.waitForLine(/connected to ws:/);
  });
});
