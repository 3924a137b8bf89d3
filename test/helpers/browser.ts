/**
 * Real headless Chromium for browser tests: Debian's /usr/bin/chromium driven by playwright-core (no browser
 * download), a fresh user-data dir per context, a phone-sized viewport by default.
 *
 *   const browser = await startBrowser();
 *   const page = await browser.newPage();            // 375×812, light
 *   await browser.close();                            // also removes the profiles
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.SVC_TEST_CHROMIUM ?? '/usr/bin/chromium';
export const PHONE = { width: 375, height: 812 } as const;

export interface TestBrowser {
  /** A new page in a new profile (its own IndexedDB, service workers and cookies). */
  newPage(opts?: { colorScheme?: 'light' | 'dark'; viewport?: { width: number; height: number } }): Promise<Page>;
  /** What the pages printed to their consoles, and their uncaught errors. */
  logs: string[];
  close(): Promise<void>;
}

export async function startBrowser(): Promise<TestBrowser> {
  const contexts: { context: BrowserContext; dir: string }[] = [];
  const logs: string[] = [];
  return {
    logs,
    async newPage(opts = {}) {
      const dir = mkdtempSync(join(tmpdir(), 'svc-chromium-'));
      const context = await chromium.launchPersistentContext(dir, {
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-background-networking', '--disable-gpu'],
        viewport: opts.viewport ?? PHONE,
        deviceScaleFactor: 2,
        isMobile: false,
        colorScheme: opts.colorScheme ?? 'light',
        reducedMotion: 'reduce',
      });
      contexts.push({ context, dir });
      const page = context.pages()[0] ?? (await context.newPage());
      page.on('console', (m) => logs.push(`[console.${m.type()}] ${m.text()}`));
      page.on('pageerror', (e) => logs.push(`[pageerror] ${e.message}`));
      return page;
    },
    async close() {
      for (const { context, dir } of contexts.splice(0)) {
        await context.close().catch(() => {});
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
