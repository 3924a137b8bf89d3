/**
 * test/helpers/browser.ts: an uncaught error or a console error in a page fails the test it happened in, unless the
 * test said it expects that console error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBrowser, type TestBrowser } from '../helpers/browser.js';
import { waitFor } from '../helpers/tmux.js';

let browser: TestBrowser;

beforeAll(async () => {
  browser = await startBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

describe('browser errors', () => {
  it('an uncaught error in a page, or a console error, fails the check; an expected console error passes', async () => {
    const page = await browser.newPage();
    await page.setContent('<p>page</p>');
    const seen = (what: string) =>
      waitFor(() => browser.logs.some((l) => l.includes(what)), { what: `${what} in the page's log` });

    await page.evaluate(() =>
      setTimeout(() => {
        throw new Error('thrown in the page');
      }),
    );
    await seen('thrown in the page');
    expect(() => browser.expectNoErrors()).toThrow(/\[pageerror\] Error: thrown in the page/);
    expect(() => browser.expectNoErrors()).not.toThrow(); // reported once

    await page.evaluate(() => console.error('printed as an error'));
    await seen('printed as an error');
    expect(() => browser.expectNoErrors()).toThrow(/\[console\.error\] printed as an error/);

    browser.allowConsoleErrors(/expected here/);
    await page.evaluate(() => console.error('expected here'));
    await page.evaluate(() => console.log('a plain log line'));
    await seen('a plain log line');
    expect(() => browser.expectNoErrors()).not.toThrow();
    // The allowance lasts one check: the same line fails the next test.
    await page.evaluate(() => console.error('expected here, again'));
    await seen('expected here, again');
    expect(() => browser.expectNoErrors()).toThrow(/expected here, again/);
  });
});
