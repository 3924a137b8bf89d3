/**
 * What the relay does for the phone app: serve its files (types, caching, no way out of the app directory), the
 * one-time pairing codes and the device tokens they give, the token as a WebSocket subprotocol, and `ping`.
 */
import { request } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { exportPublicKey, generateDeviceKeys } from '../../core/seal/keys.js';
import { api, startTestRelay, type TestRelay, TestSocket } from '../helpers/relay.js';

let relay: TestRelay;

beforeEach(async () => {
  relay = await startTestRelay();
});

afterEach(async () => {
  await relay.close();
});

/** A GET with the path sent exactly as written (fetch and URL would normalise `..` away). */
function rawGet(path: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${relay.url}/`, { path, method: 'GET' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function publicKey(): Promise<string> {
  return exportPublicKey((await generateDeviceKeys(false)).publicKey);
}

async function newCode(key = relay.apiKey): Promise<string> {
  const res = await api(relay.url, 'POST', '/pairings', { key, body: {} });
  expect(res.status).toBe(200);
  expect(res.json.code).toMatch(/^[A-Za-z0-9_-]{22}$/);
  return res.json.code;
}

describe('the app files', () => {
  it('serves index.html at / with a CSP, and hashed assets with long caching', async () => {
    const index = await fetch(`${relay.url}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await index.text();
    const script = /src="(\/assets\/app-[A-Z0-9]{8}\.js)"/.exec(html)![1]!;
    const style = /href="(\/assets\/style-[A-Z0-9]{8}\.css)"/.exec(html)![1]!;
    const js = await fetch(`${relay.url}${script}`);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await fetch(`${relay.url}${style}`)).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const sw = await fetch(`${relay.url}/sw.js`);
    expect(sw.headers.get('cache-control')).toBe('no-cache');
    const manifest = await fetch(`${relay.url}/manifest.webmanifest`);
    expect(manifest.headers.get('content-type')).toContain('application/manifest+json');
    expect((await manifest.json()).display).toBe('standalone');
    const png = await fetch(`${relay.url}/icons/icon-192.png`);
    expect(png.headers.get('content-type')).toBe('image/png');
    expect(
      Buffer.from(await png.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
  });

  it('never leaves the app directory: ../, encoded dots, dot-files, absent files', async () => {
    for (const path of [
      '/../package.json',
      '/assets/../../package.json',
      '/%2e%2e/package.json',
      '/%2e%2e%2fpackage.json',
      '/..%2f..%2fpackage.json',
      '/.hidden.js',
      '/assets/%00.js',
      '/nope.js',
      '/app-sizes.json',
    ]) {
      const res = await rawGet(path);
      expect(res.status, path).toBe(404);
      expect(res.body, path).not.toContain('"name": "svc-cli"');
      expect(JSON.parse(res.body).error.code, path).toBe('not_found');
    }
  });

  it('answers POST on a file with 405, and never caches an API answer', async () => {
    expect((await api(relay.url, 'POST', '/sw.js')).status).toBe(405);
    const computers = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
    expect(computers.headers.get('cache-control')).toBe('no-store');
  });
});

