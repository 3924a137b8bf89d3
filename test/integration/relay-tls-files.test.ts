/**
 * `svc relay serve --tls-cert FILE --tls-key FILE` (issue 29 part 2): a certificate the person already has, served
 * on the HTTPS port, read again when the files change (a new connection gets the new one, an open WebSocket stays),
 * a half-replaced pair refused while the old one keeps serving, the HTTP port redirecting to HTTPS, and files that
 * cannot serve refused at start with one line.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { selfSigned, servedCertificate, toLoopback } from '../helpers/certs.js';
import { runSvc, type SpawnedSvc, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';
import { waitFor } from '../helpers/relay.js';

const DOMAIN = 'relay.svc.test';
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let relay: SpawnedSvc;
let httpPort: number;
let httpsPort: number;
let certPath: string;
let keyPath: string;
const made: Record<string, { cert: string; key: string }> = {};

/** A self-signed certificate for DOMAIN (made with openssl, as a person's own would be made elsewhere). */
function makeCertificate(name: string): { cert: string; key: string } {
  const cert = join(home.home, `${name}.crt`);
  const key = join(home.home, `${name}.key`);
  selfSigned({ key, cert }, { cn: name, san: `DNS:${DOMAIN}`, days: 30 });
  made[name] = { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8') };
  return made[name];
}

/** Replace a file the way an editor or a renewal tool does: a new file renamed over it. */
function replace(path: string, text: string): void {
  writeFileSync(`${path}.new`, text);
  renameSync(`${path}.new`, path);
}

const served = () => servedCertificate(httpsPort, { servername: DOMAIN, ca: Object.values(made).map((m) => m.cert) });

beforeAll(async () => {
  home = tempHome();
  env = svcEnv(home.home);
  [httpPort, httpsPort] = [await freePort(), await freePort()];
  const first = makeCertificate('first');
  certPath = join(home.home, 'relay.crt');
  keyPath = join(home.home, 'relay.key');
  writeFileSync(certPath, first.cert);
  writeFileSync(keyPath, first.key, { mode: 0o600 });
  relay = spawnSvc(
    [
      'relay',
      'serve',
      '--tls-cert',
      certPath,
      '--tls-key',
      keyPath,
      '--host',
      '127.0.0.1',
      '--port',
      String(httpPort),
      '--https-port',
      String(httpsPort),
    ],
    env,
  );
  await relay.waitForLine(new RegExp(`^relay listening on https://${DOMAIN.replaceAll('.', '\\.')}:${httpsPort}$`));
}, 60_000);

afterAll(async () => {
  await relay?.stop();
  await home?.removeWhenFree();
});

describe('svc relay serve --tls-cert --tls-key', () => {
  it('serves the certificate, and a new one when the files change, while an open WebSocket stays', {
    timeout: 60_000,
  }, async () => {
    expect((await served()).subject).toMatch(/CN=first/);
    const account = await runSvc(['relay', 'account', 'create', '--json'], env);
    const { apiKey } = JSON.parse(account.stdout) as { apiKey: string };
    const ws = new WebSocket(`wss://${DOMAIN}:${httpsPort}/ws`, {
      headers: { Authorization: `Bearer ${apiKey}` },
      ca: made.first!.cert,
      lookup: toLoopback,
    });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    let closed = false;
    ws.once('close', () => {
      closed = true;
    });

    const second = makeCertificate('second');
    // the key first: for a moment the files are not a pair; the old certificate keeps serving
    replace(keyPath, second.key);
    await relay.waitForLine(/warn .*is not the key of .*relay\.crt.*; still serving the certificate valid until/);
    expect((await served()).subject).toMatch(/CN=first/);
    replace(certPath, second.cert);
    await relay.waitForLine(/the certificate files changed: now serving .*relay\.crt \(relay\.svc\.test; valid until/);
    await waitFor(async () => /CN=second/.test((await served()).subject), { what: 'the new certificate served' });

    const pong = new Promise((resolve) => ws.once('pong', resolve));
    ws.ping();
    await pong;
    expect(closed).toBe(false);
    ws.close();
  });

  it('the HTTP port sends every request to the same host over HTTPS', async () => {
    const location = await new Promise<string | undefined>((resolve, reject) =>
      httpRequest(
        { host: '127.0.0.1', port: httpPort, path: '/#/s/x', headers: { host: `${DOMAIN}:${httpPort}` } },
        (res) => {
          res.resume();
          resolve(res.statusCode === 308 ? res.headers.location : `status ${res.statusCode}`);
        },
      )
        .on('error', reject)
        .end(),
    );
    expect(location).toBe(`https://${DOMAIN}:${httpsPort}/#/s/x`);
  });

  it('refuses at start, in one line, files that cannot serve', async () => {
    const missing = await runSvc(
      ['relay', 'serve', '--tls-cert', join(home.home, 'nope.crt'), '--tls-key', keyPath],
      env,
    );
    expect(missing.code).not.toBe(0);
    expect(missing.stderr.trim()).toMatch(/^svc: cannot read the certificate .*nope\.crt: .*ENOENT/);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
    const mismatched = await runSvc(
      ['relay', 'serve', '--tls-cert', join(home.home, 'first.crt'), '--tls-key', join(home.home, 'second.key')],
      env,
    );
    expect(mismatched.code).not.toBe(0);
    expect(mismatched.stderr).toMatch(/second\.key is not the key of .*first\.crt/);
    const both = await runSvc(
      ['relay', 'serve', '--domain', DOMAIN, '--tls-cert', certPath, '--tls-key', keyPath],
      env,
    );
    expect(both.code).not.toBe(0);
    expect(both.stderr).toMatch(/give one or the other/);
  });
});
