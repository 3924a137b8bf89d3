/**
 * `svc debug ui` in a real browser (Debian's Chromium, driven by playwright-core): against a real listener, relay
 * and tmux, the page shows the session actor, its chart with the current state, and a push's transition within a
 * transition as it happens. How soon it shows is measured in bench/, not asserted here.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startBrowser, type TestBrowser } from '../helpers/browser.js';
import { type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { api, startTestRelay, type TestRelay } from '../helpers/relay.js';
import { type TmuxServer, waitFor } from '../helpers/tmux.js';

const DESKTOP = { width: 1280, height: 800 };

let relay: TestRelay;
let browser: TestBrowser;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc | null = null;
let ui: SpawnedSvc | null = null;

describe('svc debug ui', () => {
  beforeAll(async () => {
    relay = await startTestRelay();
    browser = await startBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await relay?.close();
  });

  beforeEach(async () => {
    ({ tmux, home, env } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'box' }));
    listener = spawnSvc(['listener'], env);
    await listener.waitForLine(/connected to ws:/);
    await listener.waitForLine(/control socket /);
    ui = spawnSvc(['debug', 'ui'], env);
  });

  afterEach(async () => {
    // An uncaught error or a console error in the page fails the test it happened in.
    browser.expectNoErrors();
    await ui?.stop('SIGINT');
    ui = null;
    await listener?.stop();
    listener = null;
    await tmux.cleanup();
    home.cleanup();
  });

  it('serves only on loopback, and only with the token of the printed URL', async () => {
    const url = new URL(await ui!.waitForLine(/^http:\/\/127\.0\.0\.1:\d+\/\?token=/));
    const token = url.searchParams.get('token')!;
    expect(token.length).toBeGreaterThanOrEqual(32);
    const base = `http://127.0.0.1:${url.port}`;
    expect((await fetch(`${base}/`)).status).toBe(403);
    // one character changed (to another than it was: a token ending in x once made this the token itself)
    const wrong = `${token.slice(0, -1)}${token.endsWith('x') ? 'y' : 'x'}`;
    expect((await fetch(`${base}/?token=${wrong}`)).status).toBe(403);
    expect((await fetch(`${base}/api/state`)).status).toBe(403);
    expect((await fetch(`${base}/api/events`)).status).toBe(403);
    expect((await fetch(`${base}/nope`)).status).toBe(403);
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const state = await fetch(`${base}/api/state?token=${token}`);
    expect(state.status).toBe(200);
    expect(JSON.stringify(await state.json())).not.toContain(relay.apiKey);
    // another Host (a DNS-rebinding page) is refused even with the token
    const rebound = await new Promise<number>((resolve) => {
      import('node:http').then(({ get }) =>
        get({ host: '127.0.0.1', port: url.port, path: `/?token=${token}`, headers: { Host: 'evil.example' } }, (r) => {
          r.resume();
          resolve(r.statusCode ?? 0);
        }),
      );
    });
    expect(rebound).toBe(403);
  });

  it('draws the session actor with its state, and shows a push’s transition', async () => {
    const url = await ui!.waitForLine(/^http:\/\/127\.0\.0\.1:\d+\/\?token=/);
    const page = await browser.newPage({ viewport: DESKTOP });
    try {
      await page.goto(`${url}&actor=session.svc-proj`);
      await page.waitForSelector('#status.ok', { timeout: 10_000 });
      await page.waitForSelector('#tree .actor[data-id="session.svc-proj"].selected', { timeout: 15_000 });
      await page.waitForSelector('#tree .actor[data-id="relay"]');
      // the session's chart, its current states highlighted
      await page.waitForSelector('#chart .state.active[data-id="session.delivery.ready"]');
      await page.waitForSelector('#chart .state.active[data-id="session.attachment.detached"]');
      expect(await page.locator('#chart .state.parallel[data-id="session"]').count()).toBe(1);
      expect(await page.textContent('#title')).toBe('session.svc-proj · session');

      const body = 'a message the page must never show';
      const res = await api(relay.url, 'POST', '/pushes/send', {
        key: relay.apiKey,
        body: { type: 'agent.command', agentSessionName: 'svc-proj', body },
      });
      expect(res.status).toBe(200);
      // The transition appears in the event log, stamped with when it happened.
      const row = '#log li[data-actor="session.svc-proj"][data-event="PUSH"]';
      await page.waitForSelector(row, { timeout: 15_000 });
      expect(Number(await page.getAttribute(row, 'data-at'))).toBeGreaterThan(0);
      expect(await page.getAttribute(row, 'data-to')).toContain('delivery.injecting');
      // and back to ready once typed; the chart follows
      await page.waitForSelector('#log li[data-actor="session.svc-proj"][data-to*="delivery.ready"].moved', {
        timeout: 15_000,
      });
      await page.waitForSelector('#chart .state.active[data-id="session.delivery.ready"]');
      await waitFor(async () => (await tmux.capture('svc-proj')).includes(body), { what: 'the text in the pane' });
      expect(await page.content()).not.toContain(body);
      await page.screenshot({ path: 'test-results/debug-ui.png', fullPage: true });
    } finally {
      await page.close();
    }
  });

  it('shows changes of state only; the screen watch’s ticks are behind their own toggle', async () => {
    const url = await ui!.waitForLine(/^http:\/\/127\.0\.0\.1:\d+\/\?token=/);
    const page = await browser.newPage({ viewport: DESKTOP });
    try {
      await page.goto(url);
      await page.waitForSelector('#status.ok', { timeout: 10_000 });
      expect(await page.isChecked('#moves')).toBe(true);
      expect(await page.isChecked('#ticks')).toBe(false);
      // the inventory looks at the fake Claude Code's pane four times a second: ticks arrive, none is shown
      const ticks = page.locator('#log li.tick');
      await waitFor(async () => (await ticks.count()) >= 6, { what: 'the screen watch ticking in the log' });
      expect(await page.locator('#log li.tick:not([hidden])').count()).toBe(0);
      expect(await page.locator('#log li.same:not([hidden])').count()).toBe(0);
      expect(await ticks.first().getAttribute('data-actor')).toBe('inventory');
      // a change of state that is not a tick is shown: a push typed into the session
      const res = await api(relay.url, 'POST', '/pushes/send', {
        key: relay.apiKey,
        body: { type: 'agent.command', agentSessionName: 'svc-proj', body: 'hello' },
      });
      expect(res.status).toBe(200);
      await page.waitForSelector('#log li[data-actor="session.svc-proj"][data-event="PUSH"]:not([hidden])', {
        timeout: 15_000,
      });
      // the toggle shows them, and hides them again
      await page.check('#ticks');
      await page.waitForSelector('#log li.tick:not([hidden])', { timeout: 5_000 });
      await page.uncheck('#ticks');
      expect(await page.locator('#log li.tick:not([hidden])').count()).toBe(0);
    } finally {
      await page.close();
    }
  });

  it('says when the listener goes away, and picks it up again when it is back', async () => {
    const url = await ui!.waitForLine(/^http:\/\/127\.0\.0\.1:\d+\/\?token=/);
    const page = await browser.newPage({ viewport: DESKTOP });
    // while the listener is away the page's reads are answered 503 (what it shows as "not reachable"); Chromium logs
    // each as a failed load, whether one falls in the gap depends on the moment (a fresh-clone run on Node 20)
    browser.allowConsoleErrors(/status of 503 \(Service Unavailable\)/);
    try {
      await page.goto(url);
      await page.waitForSelector('#status.ok', { timeout: 10_000 });
      await page.waitForSelector('#tree .actor[data-id="session.svc-proj"]', { timeout: 15_000 });
      await listener!.stop();
      await page.waitForSelector('#status.bad', { timeout: 10_000 });
      expect(await page.textContent('#status')).toMatch(/^listener not reachable/);
      listener = spawnSvc(['listener'], env);
      await listener.waitForLine(/control socket /);
      await page.waitForSelector('#status.ok', { timeout: 10_000 });
      await page.waitForSelector('#tree .actor[data-id="session.svc-proj"]', { timeout: 15_000 });
    } finally {
      await page.close();
    }
  });
});