describe('pairing', () => {
  it('gives a device token for a code, once; the token works for HTTP and dies with its device', async () => {
    const code = await newCode();
    const key = await publicKey();
    const claim = await api(relay.url, 'POST', '/pairings/claim', { body: { code, name: 'phone', publicKey: key } });
    expect(claim.status).toBe(200);
    expect(claim.json).toMatchObject({ name: 'phone', scopes: ['push:read', 'push:write'] });
    const { token, deviceId } = claim.json;
    expect(token).toMatch(/^svc_/);

    const devices = await api(relay.url, 'GET', '/devices', { key: token });
    expect(devices.status).toBe(200);
    expect(devices.json.devices).toContainEqual(expect.objectContaining({ deviceId, kind: 'app', publicKey: key }));
    // no proof given, none listed; a phone that gives one has it listed as it came (core/devices/pairingProof.ts)
    expect(
      devices.json.devices.find((d: { deviceId: string }) => d.deviceId === deviceId).pairingProof,
    ).toBeUndefined();
    const proof = 'p'.repeat(43);
    const proven = await api(relay.url, 'POST', '/pairings/claim', {
      body: { code: await newCode(), name: 'tablet', publicKey: await publicKey(), proof },
    });
    const withProof = (await api(relay.url, 'GET', '/devices', { key: relay.apiKey })).json.devices;
    expect(withProof.find((d: { deviceId: string }) => d.deviceId === proven.json.deviceId).pairingProof).toBe(proof);

    const again = await api(relay.url, 'POST', '/pairings/claim', { body: { code, name: 'phone', publicKey: key } });
    expect(again.status).toBe(410);
    expect(again.json.error.code).toBe('pairing_used');

    // A phone's token cannot remove another device (here: a computer's); only its own, or with an API key.
    const computer = await api(relay.url, 'POST', '/devices', {
      key: relay.apiKey,
      body: { name: 'laptop', kind: 'computer', publicKey: await publicKey() },
    });
    const refused = await api(relay.url, 'DELETE', `/devices/${computer.json.deviceId}`, { key: token });
    expect(refused.status).toBe(403);
    expect(refused.json.error.code).toBe('forbidden');
    const listed = await api(relay.url, 'GET', '/devices', { key: relay.apiKey });
    expect(listed.json.devices.map((d: { deviceId: string }) => d.deviceId)).toContain(computer.json.deviceId);

    expect((await api(relay.url, 'DELETE', `/devices/${deviceId}`, { key: relay.apiKey })).status).toBe(200);
    expect((await api(relay.url, 'GET', '/computers', { key: token })).status).toBe(401);
    // The code is stored hashed, never as itself.
    expect(relay.logs.join('\n')).not.toContain(code);
    expect(relay.logs.join('\n')).not.toContain(token);
  });

  it('refuses an unknown code, a malformed one, a bad key, and creating codes without push:write', async () => {
    const key = await publicKey();
    const unknown = await api(relay.url, 'POST', '/pairings/claim', {
      body: { code: 'A'.repeat(22), name: 'phone', publicKey: key },
    });
    expect(unknown.status).toBe(404);
    const malformed = await api(relay.url, 'POST', '/pairings/claim', {
      body: { code: 'x', name: 'p', publicKey: key },
    });
    expect(malformed.status).toBe(400);
    const badKey = await api(relay.url, 'POST', '/pairings/claim', {
      body: { code: await newCode(), name: 'p', publicKey: 'A'.repeat(87) },
    });
    expect(badKey.status).toBe(400);
    const badProof = await api(relay.url, 'POST', '/pairings/claim', {
      body: { code: await newCode(), name: 'p', publicKey: key, proof: '<script>' },
    });
    expect(badProof.status).toBe(400);
    expect(badProof.json.error.message).toMatch(/^proof: not a pairing proof/);
    const readOnly = await relay.createKey(['push:read']);
    expect((await api(relay.url, 'POST', '/pairings', { key: readOnly, body: {} })).status).toBe(403);
    expect((await api(relay.url, 'POST', '/pairings', { body: {} })).status).toBe(401);
  });
});

describe('pairing codes expire', () => {
  let now = Date.now();
  beforeEach(async () => {
    await relay.close();
    relay = await startTestRelay({ now: () => now });
  });

  it('after ten minutes, with its own code', async () => {
    const code = await newCode();
    now += 10 * 60_000 + 1;
    const late = await api(relay.url, 'POST', '/pairings/claim', {
      body: { code, name: 'phone', publicKey: await publicKey() },
    });
    expect(late.status).toBe(410);
    expect(late.json.error.code).toBe('pairing_expired');
  });
});

describe('the WebSocket for browsers', () => {
  it('takes the token as a subprotocol beside svc.v1 and echoes only svc.v1; answers ping with pong', async () => {
    const ws = new WebSocket(relay.wsUrl, ['svc.v1', `bearer.${relay.apiKey}`]);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    expect(ws.protocol).toBe('svc.v1');
    const pong = new Promise<unknown>((resolve) => ws.once('message', (d) => resolve(JSON.parse(d.toString()))));
    ws.send(JSON.stringify({ type: 'ping', t: 42 }));
    expect(await pong).toEqual({ type: 'pong', t: 42 });
    ws.close();
  });

  it('refuses a bad token in the subprotocol, like a bad header', async () => {
    const ws = new WebSocket(relay.wsUrl, ['svc.v1', `bearer.svc_${'x'.repeat(43)}`]);
    const status = await new Promise<number>((resolve) => {
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => resolve(101));
    });
    expect(status).toBe(401);
  });

  it('lets a device token subscribe as its own device only', async () => {
    const code = await newCode();
    const claim = await api(relay.url, 'POST', '/pairings/claim', {
      body: { code, name: 'phone', publicKey: await publicKey() },
    });
    const other = await api(relay.url, 'POST', '/devices', {
      key: relay.apiKey,
      body: { name: 'other', kind: 'app', publicKey: await publicKey() },
    });
    const socket = await TestSocket.open(relay.wsUrl, claim.json.token);
    socket.send({ type: 'subscribe', role: 'app', deviceId: other.json.deviceId });
    expect((await socket.next('error')).code).toBe('unknown_device');
    await socket.close();
    const mine = await TestSocket.open(relay.wsUrl, claim.json.token);
    mine.send({ type: 'subscribe', role: 'app', deviceId: claim.json.deviceId });
    expect((await mine.next('subscribed')).role).toBe('app');
    await mine.close();
  });
});
