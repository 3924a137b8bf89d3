/**
 * Live panes and key input end to end: a WebSocket app client with its own device keys, the real relay (and its
 * SQLite file), the real `svc listener` process, real tmux on a private socket.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readPins, updatePins } from '../../actors/devices/pins.js';
import { applyFrame } from '../../core/panes/frames.js';
import type { FrameBody } from '../../core/protocol/bodies.js';
import { openDatabase } from '../../relay-server/sqlite/db.js';
import { type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { computerDevice, databaseHolds, registerTestDevice, type TestDevice } from '../helpers/devices.js';
import { api, startTestRelay, type TestRelay, TestSocket, waitFor } from '../helpers/relay.js';
import { fakeAgentCommand, type TmuxServer } from '../helpers/tmux.js';

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc | null = null;
let sockets: TestSocket[] = [];
let hookId: string;
let key: string;
let computer: { id: string; publicKey: string };
let app: TestDevice;

const token = (what: string) => `${what}-${randomBytes(6).toString('hex')}`;

async function startListener(extra: NodeJS.ProcessEnv = {}): Promise<SpawnedSvc> {
  const proc = spawnSvc(['listener'], { ...env, ...extra });
  await proc.waitForLine(/connected to ws:/);
  await proc.waitForLine(/server persisted listener.sessions/);
  return proc;
}

async function appSocket(deviceId: string | null = app.deviceId): Promise<TestSocket> {
  const sock = await TestSocket.open(relay.wsUrl, key);
  sockets.push(sock);
  sock.send(deviceId ? { type: 'subscribe', role: 'app', deviceId } : { type: 'subscribe', role: 'app' });
  await sock.next('subscribed');
  return sock;
}

async function watch(sock: TestSocket, session: string, seq: number, leaseMs = 30_000, device = app) {
  sock.send({
    type: 'pane.watch',
    computer: hookId,
    session,
    envelope: await device.seal('pane.watch', computer, { session, seq, leaseMs }),
  });
}

async function keys(
  sock: TestSocket,
  session: string,
  body: { seq: number; keys?: string[]; text?: string; control?: 'end' | 'kill' | 'resume' | 'forget' },
) {
  const envelope = await app.seal('pane.keys', computer, { session, ...body });
  sock.send({ type: 'pane.keys', computer: hookId, session, envelope });
  return envelope;
}

/**
 * The screen as the app rebuilds it from the frames it opened (`text` without the blank rows at the bottom, as tmux
 * captures it), and the bodies.
 */
async function appScreen(sock: TestSocket, session: string) {
  let screen: string[] = [];
  const bodies: FrameBody[] = [];
  for (const f of sock.all('pane.frame').filter((x) => x.session === session)) {
    const body = (await app.open('pane.frame', f.envelope, computer.publicKey)) as FrameBody;
    expect(body.frameSeq).toBe(f.frameSeq);
    expect(body.session).toBe(session);
    bodies.push(body);
    screen = applyFrame(screen, body);
  }
  return { text: screen.join('\n').replace(/\n+$/, ''), rows: screen, bodies };
}

/** The pane's columns and rows as tmux has them. */
async function paneSize(session: string): Promise<{ width: number; height: number }> {
  const out = await tmux.run(['display-message', '-p', '-t', `=${session}:`, '#{pane_width} #{pane_height}']);
  const [width, height] = out.trim().split(' ').map(Number);
  return { width: width!, height: height! };
}

const status = (sock: TestSocket, state: string, session = 'svc-proj', timeoutMs = 10_000) =>
  sock.next('pane.status', (f) => f.session === session && f.state === state, timeoutMs);

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

beforeEach(async () => {
  key = (await relay.createAccount()).apiKey;
  ({ tmux, home, env, hookId } = await loggedInComputer({ url: relay.url, apiKey: key, name: 'box' }));
  computer = await computerDevice({ url: relay.url, apiKey: key }, hookId);
  app = await registerTestDevice({ url: relay.url, apiKey: key }, 'app', 'phone');
});

afterEach(async () => {
  for (const s of sockets) await s.close();
  sockets = [];
  await listener?.stop();
  listener = null;
  await tmux.cleanup();
  home.cleanup();
});

