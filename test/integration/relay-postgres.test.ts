/**
 * Two real `svc relay serve --store postgres://…` processes on one real Postgres, then with `--bus redis://…` on one
 * real Redis (issue 15, part 1 as far as it is built). Without the bus a push reaches a listener on the other
 * instance by its replay; with it, live, and so do its result and a live pane's request and answer. Accounts made with `svc relay account create --store`, pushes numbered once across instances
 * (none twice, none lost, a clientId deduplicated across them), a listener that reconnects to the other instance
 * gets its replay, and an instance killed with SIGKILL leaves the other serving everything it stored.
 */

import { createECDH, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer, Agent as HttpsAgent } from 'node:https';
import { type AddressInfo, connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureLanCertificate } from '../../actors/relay/tls.js';
import { openPostgresStore } from '../../relay-server/postgresStore.js';
import { RedisBus } from '../../relay-server/redisBus.js';
import { startRelay } from '../../relay-server/server.js';
import { runSvc, type SpawnedSvc, spawnSvc, svcEnv } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { registerTestDevice } from '../helpers/devices.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { startRedis } from '../helpers/redis.js';
import { api, someEnvelope, TestSocket, waitFor } from '../helpers/relay.js';

let pgServer: TestPostgres;
let store: string;
let home: string;
const relays: SpawnedSvc[] = [];

beforeAll(async () => {
  pgServer = await startPostgres();
  store = await pgServer.database();
  home = mkdtempSync(join(tmpdir(), 'svc-pgrelay-'));
}, 60_000);

afterAll(async () => {
  for (const r of relays) await r.stop().catch(() => {});
  await pgServer?.stop();
  rmSync(home, { recursive: true, force: true });
});

const env = () => svcEnv(home);

async function relay(name: string, bus?: string): Promise<{ proc: SpawnedSvc; url: string; wsUrl: string }> {
  const args = ['relay', 'serve', '--port', '0', '--store', store, '--data', join(home, name)];
  const proc = spawnSvc(bus ? [...args, '--bus', bus] : args, env());
  relays.push(proc);
  const line = await proc.waitForLine(/relay listening on http:\/\/127\.0\.0\.1:\d+/, 30_000);
  const url = /http:\/\/127\.0\.0\.1:\d+/.exec(line)![0];
  return { proc, url, wsUrl: `${url.replace('http', 'ws')}/ws` };
}

/** Sessions that write each line typed into them to a file of their own; returns where each one's file is. */
async function sinkSessions(
  computer: Awaited<ReturnType<typeof loggedInComputer>>,
  sessions: readonly string[],
): Promise<(name: string) => string> {
  const sink = (name: string) => join(computer.home.home, `${name}.txt`);
  for (const name of sessions)
    await computer.tmux.newSession(name, ['sh', '-c', `stty -echo; exec cat >> '${sink(name)}'`]);
  return sink;
}

/** Until `url`'s `GET /computers` lists every one of `sessions` for the computer `hookId`. */
async function sessionsListed(url: string, key: string, hookId: string, sessions: readonly string[]): Promise<void> {
  await waitFor(
    async () => {
      const { json } = await api(url, 'GET', '/computers', { key });
      const listed = json.computers?.find((c: { hookId: string }) => c.hookId === hookId)?.sessions;
      return sessions.every((n) => listed?.some((x: { name: string }) => x.name === n)) || null;
    },
    { timeoutMs: 20_000, what: `${sessions.join(', ')} listed` },
  );
}

