/**
 * A relay behind a real reverse proxy (issue 29 part 3; docs/hosting.md "A relay on a server"), walked with the
 * user's commands: `svc relay serve --trust-proxy 127.0.0.1` on loopback, Debian's Caddy in front with HTTPS
 * (`tls internal`), `svc relay account create`, `svc login --url https://…`, the listener, `svc pair`, and a phone
 * (Chromium) that pairs over HTTPS and sends a sealed message that is typed into a tmux session. Then a flood from
 * one client through the proxy is refused by that client's address while another client still pairs; and neither
 * the relay's database nor Caddy's access log holds the message.
 */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportPublicKey, generateDeviceKeys } from '../../core/seal/keys.js';
import { pairAndSend, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { startCaddy, type TestCaddy } from '../helpers/caddy.js';
import { runSvc, type SpawnedSvc, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { databaseHolds } from '../helpers/devices.js';
import { freePort } from '../helpers/ports.js';
import { fakeAgentCommand, startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

const MESSAGE = 'hello through caddy 8e41';

let home: ReturnType<typeof tempHome>;
let tmux: TmuxServer;
let relay: SpawnedSvc;
let caddy: TestCaddy;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;
let env: NodeJS.ProcessEnv;
let dataDir: string;
let hookId: string;

beforeAll(async () => {
  home = tempHome();
  tmux = await startTmuxServer();
  const relayPort = await freePort();
  dataDir = join(home.home, 'relay-data');
  const plain = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath });
  relay = spawnSvc(
    ['relay', 'serve', '--port', String(relayPort), '--data', dataDir, '--trust-proxy', '127.0.0.1/32'],
    plain,
  );
  await relay.waitForLine(/^relay listening on http:\/\/127\.0\.0\.1:\d+$/, 20_000);
  caddy = await startCaddy(relayPort);
  // the computer trusts the proxy's certificate as it would a real one
  env = { ...plain, NODE_EXTRA_CA_CERTS: caddy.rootCert };
  const account = await runSvc(['relay', 'account', 'create', '--data', dataDir, '--json'], plain);
  const { apiKey } = JSON.parse(account.stdout) as { apiKey: string };
  const login = await runSvc(['login', '--url', caddy.url, '--key', apiKey, '--name', 'laptop', '--json'], env);
  expect(login.code, login.stderr).toBe(0);
  hookId = (JSON.parse(login.stdout) as { hookId: string }).hookId;
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to wss:\/\/127\.0\.0\.1:\d+\/ws/, 20_000);
  browser = await startBrowser();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await caddy?.stop();
  await relay?.stop();
  await tmux?.cleanup();
  await home?.removeWhenFree();
});

/** A request to the proxy from the loopback address `from` (each a different client to the relay behind it). */
function fromAddress(from: string, method: string, path: string, body?: unknown): Promise<number> {
  const url = new URL(path, caddy.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method,
        localAddress: from,
        ca: readFileSync(caddy.rootCert),
        headers: { 'content-type': 'application/json' },
        agent: false,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe('a relay behind Caddy with --trust-proxy', () => {
  it('a phone pairs over HTTPS through the proxy and its sealed message is typed', { timeout: 90_000 }, async () => {
    await tmux.newSession('svc-proj', fakeAgentCommand('claude'), {
      options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
    });
    const pair = await runSvc(['pair'], env);
    expect(pair.code, pair.stderr).toBe(0);
    const link = new RegExp(`${caddy.url.replaceAll('.', '\\.')}/#pair=[A-Za-z0-9_-]{22}`).exec(pair.stdout)?.[0];
    expect(link, pair.stdout).toBeDefined();
    page = await browser.newPage({ trustSpki: [caddy.spki] });
    await pairAndSend(page, { link: link!, origin: caddy.url, hookId, session: 'svc-proj', message: MESSAGE, tmux });
    // sealed end to end: neither the relay nor the proxy kept it in the clear
    expect(databaseHolds(dataDir, MESSAGE)).toBe(false);
    expect(readFileSync(caddy.accessLog, 'utf8')).not.toContain(MESSAGE);
    expect(readFileSync(caddy.accessLog, 'utf8')).toContain('/pairings/claim'); // the log is there, and real
    browser.expectNoErrors();
  });

  it('a flood from one client is refused by its address, not the proxy’s: another client still pairs', async () => {
    const code = (JSON.parse((await runSvc(['pair', '--json'], env)).stdout) as { code: string }).code;
    const keys = await generateDeviceKeys(false);
    const claim = { name: 'second phone', publicKey: await exportPublicKey(keys.publicKey) };
    // 127.0.0.2 guesses codes until the relay stops listening to it
    const statuses: number[] = [];
    for (let i = 0; i < 80 && !statuses.includes(429); i++)
      statuses.push(
        await fromAddress('127.0.0.2', 'POST', '/pairings/claim', { ...claim, code: `x${i}`.padEnd(22, 'x') }),
      );
    expect(statuses).toContain(429);
    // the proxy connects from 127.0.0.1 for everyone: were the limit on its address, this mistyped code would be
    // 429 too; it is the client's own answer, and then its right code pairs
    const typo = { ...claim, code: 'y'.repeat(22) };
    expect(await fromAddress('127.0.0.3', 'POST', '/pairings/claim', typo)).toBe(404);
    expect(await fromAddress('127.0.0.3', 'POST', '/pairings/claim', { ...claim, code })).toBe(200);
    await relay.waitForLine(/429 rate_limited from 127\.0\.0\.2: dropping requests without a valid key/);
    expect(relay.output()).toMatch(/client addresses from X-Forwarded-For\/Forwarded of 127\.0\.0\.1\/32/);
  });

  it('over its HTTPS origin the app is installable and its service worker runs (issue 29 part 6)', async () => {
    const phone = await browser.newPage({ trustSpki: [caddy.spki] });
    await phone.goto(`${caddy.url}/`);
    // the worker registers (a page with a certificate error could not) and becomes the active one
    await phone.waitForFunction(async () => (await navigator.serviceWorker.ready).active?.state === 'activated');
    const cdp = await phone.context().newCDPSession(phone);
    const { installabilityErrors } = (await cdp.send('Page.getInstallabilityErrors')) as {
      installabilityErrors: { errorId: string }[];
    };
    expect(installabilityErrors).toEqual([]);
    const manifest = (await cdp.send('Page.getAppManifest')) as { url: string; errors: unknown[] };
    expect(manifest.url).toBe(`${caddy.url}/manifest.webmanifest`);
    expect(manifest.errors).toEqual([]);
  });
});
