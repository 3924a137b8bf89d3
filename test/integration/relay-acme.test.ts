/**
 * The relay's own certificate over ACME (issue 29 part 2), against a real ACME server: Debian's pebble, validating
 * the HTTP-01 challenge on the relay's plain-HTTP port, finding the relay through its DNS stand-in. The keeper runs
 * on an injected clock (its timers fire only when the test moves the clock), so renewal at two thirds of the
 * certificate's life and the backoff after a failure are walked without waiting: a one-hour certificate is renewed
 * once the clock passes 40 minutes, the WebSocket opened before stays open, and a CA that cannot reach the relay
 * leaves the old certificate serving and is asked again a minute later.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import acme from 'acme-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createAccount } from '../../relay-server/accounts.js';
import type { Log } from '../../relay-server/log.js';
import { type Relay, startRelay } from '../../relay-server/server.js';
import { openSqliteStore } from '../../relay-server/sqliteStore.js';
import { CertificateKeeper, type Clock } from '../../relay-server/tls/acme.js';
import { servedCertificate, toLoopback } from '../helpers/certs.js';
import { startPebble, type TestPebble } from '../helpers/pebble.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/relay.js';

const DOMAIN = 'relay.svc.test';
const HOUR = 3_600_000;
const MINUTE = 60_000;

/** A clock that stands still but for `advance`; its timers fire only there, when their time has come. */
function testClock(): Clock & { advance(ms: number): void; timers(): number[] } {
  let now = Date.now();
  let pending: { at: number; run: () => void }[] = [];
  return {
    now: () => now,
    after(ms, run) {
      const timer = { at: now + ms, run };
      pending.push(timer);
      return () => {
        pending = pending.filter((t) => t !== timer);
      };
    },
    advance(ms) {
      now += ms;
      const due = pending.filter((t) => t.at <= now);
      pending = pending.filter((t) => t.at > now);
      for (const t of due) t.run();
    },
    timers: () => pending.map((t) => t.at - now),
  };
}

let root: string;
let pebble: TestPebble;
let relay: Relay;
let keeper: CertificateKeeper;
let clock: ReturnType<typeof testClock>;
let apiKey: string;
let httpPort: number;
const logs: string[] = [];
const log: Log = {
  info: (m) => logs.push(`info: ${m}`),
  warn: (m) => logs.push(`warn: ${m}`),
  error: (m) => logs.push(`error: ${m}`),
};
function newKeeper(dir: string): CertificateKeeper {
  return new CertificateKeeper({
    domain: DOMAIN,
    directoryUrl: pebble.directoryUrl,
    email: 'person@example.org',
    dir,
    install: (key, cert) => relay.setCertificate(key, cert),
    log,
    clock,
  });
}

/** The certificate a new TLS connection to the relay gets, verified against pebble's roots for DOMAIN. */
const served = () =>
  servedCertificate(relay.tlsPort as number, { servername: DOMAIN, ca: readFileSync(pebble.caFile) });

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'svc-acme-'));
  httpPort = await freePort();
  pebble = await startPebble({ httpPort, validitySeconds: 3600 });
  // acme-client's HTTP client trusts pebble's own HTTPS as a person's would with NODE_EXTRA_CA_CERTS
  acme.axios.defaults.httpsAgent = new Agent({ ca: readFileSync(pebble.caFile) });
  const dataDir = join(root, 'relay');
  const store = openSqliteStore(dataDir);
  apiKey = (await createAccount(store)).apiKey;
  await store.close();
  clock = testClock();
  keeper = newKeeper(join(dataDir, 'acme'));
  relay = await startRelay({
    host: '127.0.0.1',
    port: httpPort,
    dataDir,
    log,
    appDir: null,
    tls: { host: '127.0.0.1', port: 0 },
    httpsOnly: { domain: DOMAIN, challenge: keeper.challenge },
  });
}, 60_000);

afterAll(async () => {
  keeper?.stop();
  await relay?.close();
  await pebble?.stop();
  acme.axios.defaults.httpsAgent = undefined;
  rmSync(root, { recursive: true, force: true });
});

