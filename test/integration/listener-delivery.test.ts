/**
 * Delivery integrity (issue 20): every push the relay accepted ends typed once or reported, whatever happens in
 * between — the listener killed mid-burst, its results crowded out by apps, the relay stopped under load.
 * The real relay on a loopback port with its SQLite file, the real `svc listener` process, real tmux on a private
 * socket, the fake agent logging every paste and submit.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runSvc, type SpawnedSvc, spawnSvc, svcEnv } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { computerDevice, registerTestDevice } from '../helpers/devices.js';
import { freePort } from '../helpers/ports.js';
import { api, pushStatus, startTestRelay, type TestRelay, TestSocket, waitFor } from '../helpers/relay.js';
import { fakeAgentCommand } from '../helpers/tmux.js';

const FINAL = ['injected', 'refused', 'expired'];
/** Enough HTTP allowance for a test that sends and polls many pushes at once. */
const WIDE_HTTP = { capacity: 5_000, refillPerSecond: 5_000 };

let relay: TestRelay | null = null;
let computer: TestComputer | null = null;
const listeners: SpawnedSvc[] = [];
const sockets: TestSocket[] = [];
/** `svc relay serve` processes and their temp dirs. */
const relayProcesses: SpawnedSvc[] = [];
const tempDirs: string[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) await s.close();
  for (const l of listeners.splice(0)) await l.stop('SIGKILL');
  for (const p of relayProcesses.splice(0)) await p.stop('SIGKILL');
  for (const d of tempDirs.splice(0)) await rm(d, { recursive: true, force: true });
  await computer?.tmux.cleanup();
  computer?.home.cleanup();
  computer = null;
  await relay?.close();
  relay = null;
});

async function startListener(c: TestComputer): Promise<SpawnedSvc> {
  const proc = spawnSvc(['listener'], c.env);
  listeners.push(proc);
  await proc.waitForLine(/connected to ws:/);
  return proc;
}

/** A session running the fake agent, logging what it receives to a file of its own. */
async function agentSession(c: TestComputer, name: string): Promise<string> {
  const logFile = join(c.home.home, `${name}.agent.jsonl`);
  await c.tmux.newSession(name, fakeAgentCommand('claude', { FAKE_AGENT_LOG: logFile }));
  await waitFor(async () => (await c.tmux.capture(name)).includes('›'), { what: `${name} to draw its prompt` });
  return logFile;
}

/** Events the fake agent logged: pastes and submits with their text. */
function agentEvents(logFile: string): { event: string; text?: string }[] {
  if (!existsSync(logFile)) return [];
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { event: string; text?: string });
}

/** Each push's state and code (a 429 waited out: a relay with its default limits answers some). */
async function states(
  r: Pick<TestRelay, 'url' | 'apiKey'>,
  ids: number[],
): Promise<Map<number, { state: string; code: string | null }>> {
  const out = new Map<number, { state: string; code: string | null }>();
  for (const id of ids) out.set(id, await pushStatus(r, id));
  return out;
}

/** Wait until every push is final; the error names those that are not. */
async function allFinal(r: Pick<TestRelay, 'url' | 'apiKey'>, ids: number[], timeoutMs: number) {
  let last = new Map<number, { state: string; code: string | null }>();
  try {
    await waitFor(
      async () => {
        last = await states(r, ids);
        return [...last.values()].every((s) => FINAL.includes(s.state));
      },
      { timeoutMs, intervalMs: 200, what: 'every push to be final' },
    );
  } catch (error) {
    const open = [...last.entries()].filter(([, s]) => !FINAL.includes(s.state)).map(([id, s]) => `${id}:${s.state}`);
    throw new Error(`${(error as Error).message}; still open: ${open.join(' ')}`);
  }
  return last;
}

/** `svc relay serve` as its own process on a fixed port and data dir, once it says it is listening. */
async function serveRelay(port: number, dataDir: string, env: NodeJS.ProcessEnv): Promise<SpawnedSvc> {
  const proc = spawnSvc(['relay', 'serve', '--host', '127.0.0.1', '--port', String(port), '--data', dataDir], env);
  relayProcesses.push(proc);
  await proc.waitForLine(/^relay listening on http:\/\/127\.0\.0\.1:\d+$/, 20_000);
  return proc;
}

