/**
 * The app pins which device each computer is, in a real browser (Debian's headless Chromium) against the real
 * relay: when the relay names another device for a computer (here with the computer's own key, which is what a
 * reinstall, a stolen key or the relay's operator would look like), the app seals nothing for it, says why, shows
 * the new safety code on the Device screen, and seals for the new device only once the person accepts it.
 *
 * The computer's listener is a plain WebSocket client subscribed with the computer's key: what matters here is
 * which device the app sealed each message for, which is on the outside of the envelope it receives.
 */
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { exportPublicKey, generateDeviceKeys, safetyCode } from '../../core/seal/keys.js';
import { startBrowser, type TestBrowser } from '../helpers/browser.js';
import { api, startTestRelay, type TestRelay, TestSocket, waitFor } from '../helpers/relay.js';

let relay: TestRelay;
let browser: TestBrowser;
let page: Page;
let listener: TestSocket;
let hookId: string;

async function computerDevice(name: string) {
  const publicKey = await exportPublicKey((await generateDeviceKeys(false)).publicKey);
  const res = await api(relay.url, 'POST', '/devices', {
    key: relay.apiKey,
    body: { name, kind: 'computer', publicKey },
  });
  expect(res.status).toBe(200);
  return { deviceId: res.json.deviceId as string, publicKey };
}

/** Type a message into svc-proj on the phone. */
async function send(text: string) {
  await page.goto(`${relay.url}/#/`);
  await page.getByRole('link', { name: /^svc-proj,/ }).click();
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

/** The n-th push the listener received (answered `injected`): the device(s) it was sealed for. */
async function sealedFor(pushCount: number): Promise<string> {
  await waitFor(() => listener.all('push.new').length >= pushCount, { timeoutMs: 10_000, what: 'a push' });
  const push = listener.all('push.new')[pushCount - 1]!.push;
  listener.send({ type: 'push.result', id: push.id, state: 'injected' });
  return (push.sealed as { to: { device: string }[] }).to.map((t) => t.device).join(',');
}

beforeAll(async () => {
  relay = await startTestRelay();
  const first = await computerDevice('laptop');
  const computer = await api(relay.url, 'POST', '/computers', {
    key: relay.apiKey,
    body: { name: 'laptop', platform: 'linux', deviceId: first.deviceId },
  });
  hookId = computer.json.hookId;
  listener = await TestSocket.open(relay.wsUrl, relay.apiKey);
  await listener.subscribeListener(hookId);
  const now = Math.floor(Date.now() / 1000);
  listener.send({
    type: 'listener.sessions',
    seq: 1,
    sessions: [{ name: 'svc-proj', attached: false, createdAt: now, activityAt: now, panes: [] }],
  });
  await listener.next('sessions.result');
  browser = await startBrowser();
  page = await browser.newPage();
  const code = await api(relay.url, 'POST', '/pairings', { key: relay.apiKey, body: {} });
  await page.goto(`${relay.url}/#pair=${code.json.code}`);
  await page.getByRole('region', { name: 'computer laptop' }).waitFor({ timeout: 10_000 });
}, 60_000);

// An uncaught error or a console error in a page fails the test it happened in.
afterEach(() => browser?.expectNoErrors());

afterAll(async () => {
  const errors = browser?.logs.filter((l) => l.startsWith('[pageerror]')) ?? [];
  if (errors.length) process.stderr.write(`errors in the page:\n${errors.join('\n')}\n`);
  await browser?.close();
  await listener?.close();
  await relay?.close();
});

describe('a computer the relay repoints at another device', () => {
  it('is refused in the app with the new safety code until the person accepts it', async () => {
    const computers = (await api(relay.url, 'GET', '/computers', { key: relay.apiKey })).json.computers;
    const first = computers[0].deviceId as string;
    await send('before the move');
    expect(await sealedFor(1)).toBe(first);

    const moved = await computerDevice('laptop (new)');
    const repoint = await api(relay.url, 'POST', '/computers', {
      key: relay.apiKey,
      body: { name: 'laptop', deviceId: moved.deviceId },
    });
    expect(repoint.json.deviceId).toBe(moved.deviceId);

    // The app hears computers.changed and refreshes: the Device screen says what happened.
    await page.goto(`${relay.url}/#/device`);
    const alarm = page.getByRole('alert');
    await alarm.getByText(`The relay now says laptop is another device (${moved.deviceId}; it was ${first})`).waitFor({
      timeout: 10_000,
    });
    // A message is not sealed for the new device: refused in the app, with the reason, and nothing reaches the relay.
    await send('after the move');
    const note = page.getByRole('status').filter({ hasText: 'Not sent' });
    await note.getByText(/the relay names another device for laptop/).waitFor({ timeout: 10_000 });
    expect(listener.all('push.new')).toHaveLength(1);

    // The new code is the one `svc devices` on the computer would show for this phone.
    await page.goto(`${relay.url}/#/device`);
    const devices = (await api(relay.url, 'GET', '/devices', { key: relay.apiKey })).json.devices;
    const phone = devices.find((d: { kind: string }) => d.kind === 'app').publicKey as string;
    const code = page.getByLabel('new safety code with laptop');
    await code.getByText(/^\d{4} \d{4} \d{4} \d{4}$/).waitFor({ timeout: 10_000 });
    expect(await code.textContent()).toBe(await safetyCode(phone, moved.publicKey));

    // Reloading changes nothing: the pin is kept, not a one-off check.
    await page.reload();
    await page.getByRole('alert').waitFor({ timeout: 10_000 });

    await page.getByRole('button', { name: 'The codes match: accept the new device' }).click();
    await page.getByRole('alert').waitFor({ state: 'detached', timeout: 10_000 });
    await send('after accepting');
    expect(await sealedFor(2)).toBe(moved.deviceId);
  }, 90_000);
});