describe('two relays on one Postgres', () => {
  it('share accounts, number pushes once, replay on the other instance, and outlive each other', async () => {
    const made = await runSvc(['relay', 'account', 'create', '--store', store, '--json'], env());
    expect(made.stderr).toBe('');
    const { apiKey: key } = JSON.parse(made.stdout) as { apiKey: string };
    const [a, b] = await Promise.all([relay('a'), relay('b')]);

    // the account made by the CLI is known to both
    const hookId = (await api(a.url, 'POST', '/computers', { key, body: { name: 'laptop' } })).json.hookId as string;
    expect((await api(b.url, 'POST', '/computers', { key, body: { name: 'laptop' } })).json.hookId).toBe(hookId);

    // pushes sent to both at once: each id once, none lost
    const body = (n: number) => ({
      type: 'agent.command',
      agentSessionName: 'svc-proj',
      body: `m${n}`,
      clientId: `c-${n}`,
    });
    const sent = await Promise.all(
      Array.from({ length: 20 }, (_, n) => api(n % 2 ? a.url : b.url, 'POST', '/pushes/send', { key, body: body(n) })),
    );
    const ids = sent.map((r) => r.json.id as number).sort((x, y) => x - y);
    expect(ids).toEqual(Array.from({ length: 20 }, (_, n) => n + 1));
    // a retry on the other instance is the same push
    const retry = await api(a.url, 'POST', '/pushes/send', { key, body: body(0) });
    expect(retry.json).toMatchObject({ id: sent[0]!.json.id, duplicate: true });

    // a listener on A reports a result; B sees it; a listener that reconnects to B gets the rest replayed
    const onA = await TestSocket.open(a.wsUrl, key);
    await onA.subscribeListener(hookId, 0);
    const first = await onA.next('push.new');
    onA.send({ type: 'push.result', id: first.push.id, state: 'injected' });
    await waitFor(
      async () => (await api(b.url, 'GET', `/pushes/${first.push.id}`, { key })).json.state === 'injected',
      {
        what: 'the result, seen on the other instance',
      },
    );
    await onA.close();

    // A dies at once; B serves what A stored, and the listener's replay
    await a.proc.stop('SIGKILL');
    const onB = await TestSocket.open(b.wsUrl, key);
    const subscribed = await onB.subscribeListener(hookId, first.push.id);
    expect(subscribed).toMatchObject({ replayed: 19 });
    const replayed = [];
    for (let i = 0; i < 19; i++) replayed.push((await onB.next('push.new')).push.id);
    expect(replayed).toEqual(ids.filter((id) => id !== first.push.id));
    await onB.close();
  }, 90_000);

  it('with a Redis bus: a push, its result and a live pane cross instances; a listener gone is offline on both', async () => {
    const redis = await startRedis();
    try {
      const { apiKey: key } = JSON.parse(
        (await runSvc(['relay', 'account', 'create', '--store', store, '--json'], env())).stdout,
      );
      const [a, b] = await Promise.all([relay('bus-a', redis.url), relay('bus-b', redis.url)]);
      const hookId = (await api(a.url, 'POST', '/computers', { key, body: { name: 'desk' } })).json.hookId as string;
      const listener = await TestSocket.open(a.wsUrl, key);
      await listener.subscribeListener(hookId, 0);
      const envelope = await someEnvelope();
      // an ask announced on A while B has no connection of the account: an app that connects to B later gets it
      const ask = { id: 'a_0123456789abcdef', session: 'svc-proj', deadline: Date.now() + 60_000, leftMs: 60_000 };
      listener.send({ type: 'ask.new', ...ask, envelope });
      await waitFor(
        async () => {
          const late = await TestSocket.open(b.wsUrl, key);
          late.send({ type: 'subscribe', role: 'app' });
          await late.next('subscribed');
          const got = await late.next('ask.new', (f) => f.id === ask.id, 1_000).catch(() => null);
          await late.close();
          return got !== null;
        },
        { timeoutMs: 15_000, what: 'the ask on B for an app that came later' },
      );
      const app = await TestSocket.open(b.wsUrl, key);
      app.send({ type: 'subscribe', role: 'app' });
      await app.next('subscribed');
      const sent = await api(b.url, 'POST', '/pushes/send', {
        key,
        body: { type: 'agent.command', agentSessionName: 'svc-proj', body: 'over the bus' },
      });
      // live, not by a replay: the listener never reconnected
      const got = await listener.next('push.new', (f) => f.push.id === sent.json.id, 10_000);
      expect(got.push).toMatchObject({ body: 'over the bus' });
      expect(got.push.replay).not.toBe(true);
      listener.send({ type: 'push.result', id: sent.json.id, state: 'injected' });
      await app.next('push.status', (f) => f.id === sent.json.id && f.state === 'injected', 10_000);

      // B knows A holds the listener: the app's live pane request goes there, and the answer comes back
      app.send({ type: 'pane.watch', computer: hookId, session: 'svc-proj', envelope });
      const asked = await listener.next('pane.watch', undefined, 10_000);
      listener.send({
        type: 'pane.status',
        session: 'svc-proj',
        deviceId: null,
        connection: asked.connection,
        state: 'streaming',
      });
      await app.next('pane.status', (f) => f.state === 'streaming', 10_000);
      // the listener leaves A: B says computer_offline to a new request at once
      await listener.close();
      await waitFor(
        async () => {
          app.send({ type: 'pane.watch', computer: hookId, session: 'svc-proj', envelope });
          const answer = await app.next('pane.status', (f) => f.state === 'stopped', 2_000).catch(() => null);
          return answer?.code === 'computer_offline';
        },
        { timeoutMs: 15_000, what: 'computer_offline from B once the listener left A' },
      );
      await app.close();
      for (const r of [a, b]) await r.proc.stop();
    } finally {
      await redis.stop();
    }
  }, 90_000);
  it('with a Redis bus, a key’s rate limit holds across instances; with Redis gone each instance limits alone', async () => {
    const redis = await startRedis();
    try {
      const { apiKey: key } = JSON.parse(
        (await runSvc(['relay', 'account', 'create', '--store', store, '--json'], env())).stdout,
      );
      const [a, b] = await Promise.all([relay('rl-a', redis.url), relay('rl-b', redis.url)]);
      // 120 requests at once, half to each: one instance alone would allow 60 (RELAY_HTTP_BUCKET), two 120
      const burst = () =>
        Promise.all(
          Array.from({ length: 120 }, (_, i) =>
            fetch(`${(i % 2 ? a : b).url}/computers`, {
              headers: { Authorization: `Bearer ${key}` },
            }),
          ),
        );
      const answers = await burst();
      const allowed = answers.filter((r) => r.status === 200).length;
      const refused = answers.filter((r) => r.status === 429);
      expect(allowed).toBeGreaterThanOrEqual(60);
      expect(allowed).toBeLessThan(100); // 60 at once, plus what 30/s refills while the burst lasts
      expect(refused.length).toBe(120 - allowed);
      const body = (await refused[0]!.json()) as { error: { code: string } };
      expect(body.error.code).toBe('rate_limited');
      expect(Number(refused[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // (which instance refuses is a race: the one whose requests come second meets the empty bucket; the total is
      // what shows the bucket is one — two buckets of 60 would have answered all 120)

      // Redis gone: requests are still answered, by each instance's own bucket, and the log says so once
      await redis.stop();
      await waitFor(
        async () => (await fetch(`${a.url}/computers`, { headers: { Authorization: `Bearer ${key}` } })).status === 200,
        {
          timeoutMs: 20_000,
          what: 'A answering without Redis',
        },
      );
      await a.proc.waitForLine(/rate limits: Redis did not answer .*each instance limits alone/, 10_000);
      for (const r of [a, b]) await r.proc.stop();
    } finally {
      await redis.stop().catch(() => {});
    }
  }, 90_000);
  it('a real listener on an instance killed mid-stream: every push typed once, in order, and answered', async () => {
    const redis = await startRedis();
    const { apiKey: key } = JSON.parse(
      (await runSvc(['relay', 'account', 'create', '--store', store, '--json'], env())).stdout,
    );
    const [a, b] = await Promise.all([relay('kill-a', redis.url), relay('kill-b', redis.url)]);
    // the listener reaches "the relay" through a TCP forwarder, to A first and to B once A is gone (as a load
    // balancer in front of two instances would)
    let target = new URL(a.url);
    const forwarder = createServer((client) => {
      const upstream = connect(Number(target.port), target.hostname);
      client.pipe(upstream).pipe(client);
      const drop = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', drop);
      upstream.on('error', drop);
      upstream.on('close', drop);
    });
    await new Promise<void>((r) => forwarder.listen(0, '127.0.0.1', () => r()));
    const front = `http://127.0.0.1:${(forwarder.address() as AddressInfo).port}`;
    const computer = await loggedInComputer({ url: front, apiKey: key, name: 'desk' });
    const sessions = ['svc-k1', 'svc-k2', 'svc-k3', 'svc-k4'];
    const sink = await sinkSessions(computer, sessions);
    const listener = spawnSvc(['listener'], computer.env);
    try {
      await listener.waitForLine(/connected to ws:/);
      await sessionsListed(b.url, key, computer.hookId, sessions);
      const sent: { id: number; session: string; body: string }[] = [];
      for (let n = 1; n <= 20; n++) {
        const session = sessions[n % 4]!;
        const via = n <= 8 ? (n % 2 ? a : b) : b;
        const r = await api(via.url, 'POST', '/pushes/send', {
          key,
          body: { type: 'agent.command', agentSessionName: session, body: `m${n}`, targetComputer: computer.hookId },
        });
        expect(r.status, `push m${n}`).toBe(200);
        sent.push({ id: r.json.id as number, session, body: `m${n}` });
        if (n === 8) {
          a.proc.child.kill('SIGKILL'); // mid-stream: some pushes typed, some in flight
          target = new URL(b.url);
        }
      }
      // each text typed exactly once, in order per session (read from the panes' files: no API calls, the key's
      // rate limit is shared with the listener's reconnects)
      for (const name of sessions) {
        const expected = sent.filter((p) => p.session === name).map((p) => p.body);
        const lines = () => readFileSync(sink(name), 'utf8').split('\n').filter(Boolean);
        await waitFor(() => lines().length >= expected.length, { timeoutMs: 60_000, what: `${name}'s lines` }).catch(
          (e) => {
            throw new Error(`${(e as Error).message}: ${lines().join(' ')}\n${listener.output()}`);
          },
        );
        expect(lines(), name).toEqual(expected);
      }
      // and every sender hears it was typed, from the instance left
      for (const p of sent)
        await waitFor(async () => (await api(b.url, 'GET', `/pushes/${p.id}`, { key })).json.state === 'injected', {
          timeoutMs: 20_000,
          intervalMs: 500,
          what: `push ${p.body} injected`,
        });
      expect(listener.output()).toMatch(/connected to ws:[\s\S]*connected to ws:/); // it came back, through B
    } finally {
      await listener.stop();
      forwarder.close();
      await computer.tmux.cleanup();
      computer.home.cleanup();
      await b.proc.stop();
      await redis.stop();
    }
  }, 120_000);
  it('Redis killed mid-stream: every push answered 200 is typed once, in order, from the store; none expires', async () => {
    let redis = await startRedis();
    const { apiKey: key } = JSON.parse(
      (await runSvc(['relay', 'account', 'create', '--store', store, '--json'], env())).stdout,
    );
    const [a, b] = await Promise.all([relay('blip-a', redis.url), relay('blip-b', redis.url)]);
    const computer = await loggedInComputer({ url: a.url, apiKey: key, name: 'blip' });
    const sessions = ['svc-b1', 'svc-b2'];
    const sink = await sinkSessions(computer, sessions);
    const listener = spawnSvc(['listener'], computer.env);
    try {
      await listener.waitForLine(/connected to ws:/);
      await sessionsListed(b.url, key, computer.hookId, sessions);
      await redis.stop();
      // Redis is gone: 8 pushes, alternately to A (the listener's) and B, each answered 200 (stored in Postgres)
      const sent: { id: number; session: string; body: string }[] = [];
      for (let n = 1; n <= 8; n++) {
        const session = sessions[n % 2]!;
        const r = await api((n % 2 ? a : b).url, 'POST', '/pushes/send', {
          key,
          body: { type: 'agent.command', agentSessionName: session, body: `r${n}`, targetComputer: computer.hookId },
        });
        expect(r.status, `push r${n}`).toBe(200);
        sent.push({ id: r.json.id as number, session, body: `r${n}` });
      }
      // typed from the store while Redis is still down…
      const lines = (name: string) => readFileSync(sink(name), 'utf8').split('\n').filter(Boolean);
      for (const name of sessions) {
        const expected = sent.filter((p) => p.session === name).map((p) => p.body);
        await waitFor(() => lines(name).length >= expected.length, {
          timeoutMs: 30_000,
          what: `${name}'s lines`,
        }).catch((e) => {
          throw new Error(`${(e as Error).message}: ${lines(name).join(' ')}\n${listener.output()}`);
        });
        expect(lines(name), name).toEqual(expected);
      }
      expect(a.proc.output()).toMatch(/delivered from the store: the bus did not bring it/);
      // …and once Redis is back, every sender hears it was typed, from either instance; nothing expired
      redis = await startRedis(redis.port);
      for (const p of sent)
        await waitFor(async () => (await api(b.url, 'GET', `/pushes/${p.id}`, { key })).json.state === 'injected', {
          timeoutMs: 20_000,
          intervalMs: 500,
          what: `push ${p.body} injected`,
        });
      // a push after Redis came back goes the ordinary way, once
      const after = await api(b.url, 'POST', '/pushes/send', {
        key,
        body: { type: 'agent.command', agentSessionName: 'svc-b1', body: 'after', targetComputer: computer.hookId },
      });
      expect(after.status).toBe(200);
      await waitFor(() => lines('svc-b1').includes('after'), {
        timeoutMs: 20_000,
        what: 'the push after Redis came back',
      });
      expect(lines('svc-b1').filter((l) => l === 'after')).toHaveLength(1);
    } finally {
      await listener.stop();
      await computer.tmux.cleanup();
      computer.home.cleanup();
      await a.proc.stop();
      await b.proc.stop();
      await redis.stop();
    }
  }, 120_000);

  it('Web Push across instances: a phone subscribed on A is pushed by B, signed with the one VAPID key', async () => {
    const redis = await startRedis();
    const certDir = mkdtempSync(join(tmpdir(), 'svc-pgpush-'));
    const cert = await ensureLanCertificate({ dir: certDir, ip: '127.0.0.1' });
    const received: { path: string; authorization: string }[] = [];
    const endpoint = createHttpsServer({ key: cert.key, cert: cert.cert }, (req, res) => {
      req.resume();
      req.on('end', () => {
        received.push({ path: req.url ?? '', authorization: String(req.headers.authorization) });
        res.writeHead(201).end();
      });
    });
    await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', () => r()));
    const open = async () =>
      startRelay({
        host: '127.0.0.1',
        port: 0,
        store: await openPostgresStore(store),
        bus: await RedisBus.open(redis.url),
        log: { info: () => {}, warn: () => {}, error: () => {} },
        webPush: { agent: new HttpsAgent({ ca: cert.cert }), batchMs: 50, pushHosts: ['127.0.0.1'] },
      });
    const [a, b] = [await open(), await open()];
    try {
      const { apiKey: key } = JSON.parse(
        (await runSvc(['relay', 'account', 'create', '--store', store, '--json'], env())).stdout,
      );
      const vapidA = (await api(a.url, 'GET', '/push/vapid', { key })).json.publicKey as string;
      expect((await api(b.url, 'GET', '/push/vapid', { key })).json.publicKey).toBe(vapidA);
      const phone = await registerTestDevice({ url: a.url, apiKey: key }, 'app', 'phone');
      const ecdh = createECDH('prime256v1');
      ecdh.generateKeys();
      const port = (endpoint.address() as AddressInfo).port;
      const subscription = {
        endpoint: `https://127.0.0.1:${port}/push/phone`,
        keys: { p256dh: ecdh.getPublicKey('base64url'), auth: randomBytes(16).toString('base64url') },
      };
      const sub = await api(a.url, 'POST', '/push/subscriptions', {
        key,
        body: { deviceId: phone.deviceId, subscription },
      });
      expect(sub.status).toBe(200);
      // the listener is on B
      const hookId = (await api(b.url, 'POST', '/computers', { key, body: { name: 'desk' } })).json.hookId as string;
      const listener = await TestSocket.open(b.wsUrl, key);
      await listener.subscribeListener(hookId, 0);
      listener.send({
        type: 'notify.new',
        id: 'n_1',
        session: 'svc-proj',
        kind: 'notify',
        envelope: await someEnvelope(),
      });
      const got = await waitFor(() => received[0], { timeoutMs: 15_000, what: 'a push from B at the endpoint' });
      expect(got.path).toBe('/push/phone');
      expect(got.authorization).toContain(`k=${vapidA}`);
      await listener.close();
    } finally {
      await a.close();
      await b.close();
      await new Promise((r) => endpoint.close(r));
      rmSync(certDir, { recursive: true, force: true });
      await redis.stop();
    }
  }, 60_000);
});
