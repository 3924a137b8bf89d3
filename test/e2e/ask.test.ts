/**
 * `svc_ask` in the phone app (headless Chromium, real relay, real `svc listener`, real tmux, the real MCP SDK
 * client over stdio against `svc mcp`): the question shows in "Needs you" at the top of Agents, a tap on a choice
 * answers it, and the agent's tool call returns that answer; a question nobody answers shows as expired.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pushPayload } from '../../core/notify/push.js';
import { pairingLink, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { runSvc, type SpawnedSvc, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { databaseHolds } from '../helpers/devices.js';
import { svcMcpClient } from '../helpers/mcp.js';
import { startTestRelay, type TestRelay, TestSocket, waitFor } from '../helpers/relay.js';
import { fakeAgentCommand, startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;
let client: Client;

type ToolResult = { content: { text: string }[]; structuredContent?: Record<string, unknown> };
const ask = (args: Record<string, unknown>) =>
  client.callTool({ name: 'svc_ask', arguments: args }, undefined, { timeout: 120_000 }) as Promise<ToolResult>;

beforeAll(async () => {
  relay = await startTestRelay();
  tmux = await startTmuxServer();
  home = tempHome();
  env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath });
  expect((await runSvc(['login', '--url', relay.url, '--key', relay.apiKey, '--name', 'laptop'], env)).code).toBe(0);
  await tmux.newSession('svc-proj', fakeAgentCommand('claude'));
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  await listener.waitForLine(/control socket/);
  browser = await startBrowser();
  const pair = await runSvc(['pair'], env);
  const link = pairingLink(pair.stdout);
  page = await browser.newPage();
  await page.goto(link);
  await page.getByText('Online', { exact: true }).waitFor({ timeout: 15_000 });

  client = await svcMcpClient(env, tmux);
}, 90_000);

afterAll(async () => {
  const errors = browser?.logs.filter((l) => l.startsWith('[pageerror]')) ?? [];
  if (errors.length) process.stderr.write(`errors in the page:\n${errors.join('\n')}\n`);
  await client?.close().catch(() => {});
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  await relay?.close();
  home?.cleanup();
});

describe('svc_ask in the app', () => {
  it('shows the question under "Needs you"; a tap on a choice answers the agent', async () => {
    const pending = ask({ question: 'Deploy to staging now?', choices: ['Yes, deploy', 'Not yet'], timeout: 90 });
    const card = page.getByRole('listitem', { name: 'question from svc-proj' });
    await card.getByText('Deploy to staging now?').waitFor({ timeout: 15_000 });
    await page.getByRole('heading', { name: 'Needs you' }).waitFor();
    await card.getByText('Waiting for you').waitFor();
    await card.getByRole('button', { name: 'Yes, deploy' }).click();
    const result = await pending;
    expect(result.structuredContent).toMatchObject({
      status: 'answered',
      answer: 'Yes, deploy',
      choice: 'Yes, deploy',
    });
    expect(result.content[0]?.text).toBe('Yes, deploy');
    await card.getByText('Answered').waitFor({ timeout: 10_000 });
    expect(databaseHolds(relay.dataDir, 'Deploy to staging now?')).toBe(false);
  }, 60_000);

  it('takes a typed answer', async () => {
    const pending = ask({ question: 'Which branch?', timeout: 90 });
    const card = page.locator('.ask-card[data-state="waiting"]');
    await card.getByText('Which branch?').waitFor({ timeout: 15_000 });
    await card.getByRole('textbox').fill('release/2.4');
    await card.getByRole('checkbox', { name: 'Keep driving from the phone' }).check();
    await card.getByRole('button', { name: 'Answer' }).click();
    const result = await pending;
    expect(result.structuredContent).toMatchObject({ status: 'answered', answer: 'release/2.4', svcState: 'REMOTE' });
    expect(result.content[0]?.text).toMatch(/svcState: REMOTE/);
    expect(databaseHolds(relay.dataDir, 'release/2.4')).toBe(false);
  }, 60_000);

  it('shows a question nobody answered as expired', async () => {
    const result = await ask({ question: 'Anyone there?', timeout: 2 });
    expect(result.structuredContent).toMatchObject({ status: 'expired' });
    const card = page.getByRole('listitem', { name: 'question from svc-proj' }).filter({ hasText: 'Anyone there?' });
    await card.getByText('Expired').waitFor({ timeout: 10_000 });
    expect(await card.getByRole('button', { name: 'Answer' }).isHidden()).toBe(true);
  }, 60_000);
});

describe('Web Push in the service worker', () => {
  /** The computer's hookId of the notification the first test showed (the click test opens its session). */
  let computer = '';

  it('opens a sealed push with the device key and shows a notification named after the session', async () => {
    await page.context().grantPermissions(['notifications'], { origin: relay.url });
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
    // The envelope exactly as the relay would push it: taken from the notify.new frame it routes to apps.
    const sock = await TestSocket.open(relay.wsUrl, relay.apiKey);
    await sock.subscribeApp();
    const said = 'The migration finished';
    await client.callTool({ name: 'svc_notify', arguments: { message: said } });
    const frame = await sock.next('notify.new');
    await sock.close();
    computer = frame.computer;
    const data = JSON.stringify(
      pushPayload(
        { computer: frame.computer, session: frame.session, kind: 'notify', id: frame.id, envelope: frame.envelope },
        1,
      ),
    );
    expect(data).not.toContain(said);
    expect(data).not.toContain('svc-proj');

    const cdp = await page.context().newCDPSession(page);
    const registrations: { registrationId: string; scopeURL: string }[] = [];
    cdp.on(
      'ServiceWorker.workerRegistrationUpdated',
      (e: { registrations: { registrationId: string; scopeURL: string }[] }) => registrations.push(...e.registrations),
    );
    const versions: { registrationId: string; runningStatus: string; status: string }[] = [];
    cdp.on('ServiceWorker.workerVersionUpdated', (e: { versions: typeof versions }) => versions.push(...e.versions));
    await cdp.send('ServiceWorker.enable');
    const registration = await waitFor(() => registrations.find((r) => r.scopeURL.startsWith(relay.url)), {
      what: 'the app’s service worker registration',
    });
    // A worker that went idle is stopped: start it and wait until it runs, activated, before delivering.
    await cdp.send('ServiceWorker.startWorker', { scopeURL: registration.scopeURL });
    await waitFor(
      () =>
        versions.some(
          (v) =>
            v.registrationId === registration.registrationId &&
            v.runningStatus === 'running' &&
            v.status === 'activated',
        ),
      { what: 'the service worker running' },
    );
    const deliver = () =>
      cdp.send('ServiceWorker.deliverPushMessage', {
        origin: new URL(relay.url).origin,
        registrationId: registration.registrationId,
        data,
      });
    const notifications = () =>
      page.evaluate(async () => {
        const reg = await navigator.serviceWorker.ready;
        const list = await reg.getNotifications();
        return list.map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data as { url: string } }))[0];
      });
    // DevTools sometimes drops a delivery to a worker it is waking (about one run in three here); a push service
    // delivers again too. Up to three deliveries, each given 5 s to show.
    let shown: Awaited<ReturnType<typeof notifications>> | undefined;
    for (let attempt = 1; !shown && attempt <= 3; attempt++) {
      await deliver();
      shown = await waitFor(notifications, { timeoutMs: 5_000, intervalMs: 200, what: 'the notification' }).catch(
        () => undefined,
      );
    }
    if (!shown) throw new Error('the service worker showed no notification after three deliveries');
    expect(shown.title).toContain('svc-proj');
    expect(shown.body).toBe(said);
    expect(shown.tag).toBe(`svc:${frame.computer}:svc-proj`);
    // Where a click takes the person: the session's page.
    expect(shown.data.url).toBe(`/#/s/${encodeURIComponent(frame.computer)}/svc-proj`);
  }, 60_000);

  it('a click on that notification opens its session in the app', async () => {
    expect(computer, 'the notification shown by the test before').not.toBe('');
    const tag = `svc:${computer}:svc-proj`;
    const sessionHash = `#/s/${encodeURIComponent(computer)}/svc-proj`;
    const context = page.context();
    const pagesBefore = context.pages().length;
    // Not there yet: the click is what takes the page to the session.
    expect(new URL(page.url()).hash).not.toBe(sessionHash);
    expect(await page.locator('section.screen.session').count()).toBe(0);

    // The worker as Playwright sees it (Chromium lets a service worker target be evaluated); the newest one, as
    // DevTools may have started it again for the push.
    const worker = await waitFor(
      () =>
        context
          .serviceWorkers()
          .filter((w) => w.url().startsWith(relay.url))
          .at(-1),
      { what: 'the service worker in Playwright' },
    );
    // No DevTools command clicks a notification: the worker gets the click event a tap on that notification gives it,
    // for the notification it showed. A constructed event cannot extend its own life (waitUntil throws on it), so
    // the work the handler hands to waitUntil is collected and awaited here instead.
    const click = await worker.evaluate(async (tag) => {
      const sw = self as unknown as {
        registration: ServiceWorkerRegistration;
        dispatchEvent(event: Event): boolean;
        NotificationEvent: new (type: string, init: { notification: Notification }) => Event;
      };
      const [notification] = await sw.registration.getNotifications({ tag });
      if (!notification) return { found: false, waited: 0, failures: [] as string[] };
      const work: Promise<unknown>[] = [];
      const event = new sw.NotificationEvent('notificationclick', { notification });
      Object.defineProperty(event, 'waitUntil', { value: (p: Promise<unknown>) => work.push(p) });
      sw.dispatchEvent(event);
      const settled = await Promise.allSettled(work);
      const failures = settled.flatMap((s) => (s.status === 'rejected' ? [String(s.reason)] : []));
      return { found: true, waited: work.length, failures };
    }, tag);
    expect(click.found, 'the notification to click').toBe(true);
    expect(click.waited, 'the click handler’s work').toBe(1);
    // Only a click the browser itself delivers lets the worker focus a window (Chromium's window-interaction
    // allowance; DevTools cannot give it), so the handler's focus() after navigate() is refused here, and only that.
    expect(click.failures.filter((f) => !/^InvalidAccessError: Not allowed to focus a window/.test(f))).toEqual([]);

    // The existing window is taken to the session (no new one opened): its hash names the session, its screen shows.
    await page.waitForURL(`${relay.url}/${sessionHash}`, { timeout: 10_000 });
    const screen = page.locator('section.screen.session');
    await screen.waitFor({ state: 'visible', timeout: 10_000 });
    // That session's screen, found in the inventory (its meta names the computer), its Watch link to svc-proj's pane.
    await screen.locator('.session-meta').getByText('laptop', { exact: false }).waitFor({ timeout: 10_000 });
    expect(await screen.getByRole('link', { name: 'Watch', includeHidden: true }).getAttribute('href')).toBe(
      `#/w/${encodeURIComponent(computer)}/svc-proj`,
    );
    expect(context.pages().length).toBe(pagesBefore);
    // The click closed the notification.
    const left = await page.evaluate(async (tag) => {
      const reg = await navigator.serviceWorker.ready;
      return (await reg.getNotifications({ tag })).length;
    }, tag);
    expect(left).toBe(0);
    browser.expectNoErrors();
  }, 60_000);
});

