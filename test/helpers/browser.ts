/**
 * Real headless Chromium for browser tests: Debian's /usr/bin/chromium driven by playwright-core (no browser
 * download), a fresh user-data dir per context, a phone-sized viewport by default.
 *
 *   const browser = await startBrowser();
 *   const page = await browser.newPage();            // 375×812, light
 *   afterEach(() => browser.expectNoErrors());        // an uncaught page error or console error fails the test
 *   await browser.close();                            // also removes the profiles
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { runSvc } from './cli.js';
import { waitFor } from './relay.js';

export const CHROMIUM = process.env.SVC_TEST_CHROMIUM ?? '/usr/bin/chromium';
export const PHONE = { width: 375, height: 812 } as const;

export interface TestBrowser {
  /** A new page in a new profile (its own IndexedDB, service workers and cookies). */
  newPage(opts?: {
    colorScheme?: 'light' | 'dark';
    viewport?: { width: number; height: number };
    /** Certificates whose key hash (base64 sha256 of the SPKI) Chromium accepts as valid: a test CA's server. */
    trustSpki?: string[];
    /** Host names this browser resolves to these addresses (a test's domain on loopback). */
    hosts?: Record<string, string>;
  }): Promise<Page>;
  /** What the pages printed to their consoles, and their uncaught errors. */
  logs: string[];
  /**
   * Throws, listing them, when any page threw an uncaught error or printed a console error since the last call
   * (call it in afterEach, so the test that caused one fails). Console errors matching `allowConsoleErrors` pass.
   */
  expectNoErrors(): void;
  /** Console errors the current test expects (a refused WebSocket while the relay is down); reset by expectNoErrors. */
  allowConsoleErrors(...patterns: RegExp[]): void;
  close(): Promise<void>;
}

/** Fails, saying what to install, where there is no Chromium: a browser test never passes by not running. */
export async function startBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium, or set SVC_TEST_CHROMIUM to one`);
  const contexts: { context: BrowserContext; dir: string }[] = [];
  const logs: string[] = [];
  let errors: string[] = [];
  let allowed: RegExp[] = [];
  return {
    logs,
    expectNoErrors() {
      const found = errors;
      errors = [];
      allowed = [];
      if (found.length) throw new Error(`errors in the page:\n${found.join('\n')}`);
    },
    allowConsoleErrors(...patterns) {
      allowed.push(...patterns);
    },
    async newPage(opts = {}) {
      const dir = mkdtempSync(join(tmpdir(), 'svc-chromium-'));
      const context = await chromium.launchPersistentContext(dir, {
        executablePath: CHROMIUM,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-background-networking',
          '--disable-gpu',
          ...(opts.trustSpki?.length ? [`--ignore-certificate-errors-spki-list=${opts.trustSpki.join(',')}`] : []),
          ...(opts.hosts
            ? [
                `--host-resolver-rules=${Object.entries(opts.hosts)
                  .map(([name, address]) => `MAP ${name} ${address}`)
                  .join(',')}`,
              ]
            : []),
        ],
        viewport: opts.viewport ?? PHONE,
        deviceScaleFactor: 2,
        isMobile: false,
        colorScheme: opts.colorScheme ?? 'light',
        reducedMotion: 'reduce',
      });
      contexts.push({ context, dir });
      const page = context.pages()[0] ?? (await context.newPage());
      page.on('console', (m) => {
        const line = `[console.${m.type()}] ${m.text()}`;
        logs.push(line);
        if (m.type() === 'error' && !allowed.some((re) => re.test(m.text()))) errors.push(line);
      });
      page.on('pageerror', (e) => {
        const line = `[pageerror] ${e.stack ?? e.message}`;
        logs.push(line);
        errors.push(line);
      });
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

/**
 * A phone paired with the computer of `env` the way a person pairs one: `svc pair` prints a link, the page opens it,
 * and the app says Online. The listener of `env` must be running.
 */
export async function pairedPhone(
  env: NodeJS.ProcessEnv,
  opts: { viewport?: { width: number; height: number } } = {},
): Promise<{ browser: TestBrowser; page: Page }> {
  const browser = await startBrowser();
  const pair = await runSvc(['pair'], env);
  const page = await browser.newPage(opts);
  await page.goto(pairingLink(pair.stdout));
  await page.getByText('Online', { exact: true }).waitFor({ timeout: 15_000 });
  return { browser, page };
}

/** The pairing link `svc pair` or `svc up` printed: the code and this computer's secret (core/devices/pairingProof.ts). */
export function pairingLink(printed: string): string {
  const link = /https?:\/\/\S+#pair=[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}/.exec(printed)?.[0];
  if (!link) throw new Error(`no pairing link in:\n${printed}`);
  return link;
}

/**
 * What a person does with a pairing link at an HTTPS origin: open it, wait for Online, open `session` of computer
 * `hookId`, send `message`; resolves once the pane of `tmux` shows the fake agent's `you said: …` and the app marks
 * the message typed.
 */
export async function pairAndSend(
  page: Page,
  opts: {
    link: string;
    origin: string;
    hookId: string;
    session: string;
    message: string;
    tmux: { capture(target: string): Promise<string> };
  },
): Promise<void> {
  await page.goto(opts.link);
  await page.getByText('Online', { exact: true }).waitFor({ timeout: 20_000 });
  await page.goto(`${opts.origin}/#/s/${encodeURIComponent(opts.hookId)}/${opts.session}`);
  await page.getByRole('textbox', { name: 'Message' }).fill(opts.message);
  await page.getByRole('button', { name: 'Send' }).click();
  await waitFor(async () => (await opts.tmux.capture(opts.session)).includes(`you said: ${opts.message}`), {
    timeoutMs: 30_000,
    what: 'the message typed in the pane',
  });
  await page.locator('.message[data-state="injected"]').getByText(opts.message).waitFor({ timeout: 15_000 });
}