describe('live panes', () => {
  it('streams sealed frames the app opens: first whole, then changes; the relay keeps no trace of the screen', async () => {
    listener = await startListener();
    const sock = await appSocket();
    await watch(sock, 'svc-proj', 1);
    await status(sock, 'streaming');
    await waitFor(async () => (await appScreen(sock, 'svc-proj')).text.includes('›'), { what: 'the first frame' });

    const line = token('on screen');
    await tmux.run(['send-keys', '-t', '=svc-proj:', '-l', line]);
    await tmux.run(['send-keys', '-t', '=svc-proj:', 'Enter']);
    await waitFor(async () => (await appScreen(sock, 'svc-proj')).text.includes(`you said: ${line}`), {
      what: 'the printed line in the app’s screen',
    });
    const { bodies } = await appScreen(sock, 'svc-proj');
    expect(bodies[0]?.full).toBe(true);
    expect(bodies.slice(1).some((b) => !b.full && Object.keys(b.rows).length < b.height)).toBe(true);
    expect(bodies.map((b) => b.frameSeq)).toEqual(bodies.map((_, i) => i));
    // The rebuilt screen is the pane's screen.
    expect((await appScreen(sock, 'svc-proj')).text).toBe(await tmux.capture('svc-proj'));

    sock.send({ type: 'pane.stop', computer: hookId, session: 'svc-proj' });
    expect(await status(sock, 'stopped')).toMatchObject({ code: 'requested', deviceId: app.deviceId });
    // Byte for byte in the database files, and not in the relay's log: no screen text.
    expect(databaseHolds(relay.dataDir, line)).toBe(false);
    expect(relay.logs.join('\n')).not.toContain(line);
  });

  it('stops when its lease lapses (a vanished phone), and keeps streaming while it is renewed', async () => {
    listener = await startListener();
    const tablet = await registerTestDevice({ url: relay.url, apiKey: key }, 'app', 'tablet');
    const renewing = await appSocket();
    const lapsing = await appSocket(tablet.deviceId);
    // The phone watches on a 1 s lease and renews it at once for 30 s; the tablet watches on a 2 s lease, sent after
    // the phone's, and never renews. So when the tablet's lease has lapsed, the phone's first one has too.
    await watch(renewing, 'svc-proj', 1, 1_000);
    await watch(renewing, 'svc-proj', 2, 30_000);
    await watch(lapsing, 'svc-proj', 1, 2_000, tablet);
    await status(renewing, 'streaming');
    await status(lapsing, 'streaming');
    expect(await status(lapsing, 'stopped', 'svc-proj', 15_000)).toMatchObject({ code: 'lease_expired' });
    expect(listener.output()).toMatch(
      new RegExp(`live pane svc-proj for ${tablet.deviceId} stopped \\(lease_expired\\)`),
    );
    const tabletFrames = lapsing.all('pane.frame').length;
    // A line printed now reaches the phone, whose renewed lease still runs (so a frame was made for a watcher)...
    const line = token('after the lease');
    await tmux.run(['send-keys', '-t', '=svc-proj:', '-l', line]);
    await waitFor(async () => (await appScreen(renewing, 'svc-proj')).text.includes(line), {
      what: 'the line on the phone that renewed',
    });
    expect(renewing.all('pane.status').filter((f) => f.state === 'stopped')).toEqual([]);
    // ...and not the tablet, whose lease lapsed.
    expect(lapsing.all('pane.frame').length).toBe(tabletFrames);
  });

  it('stops for a device another process forgets in ~/.svc/devices.json (`svc devices forget` writes it), and streams on for the other', async () => {
    listener = await startListener();
    const tablet = await registerTestDevice({ url: relay.url, apiKey: key }, 'app', 'tablet');
    const phone = await appSocket();
    const forgotten = await appSocket(tablet.deviceId);
    await watch(phone, 'svc-proj', 1);
    await watch(forgotten, 'svc-proj', 1, 30_000, tablet);
    await status(phone, 'streaming');
    await status(forgotten, 'streaming');
    const pins = join(home.home, '.svc', 'devices.json');
    await waitFor(async () => readPins(pins).devices[tablet.deviceId] !== undefined, { what: 'the tablet pinned' });
    // as `svc devices forget` does it, from another process, and nothing said to the relay: the file alone tells
    updatePins(pins, [{ op: 'forget', deviceId: tablet.deviceId }]);
    expect(await status(forgotten, 'stopped')).toMatchObject({ code: 'requested' });
    const tabletFrames = forgotten.all('pane.frame').length;
    const line = token('after forget');
    await tmux.run(['send-keys', '-t', '=svc-proj:', '-l', line]);
    await waitFor(async () => (await appScreen(phone, 'svc-proj')).text.includes(line), {
      what: 'the line on the phone',
    });
    expect(forgotten.all('pane.frame').length).toBe(tabletFrames);
  });

  it('a live pane whose actor fails (SVC_FAULT: its action throws as it records its lease) is started again and streams; keys are typed meanwhile', async () => {
    listener = await startListener({ SVC_FAULT: 'action:watch.*' });
    const sock = await appSocket();
    await watch(sock, 'svc-proj', 1);
    const id = `watch.${app.deviceId}/svc-proj`;
    await listener.waitForLine(
      new RegExp(`child ${id.replace(/[./]/g, '\\$&')} failed handling \\S+: started again in 1 s`),
    );
    expect(listener.output()).toMatch(/InjectedFault: SVC_FAULT: injected action failure in watch\./);
    // the listener serves on: the phone's keys are typed
    const line = token('typed meanwhile');
    await keys(sock, 'svc-proj', { seq: 1, text: line, keys: ['Enter'] });
    expect(await sock.next('keys.result', (f) => f.seq === 1)).toMatchObject({ state: 'typed' });
    // started again from its input: the phone gets frames with what is on the pane now
    await status(sock, 'streaming');
    await waitFor(async () => (await appScreen(sock, 'svc-proj')).text.includes(`you said: ${line}`), {
      what: 'the typed line in the frames of the restarted stream',
    });
    expect(sock.all('pane.status').filter((f) => f.state === 'stopped')).toEqual([]);
  });

  it('refuses a watch from an app without a device key (e2ee_required) and for a session it lacks', async () => {
    listener = await startListener();
    const keyless = await appSocket(null);
    keyless.send({
      type: 'pane.watch',
      computer: hookId,
      session: 'svc-proj',
      envelope: await app.seal('pane.watch', computer, { session: 'svc-proj', seq: 1, leaseMs: 30_000 }),
    });
    expect(await status(keyless, 'refused')).toMatchObject({ code: 'e2ee_required', deviceId: null });
    const sock = await appSocket();
    await watch(sock, 'svc-gone', 1);
    expect(await status(sock, 'refused', 'svc-gone')).toMatchObject({ code: 'session_not_found' });
    expect(keyless.all('pane.frame')).toEqual([]);
  });

  it('refuses a device whose key the relay swapped (subscriber_unverified): no frame is sealed for it', async () => {
    listener = await startListener();
    const sock = await appSocket();
    await watch(sock, 'svc-proj', 1);
    await status(sock, 'streaming');
    sock.send({ type: 'pane.stop', computer: hookId, session: 'svc-proj' });
    await status(sock, 'stopped');
    // The relay lists a key of its own for the phone, and asks for the screen in the phone's name.
    const frames = sock.all('pane.frame').length;
    const { seal } = await import('../../core/seal/seal.js');
    const { importPublicKey, generateDeviceKeys, exportPublicKey } = await import('../../core/seal/keys.js');
    const evil = await generateDeviceKeys(false);
    const db = openDatabase(`${relay.dataDir}/relay.db`);
    db.prepare('UPDATE devices SET public_key = ? WHERE id = ?').run(
      await exportPublicKey(evil.publicKey),
      app.deviceId,
    );
    db.close();
    sock.send({
      type: 'pane.watch',
      computer: hookId,
      session: 'svc-proj',
      envelope: await seal({
        purpose: 'pane.watch',
        from: { id: app.deviceId, privateKey: evil.privateKey },
        to: [{ id: computer.id, publicKey: await importPublicKey(computer.publicKey) }],
        plaintext: JSON.stringify({ session: 'svc-proj', seq: 10, leaseMs: 30_000 }),
      }),
    });
    expect(await status(sock, 'refused', 'svc-proj', 40_000)).toMatchObject({ code: 'subscriber_unverified' });
    // The pane is streamed meanwhile, to a device whose key is its own: frames are made, none for the swapped one.
    const tablet = await registerTestDevice({ url: relay.url, apiKey: key }, 'app', 'tablet');
    const other = await appSocket(tablet.deviceId);
    await watch(other, 'svc-proj', 1, 30_000, tablet);
    await status(other, 'streaming');
    await other.next('pane.frame');
    expect(sock.all('pane.frame').length).toBe(frames);
    await listener.waitForLine(new RegExp(`device ${app.deviceId} changed its key`));
  });
});

