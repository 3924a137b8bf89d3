/**
 * Web Push against push endpoints that misbehave (issue 28; relay-server/push/transport.ts, core/notify/endpoint.ts):
 * real HTTPS endpoints on loopback with their own certificate, the real relay, a listener on its WebSocket sending
 * `notify.new`. An endpoint that answers 201 and then streams forever is cut off at the answer cap (it once grew
 * the relay's memory until it died, again after every restart) and its subscription is dropped after three failures;
 * one that never answers is timed out and does not hold the relay's stop; a device may have only two sends open;
 * and a relay without `--push-hosts` refuses endpoints on loopback, private, link-local and non-https addresses.
 */
import { createECDH, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureLanCertificate } from '../../actors/relay/tls.js';
import { openSqliteStore } from '../../relay-server/sqliteStore.js';
import { registerTestDevice } from '../helpers/devices.js';
import { api, someEnvelope, startTestRelay, type TestRelay, TestSocket, waitFor } from '../helpers/relay.js';

let certDir: string;
let cert: { key: string; cert: string };
const servers: Server[] = [];
const sockets = new Set<Socket>();

/** An HTTPS push endpoint on loopback; `handle` answers (or does not). */
async function endpoint(handle: Parameters<typeof createServer>[1]): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const server = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    hits++;
    handle?.(req, res);
  });
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits };
}

const subscription = (url: string) => {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return {
    endpoint: `${url}/push/phone`,
    keys: { p256dh: ecdh.getPublicKey('base64url'), auth: randomBytes(16).toString('base64url') },
  };
};

/** A relay for these tests, a phone subscribed to `url`, and a listener that sends `notify.new` for it. */
async function setup(relay: TestRelay, url: string) {
  const key = relay.apiKey;
  const phone = await registerTestDevice({ url: relay.url, apiKey: key }, 'app', 'phone');
  const sub = await api(relay.url, 'POST', '/push/subscriptions', {
    key,
    body: { deviceId: phone.deviceId, subscription: subscription(url) },
  });
  expect(sub.status, JSON.stringify(sub.json)).toBe(200);
  const hookId = (await api(relay.url, 'POST', '/computers', { key, body: { name: `desk-${Date.now()}` } })).json
    .hookId as string;
  const listener = await TestSocket.open(relay.wsUrl, key);
  await listener.subscribeListener(hookId, 0);
  let n = 0;
  /** One notification, each for a session of its own (so none is folded into a batch). */
  const notify = async () => {
    n++;
    listener.send({
      type: 'notify.new',
      id: `n_${n}`,
      session: `svc-s${n}`,
      kind: 'notify',
      envelope: await someEnvelope(),
    });
    // kept by the relay (its ack waits for the push service's word, which these endpoints hold back or refuse)
    const kept = new RegExp(`notify \\S+/n_${n} \\(notify\\) for svc-s${n}: kept`);
    await waitFor(() => logged(relay, kept) === 1, { what: `notification ${n} kept` });
  };
  /** Whether the relay still holds the phone's subscription (DELETE says whether there was one; it is the end). */
  const stillSubscribed = async () =>
    (await api(relay.url, 'DELETE', `/push/subscriptions/${phone.deviceId}`, { key })).json.deleted as boolean;
  return { phone, listener, notify, stillSubscribed };
}

const logged = (relay: TestRelay, re: RegExp) => relay.logs.filter((l) => re.test(l)).length;

beforeAll(async () => {
  certDir = mkdtempSync(join(tmpdir(), 'svc-push-hostile-'));
  cert = await ensureLanCertificate({ dir: certDir, ip: '127.0.0.1' });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  rmSync(certDir, { recursive: true, force: true });
});

const pushOptions = (more: object = {}) => ({
  webPush: { agent: new Agent({ ca: cert.cert }), batchMs: 50, pushHosts: ['127.0.0.1'], ...more },
});

