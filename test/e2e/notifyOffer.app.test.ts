/**
 * Right after pairing, the app offers to turn notifications on (issue 30 item 5), in headless Chromium at phone size
 * with the real relay and `svc listener`: the Agents screen says what they are for and how to add the app to the
 * home screen on iOS and Android; a browser that says no is told in words; "Not now" puts it away for good. (A
 * subscription itself needs a push service, which this machine cannot reach: test/e2e/ask.test.ts and
 * test/integration/webpush.test.ts cover what follows one.)
 */
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pairedPhone, pairingLink, type TestBrowser } from '../helpers/browser.js';
import { runSvc, type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';

let relay: TestRelay;
let computer: TestComputer;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;

beforeAll(async () => {
  relay = await startTestRelay();
  computer = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' });
  listener = spawnSvc(['listener'], computer.env);
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(computer.env, { viewport: { width: 390, height: 844 } }));
}, 60_000);

afterEach(() => browser?.expectNoErrors());

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await computer?.tmux.cleanup();
  await relay?.close();
  computer?.home.cleanup();
});

describe('the notifications offer after pairing', () => {
  it('says what they are for and how to add the app to the home screen; a refusal is told; Not now puts it away', async () => {
    const offer = page.getByRole('region', { name: 'Notifications on this phone' });
    await offer.waitFor({ timeout: 15_000 });
    await offer.getByText('First, add svc to the home screen').click();
    await offer.getByText(/in Safari tap Share, then Add to Home Screen/).waitFor();
    await offer.getByText(/in Chrome open the ⋮ menu, then Install app/).waitFor();

    // the browser was not given the permission: it says no, and the person is told so
    await offer.getByRole('button', { name: 'Turn notifications on' }).click();
    await offer.getByRole('status').filter({ hasText: 'Not turned on: the browser said no.' }).waitFor();

    await offer.getByRole('button', { name: 'Not now' }).click();
    await offer.waitFor({ state: 'hidden' });
    await page.reload();
    await page.getByText('Online', { exact: true }).waitFor({ timeout: 15_000 });
    await page.getByRole('region', { name: 'computer laptop' }).waitFor();
    expect(await offer.isVisible()).toBe(false);
  }, 60_000);

  it('a tab without push (iOS Safari before Add to Home Screen) gets the steps, not a button that cannot work', async () => {
    const tab = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await tab.addInitScript(() => {
      delete (window as { PushManager?: unknown }).PushManager;
    });
    const pair = await runSvc(['pair'], computer.env);
    await tab.goto(pairingLink(pair.stdout));
    await tab.getByText('Online', { exact: true }).waitFor({ timeout: 15_000 });
    const offer = tab.getByRole('region', { name: 'Notifications on this phone' });
    await offer.waitFor({ timeout: 15_000 });
    await offer.getByText('First, add svc to the home screen').waitFor();
    expect(await offer.getByRole('button', { name: 'Turn notifications on' }).isVisible()).toBe(false);
    await offer.getByRole('button', { name: 'Not now' }).waitFor();
  }, 60_000);
});
