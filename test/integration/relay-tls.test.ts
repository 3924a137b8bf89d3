/**
 * `svc up --lan`'s pieces: the certificate adapter (real openssl, real files) and a relay with a second, HTTPS port
 * that serves the same routes and the same WebSocket hub.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureLanCertificate, lanAddress, RENEW_BEFORE_MS } from '../../actors/relay/tls.js';
import { createAccount } from '../../relay-server/accounts.js';
import { type Relay, startRelay } from '../../relay-server/server.js';
import { openSqliteStore } from '../../relay-server/sqliteStore.js';
import { api, TestSocket } from '../helpers/relay.js';

let root: string;
let relay: Relay | null = null;

afterEach(async () => {
  await relay?.close();
  relay = null;
  if (root) rmSync(root, { recursive: true, force: true });
});

function tempRoot() {
  root = mkdtempSync(join(tmpdir(), 'svc-tls-'));
  return root;
}

function httpsGet(url: string, ca?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', ...(ca ? { ca } : {}) }, (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

describe('ensureLanCertificate', () => {
  it('makes an owner-only certificate for the address, reuses it, and makes a new one for another address', async () => {
    const dir = join(tempRoot(), '.svc', 'tls');
    const first = await ensureLanCertificate({ dir, ip: '127.0.0.1' });
    expect(first.created).toBe(true);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'key.pem')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'cert.pem')).mode & 0o777).toBe(0o600);
    const x509 = new X509Certificate(readFileSync(join(dir, 'cert.pem')));
    expect(x509.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(x509.fingerprint256).toBe(first.fingerprint);
    expect(first.fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);

    const again = await ensureLanCertificate({ dir, ip: '127.0.0.1' });
    expect(again.created).toBe(false);
    expect(again.fingerprint).toBe(first.fingerprint);

    const moved = await ensureLanCertificate({ dir, ip: '10.1.2.3' });
    expect(moved.created).toBe(true);
    expect(moved.fingerprint).not.toBe(first.fingerprint);
    expect(new X509Certificate(moved.cert).checkIP('10.1.2.3')).toBe('10.1.2.3');
    expect(statSync(join(dir, 'key.pem')).mode & 0o777).toBe(0o600);
  });

  it('makes a new one when the stored one expires within 30 days', async () => {
    const dir = join(tempRoot(), 'tls');
    const first = await ensureLanCertificate({ dir, ip: '127.0.0.1' });
    const late = await ensureLanCertificate({ dir, ip: '127.0.0.1', now: first.validTo - RENEW_BEFORE_MS + 60_000 });
    expect(late.created).toBe(true);
  });

  it('says in one line when openssl is missing', async () => {
    const dir = join(tempRoot(), 'tls');
    await expect(ensureLanCertificate({ dir, ip: '127.0.0.1', openssl: join(dir, 'no-openssl') })).rejects.toThrow(
      /^openssl not found \(.*\): install OpenSSL to use --lan$/,
    );
  });

  it('finds a non-internal IPv4 address', () => {
    expect(
      lanAddress({
        lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true, netmask: '', mac: '', cidr: null }],
        en0: [
          { address: 'fe80::1', family: 'IPv6', internal: false, netmask: '', mac: '', cidr: null, scopeid: 1 },
          { address: '192.168.1.20', family: 'IPv4', internal: false, netmask: '', mac: '', cidr: null },
        ],
      }),
    ).toBe('192.168.1.20');
    expect(lanAddress({})).toBeNull();
  });
});

describe('startRelay with tls', () => {
  it('serves the routes and the WebSocket hub on both ports, and close() frees both', async () => {
    const dir = tempRoot();
    const certificate = await ensureLanCertificate({ dir: join(dir, 'tls'), ip: '127.0.0.1' });
    const store = openSqliteStore(join(dir, 'relay'));
    const { apiKey } = await createAccount(store);
    await store.close();
    relay = await startRelay({
      port: 0,
      dataDir: join(dir, 'relay'),
      appDir: null,
      log: { info() {}, warn() {}, error() {} },
      tls: { host: '127.0.0.1', port: 0, key: certificate.key, cert: certificate.cert },
    });
    expect(relay.tlsUrl).toBe(`https://127.0.0.1:${relay.tlsPort}`);
    expect(relay.tlsPort).not.toBe(relay.port);

    const health = await httpsGet(`${relay.tlsUrl}/healthz`, certificate.cert);
    expect(health.status).toBe(200);
    await expect(httpsGet(`${relay.tlsUrl}/healthz`)).rejects.toThrow(/self[- ]signed/); // untrusted without the CA

    const secure = await TestSocket.open(`wss://127.0.0.1:${relay.tlsPort}/ws`, apiKey, { ca: certificate.cert });
    expect(await secure.subscribeApp()).toMatchObject({ type: 'subscribed', role: 'app' });
    const plain = await TestSocket.open(relay.wsUrl, apiKey);
    expect(await plain.subscribeApp()).toMatchObject({ type: 'subscribed', role: 'app' });
    expect((await api(relay.url, 'GET', '/healthz')).status).toBe(200);

    const ports = [relay.port, relay.tlsPort as number];
    await relay.close();
    relay = null;
    await secure.closed;
    await plain.closed;
    for (const port of ports) expect(await portIsFree(port)).toBe(true);
  });
});