/**
 * Taps `item` in the session screen's menu (Watch, Files, Schedule…, End session, Force end), opening the menu
 * first as a person would.
 */
export async function fromSessionMenu(page: Page, item: string): Promise<void> {
  const button = page.getByRole('button', { name: 'Session menu' });
  if ((await button.getAttribute('aria-expanded')) !== 'true') await button.click();
  await page
    .getByRole('group', { name: 'Session' })
    .getByRole(item === 'Watch' ? 'link' : 'button', { name: item, exact: true })
    .click();
}

/**
 * Session control as a person does it in the app: taps `label` (End session and Force end are in the session's
 * menu; Resume and Forget, all a past session offers, are in view), then the confirmation `confirm`, and waits for
 * the outcome `done` in the status line. On a timeout the error shows the status and `context()` (a log).
 */
export async function sessionControl(
  page: Page,
  step: { label: string; confirm: string; done: RegExp; timeoutMs: number },
  context: () => string,
): Promise<void> {
  if (step.label === 'End session' || step.label === 'Force end') await fromSessionMenu(page, step.label);
  else await page.getByRole('button', { name: step.label, exact: true }).click();
  await page.getByRole('button', { name: step.confirm, exact: true }).click();
  await page
    .getByRole('status')
    .filter({ hasText: step.done })
    .waitFor({ timeout: step.timeoutMs })
    .catch(async (e) => {
      const status = await page.locator('.control-status').textContent();
      throw new Error(`${(e as Error).message}\n--- status ---\n${status}\n--- listener ---\n${context()}`);
    });
}

/**
 * Where a test's screenshots go: test-results/screenshots/, or docs/screenshots/ with SVC_SCREENSHOTS=docs (how the
 * README's pictures are made), so a test run leaves the repository as it was.
 */
export function screenshotPath(name: string): string {
  const dir = resolve(
    import.meta.dirname,
    process.env.SVC_SCREENSHOTS === 'docs' ? '../../docs/screenshots' : '../../test-results/screenshots',
  );
  mkdirSync(dir, { recursive: true });
  return join(dir, `${name}.png`);
}
