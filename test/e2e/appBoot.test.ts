/**
 * The phone app before it has anything to show (headless Chromium against a real relay): a placeholder while its
 * script loads, and a clear page when the browser refuses its device store (IndexedDB), as private browsing and
 * blocked site data do.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startBrowser, type TestBrowser } from '../helpers/browser.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';

let relay: TestRelay;
let browser: TestBrowser;

beforeAll(async () => {
  relay = await startTestRelay();
  browser = await startBrowser();
}, 60_000);

// An uncaught error or a console error in a page fails the test it happened in.
afterEach(() => browser?.expectNoErrors());

afterAll(async () => {
  await browser?.close();
  await relay?.close();
});

describe('the phone app while it starts', () => {
  it('shows a placeholder until its script runs, then the page', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    // Hold the app's script back, as a slow network would.
    await page.route(/\/[^/]*\.js$/, async (route) => {
      await held;
      await route.continue();
    });
    // not 'domcontentloaded': it waits for the module script, which is held
    await page.goto(`${relay.url}/`, { waitUntil: 'commit' });
    await page.getByRole('status').getByText('Starting svc…').waitFor();
    release();
    await page.getByText('This phone is not paired with a computer yet.').waitFor({ timeout: 10_000 });
    expect(await page.getByText('Starting svc…').count()).toBe(0);
  }, 60_000);

  it('says so in words when the device store cannot open', async () => {
    const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
    await page.addInitScript(() => {
      // What Firefox's private windows and a "block site data" setting do: open() fails.
      indexedDB.open = () => {
        const request = {
          error: new DOMException('The operation failed for reasons unrelated to the database itself.', 'UnknownError'),
        } as unknown as IDBOpenDBRequest;
        setTimeout(() => request.onerror?.(new Event('error')));
        return request;
      };
    });
    await page.goto(`${relay.url}/`);
    await page.getByRole('heading', { name: 'Storage unavailable' }).waitFor({ timeout: 10_000 });
    await page.getByText('svc cannot open its storage on this phone').waitFor();
    expect(await page.getByTestId('storage-error').textContent()).toBe(
      'The browser said: The operation failed for reasons unrelated to the database itself.',
    );
    expect(await page.getByText('Starting svc…').count()).toBe(0);
  }, 60_000);
});