describe('the pane’s size', () => {
  it('is inside every frame: the app’s screen is as wide and as tall as the pane, and follows a resize', async () => {
    listener = await startListener();
    const sock = await appSocket();
    await watch(sock, 'svc-proj', 1);
    await status(sock, 'streaming');
    await waitFor(async () => (await appScreen(sock, 'svc-proj')).bodies.length > 0, { what: 'the first frame' });
    const size = await paneSize('svc-proj');
    const first = (await appScreen(sock, 'svc-proj')).bodies[0]!;
    expect(first).toMatchObject({ full: true, ...size });
    // Every row of the pane, the blank ones below the prompt too: the app draws a screen of the pane's height.
    expect((await appScreen(sock, 'svc-proj')).rows).toHaveLength(size.height);

    await tmux.run(['resize-window', '-t', '=svc-proj:', '-x', '100', '-y', '30']);
    expect(await paneSize('svc-proj')).toEqual({ width: 100, height: 30 });
    await waitFor(
      async () => (await appScreen(sock, 'svc-proj')).bodies.some((b) => b.full && b.width === 100 && b.height === 30),
      { what: 'a whole frame of the new size' },
    );
    expect((await appScreen(sock, 'svc-proj')).rows).toHaveLength(30);
    // Outside the envelope there is routing only: the relay does not learn the size either.
    for (const f of sock.all('pane.frame')) {
      expect(Object.keys(f).sort()).toEqual(['computer', 'deviceId', 'envelope', 'frameSeq', 'session', 'type']);
    }
  });
});

