/**
 * The relay's WebSocket side with real clients: a fake listener and a fake app driven over real sockets.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CLOSE, MAX_WS_FRAME_BYTES, type SessionRecord } from '../../core/protocol/index.js';
import { api, someEnvelope, startTestRelay, type TestRelay, TestSocket, waitFor } from '../helpers/relay.js';

let relay: TestRelay;
const sockets: TestSocket[] = [];

afterEach(async () => {
  await Promise.all(sockets.splice(0).map((s) => s.close()));
  await relay.close();
});

async function open(key: string | null = relay.apiKey, options = {}): Promise<TestSocket> {
  const socket = await TestSocket.open(relay.wsUrl, key, options);
  sockets.push(socket);
  return socket;
}

async function registerComputer(name: string, key = relay.apiKey): Promise<string> {
  const answer = await api(relay.url, 'POST', '/computers', { key, body: { name, platform: 'linux' } });
  expect(answer.status).toBe(200);
  return answer.json.hookId;
}

async function send(agentSessionName: string, extra: Record<string, unknown> = {}, key = relay.apiKey) {
  const answer = await api(relay.url, 'POST', '/pushes/send', {
    key,
    body: { type: 'agent.command', agentSessionName, body: `hello ${agentSessionName}`, ...extra },
  });
  expect(answer.status).toBe(200);
  return answer.json as { id: number; state: string; duplicate: boolean };
}

async function status(id: number) {
  const answer = await api(relay.url, 'GET', `/pushes/${id}`, { key: relay.apiKey });
  return answer.json as { state: string; code: string | null };
}

const untilState = (id: number, state: string) =>
  waitFor(async () => (await status(id)).state === state, { what: `push ${id} ${state}` });

function session(name: string): SessionRecord {
  return { name, attached: true, createdAt: 1_700_000_000, activityAt: 1_700_000_100, panes: [] };
}

async function upgradeStatus(key: string | null, path = '/ws'): Promise<string> {
  const url = relay.wsUrl.replace(/\/ws$/, path);
  return TestSocket.open(url, key).then(
    () => 'opened',
    (error: Error) => error.message,
  );
}

describe('upgrade', () => {
  it('refuses an upgrade without a valid key in the Authorization header', async () => {
    relay = await startTestRelay();
    expect(await upgradeStatus(null)).toBe('upgrade refused: 401');
    expect(await upgradeStatus(`svc_${'B'.repeat(43)}`)).toBe('upgrade refused: 401');
    expect(await upgradeStatus(null, `/ws?key=${relay.apiKey}`)).toBe('upgrade refused: 401');
    expect(await upgradeStatus(relay.apiKey, '/elsewhere')).toBe('upgrade refused: 404');
    expect(await upgradeStatus(relay.apiKey)).toBe('opened');
    expect(relay.logs.join('\n')).not.toContain(relay.apiKey);
  });

  it('closes a listener subscribe with 4403 without push:read and 4404 for a foreign computer', async () => {
    relay = await startTestRelay();
    const hookId = await registerComputer('laptop');
    const writer = await open(await relay.createKey(['push:write']));
    writer.send({ type: 'subscribe', role: 'listener', hookId, lastPushId: 0, version: '1' });
    expect((await writer.closed).code).toBe(CLOSE.forbidden);

    const other = await relay.createAccount();
    const stranger = await open(other.apiKey);
    stranger.send({ type: 'subscribe', role: 'listener', hookId, lastPushId: 0, version: '1' });
    expect((await stranger.closed).code).toBe(CLOSE.unknownComputer);
    const nobody = await open();
    nobody.send({ type: 'subscribe', role: 'listener', hookId: 'c_ffffffffffffffff', lastPushId: 0, version: '1' });
    expect((await nobody.closed).code).toBe(CLOSE.unknownComputer);
  });
});

describe('delivery', () => {
  it('takes a push through pending → delivered → injected, and tells a subscribed app', async () => {
    relay = await startTestRelay();
    // A listener key with push:read only, which the computer registered with (it is the computer's own key).
    const listenerKey = await relay.createKey(['push:read']);
    const hookId = await registerComputer('laptop', listenerKey);
    const app = await open();
    expect(await app.subscribeApp()).toMatchObject({ type: 'subscribed', role: 'app', computer: null });

    const early = await send('svc-proj');
    expect((await status(early.id)).state).toBe('pending');

    const listener = await open(listenerKey);
    const subscribed = await listener.subscribeListener(hookId, 0);
    expect(subscribed).toEqual({
      type: 'subscribed',
      role: 'listener',
      computer: hookId,
      replayed: 1,
      expired: 0,
      replayWindowMs: 120_000,
    });
    const replayed = await listener.next('push.new');
    expect(replayed.push).toMatchObject({ id: early.id, replay: true, body: 'hello svc-proj' });
    await untilState(early.id, 'delivered');

    const live = await send('svc-proj');
    const frame = await listener.next('push.new', (f) => f.push.id === live.id);
    expect(frame.push).toEqual({
      id: live.id,
      type: 'agent.command',
      agentSessionName: 'svc-proj',
      body: 'hello svc-proj',
      targetComputer: null,
      createdAt: expect.any(Number),
      ageMs: expect.any(Number),
      replay: false,
    });
    await untilState(live.id, 'delivered');
    listener.send({ type: 'push.result', id: live.id, state: 'injected' });
    await untilState(live.id, 'injected');
    await app.next('push.status', (f) => f.id === live.id && f.state === 'delivered');
    expect(await app.next('push.status', (f) => f.id === live.id && f.state === 'injected')).toEqual({
      type: 'push.status',
      id: live.id,
      state: 'injected',
      code: null,
    });

    // A refusal reaches the sender with its code.
    const bad = await send('bad name');
    await listener.next('push.new', (f) => f.push.id === bad.id);
    listener.send({ type: 'push.result', id: bad.id, state: 'refused', code: 'invalid_target' });
    expect(await app.next('push.status', (f) => f.id === bad.id && f.state === 'refused')).toMatchObject({
      code: 'invalid_target',
    });
    expect(await status(bad.id)).toMatchObject({ state: 'refused', code: 'invalid_target' });
  });

  it('keeps a final state, except session_not_found overwritten by injected from another computer', async () => {
    relay = await startTestRelay();
    const [a, b] = [await registerComputer('a'), await registerComputer('b')];
    const listenerA = await open();
    const listenerB = await open();
    await listenerA.subscribeListener(a);
    await listenerB.subscribeListener(b);

    const push = await send('svc-only-on-b'); // no inventory has it: every listener gets it
    await listenerA.next('push.new', (f) => f.push.id === push.id);
    await listenerB.next('push.new', (f) => f.push.id === push.id);
    listenerA.send({ type: 'push.result', id: push.id, state: 'refused', code: 'session_not_found' });
    await waitFor(async () => (await status(push.id)).code === 'session_not_found');
    listenerB.send({ type: 'push.result', id: push.id, state: 'injected' });
    await untilState(push.id, 'injected');

    // Final now: a late refusal changes nothing.
    listenerA.send({ type: 'push.result', id: push.id, state: 'refused', code: 'shell_in_front' });
    listenerA.send({ type: 'push.result', id: 999, state: 'injected' });
    expect(await listenerA.next('error')).toMatchObject({ code: 'not_found' });
    expect(await status(push.id)).toMatchObject({ state: 'injected', code: null });
  });

  it('routes by targetComputer, else by last inventory, else to every listener', async () => {
    relay = await startTestRelay();
    const [a, b] = [await registerComputer('a'), await registerComputer('b')];
    const listenerA = await open();
    const listenerB = await open();
    await listenerA.subscribeListener(a);
    await listenerB.subscribeListener(b);
    listenerB.send({ type: 'listener.sessions', seq: 1, sessions: [session('svc-api')] });
    await listenerB.next('sessions.result');

    const targeted = await send('svc-api', { targetComputer: a });
    const byInventory = await send('svc-api');
    const everywhere = await send('svc-unknown');
    await listenerA.next('push.new', (f) => f.push.id === everywhere.id);
    await listenerB.next('push.new', (f) => f.push.id === everywhere.id);
    expect(listenerA.all('push.new').map((f) => f.push.id)).toEqual([targeted.id, everywhere.id]);
    expect(listenerB.all('push.new').map((f) => f.push.id)).toEqual([byInventory.id, everywhere.id]);
    expect(listenerA.all('push.new')[0]?.push.targetComputer).toBe(a);
  });
});

describe('replay', () => {
  it('replays missed pushes in id order before live ones, and expires those past the window', async () => {
    let clock = 1_000_000;
    relay = await startTestRelay({ replayWindowMs: 10_000, sweepIntervalMs: 3_600_000, now: () => clock });
    const hookId = await registerComputer('laptop');
    const other = await registerComputer('desk');
    const app = await open();
    await app.subscribeApp();

    const old = await send('svc-proj'); // will be too old
    clock += 20_000;
    const missed0 = await send('svc-proj');
    const missed1 = await send('svc-proj');
    const note = await send('svc-proj', { type: 'note' }); // not an agent.command: never replayed
    const forDesk = await send('svc-proj', { targetComputer: other });
    const missed2 = await send('svc-web');
    clock += 1_000;

    const listener = await open();
    const subscribed = await listener.subscribeListener(hookId, 0);
    expect(subscribed).toMatchObject({ replayed: 3, expired: 1, replayWindowMs: 10_000 });
    await listener.next('push.new', (f) => f.push.id === missed2.id);
    expect(listener.all('push.new').map((f) => [f.push.id, f.push.replay, f.push.ageMs])).toEqual([
      [missed0.id, true, 1_000],
      [missed1.id, true, 1_000],
      [missed2.id, true, 1_000],
    ]);
    expect(listener.frames[0]?.type).toBe('subscribed');
    expect(await status(old.id)).toMatchObject({ state: 'expired' });
    expect(await app.next('push.status', (f) => f.id === old.id)).toMatchObject({ state: 'expired' });
    expect((await status(note.id)).state).toBe('pending');
    expect((await status(forDesk.id)).state).toBe('pending');

    const live = await send('svc-proj');
    const frame = await listener.next('push.new', (f) => f.push.id === live.id);
    expect(frame.push.replay).toBe(false);

    // Reconnecting with the last acted-on id skips what came before it.
    await listener.close();
    const again = await open();
    expect(await again.subscribeListener(hookId, missed1.id)).toMatchObject({ replayed: 2, expired: 0 });
    await again.next('push.new', (f) => f.push.id === live.id);
    expect(again.all('push.new').map((f) => f.push.id)).toEqual([missed2.id, live.id]);
  });

  it('expires pending pushes no listener received (sweeper) and reports it', async () => {
    relay = await startTestRelay({ replayWindowMs: 200 });
    const app = await open();
    await app.subscribeApp();
    const push = await send('svc-proj');
    await untilState(push.id, 'expired');
    expect(await app.next('push.status', (f) => f.id === push.id)).toEqual({
      type: 'push.status',
      id: push.id,
      state: 'expired',
      code: null,
    });
  });

  it('replaces a listener subscribing with the same hookId: the old one gets 4409', async () => {
    relay = await startTestRelay();
    const hookId = await registerComputer('laptop');
    const first = await open();
    await first.subscribeListener(hookId);
    const second = await open();
    await second.subscribeListener(hookId);
    expect(await first.closed).toEqual({ code: CLOSE.replaced, reason: expect.any(String) });
    const push = await send('svc-proj');
    await second.next('push.new', (f) => f.push.id === push.id);
    const list = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
    expect(list.json.computers[0].online).toBe(true);
  });
});

describe('inventory', () => {
  it('persists listener.sessions, shows it in GET /computers, and keeps it across a restart', async () => {
    relay = await startTestRelay();
    const hookId = await registerComputer('laptop');
    const app = await open();
    await app.subscribeApp();

    const early = await open();
    early.send({ type: 'listener.sessions', seq: 1, sessions: [session('svc-proj')] });
    expect(await early.next('sessions.result')).toEqual({
      type: 'sessions.result',
      seq: 1,
      ok: false,
      reason: 'not_subscribed',
    });

    const listener = await open();
    await listener.subscribeListener(hookId);
    const sessions = [session('svc-proj'), { ...session('svc-proj-2'), agent: 'cc', state: 'working' as const }];
    listener.send({ type: 'listener.sessions', seq: 7, sessions });
    expect(await listener.next('sessions.result')).toEqual({ type: 'sessions.result', seq: 7, ok: true });
    await app.next('computers.changed', (f) => f.computer === hookId);

    const listed = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
    expect(listed.json.computers).toEqual([
      {
        hookId,
        name: 'laptop',
        platform: 'linux',
        online: true,
        lastSeenAt: expect.any(Number),
        sessions,
        sessionsAt: expect.any(Number),
      },
    ]);

    listener.send({ type: 'listener.sessions', seq: 8, sessions: [{ name: 'svc-x' }] });
    const rejected = await listener.next('sessions.result', (f) => f.seq === 8);
    expect(rejected).toMatchObject({ ok: false, reason: expect.stringMatching(/^sessions\.0\./) });
    listener.send({ type: 'listener.sessions', sessions: [] });
    expect(await listener.next('error')).toMatchObject({ code: 'bad_frame' });

    await relay.restart();
    expect((await listener.closed).code).toBe(CLOSE.goingAway);
    const after = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
    expect(after.json.computers).toEqual([expect.objectContaining({ hookId, online: false, sessions })]);

    // The listener comes back to the restarted relay on the same address.
    const back = await open();
    await back.subscribeListener(hookId);
    const online = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
    expect(online.json.computers[0].online).toBe(true);
  });
});

describe('bad frames', () => {
  it('answers garbage frames with an error and keeps the connection and the relay going', async () => {
    relay = await startTestRelay();
    const hookId = await registerComputer('laptop');
    const socket = await open();

    socket.send('not json at all');
    expect(await socket.next('error')).toMatchObject({ code: 'bad_json' });
    socket.ws.send(Buffer.from([0, 1, 2, 3]), { binary: true });
    expect(await socket.next('error')).toMatchObject({ code: 'bad_frame' });
    socket.send({ type: 'launch.missiles' });
    expect(await socket.next('error')).toMatchObject({ code: 'bad_frame' });
    socket.send({ type: 'subscribe', role: 'listener', hookId, lastPushId: -1, version: '1' });
    expect(await socket.next('error')).toMatchObject({
      code: 'bad_frame',
      message: expect.stringContaining('lastPushId'),
    });
    socket.send('null');
    expect(await socket.next('error')).toMatchObject({ code: 'bad_frame' });
    socket.send({ type: 'push.result', id: 1, state: 'injected' });
    expect(await socket.next('error')).toMatchObject({ code: 'not_subscribed' });

    // Still the same connection, and it still works.
    await socket.subscribeListener(hookId);
    socket.send({ type: 'subscribe', role: 'app' });
    expect(await socket.next('error')).toMatchObject({ code: 'already_subscribed' });
    const push = await send('svc-proj');
    await socket.next('push.new', (f) => f.push.id === push.id);
  });

  it('closes a connection sending a frame over MAX_WS_FRAME_BYTES with 1009, and the relay carries on', async () => {
    relay = await startTestRelay();
    const socket = await open();
    socket.send('x'.repeat(MAX_WS_FRAME_BYTES + 1));
    expect((await socket.closed).code).toBe(CLOSE.tooBig);
    const next = await open();
    expect(await next.subscribeApp()).toMatchObject({ role: 'app' });
    expect((await api(relay.url, 'GET', '/healthz')).status).toBe(200);
  });

  it('answers frames beyond the connection bucket with rate_limited', async () => {
    relay = await startTestRelay({ wsBucket: { capacity: 3, refillPerSecond: 0.01 } });
    const socket = await open();
    for (let i = 0; i < 5; i++) socket.send('junk');
    await waitFor(() => socket.all('error').length === 5, { what: 'five error frames' });
    expect(socket.all('error').map((f) => f.code)).toEqual([
      'bad_json',
      'bad_json',
      'bad_json',
      'rate_limited',
      'rate_limited',
    ]);
    expect(socket.ws.readyState).toBe(socket.ws.OPEN);
  });
});

describe('heartbeat', () => {
  it('terminates a connection that does not answer pings and keeps one that does', async () => {
    relay = await startTestRelay({ pingIntervalMs: 50 });
    const silent = await open(relay.apiKey, { autoPong: false });
    const lively = await open();
    let pings = 0;
    lively.ws.on('ping', () => {
      pings++;
    });
    const closed = await silent.closed;
    expect(closed.code).toBe(1006); // terminated, no close frame
    await waitFor(() => pings >= 4, { what: 'four pings' });
    expect(lively.ws.readyState).toBe(lively.ws.OPEN);
  });
});

describe('a computer going away while its panes are watched', () => {
  async function app(): Promise<TestSocket> {
    const socket = await open();
    socket.send({ type: 'subscribe', role: 'app' });
    await socket.next('subscribed');
    return socket;
  }
  /** Everything the relay sent this socket before now has arrived (frames on one socket keep their order). */
  async function settled(socket: TestSocket): Promise<void> {
    const t = Math.random();
    socket.send({ type: 'ping', t });
    await socket.next('pong', (f) => f.t === t);
  }

  it('tells the apps still watching computer_offline, and answers watches and keys in kind until it is back', async () => {
    relay = await startTestRelay();
    const hookId = await registerComputer('laptop');
    const listener = await open();
    await listener.subscribeListener(hookId);
    const envelope = await someEnvelope();
    const [watching, leftIt, bystander] = [await app(), await app(), await app()];
    watching.send({ type: 'pane.watch', computer: hookId, session: 'svc-proj', envelope });
    leftIt.send({ type: 'pane.watch', computer: hookId, session: 'svc-proj', envelope });
    const asked = [await listener.next('pane.watch'), await listener.next('pane.watch')];
    for (const request of asked) {
      const to = { session: 'svc-proj', deviceId: null, connection: request.connection };
      listener.send({ type: 'pane.status', ...to, state: 'streaming' });
    }
    await watching.next('pane.status', (f) => f.state === 'streaming');
    await leftIt.next('pane.status', (f) => f.state === 'streaming');
    // One app stops watching; its answer from the listener ends the watch for the relay too.
    leftIt.send({ type: 'pane.stop', computer: hookId, session: 'svc-proj' });
    const stop = await listener.next('pane.stop');
    listener.send({
      type: 'pane.status',
      session: 'svc-proj',
      deviceId: null,
      connection: stop.connection,
      state: 'stopped',
      code: 'requested',
    });
    await leftIt.next('pane.status', (f) => f.state === 'stopped');

    await listener.close();
    expect(await watching.next('pane.status', (f) => f.state === 'stopped')).toEqual({
      type: 'pane.status',
      computer: hookId,
      session: 'svc-proj',
      deviceId: null,
      connection: expect.any(String),
      state: 'stopped',
      code: 'computer_offline',
    });
    await Promise.all([settled(leftIt), settled(bystander)]);
    expect(leftIt.all('pane.status').map((f) => f.code ?? f.state)).toEqual(['streaming', 'requested']);
    expect(bystander.all('pane.status')).toEqual([]);

    // While it is away: a watch is told so at once; keys are refused, not kept.
    watching.send({ type: 'pane.watch', computer: hookId, session: 'svc-proj', envelope });
    expect(await watching.next('pane.status')).toMatchObject({ state: 'stopped', code: 'computer_offline' });
    watching.send({ type: 'pane.keys', computer: hookId, session: 'svc-proj', envelope });
    expect(await watching.next('keys.result')).toMatchObject({
      computer: hookId,
      session: 'svc-proj',
      seq: null,
      state: 'refused',
      code: 'computer_offline',
    });
    // Back: the next watch reaches the new listener.
    const back = await open();
    await back.subscribeListener(hookId);
    watching.send({ type: 'pane.watch', computer: hookId, session: 'svc-proj', envelope });
    expect(await back.next('pane.watch')).toMatchObject({ session: 'svc-proj', deviceId: null });
  });
});