/**
 * Every push typed at most once; every `injected` one typed (pasted and submitted) exactly once; nothing typed
 * that was reported refused for a reason other than inject_failed (which says it may be partly typed).
 */
function expectTypedOnceOrReported(
  texts: Map<number, string>,
  final: Map<number, { state: string; code: string | null }>,
  events: { event: string; text?: string }[],
) {
  const pastes = events.filter((e) => e.event === 'paste' || e.event === 'type');
  const submits = events.filter((e) => e.event === 'submit');
  for (const [id, text] of texts) {
    const s = final.get(id)!;
    const submitted = submits.filter((e) => e.text?.includes(text)).length;
    const pasted = pastes.filter((e) => e.text?.includes(text)).length;
    const what = `push ${id} ${s.state} ${s.code ?? ''}: pasted ${pasted}, submitted ${submitted}`;
    expect(submitted, what).toBeLessThanOrEqual(1);
    expect(pasted, what).toBeLessThanOrEqual(1);
    if (s.state === 'injected') expect(submitted, what).toBe(1);
    else if (s.code !== 'inject_failed') expect(submitted, what).toBe(0);
  }
}

describe('delivery integrity', () => {
  it('kill -9 during a burst of sealed pushes, three times: every accepted push ends typed once or reported', async () => {
    relay = await startTestRelay({ httpBucket: WIDE_HTTP });
    const r = relay;
    computer = await loggedInComputer({ url: r.url, apiKey: r.apiKey, name: 'burst-box' });
    const c = computer;
    const target = await computerDevice(r, c.hookId);
    const app = await registerTestDevice(r);
    let seq = 0;
    let listener = await startListener(c);

    // Killed after the 7th, 3rd and 1st message typed of each round (a round per session: each has its own
    // input bucket, so each round types some before its bucket refuses the rest).
    for (const [round, killAfter] of [7, 3, 1].entries()) {
      const session = `svc-burst-${round}`;
      const logFile = await agentSession(c, session);
      const texts: string[] = [];
      const bodies = [];
      for (let i = 0; i < 50; i++) {
        const text = `burst-${round}-${i}-${randomBytes(4).toString('hex')}`;
        texts.push(text);
        bodies.push({
          type: 'agent.command',
          agentSessionName: session,
          body: '',
          targetComputer: c.hookId,
          sealed: await app.seal('agent.command', target, { text, seq: ++seq, sentAt: Date.now(), session }),
        });
      }
      // No gap: each POST right after the previous answer.
      const ids: number[] = [];
      const sending = (async () => {
        for (const body of bodies)
          ids.push((await api(r.url, 'POST', '/pushes/send', { key: r.apiKey, body })).json.id);
      })();
      await waitFor(() => agentEvents(logFile).filter((e) => e.event === 'submit').length >= killAfter, {
        timeoutMs: 20_000,
        what: `${killAfter} message(s) typed into ${session}`,
      });
      listener.child.kill('SIGKILL');
      await listener.exited;
      await sending;
      listener = await startListener(c);

      const final = await allFinal(r, ids, 30_000);
      const byId = new Map(ids.map((id, i) => [id, texts[i]!]));
      expectTypedOnceOrReported(byId, final, agentEvents(logFile));
      // The last one typed before the kill may be reported inject_failed: the listener died before it could say.
      expect([...final.values()].filter((s) => s.state === 'injected').length).toBeGreaterThanOrEqual(killAfter - 1);
    }
  }, 180_000);

  it('the relay stopped (as SIGTERM stops it) while sealed pushes are being opened: none is bad_seal, all are reported', async () => {
    relay = await startTestRelay({ httpBucket: WIDE_HTTP });
    const r = relay;
    computer = await loggedInComputer({ url: r.url, apiKey: r.apiKey, name: 'shutdown-box' });
    const c = computer;
    const target = await computerDevice(r, c.hookId);
    const app = await registerTestDevice(r);
    await startListener(c);
    const sessions = ['svc-load-0', 'svc-load-1', 'svc-load-2'];
    for (const name of sessions) await agentSession(c, name);

    // 30 sealed pushes over three sessions; each POST is tried until the relay takes it (the same clientId, so it is
    // stored once), through the relay's shutdown and its return 1.5 s later.
    const ids: number[] = [];
    const posting = (async () => {
      for (let seq = 1; seq <= 30; seq++) {
        const session = sessions[seq % 3]!;
        const sealed = await app.seal('agent.command', target, {
          text: `load-${seq}`,
          seq,
          sentAt: Date.now(),
          session,
        });
        const body = {
          type: 'agent.command',
          agentSessionName: session,
          body: '',
          targetComputer: c.hookId,
          sealed,
          clientId: `load:${seq}`,
        };
        for (;;) {
          const res = await api(r.url, 'POST', '/pushes/send', { key: r.apiKey, body }).catch(() => null);
          if (res?.status === 200) {
            ids.push(res.json.id);
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    })();
    await waitFor(() => ids.length >= 8, { what: 'the first pushes taken' });
    await r.restart({ downMs: 1_500 });
    await posting;

    const final = await allFinal(r, ids, 30_000);
    const codes = [...final.values()].map((s) => s.code);
    expect(codes).not.toContain('bad_seal');
    expect([...final.values()].every((s) => s.state === 'injected' || s.state === 'refused')).toBe(true);
  }, 90_000);

  it('SIGTERM to a real `svc relay serve` while 30 sealed pushes are posted and opened, then the relay started again: none is bad_seal, each typed at most once, all final', async () => {
    // The relay as its own process, as it runs for real: a fixed port (so clients come back to the same address)
    // and its data dir, with an account and a read-only key made by `svc relay … create` beforehand.
    const root = await mkdtemp(join(tmpdir(), 'svc-relay-proc-'));
    tempDirs.push(root);
    const dataDir = join(root, 'relay');
    const env = svcEnv(root);
    const made = await runSvc(['relay', 'account', 'create', '--data', dataDir, '--json'], env);
    expect(made.code, made.stderr).toBe(0);
    const { accountId, apiKey } = JSON.parse(made.stdout) as { accountId: string; apiKey: string };
    // Polling with a key of its own, so the test's GETs never spend the allowance the listener reads devices with.
    const readKey = await runSvc(
      ['relay', 'key', 'create', '--data', dataDir, '--account', accountId, '--scopes', 'push:read', '--json'],
      env,
    );
    expect(readKey.code, readKey.stderr).toBe(0);
    const port = await freePort();
    let relayProc = await serveRelay(port, dataDir, env);
    const r = { url: `http://127.0.0.1:${port}`, apiKey };
    const reader = { url: r.url, apiKey: JSON.parse(readKey.stdout).apiKey as string };

    computer = await loggedInComputer({ url: r.url, apiKey, name: 'sigterm-box' });
    const c = computer;
    const target = await computerDevice(r, c.hookId);
    const app = await registerTestDevice(r);
    await startListener(c);
    const sessions = ['svc-term-0', 'svc-term-1', 'svc-term-2'];
    const logFiles: string[] = [];
    for (const name of sessions) logFiles.push(await agentSession(c, name));

    // Sealed before any is sent, so the posts follow each other closely. Each agent.command makes the listener read
    // the device list afresh, so the pushes it is opening when the relay stops read it from a relay going away.
    const texts = new Map<string, string>();
    const bodies = [];
    for (let seq = 1; seq <= 30; seq++) {
      const session = sessions[seq % 3]!;
      const text = `sigterm-${seq}-${randomBytes(4).toString('hex')}`;
      const clientId = `sigterm:${seq}`;
      texts.set(clientId, text);
      const sealed = await app.seal('agent.command', target, { text, seq, sentAt: Date.now(), session });
      bodies.push({
        type: 'agent.command',
        agentSessionName: session,
        body: '',
        targetComputer: c.hookId,
        sealed,
        clientId,
      });
    }
    // The SIGTERM goes when the first push is typed: the listener is then opening the next ones (reading the device
    // list for each) and 20 are still to be posted. Each POST is tried until the relay takes it (the same clientId,
    // so it is stored once), through the SIGTERM and until the new process listens.
    const firstTyped = waitFor(() => logFiles.flatMap(agentEvents).some((e) => e.event === 'submit'), {
      timeoutMs: 20_000,
      what: 'the first push typed',
    });
    const ids: number[] = [];
    const textById = new Map<number, string>();
    const posting = (async () => {
      for (const body of bodies) {
        if (ids.length === 10) await firstTyped;
        for (;;) {
          const res = await api(r.url, 'POST', '/pushes/send', { key: apiKey, body }).catch(() => null);
          if (res?.status === 200) {
            ids.push(res.json.id);
            textById.set(res.json.id, texts.get(body.clientId)!);
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    })();
    await firstTyped;
    expect(ids.length).toBeLessThan(30);
    relayProc.child.kill('SIGTERM');
    expect(await relayProc.exited, relayProc.output()).toBe(0);
    expect(relayProc.child.signalCode).toBeNull();
    relayProc = await serveRelay(port, dataDir, env);
    await posting;
    expect(new Set(ids).size).toBe(30);

    // A device list the listener could not read while the relay was away is temporary (devices_unavailable), never
    // bad_seal (which says the envelope was tampered with); each push reported, and typed at most once.
    const final = await allFinal(reader, ids, 60_000);
    const codes = [...final.values()].map((s) => s.code);
    expect(codes).not.toContain('bad_seal');
    expect([...final.values()].every((s) => s.state === 'injected' || s.state === 'refused')).toBe(true);
    expect([...final.values()].some((s) => s.state === 'injected')).toBe(true);
    expectTypedOnceOrReported(textById, final, logFiles.flatMap(agentEvents));
  }, 150_000);

  it('apps flooding junk pane.keys do not crowd out the listener’s results: every push.result arrives', async () => {
    // A small frame allowance, so the listener's answers to the junk (keys.result) use it all up.
    relay = await startTestRelay({ httpBucket: WIDE_HTTP, wsBucket: { capacity: 20, refillPerSecond: 10 } });
    const r = relay;
    computer = await loggedInComputer({ url: r.url, apiKey: r.apiKey, name: 'flood-box' });
    const c = computer;
    await startListener(c);
    for (let i = 0; i < 5; i++) {
      const s = await TestSocket.open(r.wsUrl, r.apiKey);
      sockets.push(s);
      await s.subscribeApp();
    }
    let flooding = true;
    // Well-formed envelopes from connections without a device: the listener refuses each (e2ee_required).
    const app = await registerTestDevice(r);
    const envelope = await app.seal('pane.keys', await computerDevice(r, c.hookId), {
      session: 'svc-proj',
      seq: 1,
      text: 'x',
    });
    const junk = { type: 'pane.keys', computer: c.hookId, session: 'svc-proj', envelope };
    const flood = (async () => {
      while (flooding) {
        for (const s of sockets) for (let i = 0; i < 10; i++) s.send(junk);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    // The listener is answering the junk (its allowance is spent) before the messages go.
    await waitFor(() => sockets.some((s) => s.all('keys.result').length > 20), { what: 'keys.result answers' });

    const ids: number[] = [];
    for (let i = 0; i < 20; i++) {
      const body = { type: 'agent.command', agentSessionName: 'svc-proj', body: `flooded ${i}` };
      ids.push((await api(r.url, 'POST', '/pushes/send', { key: r.apiKey, body })).json.id);
    }
    try {
      const final = await allFinal(r, ids, 20_000);
      // Typed until the session's own bucket refuses; each one reported.
      expect([...final.values()].filter((s) => s.state === 'injected').length).toBeGreaterThanOrEqual(10);
      expect([...final.values()].every((s) => s.state === 'injected' || s.code === 'rate_limited')).toBe(true);
    } finally {
      flooding = false;
      await flood;
    }
  }, 60_000);
});
