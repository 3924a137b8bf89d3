/**
 * A relay with its own certificate (issue 29 part 2; docs/hosting.md "A relay on a server with a domain"), walked
 * with the user's commands: `svc relay serve --domain relay.svc.test --acme-directory … --acme-email …` gets a
 * certificate from a real ACME server (Debian's pebble, validating the HTTP-01 challenge on the relay's HTTP port
 * through its DNS stand-in), then `svc relay account create`, `svc login --url https://relay.svc.test:…`, the
 * listener, `svc pair` (a QR code: the address is HTTPS), and a phone (Chromium) that pairs over that origin,
 * installs the app, and sends a sealed message that is typed into a tmux session. The relay's database and its log
 * hold no plaintext of the message.
 *
 * Name resolution is the test's hosts mapping: pebble asks its DNS stand-in, Chromium maps the name
 * (`--host-resolver-rules`), and svc's processes load test/helpers/hostsMap.mjs. The relay's ports are not 80 and
 * 443 (a test runs unprivileged): pebble validates on the relay's HTTP port, and the HTTPS port is in the URL.
 */
import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pty from 'node-pty';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pairAndSend, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { runSvc, type SpawnedSvc, SVC_BIN, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { databaseHolds } from '../helpers/devices.js';
import { startPebble, type TestPebble } from '../helpers/pebble.js';
import { freePort } from '../helpers/ports.js';
import { fakeAgentCommand, startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

const DOMAIN = 'relay.svc.test';
const MESSAGE = 'hello over acme 5c1d';
const HOSTS_MAP = pathToFileURL(resolve(import.meta.dirname, '../helpers/hostsMap.mjs')).href;

let home: ReturnType<typeof tempHome>;
let tmux: TmuxServer;
let pebble: TestPebble;
let relay: SpawnedSvc;
let listener: SpawnedSvc;
let browser: TestBrowser;
let env: NodeJS.ProcessEnv;
let dataDir: string;
let origin: string;
let hookId: string;

beforeAll(async () => {
  home = tempHome();
  tmux = await startTmuxServer();
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  pebble = await startPebble({ httpPort });
  dataDir = join(home.home, 'relay-data');
  // the person's computer: trusts the CA as it would Let's Encrypt, and finds relay.svc.test here
  env = svcEnv(home.home, {
    SVC_TMUX_SOCKET: tmux.socketPath,
    NODE_EXTRA_CA_CERTS: pebble.caFile,
    SVC_TEST_HOSTS: `${DOMAIN}=127.0.0.1`,
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${HOSTS_MAP}`.trim(),
  });
  relay = spawnSvc(
    [
      'relay',
      'serve',
      '--domain',
      DOMAIN,
      '--acme-directory',
      pebble.directoryUrl,
      '--acme-email',
      'person@example.org',
      '--host',
      '127.0.0.1',
      '--port',
      String(httpPort),
      '--https-port',
      String(httpsPort),
      '--data',
      dataDir,
    ],
    env,
  );
  origin = `https://${DOMAIN}:${httpsPort}`;
  await relay.waitForLine(new RegExp(`^relay listening on ${origin.replaceAll('.', '\\.')}$`), 60_000);
  const account = await runSvc(['relay', 'account', 'create', '--data', dataDir, '--json'], env);
  const { apiKey } = JSON.parse(account.stdout) as { apiKey: string };
  const login = await runSvc(['login', '--url', origin, '--key', apiKey, '--name', 'laptop', '--json'], env);
  expect(login.code, login.stderr).toBe(0);
  hookId = (JSON.parse(login.stdout) as { hookId: string }).hookId;
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(new RegExp(`connected to wss://${DOMAIN.replaceAll('.', '\\.')}:${httpsPort}/ws`), 20_000);
  browser = await startBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await relay?.stop();
  await pebble?.stop();
  await tmux?.cleanup();
  await home?.removeWhenFree();
});

/** `svc pair` on a terminal (a pty), as a person types it. */
function pairInTerminal(): Promise<string> {
  return new Promise((done) => {
    const term = pty.spawn(process.execPath, [SVC_BIN, 'pair'], {
      name: 'xterm-256color',
      cols: 120,
      rows: 60,
      env: { ...env, TERM: 'xterm-256color', NO_COLOR: '1' } as Record<string, string>,
    });
    let out = '';
    term.onData((d) => {
      out += d;
    });
    term.onExit(() => done(out));
  });
}

async function phonePage(): Promise<Page> {
  return browser.newPage({ trustSpki: [pebble.spki], hosts: { [DOMAIN]: '127.0.0.1' } });
}

describe('svc relay serve --domain', () => {
  it('got its certificate over ACME and keeps it owner-only in the data dir', () => {
    const caFolder = new URL(pebble.directoryUrl).host.replace(':', '_');
    expect(relay.output()).toMatch(/HTTP on http:\/\/127\.0\.0\.1:\d+ answers ACME challenges and redirects to HTTPS/);
    expect(relay.output()).toMatch(
      new RegExp(
        `certificate for ${DOMAIN.replaceAll('.', '\\.')} from ${pebble.directoryUrl.replaceAll('.', '\\.')}: valid until`,
      ),
    );
    expect(pebble.dns.questions).toContain(`${DOMAIN} A`);
    for (const file of ['account.key', `${DOMAIN}/key.pem`, `${DOMAIN}/cert.pem`])
      expect((statSync(join(dataDir, 'acme', caFolder, file)).mode & 0o777).toString(8), file).toBe('600');
  });

  it('svc pair draws a QR code for the HTTPS address; the phone pairs there and its sealed message is typed', {
    timeout: 90_000,
  }, async () => {
    const drawn = await pairInTerminal();
    expect(drawn).toMatch(/[▀▄█]/);
    expect(drawn).toMatch(/Pair a phone: open this link on it \(or scan the code\)/);
    await tmux.newSession('svc-proj', fakeAgentCommand('claude'), {
      options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
    });
    const pair = await runSvc(['pair'], env);
    expect(pair.code, pair.stderr).toBe(0);
    const link = new RegExp(`${origin.replaceAll('.', '\\.')}/#pair=[A-Za-z0-9_-]{22}`).exec(pair.stdout)?.[0];
    expect(link, pair.stdout).toBeDefined();
    const page = await phonePage();
    await pairAndSend(page, { link: link!, origin: origin, hookId, session: 'svc-proj', message: MESSAGE, tmux });
    // sealed end to end: the relay kept no plaintext, in its database or its log
    expect(databaseHolds(dataDir, MESSAGE)).toBe(false);
    expect(relay.output()).not.toContain(MESSAGE);
    browser.expectNoErrors();
  });

  it('over its ACME-certified origin the app is installable and its service worker runs (issue 29 part 6)', async () => {
    const phone = await phonePage();
    await phone.goto(`${origin}/`);
    await phone.waitForFunction(async () => (await navigator.serviceWorker.ready).active?.state === 'activated');
    const cdp = await phone.context().newCDPSession(phone);
    const { installabilityErrors } = (await cdp.send('Page.getInstallabilityErrors')) as {
      installabilityErrors: { errorId: string }[];
    };
    expect(installabilityErrors).toEqual([]);
  });

  it('plain HTTP on the relay’s HTTP port sends the phone to HTTPS', async () => {
    const phone = await phonePage();
    const httpPort = /HTTP on http:\/\/127\.0\.0\.1:(\d+)/.exec(relay.output())![1];
    await phone.goto(`http://${DOMAIN}:${httpPort}/`);
    expect(phone.url()).toBe(`${origin}/`);
  });
});
