/**
 * A relay that sends garbage: the listener logs it, survives, and still types the next good push.
 * (The real relay never sends such frames; this stands in for a broken or hostile one.)
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { ensurePrivateDir } from '../../actors/files.js';
import { spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { waitFor } from '../helpers/relay.js';
import { fakeAgentCommand, startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const fn of cleanup.reverse()) await fn();
  cleanup = [];
});

describe('listener against a hostile relay', () => {
  it('survives malformed frames and keeps working', async () => {
    const tmux: TmuxServer = await startTmuxServer();
    cleanup.push(() => tmux.cleanup());
    await tmux.newSession('svc-proj', fakeAgentCommand('claude'));

    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    cleanup.push(() => new Promise((r) => wss.close(() => r())));
    await new Promise((r) => wss.once('listening', r));
    const port = (wss.address() as { port: number }).port;
    const results: unknown[] = [];
    wss.on('connection', (ws) => {
      ws.on('message', (data) => {
        const frame = JSON.parse(data.toString());
        if (frame.type === 'push.result') results.push(frame);
        if (frame.type !== 'subscribe') return;
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
    });

    const home = tempHome();
    cleanup.push(async () => home.cleanup());
    ensurePrivateDir(join(home.home, '.svc'));
    writeFileSync(
      join(home.home, '.svc', 'config.json'),
      JSON.stringify({
        apiKey: 'svc_k',
        hookId: 'c_x',
        baseUrl: `http://127.0.0.1:${port}`,
        wsUrl: `ws://127.0.0.1:${port}/ws`,
      }),
      { mode: 0o600 },
    );
    const listener = spawnSvc(['listener'], svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath }));
    cleanup.push(async () => {
      await listener.stop();
    });

    await waitFor(() => results.length > 0, { timeoutMs: 15_000, what: 'the push result' });
    expect(results).toEqual([{ type: 'push.result', id: 1, state: 'injected' }]);
    await waitFor(async () => (await tmux.capture('svc-proj')).includes('you said: still alive'));
    expect(listener.child.exitCode).toBeNull();
    expect(listener.output()).toMatch(/relay sent a bad_json/);
    expect(listener.output()).toMatch(/relay sent a bad_frame/);
  });
});
