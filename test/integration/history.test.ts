/**
 * Session history through the real listener and relay (spec 4.11.1, 4.12): a Claude Code session's transcript (the
 * real program's, test/fixtures/transcripts/A1, with unique strings planted in its prompt, a tool's arguments and
 * the tool's output) in Claude Code's own store under the computer's HOME, the compiled `svc listener`, a phone on
 * the relay's WebSocket. The phone gets sealed chunks as the transcript grows and opens them; no tool argument
 * beyond a shell command's first line, and no output, is in anything that left the listener; the relay's database holds none of it in the clear; a device paired
 * afterwards cannot open the earlier chunks; a restarted listener does not send again what it sent.
 */
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HistoryChunkBody } from '../../core/protocol/bodies.js';
import { claudeProjectDir } from '../../core/sessions/control.js';
import { type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { computerDevice, databaseHolds, registerTestDevice, type TestDevice } from '../helpers/devices.js';
import { api, startTestRelay, type TestRelay, TestSocket, waitFor } from '../helpers/relay.js';

const SESSION = 'svc-hist';
const PROMPT = 'hello there prompt-5c1e';
const ARG = 'argument-9d2b';
const OUTPUT = 'output-77af';

let relay: TestRelay;
let computer: TestComputer;
let me: { id: string; publicKey: string };
let app: TestDevice;
let sock: TestSocket;
let listener: SpawnedSvc | null = null;
let transcript: string;
let lines: string[];
let key: string;

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

beforeEach(async () => {
  key = (await relay.createAccount()).apiKey;
  computer = await loggedInComputer({ url: relay.url, apiKey: key, name: 'box' });
  me = await computerDevice({ url: relay.url, apiKey: key }, computer.hookId);
  app = await registerTestDevice({ url: relay.url, apiKey: key }, 'app', 'phone');
  const project = join(computer.home.home, 'proj');
  mkdirSync(project);
  await computer.tmux.newSession(SESSION, ['cat'], {
    cwd: project,
    options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
  });
  // the transcript Claude Code 2.1.197 wrote, with what must never leave planted in it
  lines = readFileSync('test/fixtures/transcripts/A1/session.jsonl', 'utf8')
    .replaceAll('hello there', PROMPT)
    .replaceAll('touch svc-approval-probe.txt', `touch svc-approval-probe.txt\\n${ARG}`)
    .replaceAll('(Bash completed with no output)', OUTPUT)
    .replaceAll('"stdout":""', `"stdout":"${OUTPUT}"`)
    .trim()
    .split('\n');
  expect(lines.join('\n')).toContain(ARG);
  expect(lines.join('\n')).toContain(OUTPUT);
  const store = join(computer.home.home, '.claude', 'projects', claudeProjectDir(project));
  mkdirSync(store, { recursive: true });
  transcript = join(store, '9f7cad6b-8561-4da3-baa0-ecdb6906eb73.jsonl');
  const firstTurn = lines.findIndex((l) => l.includes('run a command'));
  writeFileSync(transcript, `${lines.slice(0, firstTurn).join('\n')}\n`);
  lines = lines.slice(firstTurn);
  sock = await TestSocket.open(relay.wsUrl, key);
  sock.send({ type: 'subscribe', role: 'app', deviceId: app.deviceId });
  await sock.next('subscribed');
});

afterEach(async () => {
  await sock?.close();
  await listener?.stop();
  listener = null;
  await computer.tmux.cleanup();
  computer.home.cleanup();
});

const startListener = async () => {
  listener = spawnSvc(['listener'], computer.env);
  await listener.waitForLine(/connected to ws:/);
};

/** Every history item the phone got so far, opened, in the relay's order. */
async function itemsSeen() {
  const frames = sock.all('history.chunk').filter((f) => f.session === SESSION);
  const bodies = await Promise.all(
    frames.map(async (f) => HistoryChunkBody.parse(await app.open('history.chunk', f.envelope, me.publicKey))),
  );
  return bodies.flatMap((b) => b.items);
}

describe('session history', () => {
  it('reaches the phone sealed as the transcript grows, with no tool argument or output in it', async () => {
    await startListener();
    const first = await waitFor(async () => ((await itemsSeen()).some((i) => i.k === 'reply') ? itemsSeen() : null), {
      timeoutMs: 15_000,
      what: 'the first turn on the phone',
    });
    expect(first).toContainEqual({ k: 'prompt', text: PROMPT });

    // the agent writes its next turn: a tool call and its output
    appendFileSync(transcript, `${lines.join('\n')}\n`);
    const all = await waitFor(
      async () => {
        const items = await itemsSeen();
        return items.some((i) => i.k === 'result') ? items : null;
      },
      { timeoutMs: 15_000, what: 'the tool call on the phone' },
    );
    // the command's first line leaves (sealed), so the person reads what ran; its second line does not
    expect(all).toContainEqual(
      expect.objectContaining({ k: 'tool', name: 'Bash', target: 'touch svc-approval-probe.txt …' }),
    );
    expect(all).toContainEqual(expect.objectContaining({ k: 'result', ok: true }));
    expect(all.filter((i) => i.k === 'prompt').map((i) => i.text)).toEqual([
      PROMPT,
      expect.stringMatching(/^run a command/),
    ]);

    // nothing of the tool's arguments or output left the listener, opened or not; the relay holds no text
    const everything = `${JSON.stringify(sock.frames)}${JSON.stringify(all)}${listener!.output()}`;
    for (const planted of [ARG, OUTPUT]) expect(everything).not.toContain(planted);
    for (const planted of [ARG, OUTPUT, 'prompt-5c1e', 'svc-approval-probe'])
      expect(databaseHolds(relay.dataDir, planted)).toBe(false);

    // the relay pages it to the phone; a device paired now cannot open what was sealed before it
    const page = await api(relay.url, 'GET', `/history?computer=${computer.hookId}&session=${SESSION}`, { key });
    expect(page.status).toBe(200);
    expect(page.json.chunks.length).toBeGreaterThan(0);
    const later = await registerTestDevice({ url: relay.url, apiKey: key }, 'app', 'new phone');
    for (const chunk of page.json.chunks) {
      await expect(later.open('history.chunk', chunk.envelope, me.publicKey)).rejects.toThrow();
      await expect(app.open('history.chunk', chunk.envelope, me.publicKey)).resolves.toMatchObject({
        session: SESSION,
      });
    }
    // another account sees nothing of it
    const other = (await relay.createAccount()).apiKey;
    const refused = await api(relay.url, 'GET', `/history?computer=${computer.hookId}&session=${SESSION}`, {
      key: other,
    });
    expect(refused.status).toBe(404);
  }, 60_000);

  it('a restarted listener goes on where it stopped: nothing is sent twice', async () => {
    await startListener();
    await waitFor(async () => (await itemsSeen()).some((i) => i.k === 'reply'), {
      timeoutMs: 15_000,
      what: 'first turn',
    });
    const history = async () =>
      (await api(relay.url, 'GET', `/history?computer=${computer.hookId}&session=${SESSION}`, { key })).json
        .chunks as unknown[];
    const before = (await history()).length;
    await listener!.stop();
    await startListener();
    await listener!.waitForLine(/history of svc-hist: following /);
    appendFileSync(transcript, `${lines.join('\n')}\n`);
    await waitFor(async () => (await itemsSeen()).some((i) => i.k === 'result'), {
      timeoutMs: 15_000,
      what: 'new turn',
    });
    const prompts = (await itemsSeen()).filter((i) => i.k === 'prompt');
    expect(prompts.map((p) => p.text)).toEqual([PROMPT, expect.stringMatching(/^run a command/)]);
    expect((await history()).length).toBeGreaterThan(before);
  }, 60_000);

  it('--no-turn-history sends nothing', async () => {
    listener = spawnSvc(['listener', '--no-turn-history'], computer.env);
    await listener.waitForLine(/connected to ws:/);
    await listener.waitForLine(/session history: off \(--no-turn-history\)/);
    appendFileSync(transcript, `${lines.join('\n')}\n`);
    // the inventory has reported the session (so a follower would have started), and still no chunk came
    await waitFor(
      async () => {
        const res = await api(relay.url, 'GET', '/computers', { key });
        return res.json.computers[0]?.sessions.some((s: { name: string }) => s.name === SESSION);
      },
      { timeoutMs: 15_000, what: 'the session reported' },
    );
    const page = await api(relay.url, 'GET', `/history?computer=${computer.hookId}&session=${SESSION}`, { key });
    expect(page.json.chunks).toEqual([]);
    expect(sock.all('history.chunk')).toEqual([]);
  }, 60_000);
});