describe('a computer that goes away while a pane is watched', () => {
  it('tells the app computer_offline; refuses keys meanwhile; streams again by itself when it is back', async () => {
    listener = await startListener();
    const sock = await appSocket();
    await watch(sock, 'svc-proj', 1);
    await status(sock, 'streaming');
    await waitFor(async () => (await appScreen(sock, 'svc-proj')).text.includes('›'), { what: 'the first frame' });

    await listener.stop();
    listener = null;
    expect(await status(sock, 'stopped')).toMatchObject({
      computer: hookId,
      code: 'computer_offline',
      deviceId: app.deviceId,
    });
    // Keys pressed while it is away are refused at once with that code, and never typed later.
    const away = token('while away');
    await keys(sock, 'svc-proj', { seq: 1, text: away, keys: ['Enter'] });
    expect(await sock.next('keys.result')).toMatchObject({ state: 'refused', code: 'computer_offline', seq: null });
    // The pane goes on changing meanwhile.
    const meanwhile = token('meanwhile');
    await tmux.run(['send-keys', '-t', '=svc-proj:', '-l', meanwhile]);
    await tmux.run(['send-keys', '-t', '=svc-proj:', 'Enter']);
    await waitFor(async () => (await tmux.capture('svc-proj')).includes(`you said: ${meanwhile}`));

    // Back within the watch's lease: the stream resumes with no new pane.watch from the app.
    const framesBefore = sock.all('pane.frame').length;
    listener = await startListener();
    await status(sock, 'streaming');
    await waitFor(async () => (await appScreen(sock, 'svc-proj')).text.includes(`you said: ${meanwhile}`), {
      what: 'the screen as it is now, in the app',
    });
    expect(sock.all('pane.frame').length).toBeGreaterThan(framesBefore);
    expect((await appScreen(sock, 'svc-proj')).text).toBe(await tmux.capture('svc-proj'));
    expect(await tmux.capture('svc-proj')).not.toContain(away);
    expect(listener.output()).toMatch(/live pane svc-proj for d_[0-9a-f]+ resumed/);
  });
});

