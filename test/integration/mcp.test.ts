/**
 * `svc mcp` end to end, with the real MCP SDK client over stdio: the compiled `svc mcp`, the real `svc listener`,
 * the real relay (and its SQLite file), real tmux on a private socket, and a WebSocket app client with its own
 * device key that opens the sealed question and seals its answer (docs/mcp.md).
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { QuestionBody } from '../../core/mcp/ask.js';
import { runSvc, type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { computerDevice, databaseHolds, registerTestDevice, type TestDevice } from '../helpers/devices.js';
import { svcMcpClient } from '../helpers/mcp.js';
import { api, finalPush, sendPush, startTestRelay, type TestRelay, TestSocket, waitFor } from '../helpers/relay.js';
import { fakeAgentCommand, type TmuxServer } from '../helpers/tmux.js';

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc | null = null;
let sockets: TestSocket[] = [];
let clients: Client[] = [];
let hookId: string;
let key: string;
let computer: { id: string; publicKey: string };
let app: TestDevice;

const token = (what: string) => `${what}-${randomBytes(6).toString('hex')}`;
type ToolResult = {
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

async function startListener(extra: NodeJS.ProcessEnv = {}): Promise<SpawnedSvc> {
  const proc = spawnSvc(['listener'], { ...env, ...extra });
  await proc.waitForLine(/connected to ws:/);
  await proc.waitForLine(/control socket/);
  return proc;
}

async function appSocket(): Promise<TestSocket> {
  const sock = await TestSocket.open(relay.wsUrl, key);
  sockets.push(sock);
  sock.send({ type: 'subscribe', role: 'app', deviceId: app.deviceId });
  await sock.next('subscribed');
  return sock;
}

/** An MCP client running `svc mcp` as an agent in tmux session `session` would. */
async function mcpClient(session = 'svc-proj'): Promise<Client> {
  const client = await svcMcpClient(env, tmux, session);
  clients.push(client);
  return client;
}

const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: 700_000 }) as Promise<ToolResult>;

async function question(sock: TestSocket, match: (f: { session: string }) => boolean = () => true) {
  const frame = await sock.next('ask.new', match, 15_000);
  const body = (await app.open('ask.question', frame.envelope, computer.publicKey)) as QuestionBody;
  return { frame, body };
}

/** The phone's sealed answer to `body`, sent. */
async function sendAnswer(sock: TestSocket, body: QuestionBody, text: string, extra: Record<string, unknown> = {}) {
  const envelope = await app.seal('ask.answer', computer, {
    id: body.id,
    session: body.session,
    text,
    sentAt: Date.now(),
    ...extra,
  });
  sock.send({ type: 'ask.answer', computer: hookId, id: body.id, envelope });
}

/** The phone's sealed answer to `body`, sent; then what the computer answered it. */
async function answer(sock: TestSocket, body: QuestionBody, text: string, extra: Record<string, unknown> = {}) {
  await sendAnswer(sock, body, text, extra);
  return sock.next('ask.result', (f) => f.id === body.id, 10_000);
}

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
  for (const c of clients) await c.close().catch(() => {});
  clients = [];
  for (const s of sockets) await s.close();
  sockets = [];
  await listener?.stop();
  listener = null;
  await tmux.cleanup();
  home.cleanup();
});

