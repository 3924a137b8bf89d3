/**
 * Proxies (spec 2.5): `httpsProxy`/`httpProxy`/`noProxy` in ~/.svc/config.json are honoured by `svc login` and by the
 * listener's WebSocket and HTTP calls — through a real HTTP proxy on loopback (test/helpers/proxy.ts) when set, and
 * not otherwise. Real relay, real `svc` processes.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runSvc, type SpawnedSvc, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

let relay: TestRelay;
let proxy: TestProxy;
let tmux: TmuxServer;
let relayHost: string;
const homes: ReturnType<typeof tempHome>[] = [];
let listener: SpawnedSvc | undefined;

/** A HOME whose ~/.svc/config.json (0600) holds `settings` before anything runs. */
function homeWith(settings: Record<string, string>) {
  const home = tempHome();
  homes.push(home);
  const dir = join(home.home, '.svc');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(settings));
  chmodSync(join(dir, 'config.json'), 0o600);
  // no proxy from the test's own environment
  return svcEnv(home.home, {
    SVC_TMUX_SOCKET: tmux.socketPath,
    HTTPS_PROXY: '',
    HTTP_PROXY: '',
    https_proxy: '',
    http_proxy: '',
    NO_PROXY: '',
    no_proxy: '',
  });
}

beforeAll(async () => {
  relay = await startTestRelay();
  proxy = await startTestProxy();
  tmux = await startTmuxServer();
  relayHost = new URL(relay.url).host;
});

afterEach(async () => {
  await listener?.stop();
  listener = undefined;
});

afterAll(async () => {
  await tmux?.cleanup();
  for (const h of homes) h.cleanup();
  await proxy?.close();
  await relay?.close();
});

describe('proxies from the config file', () => {
  it('login and the listener go through httpProxy: the proxy sees the relay, and the listener connects', async () => {
    const env = homeWith({ httpProxy: proxy.url });
    const before = proxy.seen.length;
    const login = await runSvc(['login', '--url', relay.url, '--key', relay.apiKey, '--name', 'behind-proxy'], env);
    expect(login.stderr).toBe('');
    expect(login.code).toBe(0);
    expect(proxy.seen.slice(before)).toContain(relayHost);
    const beforeListener = proxy.seen.length;
    listener = spawnSvc(['listener'], env);
    await listener.waitForLine(/connected to ws:/);
    expect(listener.output()).toMatch(new RegExp(`relay through the proxy ${proxy.url}`));
    // the WebSocket (a CONNECT tunnel) and the device list (HTTP) both went through it
    expect(proxy.seen.slice(beforeListener).filter((h) => h === relayHost).length).toBeGreaterThanOrEqual(1);
  });

  it('goes direct when noProxy names the relay, and when no proxy is set', async () => {
    const cases: Record<string, string>[] = [{ httpProxy: proxy.url, noProxy: `localhost,${relayHost}` }, {}];
    for (const settings of cases) {
      const env = homeWith(settings);
      const before = proxy.seen.length;
      const login = await runSvc(['login', '--url', relay.url, '--key', relay.apiKey, '--name', 'direct'], env);
      expect(login.code).toBe(0);
      listener = spawnSvc(['listener'], env);
      await listener.waitForLine(/connected to ws:/);
      expect(listener.output()).not.toMatch(/through the proxy/);
      expect(proxy.seen.slice(before)).toEqual([]);
      await listener.stop();
      listener = undefined;
    }
  });

  it('says so when the proxy setting is not an http(s) URL, and does not go direct', async () => {
    const env = homeWith({ httpProxy: proxy.url });
    expect((await runSvc(['login', '--url', relay.url, '--key', relay.apiKey, '--name', 'bad-proxy'], env)).code).toBe(
      0,
    );
    // now the proxy setting is broken
    const config = join(env.HOME!, '.svc', 'config.json');
    const written = JSON.parse(readFileSync(config, 'utf8'));
    writeFileSync(config, JSON.stringify({ ...written, httpProxy: 'socks5://127.0.0.1:1' }));
    const before = proxy.seen.length;
    listener = spawnSvc(['listener'], env);
    await listener.waitForLine(/proxy setting: .*not an http\(s\) proxy/);
    expect(listener.output()).not.toMatch(/connected to ws:/);
    expect(proxy.seen.slice(before)).toEqual([]);
  });
});