describe('Notifications on the Device screen', () => {
  it('lets the person choose which events notify this phone, and keeps the choice', async () => {
    await page.goto(`${relay.url}/#/device`);
    await page.getByRole('heading', { name: 'Notifications' }).waitFor({ timeout: 15_000 });
    const turn = page.getByRole('checkbox', { name: 'An agent finished its turn' });
    expect(await turn.isChecked()).toBe(true);
    await turn.uncheck();
    // The choice is written to IndexedDB (kv pushEvents) after the click: reload once it is there, as a person would.
    await waitFor(
      () =>
        page.evaluate(
          () =>
            new Promise<boolean>((resolve) => {
              const open = indexedDB.open('svc');
              open.onerror = () => resolve(false);
              open.onsuccess = () => {
                const get = open.result.transaction('kv').objectStore('kv').get('pushEvents');
                get.onerror = () => resolve(false);
                get.onsuccess = () => {
                  const events = get.result as string[] | undefined;
                  open.result.close();
                  resolve(Array.isArray(events) && !events.includes('turn'));
                };
              };
            }),
        ),
      { what: 'the choice saved on this phone' },
    );
    await page.reload();
    await page.getByRole('heading', { name: 'Notifications' }).waitFor({ timeout: 15_000 });
    await waitFor(async () => !(await page.getByRole('checkbox', { name: 'An agent finished its turn' }).isChecked()), {
      what: 'the choice kept after a reload',
    });
    expect(await page.getByRole('checkbox', { name: 'A question from an agent' }).isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Turn notifications on' }).waitFor();
    await page.goto(`${relay.url}/#/`);
  }, 60_000);
});