describe('Web Push to endpoints that misbehave', () => {
  it('an endpoint that answers 201 and streams forever is cut off, and dropped after three failures', async () => {
    const streams = new Set<NodeJS.Timeout>();
    const stream = await endpoint((req, res) => {
      req.resume();
      res.writeHead(201);
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const t = setInterval(() => res.write(chunk), 5);
      streams.add(t);
      res.on('close', () => {
        clearInterval(t);
        streams.delete(t);
      });
    });
    const relay = await startTestRelay(pushOptions());
    try {
      const { listener, notify, stillSubscribed } = await setup(relay, stream.url);
      for (let i = 1; i <= 3; i++) {
        await notify();
        await waitFor(() => logged(relay, /web push to \S+ failed \(too_large\)/) >= i, {
          what: `failure ${i} logged`,
          timeoutMs: 20_000,
        });
      }
      await waitFor(() => logged(relay, /subscription of \S+ dropped: 3 failures in a row/) === 1, {
        what: 'the subscription dropped',
      });
      // the streams were cut, not held: nothing is still sending into the relay
      await waitFor(() => streams.size === 0, { what: 'every stream closed by the relay' });
      // a fourth notification sends nothing: the subscription is gone
      const hits = stream.hits();
      await notify();
      expect(stream.hits()).toBe(hits);
      expect(await stillSubscribed()).toBe(false);
      // and the relay serves on
      expect((await api(relay.url, 'GET', '/push/vapid', { key: relay.apiKey })).status).toBe(200);
      await listener.close();
    } finally {
      await relay.close();
    }
  }, 90_000);

  it('an endpoint that never answers is timed out, two sends at most are open per device, and stop is not held', async () => {
    const silent = await endpoint((req) => {
      req.resume(); // reads the request, never answers
    });
    const relay = await startTestRelay(pushOptions({ totalTimeoutMs: 3_000 }));
    let closed = false;
    try {
      const { listener, notify } = await setup(relay, silent.url);
      for (let i = 0; i < 4; i++) await notify();
      await waitFor(() => logged(relay, /web push notify to \S+ skipped: 2 sends to it still open/) === 2, {
        what: 'the third and fourth sends skipped',
      });
      expect(silent.hits()).toBeLessThanOrEqual(2);
      await waitFor(() => logged(relay, /web push to \S+ failed \(timeout\)/) === 2, {
        what: 'both open sends timed out',
        timeoutMs: 20_000,
      });
      // a send still open when the relay stops is ended at once
      await notify();
      await waitFor(() => silent.hits() >= 3, { what: 'a third send open' });
      await listener.close();
      await relay.close();
      closed = true;
    } finally {
      if (!closed) await relay.close();
    }
  }, 60_000);

  it('checks the address again at connect: a name that now resolves to loopback is refused and dropped', async () => {
    const ok = await endpoint((req, res) => {
      req.resume();
      res.writeHead(201).end();
    });
    const relay = await startTestRelay({ webPush: { agent: new Agent({ ca: cert.cert }), batchMs: 50 } });
    try {
      const phone = await registerTestDevice({ url: relay.url, apiKey: relay.apiKey }, 'app', 'phone');
      // subscribed while the name pointed somewhere public (written as the relay would have), now it is loopback
      const store = openSqliteStore(relay.dataDir);
      await store.putPushSubscription({
        deviceId: phone.deviceId,
        accountId: relay.accountId,
        endpoint: `https://localhost:${new URL(ok.url).port}/push/phone`,
        ...subscription(ok.url).keys,
        events: ['notify'],
      });
      await store.close();
      const hookId = (await api(relay.url, 'POST', '/computers', { key: relay.apiKey, body: { name: 'desk' } })).json
        .hookId as string;
      const listener = await TestSocket.open(relay.wsUrl, relay.apiKey);
      await listener.subscribeListener(hookId, 0);
      listener.send({
        type: 'notify.new',
        id: 'n_1',
        session: 'svc-s',
        kind: 'notify',
        envelope: await someEnvelope(),
      });
      await waitFor(() => logged(relay, /subscription of \S+ dropped: localhost resolves to 127\.0\.0\.1/) === 1, {
        what: 'the subscription dropped at connect',
      });
      expect(ok.hits()).toBe(0);
      await listener.close();
    } finally {
      await relay.close();
    }
  }, 30_000);

  it('without --push-hosts, refuses endpoints that are not https: on public addresses (bad_endpoint)', async () => {
    const relay = await startTestRelay();
    try {
      const phone = await registerTestDevice({ url: relay.url, apiKey: relay.apiKey }, 'app', 'phone');
      for (const endpoint of [
        'https://127.0.0.1:9/push',
        'https://localhost:9/push',
        'https://[::1]:9/push',
        'https://[::ffff:127.0.0.1]/push',
        'https://169.254.169.254/latest',
        'https://10.1.2.3/push',
        'https://192.168.1.1/push',
        'https://[fe80::1]/push',
        'http://fcm.googleapis.com/push',
        'file:///etc/passwd',
        'https://user:pw@fcm.googleapis.com/push',
      ]) {
        const res = await api(relay.url, 'POST', '/push/subscriptions', {
          key: relay.apiKey,
          body: { deviceId: phone.deviceId, subscription: { ...subscription('https://x'), endpoint } },
        });
        expect(res.status, endpoint).toBe(400);
        expect(res.json.error.code, endpoint).toMatch(/^(bad_endpoint|bad_request)$/);
      }
      expect(logged(relay, /web push subscription for \S+ refused/)).toBeGreaterThanOrEqual(9);
    } finally {
      await relay.close();
    }
  }, 30_000);
});