describe('svc mcp', () => {
  it('lists svc_ask and svc_notify, with the timeout rule in the schema', async () => {
    const client = await mcpClient();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['svc_ask', 'svc_notify']);
    const ask = tools.find((t) => t.name === 'svc_ask')!;
    expect(ask.inputSchema.required).toEqual(['question']);
    const timeout = (ask.inputSchema.properties as Record<string, { description?: string }>).timeout;
    expect(timeout?.description).toMatch(/Default 300.*At most 600/s);
  });

  it('asks the phone sealed, takes its sealed answer once, and the relay keeps neither', async () => {
    listener = await startListener();
    const sock = await appSocket();
    const client = await mcpClient();
    const asked = token('which database');
    const pending = call(client, 'svc_ask', { question: asked, choices: ['postgres', 'sqlite'], timeout: 60 });

    const { frame, body } = await question(sock);
    expect(frame.computer).toBe(hookId);
    expect(frame.session).toBe('svc-proj');
    expect(body).toMatchObject({ question: asked, choices: ['postgres', 'sqlite'], session: 'svc-proj' });
    expect(frame.leftMs).toBeGreaterThan(55_000);
    expect(JSON.stringify(frame)).not.toContain(asked);

    // While it waits, svc verify's source (the control socket) and the actor tree show it.
    const state = await import('../../actors/daemon/controlSocket.js').then((m) =>
      m.controlRequest(`${home.home}/.svc`, { type: 'state' }, 'state'),
    );
    const actor = state.actors.find((a) => a.id === `ask.${body.id}`);
    expect(actor?.value).toEqual({ open: 'waiting' });
    const verify = await runSvc(['verify', '--json'], env);
    expect(JSON.parse(verify.stdout).asks).toEqual([expect.objectContaining({ id: body.id, session: 'svc-proj' })]);
    expect((await runSvc(['verify'], env)).stdout).toMatch(/asks +1 in flight: svc-proj/);

    const said = token('sqlite it is');
    const first = await answer(sock, body, said, { choice: 1 });
    expect(first).toMatchObject({ state: 'accepted', deviceId: app.deviceId });
    const result = await pending;
    expect(result.isError).toBeFalsy();
    expect(result.content[0]?.text).toContain(said);
    expect(result.structuredContent).toMatchObject({ status: 'answered', answer: said, choice: 'sqlite' });
    await sock.next('ask.closed', (f) => f.id === body.id && f.state === 'answered');

    // Exactly once: a second answer is refused, and the agent saw only the first.
    const again = await answer(sock, body, token('changed my mind'));
    expect(again).toMatchObject({ state: 'refused', code: 'already_answered' });

    expect(databaseHolds(relay.dataDir, asked)).toBe(false);
    expect(databaseHolds(relay.dataDir, said)).toBe(false);
    expect(relay.logs.join('\n')).not.toContain(asked);
    expect(relay.logs.join('\n')).not.toContain(said);
  });

  it('an answer whose opening fails (SVC_FAULT: the ask’s promise rejects) is refused; the ask waits and takes the next', async () => {
    listener = await startListener({ SVC_FAULT: 'promise:ask.*' });
    const sock = await appSocket();
    const client = await mcpClient();
    const pending = call(client, 'svc_ask', { question: token('deploy now'), timeout: 60 });
    const { body } = await question(sock);
    // a failure to open is a bad seal to the phone (machines/ask.ts): the agent is not answered
    expect(await answer(sock, body, token('lost'))).toMatchObject({ state: 'refused', code: 'bad_seal' });
    const said = token('yes, deploy');
    expect(await answer(sock, body, said)).toMatchObject({ state: 'accepted' });
    const result = await pending;
    expect(result.structuredContent).toMatchObject({ status: 'answered', answer: said });
    expect(listener.output()).toMatch(/SVC_FAULT: injecting failures \(promise:ask\.\*\)/);
  });

  it('an ask whose actor fails (SVC_FAULT: its action throws as it takes an answer) is ended: the agent told in words, the phone sees it closed, the listener serves on', async () => {
    listener = await startListener({ SVC_FAULT: 'action:ask.*' });
    const sock = await appSocket();
    const client = await mcpClient();
    const pending = call(client, 'svc_ask', { question: token('ship it'), timeout: 60 });
    const { body } = await question(sock);
    await sendAnswer(sock, body, token('lost'));
    // the agent's tool call returns at once, in words, not after its 60 s
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ status: 'failed', code: 'ask_failed' });
    expect(result.content[0]?.text).toMatch(/^No answer: the svc listener failed while waiting for the answer/);
    await sock.next('ask.closed', (f) => f.id === body.id && f.state === 'expired');
    expect(await answer(sock, body, token('late'))).toMatchObject({ state: 'refused', code: 'ask_expired' });
    // logged with its id, the event it failed on and what became of it, then the stack
    const actorId = `ask.${body.id}`;
    await listener.waitForLine(new RegExp(`child ${actorId.replace('.', '\\.')} failed handling ANSWER: ended`));
    expect(listener.output()).toMatch(/InjectedFault: SVC_FAULT: injected action failure in ask\./);
    const state = JSON.parse((await runSvc(['debug', 'state', '--json'], env)).stdout) as {
      failing: { id: string; failures: number }[];
    };
    expect(state.failing).toEqual([expect.objectContaining({ id: actorId, failures: 1 })]);

    // the listener serves on: a message typed into the session, the next ask answered
    // (a push, not `svc agent send`: that pins its own device, and asks are then sealed for pinned devices only)
    const sent = await sendPush({ url: relay.url, apiKey: key }, 'svc-proj', 'still served', {
      targetComputer: hookId,
    });
    expect(await finalPush({ url: relay.url, apiKey: key }, sent)).toMatchObject({ state: 'injected' });
    await waitFor(async () => (await tmux.capture('svc-proj')).includes('you said: still served'), {
      what: 'the message typed into svc-proj',
    });
    const next = call(client, 'svc_ask', { question: token('and now'), timeout: 60 });
    const second = await question(sock, () => true);
    expect(second.body.id).not.toBe(body.id);
    expect(await answer(sock, second.body, 'yes')).toMatchObject({ state: 'accepted' });
    expect((await next).structuredContent).toMatchObject({ status: 'answered', answer: 'yes' });
  });

  it('returns a timeout result within a second of the timeout, and refuses an answer after it', async () => {
    listener = await startListener();
    const sock = await appSocket();
    const client = await mcpClient();
    const started = Date.now();
    const pending = call(client, 'svc_ask', { question: token('anyone there'), timeout: 2 });
    const { body } = await question(sock);
    const result = await pending;
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(2_000);
    expect(took).toBeLessThan(3_000);
    expect(result.structuredContent).toMatchObject({ status: 'expired', waitedSeconds: 2 });
    expect(result.content[0]?.text).toMatch(/did not answer within 2 s/);
    await sock.next('ask.closed', (f) => f.id === body.id && f.state === 'expired');
    const late = await answer(sock, body, 'too late');
    expect(late).toMatchObject({ state: 'refused', code: 'ask_expired' });
  });

  it('cuts a timeout above 600 s to 600 s and says so', async () => {
    listener = await startListener();
    const sock = await appSocket();
    const client = await mcpClient();
    const pending = call(client, 'svc_ask', { question: token('long one'), timeout: 5_000 });
    const { frame, body } = await question(sock);
    expect(frame.leftMs).toBeLessThanOrEqual(600_000);
    expect(frame.leftMs).toBeGreaterThan(590_000);
    expect(body.deadline - body.askedAt).toBe(600_000);
    await answer(sock, body, 'ok');
    const result = await pending;
    expect(result.structuredContent).toMatchObject({ status: 'answered', answer: 'ok' });
  });

  it('answers bad arguments with an MCP error and keeps serving', async () => {
    const client = await mcpClient();
    const bad = await call(client, 'svc_ask', { question: 42 }).then(
      (r) => ({ isError: r.isError === true, text: r.content?.[0]?.text ?? '' }),
      (err: Error) => ({ isError: true, text: err.message }),
    );
    expect(bad.isError).toBe(true);
    expect(bad.text).toMatch(/question/);
    const negative = await call(client, 'svc_ask', { question: 'x', timeout: -1 }).then(
      (r) => r.isError === true,
      () => true,
    );
    expect(negative).toBe(true);
    expect((await client.listTools()).tools).toHaveLength(2);
  });

  it('says so, in words and at once, when no listener runs or no phone is paired', async () => {
    const client = await mcpClient();
    const none = await call(client, 'svc_ask', { question: 'hello?' });
    expect(none).toMatchObject({ isError: true, structuredContent: { status: 'failed', code: 'no_listener' } });
    expect(none.content[0]?.text).toMatch(/no svc listener is running/);

    // Another account: a computer with no phone at all.
    const lonely = await relay.createAccount();
    const other = await loggedInComputer({ url: relay.url, apiKey: lonely.apiKey, name: 'lonely' });
    const saved = { tmux, env, home };
    ({ tmux, env, home } = other);
    try {
      listener = await startListener();
      const c2 = await mcpClient();
      const nobody = await call(c2, 'svc_ask', { question: 'hello?' });
      expect(nobody).toMatchObject({ isError: true, structuredContent: { status: 'failed', code: 'no_device' } });
      expect(nobody.content[0]?.text).toMatch(/no phone is paired/);
      await listener.stop();
      listener = null;
    } finally {
      await other.tmux.cleanup();
      other.home.cleanup();
      ({ tmux, env, home } = saved);
    }
  });

  it('svc_notify returns once the relay has it; the app opens it', async () => {
    listener = await startListener();
    const sock = await appSocket();
    const client = await mcpClient();
    const said = token('tests are green');
    const result = await call(client, 'svc_notify', { message: said, title: 'CI' });
    expect(result.structuredContent).toEqual({ delivered: true });
    const frame = await sock.next('notify.new');
    expect(frame).toMatchObject({ computer: hookId, session: 'svc-proj', kind: 'notify' });
    const body = await app.open('notify', frame.envelope, computer.publicKey);
    expect(body).toMatchObject({ message: said, title: 'CI', session: 'svc-proj' });
    expect(databaseHolds(relay.dataDir, said)).toBe(false);
  });

  it('svc_notify with no phone open and none subscribed: not delivered, said so, and kept sealed in the inbox', async () => {
    listener = await startListener();
    const client = await mcpClient();
    const said = token('deploy finished');
    const result = await call(client, 'svc_notify', { message: said, title: 'CD' });
    // kept for the phone, only not seen yet: said in words, not an error the agent must handle
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ delivered: false, code: 'not_delivered' });
    expect(result.content[0]?.text).toMatch(/no phone has the app open, and none has notifications on.*inbox/);
    // the inbox has it, sealed: a phone that opens the app later reads it
    const inbox = await api(relay.url, 'GET', '/notifications', { key });
    expect(inbox.status).toBe(200);
    const kept = (inbox.json.notifications as { id: string; session: string; kind: string; envelope: unknown }[])[0];
    expect(kept).toMatchObject({ session: 'svc-proj', kind: 'notify' });
    const body = await app.open('notify', kept!.envelope, computer.publicKey);
    expect(body).toMatchObject({ message: said, title: 'CD' });
    expect(databaseHolds(relay.dataDir, said)).toBe(false);
    expect(JSON.stringify(inbox.json)).not.toContain(said);
  });

  it('two asks at once from two sessions each get their own answer', async () => {
    await tmux.newSession('svc-two', fakeAgentCommand('claude'));
    listener = await startListener();
    const sock = await appSocket();
    const [one, two] = await Promise.all([mcpClient('svc-proj'), mcpClient('svc-two')]);
    const p1 = call(one, 'svc_ask', { question: 'first?', timeout: 60 });
    const p2 = call(two, 'svc_ask', { question: 'second?', timeout: 60 });
    const q2 = await question(sock, (f) => f.session === 'svc-two');
    const q1 = await question(sock, (f) => f.session === 'svc-proj');
    expect(q1.body.question).toBe('first?');
    expect(q2.body.question).toBe('second?');
    await answer(sock, q2.body, 'answer two');
    await answer(sock, q1.body, 'answer one');
    expect((await p1).structuredContent).toMatchObject({ answer: 'answer one' });
    expect((await p2).structuredContent).toMatchObject({ answer: 'answer two' });
  });

  it('an ask survives a phone reconnect and a relay restart within its time', async () => {
    listener = await startListener();
    let sock = await appSocket();
    const client = await mcpClient();
    const pending = call(client, 'svc_ask', { question: token('still there'), timeout: 60 });
    const { body } = await question(sock);

    // The phone drops and comes back: the relay shows it the ask again.
    await sock.close();
    sock = await appSocket();
    expect((await question(sock)).body.id).toBe(body.id);

    // The relay restarts (it keeps asks in memory only): the listener announces the ask again on reconnect.
    await relay.restart();
    await waitFor(() => listener!.output().match(/connected to ws:/g)!.length >= 2, {
      timeoutMs: 20_000,
      what: 'the listener to reconnect',
    });
    sock = await waitFor(async () => appSocket().catch(() => null), { what: 'an app socket' });
    const again = await question(sock);
    expect(again.body.id).toBe(body.id);
    expect((await answer(sock, again.body, 'yes')).state).toBe('accepted');
    expect((await pending).structuredContent).toMatchObject({ status: 'answered', answer: 'yes' });
  });

  it('a listener restart ends the ask: the agent is told, the phone sees it expired', async () => {
    listener = await startListener();
    const sock = await appSocket();
    const client = await mcpClient();
    const pending = call(client, 'svc_ask', { question: token('restart'), timeout: 60 });
    const { body } = await question(sock);
    await listener.stop();
    const result = await pending;
    expect(result.structuredContent).toMatchObject({ status: 'failed', code: 'listener_stopped' });
    const first = listener;
    listener = await startListener();
    await sock
      .next('ask.closed', (f) => f.id === body.id && f.state === 'expired', 15_000)
      .catch((e) => {
        console.log(first.output(), '\n-----\n', listener?.output(), relay.logs.slice(-30).join('\n'));
        throw e;
      });
    expect((await answer(sock, body, 'late')).code).toBe('ask_expired');
  });

  it('tells the phone, sealed, when a session starts waiting for an approval and when a turn ends', async () => {
    // A stand-in for Claude Code drawing screens captured from the real one: idle; working on SIGUSR2; its approval
    // prompt on SIGUSR1; idle again on SIGALRM.
    const screens = new URL('../fixtures/screens/A1/', import.meta.url);
    const script = join(home.home, 'agent.mjs');
    writeFileSync(
      script,
      `import { readFileSync } from 'node:fs';
process.title = 'claude';
const draw = (name) => process.stdout.write('\\x1b[2J\\x1b[H' + readFileSync(new URL(name + '.txt', ${JSON.stringify(screens.href)}), 'utf8').replace(/\\n/g, '\\r\\n'));
process.stdin.setRawMode(true);
process.stdin.on('data', () => {});
let tick = 0;
let timer = null;
process.on('SIGUSR2', () => { timer = setInterval(() => draw('working-' + (1 + (tick++ % 2))), 300); });
process.on('SIGUSR1', () => { clearInterval(timer); draw('awaiting_approval-1'); });
process.on('SIGALRM', () => { clearInterval(timer); draw('idle-1'); });
draw('idle-1');
`,
    );
    await tmux.newSession('svc-agent', `node ${script}`);
    listener = await startListener();
    const sock = await appSocket();
    const pid = Number((await tmux.run(['display-message', '-p', '-t', '=svc-agent:', '#{pane_pid}'])).trim());
    const state = async () => {
      const reply = await import('../../actors/daemon/controlSocket.js').then((m) =>
        m.controlRequest(`${home.home}/.svc`, { type: 'state' }, 'state'),
      );
      return JSON.stringify(reply.actors.find((a) => a.id === 'session.svc-agent')?.value ?? null);
    };
    await waitFor(async () => (await state()).includes('"agent":"idle"'), { timeoutMs: 20_000, what: 'idle' });
    process.kill(pid, 'SIGUSR2');
    await waitFor(async () => (await state()).includes('"agent":"working"'), { timeoutMs: 20_000, what: 'working' });
    process.kill(pid, 'SIGALRM');
    const turn = await sock.next('notify.new', (f) => f.kind === 'turn' && f.session === 'svc-agent', 25_000);
    expect(await app.open('notify', turn.envelope, computer.publicKey)).toMatchObject({
      kind: 'turn',
      session: 'svc-agent',
      message: 'finished its turn',
    });
    process.kill(pid, 'SIGUSR1');
    const approval = await sock.next('notify.new', (f) => f.kind === 'approval' && f.session === 'svc-agent', 25_000);
    expect(await app.open('notify', approval.envelope, computer.publicKey)).toMatchObject({ kind: 'approval' });
  }, 90_000);
});
