/**
 * The CLI's and the listener's requests to the relay (actors/relay/request.ts under actors/relay/http.ts), against a
 * real HTTP(S) server on loopback: what is sent, what each kind of answer becomes, and that none of it loads Node's
 * undici (12-16 MiB a listener would keep: docs/benchmarks.md, "Idle memory"). Its own file, so that nothing else
 * has loaded undici in this process first; the servers come from actors/nodeHttp.ts for the same reason.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import '../../../actors/listener.js';
import { http, https } from '../../../actors/nodeHttp.js';
import { RelayError, relayJson } from '../../../actors/relay/http.js';
import { MAX_ANSWER_BYTES } from '../../../actors/relay/request.js';
import { relayDeviceList } from '../../../actors/seal/e2ee.js';
import { DeviceListResponse, PushSendResponse } from '../../../core/protocol/index.js';
import { selfSigned } from '../../helpers/certs.js';

/** Node's own list of the built-in modules this process has loaded. */
const undiciLoaded = () =>
  (process as unknown as { moduleLoadList: string[] }).moduleLoadList.some((m) => m.includes('undici'));

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server | null = null;
const seen: Seen[] = [];

async function serve(answer: (req: IncomingMessage, res: ServerResponse) => void, tls?: { key: string; cert: string }) {
  seen.length = 0;
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8');
    });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      answer(req, res);
    });
  };
  server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(null));
  server = null;
});

/** The RelayError a call ends in (anything else fails the test, an answer too). */
const failure = (call: Promise<unknown>): Promise<RelayError> =>
  call.then(
    (answer) => {
      throw new Error(`expected a refusal, got ${JSON.stringify(answer)}`);
    },
    (error: unknown) => {
      if (error instanceof RelayError) return error;
      throw error;
    },
  );

const KEY = 'A'.repeat(87);
const device = { deviceId: 'd_0123456789abcdef', name: 'box', kind: 'computer', publicKey: KEY, createdAt: 1 };
const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));

describe('requests to the relay on Node http', () => {
  beforeAll(() => {
    // the listener's whole code is imported above: none of it loaded undici
    expect(undiciLoaded()).toBe(false);
  });

  it("the listener's device list: the key as a bearer, the answer parsed, and undici never loaded", async () => {
    const url = await serve((_req, res) => json(res, 200, { devices: [device] }));
    const answer = await relayDeviceList(url, 'sk_key')();
    expect(answer.devices.map((d) => d.deviceId)).toEqual([device.deviceId]);
    expect(seen).toMatchObject([{ method: 'GET', url: '/devices', headers: { authorization: 'Bearer sk_key' } }]);
    expect(seen[0]!.url).not.toContain('sk_key');
    expect(undiciLoaded()).toBe(false);
  });

  it('sends a body as JSON with its length, and returns the parsed answer', async () => {
    const url = await serve((_req, res) => json(res, 200, { id: 7, state: 'pending', duplicate: false }));
    const body = { type: 'agent.command', agentSessionName: 'svc-é', body: 'héllo ✓' };
    const answer = await relayJson(PushSendResponse, url, 'sk_key', 'POST', '/pushes/send', body);
    expect(answer).toEqual({ id: 7, state: 'pending', duplicate: false });
    expect(JSON.parse(seen[0]!.body)).toEqual(body);
    expect(seen[0]!.headers['content-type']).toBe('application/json');
    expect(Number(seen[0]!.headers['content-length'])).toBe(Buffer.byteLength(JSON.stringify(body)));
  });

  it('never follows a redirect: one request, and a `redirect` error that says so', async () => {
    const url = await serve((_req, res) => res.writeHead(302, { Location: 'http://127.0.0.1:1/steal' }).end());
    const error = await failure(relayJson(DeviceListResponse, url, 'sk_key', 'GET', '/devices'));
    expect(error).toMatchObject({ status: 302, code: 'redirect' });
    expect(error.message).toMatch(/never follows redirects/);
    expect(seen).toHaveLength(1);
  });

  it("the relay's own error code and message, and a malformed answer named", async () => {
    let answer: [number, unknown] = [401, { error: { code: 'bad_key', message: 'this key is not known' } }];
    const url = await serve((_req, res) => json(res, ...answer));
    const refused = await failure(relayJson(DeviceListResponse, url, 'sk_key', 'GET', '/devices'));
    expect(refused).toMatchObject({ status: 401, code: 'bad_key' });
    expect(refused.message).toMatch(/this key is not known/);
    answer = [200, { devices: 'none' }];
    const malformed = await failure(relayJson(DeviceListResponse, url, 'sk_key', 'GET', '/devices'));
    expect(malformed).toMatchObject({ status: 200, code: 'malformed_answer' });
  });

  it('a relay that is not there: unreachable, naming the reason', async () => {
    const url = await serve(() => {});
    server!.close();
    await new Promise((resolve) => server!.once('close', resolve));
    const error = await failure(relayJson(DeviceListResponse, url, 'sk_key', 'GET', '/devices'));
    expect(error).toMatchObject({ status: 0, code: 'unreachable' });
    expect(error.message).toMatch(/cannot reach the relay at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/);
  });

  it('a relay that never answers: unreachable when the time is up, and the connection closed', async () => {
    let closed = false;
    const url = await serve((req) => req.socket.on('close', () => (closed = true)));
    const error = await failure(relayJson(DeviceListResponse, url, 'sk_key', 'GET', '/devices', undefined, 300));
    expect(error).toMatchObject({ status: 0, code: 'unreachable' });
    await expect.poll(() => closed).toBe(true);
  });

  it('an answer cut off before its end: the relay stopped answering', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': '1000' });
      res.write('{"devices":[');
      setImmediate(() => res.socket?.destroy());
    });
    const error = await failure(relayJson(DeviceListResponse, url, 'sk_key', 'GET', '/devices'));
    expect(error).toMatchObject({ status: 0, code: 'unreachable' });
    expect(error.message).toMatch(/stopped answering GET \/devices/);
  });

  it('an answer larger than any the relay gives is refused, not held in memory', async () => {
    let closed = false;
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.on('close', () => (closed = true));
      const more = () => {
        while (!closed && res.write(chunk));
        if (!closed) res.once('drain', more);
      };
      more();
    });
    const error = await failure(relayJson(DeviceListResponse, url, 'sk_key', 'GET', '/devices'));
    expect(error).toMatchObject({ code: 'answer_too_large' });
    expect(error.message).toContain(`${MAX_ANSWER_BYTES / 1024 / 1024} MiB`);
    await expect.poll(() => closed).toBe(true);
  });

  it('HTTPS: a certificate nobody vouches for is refused, never sent the key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-request-'));
    try {
      const paths = { key: join(dir, 'key.pem'), cert: join(dir, 'cert.pem') };
      selfSigned(paths, { cn: 'relay', san: 'IP:127.0.0.1' });
      const url = await serve((_req, res) => json(res, 200, { devices: [] }), {
        key: readFileSync(paths.key, 'utf8'),
        cert: readFileSync(paths.cert, 'utf8'),
      });
      const error = await failure(relayJson(DeviceListResponse, url, 'sk_key', 'GET', '/devices'));
      expect(error).toMatchObject({ status: 0, code: 'unreachable' });
      expect(error.message).toMatch(/SELF_SIGNED/);
      expect(seen).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('none of the above loaded undici', () => {
    expect(undiciLoaded()).toBe(false);
  });
});