describe('key input', () => {
  it('types sealed text and named keys into the pane, in order; refuses replays and unknown keys', async () => {
    listener = await startListener();
    const sock = await appSocket();
    const result = (seq: number) => sock.next('keys.result', (f) => f.seq === seq);
    await keys(sock, 'svc-proj', { seq: 1, text: 'half a thought' });
    expect(await result(1)).toMatchObject({ state: 'typed', deviceId: app.deviceId });
    await waitFor(async () => (await tmux.capture('svc-proj')).includes('› half a thought'));
    // C-c clears the fake agent's input line.
    const again = await keys(sock, 'svc-proj', { seq: 2, keys: ['C-c'] });
    expect(await result(2)).toMatchObject({ state: 'typed' });
    await waitFor(async () => !(await tmux.capture('svc-proj')).includes('half a thought'));
    const line = token('keyed');
    await keys(sock, 'svc-proj', { seq: 3, text: line, keys: ['Enter'] });
    expect(await result(3)).toMatchObject({ state: 'typed' });
    await waitFor(async () => (await tmux.capture('svc-proj')).includes(`you said: ${line}`));
    // The same envelope again, from the relay: refused, nothing typed.
    sock.send({ type: 'pane.keys', computer: hookId, session: 'svc-proj', envelope: again });
    expect(await sock.next('keys.result', (f) => f.state === 'refused')).toMatchObject({ code: 'replayed', seq: null });
    await keys(sock, 'svc-proj', { seq: 4, keys: ['F12'] });
    expect(await result(4)).toMatchObject({ state: 'refused', code: 'bad_key_name' });
    expect(databaseHolds(relay.dataDir, line)).toBe(false);
  });

  it('refuses keys to a subagent (subagent_view_only), which may still be watched', async () => {
    await tmux.run(['split-window', '-t', '=svc-proj:', '-d', fakeAgentCommand('claude')]);
    listener = await startListener();
    await waitFor(
      async () => {
        const c = await api(relay.url, 'GET', '/computers', { key });
        const me = c.json.computers.find((x: { hookId: string }) => x.hookId === hookId);
        return me?.sessions.some((s: { name: string }) => s.name === 'svc-proj.1');
      },
      { timeoutMs: 15_000, what: 'the subagent in the inventory' },
    );
    const sock = await appSocket();
    await keys(sock, 'svc-proj.1', { seq: 1, text: 'hello' });
    expect(await sock.next('keys.result', (f) => f.seq === 1)).toMatchObject({
      state: 'refused',
      code: 'subagent_view_only',
    });
    // exit, force, resume and forget too (spec 4.14); the subagent's pane is still there afterwards
    for (const [i, control] of (['end', 'kill', 'resume', 'forget'] as const).entries()) {
      await keys(sock, 'svc-proj.1', { seq: 2 + i, control });
      expect(await sock.next('keys.result', (f) => f.seq === 2 + i), control).toMatchObject({
        state: 'refused',
        code: 'subagent_view_only',
      });
    }
    expect((await tmux.run(['list-panes', '-t', '=svc-proj:'])).trim().split('\n')).toHaveLength(2);
    await watch(sock, 'svc-proj.1', 1);
    await status(sock, 'streaming', 'svc-proj.1');
    await waitFor(async () => (await appScreen(sock, 'svc-proj.1')).text.includes('›'));
  });
});

describe('the relay routes pane frames and checks who sends them', () => {
  it('answers errors for frames it cannot route, and refuses a device of another account', async () => {
    const sock = await TestSocket.open(relay.wsUrl, key);
    sockets.push(sock);
    const envelope = await app.seal('pane.watch', computer, { session: 'svc-proj', seq: 1, leaseMs: 30_000 });
    sock.send({ type: 'pane.watch', computer: hookId, session: 'svc-proj', envelope });
    expect(await sock.next('error')).toMatchObject({ code: 'not_subscribed' });
    sock.send({ type: 'subscribe', role: 'app', deviceId: 'd_0000000000000000' });
    expect(await sock.next('error')).toMatchObject({ code: 'unknown_device' });
    sock.send({ type: 'subscribe', role: 'app', deviceId: app.deviceId });
    await sock.next('subscribed');
    sock.send({ type: 'pane.watch', computer: 'c_0000000000000000', session: 'svc-proj', envelope });
    expect(await sock.next('error')).toMatchObject({ code: 'unknown_computer' });
    // No listener: a watch is answered in kind, so the app can tell which screen is not live.
    sock.send({ type: 'pane.watch', computer: hookId, session: 'svc-proj', envelope });
    expect(await sock.next('pane.status')).toMatchObject({
      computer: hookId,
      session: 'svc-proj',
      state: 'stopped',
      code: 'computer_offline',
    });
    sock.send({ type: 'pane.stop', computer: hookId, session: 'svc-proj' });
    expect(await sock.next('error')).toMatchObject({ code: 'computer_offline' });
    sock.send({ type: 'pane.frame', session: 'svc-proj', deviceId: app.deviceId, frameSeq: 0, envelope });
    expect(await sock.next('error')).toMatchObject({ code: 'not_subscribed' });
    sock.send({ type: 'pane.watch', computer: hookId, session: 'svc-proj', envelope: { v: 1 } });
    expect(await sock.next('error')).toMatchObject({ code: 'bad_frame' });
    // A device of another account cannot be subscribed as.
    const other = await relay.createAccount();
    const foreign = await TestSocket.open(relay.wsUrl, other.apiKey);
    sockets.push(foreign);
    foreign.send({ type: 'subscribe', role: 'app', deviceId: app.deviceId });
    expect(await foreign.next('error')).toMatchObject({ code: 'unknown_device' });
  });
});
