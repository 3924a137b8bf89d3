/**
 * A phone through a tunnel (issue 29 part 4; docs/hosting.md "No server: a tunnel"), walked with the README's
 * command: `svc up --tunnel cloudflared` with a stand-in `cloudflared` on PATH that is a real tunnel on loopback
 * (test/helpers/tunnelStandIn.mjs: TLS for the public name, every byte forwarded to the relay, and cloudflared's
 * own log lines). svc reads the public URL, prints the pairing link for it, and a phone (Chromium, the public name
 * mapped to the stand-in) pairs over HTTPS and sends a sealed message that is typed into a tmux session. Neither
 * the relay's database nor the tunnel's traffic holds the message in the clear.
 */

import { createHash, X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pairAndSend, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { selfSigned } from '../helpers/certs.js';
import { type SpawnedSvc, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { databaseHolds } from '../helpers/devices.js';
import { waitFor } from '../helpers/relay.js';
import { fakeAgentCommand, startTmuxServer, type TmuxServer } from '../helpers/tmux.js';
import { cloudflaredQuickTunnelLog } from '../helpers/tunnel.js';

const PUBLIC = 'https://quiet-otter-lamp-harbor.trycloudflare.com';
const MESSAGE = 'hello through a tunnel 77b0';
const STAND_IN = resolve(import.meta.dirname, '../helpers/tunnelStandIn.mjs');

let home: ReturnType<typeof tempHome>;
let tmux: TmuxServer;
let up: SpawnedSvc;
let browser: TestBrowser;
let spki: string;
let traffic: string;
let standInPort: number;

beforeAll(async () => {
  home = tempHome();
  tmux = await startTmuxServer();
  const bin = join(home.home, 'bin');
  mkdirSync(bin);
  const cert = join(home.home, 'tunnel.crt');
  const key = join(home.home, 'tunnel.key');
  selfSigned({ key, cert }, { cn: 'tunnel', san: `DNS:${new URL(PUBLIC).hostname}` });
  spki = createHash('sha256')
    .update(new X509Certificate(readFileSync(cert)).publicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64');
  writeFileSync(join(bin, 'cloudflared'), `#!/bin/sh\nexec "${process.execPath}" "${STAND_IN}" "$@"\n`);
  chmodSync(join(bin, 'cloudflared'), 0o755);
  traffic = join(home.home, 'tunnel-traffic');
  const portFile = join(home.home, 'tunnel-port');
  const env = svcEnv(home.home, {
    SVC_TMUX_SOCKET: tmux.socketPath,
    PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
    STANDIN_CERT: cert,
    STANDIN_KEY: key,
    STANDIN_TRAFFIC: traffic,
    STANDIN_PORT_FILE: portFile,
    STANDIN_LOG: cloudflaredQuickTunnelLog(PUBLIC),
  });
  up = spawnSvc(['up', '--port', '0', '--tunnel', 'cloudflared'], env);
  await up.waitForLine(/connected to ws:/, 30_000);
  await up.waitForLine(/#pair=/, 30_000);
  standInPort = Number(
    await waitFor(() => existsSync(portFile) && readFileSync(portFile, 'utf8'), { what: 'the tunnel' }),
  );
  browser = await startBrowser();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await up?.stop('SIGINT');
  await tmux?.cleanup();
  await home?.removeWhenFree();
});

describe('svc up --tunnel cloudflared, a phone through the tunnel', () => {
  it('pairs with the public HTTPS URL and its sealed message is typed; the tunnel carried only sealed bytes', {
    timeout: 90_000,
  }, async () => {
    await tmux.newSession('svc-proj', fakeAgentCommand('claude'), {
      options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
    });
    const link = new RegExp(`${PUBLIC.replaceAll('.', '\\.')}/#pair=[A-Za-z0-9_-]{22}`).exec(up.output())?.[0];
    expect(link, up.output()).toBeDefined();
    const hookId = (JSON.parse(readFileSync(join(home.home, '.svc', 'config.json'), 'utf8')) as { hookId: string })
      .hookId;
    // the phone on the internet: the public name is the tunnel's edge (here, the stand-in on loopback)
    const page = await browser.newPage({
      trustSpki: [spki],
      hosts: { [new URL(PUBLIC).hostname]: `127.0.0.1:${standInPort}` },
    });
    await pairAndSend(page, { link: link!, origin: PUBLIC, hookId, session: 'svc-proj', message: MESSAGE, tmux });
    const carried = readFileSync(traffic);
    expect(carried.includes(Buffer.from('POST /pairings/claim'))).toBe(true); // the tunnel did carry the phone
    expect(carried.includes(Buffer.from(MESSAGE))).toBe(false);
    expect(databaseHolds(join(home.home, '.svc', 'relay'), MESSAGE)).toBe(false);
    browser.expectNoErrors();
  });
});