describe('svc relay serve --domain: a certificate over ACME', () => {
  it('gets one from a real ACME server that validated the challenge on the relay’s HTTP port; key and certificate 0600', {
    timeout: 60_000,
  }, async () => {
    // the HTTPS port is taken at start; no handshake succeeds before there is a certificate
    await expect(served()).rejects.toThrow();
    await keeper.start();
    await keeper.ready();
    const cert = await served();
    expect(cert.checkHost(DOMAIN)).toBe(DOMAIN);
    expect(cert.issuer).toMatch(/Pebble Intermediate CA/);
    // pebble asked its DNS stand-in where the domain is, then fetched the key authorization from the relay
    expect(pebble.dns.questions).toContain(`${DOMAIN} A`);
    expect(logs.some((l) => l.startsWith('info: answered an ACME challenge'))).toBe(true);
    const dir = join(root, 'relay', 'acme', new URL(pebble.directoryUrl).host.replace(':', '_')); // per CA
    for (const file of ['account.key', `${DOMAIN}/key.pem`, `${DOMAIN}/cert.pem`])
      expect((statSync(join(dir, file)).mode & 0o777).toString(8), file).toBe('600');
    expect((statSync(join(dir, DOMAIN)).mode & 0o777).toString(8)).toBe('700');
    expect(new X509Certificate(readFileSync(join(dir, DOMAIN, 'cert.pem'))).serialNumber).toBe(cert.serialNumber);
    // its life: one hour; renewed at 40 minutes
    const life = Date.parse(cert.validTo) - Date.parse(cert.validFrom);
    expect(life).toBeGreaterThan(HOUR - MINUTE);
    expect(keeper.current?.renewAt).toBe(Date.parse(cert.validFrom) + Math.floor((life * 2) / 3));
  });

  it('the HTTP port redirects everything else to HTTPS and takes no WebSocket', async () => {
    const answer = await new Promise<{ status: number; location?: string }>((resolve, reject) =>
      httpRequest(
        { host: '127.0.0.1', port: httpPort, path: '/healthz?x=1', headers: { host: `${DOMAIN}` } },
        (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, location: res.headers.location });
        },
      )
        .on('error', reject)
        .end(),
    );
    expect(answer).toEqual({ status: 308, location: `https://${DOMAIN}:${relay.tlsPort}/healthz?x=1` });
    const refused = await new Promise<string>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${httpPort}/ws`, { headers: { Authorization: `Bearer ${apiKey}` } });
      ws.once('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
      ws.once('error', (e) => resolve(e.message));
    });
    expect(refused).toBe('400');
    // over HTTPS the same path answers
    const health = await new Promise<number>((resolve, reject) =>
      httpsRequest(
        `https://${DOMAIN}:${relay.tlsPort}/healthz`,
        { ca: readFileSync(pebble.caFile), lookup: toLoopback },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      )
        .on('error', reject)
        .end(),
    );
    expect(health).toBe(200);
  });

  it('renews at two thirds of its life on the same server, and an open WebSocket stays open', {
    timeout: 60_000,
  }, async () => {
    const before = await served();
    const ws = new WebSocket(`wss://${DOMAIN}:${relay.tlsPort}/ws`, {
      headers: { Authorization: `Bearer ${apiKey}` },
      ca: readFileSync(pebble.caFile),
      lookup: toLoopback,
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    let closed = false;
    ws.once('close', () => {
      closed = true;
    });
    const renewAt = keeper.current?.renewAt as number;
    clock.advance(renewAt - clock.now() - MINUTE); // a minute before: nothing happens
    expect(keeper.current?.serial).toBe(before.serialNumber);
    expect(clock.timers().length).toBe(1);
    clock.advance(2 * MINUTE);
    const after = await waitFor(
      async () => {
        const now = await served();
        return now.serialNumber !== before.serialNumber ? now : null;
      },
      { timeoutMs: 30_000, what: 'a renewed certificate served' },
    );
    expect(after.checkHost(DOMAIN)).toBe(DOMAIN);
    expect(Date.parse(after.validFrom)).toBeGreaterThanOrEqual(Date.parse(before.validFrom));
    // this clock is now 41 minutes ahead of the CA's, so the new certificate looks due at once: not asked for again
    // at once, but after a tenth of its life, with a word about the clock
    const life = Date.parse(after.validTo) - Date.parse(after.validFrom);
    expect(await waitFor(() => clock.timers()[0], { what: 'the next renewal scheduled' })).toBe(Math.floor(life / 10));
    expect(
      logs.some((l) => /warn: the new certificate for .* is due for renewal already .*is its clock right/.test(l)),
    ).toBe(true);
    // the WebSocket of before the renewal still answers, on its first TLS session
    const pong = new Promise((resolve) => ws.once('pong', resolve));
    ws.ping();
    await pong;
    expect(closed).toBe(false);
    ws.close();
  });

  it('when the ACME server fails, the old certificate keeps serving and it is tried again after a minute', {
    timeout: 150_000,
  }, async () => {
    const before = await served();
    // pebble may hand an account the valid authorization of its last order again even with PEBBLE_AUTHZREUSE=0 (about
    // one order in a hundred: it reuses unless rand.Intn(100) > 0), and then nothing is validated and nothing fails; a
    // new account has none to reuse, so this attempt must validate (the keeper makes one when the key is gone)
    rmSync(join(root, 'relay', 'acme', new URL(pebble.directoryUrl).host.replace(':', '_'), 'account.key'));
    pebble.dns.fail(true); // the CA can no longer find the relay: validation fails
    const failuresBefore = logs.filter((l) => l.startsWith('error: ACME')).length;
    const logsBefore = logs.length;
    const [due] = clock.timers();
    expect(due).toBeTypeOf('number');
    clock.advance(due as number);
    // each of the attempt's requests may take up to the keeper's 30 s limit before it fails, so this waits longer;
    // a timeout says what the keeper and pebble did meanwhile
    const failure = await waitFor(() => logs.filter((l) => l.startsWith('error: ACME'))[failuresBefore], {
      timeoutMs: 90_000,
      what: 'the failed renewal logged',
    }).catch((error: Error) => {
      const since = logs.slice(logsBefore).join('\n') || '(nothing)';
      throw new Error(`${error.message}\nlogged since:\n${since}\npebble's output:\n${pebble.output().slice(-4000)}`);
    });
    expect(failure).toMatch(
      new RegExp(
        `no certificate for ${DOMAIN.replaceAll('.', '\\.')} .*trying again in 1 min \\(the certificate valid until .* still serves\\)`,
      ),
    );
    expect((await served()).serialNumber).toBe(before.serialNumber);
    expect(clock.timers()).toEqual([MINUTE]);
    pebble.dns.fail(false);
    clock.advance(MINUTE);
    const renewed = await waitFor(
      async () => {
        const now = await served();
        return now.serialNumber !== before.serialNumber ? now : null;
      },
      { timeoutMs: 30_000, what: 'the certificate renewed at the retry' },
    );
    expect(renewed.checkHost(DOMAIN)).toBe(DOMAIN);
  });

  it('a restart serves the stored certificate without asking the ACME server', async () => {
    const stored = await served();
    const asked = pebble.dns.questions.length;
    keeper.stop();
    const installed: string[] = [];
    const spy = new CertificateKeeper({
      domain: DOMAIN,
      directoryUrl: pebble.directoryUrl,
      dir: join(root, 'relay', 'acme'),
      install: async (_key, cert) => {
        installed.push(new X509Certificate(cert).serialNumber);
      },
      log,
      clock: testClock(), // this one's time is now: the stored certificate is not due
    });
    await spy.start();
    expect(installed).toEqual([stored.serialNumber]);
    expect(pebble.dns.questions.length).toBe(asked);
    expect(spy.current?.serial).toBe(stored.serialNumber);
    spy.stop();
  });
});
