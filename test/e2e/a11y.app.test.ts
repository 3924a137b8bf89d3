/**
 * Every screen of the phone app, light and dark, at a phone's size (390x844) in real Chromium against a real relay,
 * the real `svc listener` and real tmux: axe-core finds no serious or critical violation, and every touch target is
 * at least 44 px (test/helpers/a11y.ts). The screens hold what a person sees on them: a paired computer with an
 * agent and a shell session, a message sent, a live pane, the device's safety codes, and the pairing screen of a
 * phone not paired yet. Each screen is photographed in both schemes (issue 30 item 9): into test-results/screenshots/,
 * or docs/screenshots/ with SVC_SCREENSHOTS=docs (the README's pictures).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { accessibilityFindings } from '../helpers/a11y.js';
import { fromSessionMenu, pairedPhone, screenshotPath, type TestBrowser } from '../helpers/browser.js';
import { runSvc, type SpawnedSvc, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { fakeAgentBin, startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

const PHONE = { width: 390, height: 844 };

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;
let hookId: string;

beforeAll(async () => {
  relay = await startTestRelay();
  tmux = await startTmuxServer();
  home = tempHome();
  const bin = await fakeAgentBin(tmux.dir, ['claude']);
  env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath, PATH: `${bin}:${process.env.PATH}`, SHELL: '/bin/sh' });
  const proj = join(home.home, 'proj');
  mkdirSync(proj);
  execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: proj, env, stdio: 'pipe' });
  writeFileSync(join(proj, 'README.md'), '# proj\n');
  const login = await runSvc(['login', '--url', relay.url, '--key', relay.apiKey, '--name', 'laptop', '--json'], env);
  expect(login.code).toBe(0);
  hookId = JSON.parse(login.stdout).hookId;
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  for (const args of [
    ['cc', '--detach'],
    ['sh', '--detach'],
  ]) {
    const run = execFileSync(process.execPath, [join(import.meta.dirname, '../../bin/svc.js'), ...args], {
      cwd: proj,
      env,
      encoding: 'utf8',
    });
    expect(run.trim()).toMatch(/^svc-proj/);
  }
  ({ browser, page } = await pairedPhone(env, { viewport: PHONE }));
  await page.getByRole('link', { name: /^proj · Claude Code, svc-proj,/ }).waitFor({ timeout: 30_000 });
  await page.getByRole('link', { name: /^proj · Shell, svc-proj-sh,/ }).waitFor({ timeout: 30_000 });
}, 120_000);

afterEach(() => browser?.expectNoErrors());

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  await relay?.close();
  home?.cleanup();
});

/** The screen as it is now, in light and then dark: no finding in either; a picture of each as `<name>-<scheme>`. */
async function bothSchemes(p: Page, name: string): Promise<void> {
  for (const colorScheme of ['light', 'dark'] as const) {
    await p.emulateMedia({ colorScheme });
    await p.screenshot({ path: screenshotPath(`${name}-${colorScheme}`) });
    expect(await accessibilityFindings(p), `${colorScheme}: ${p.url()}`).toEqual([]);
  }
  await p.emulateMedia({ colorScheme: 'light' });
}

describe('the phone app is accessible on every screen, light and dark', () => {
  it('the pairing screen of a phone not paired yet', async () => {
    const unpaired = await browser.newPage({ viewport: PHONE });
    await unpaired.goto(`${relay.url}/`);
    await unpaired.getByText('This phone is not paired with a computer yet.').waitFor();
    await bothSchemes(unpaired, 'pair');
  }, 60_000);

  it('the agents list', async () => {
    await page.goto(`${relay.url}/#/`);
    await page.getByRole('link', { name: /^proj · Claude Code, svc-proj,/ }).waitFor();
    await bothSchemes(page, 'agents');
  }, 60_000);

  it('a session with a message sent', async () => {
    await page.getByRole('link', { name: /^proj · Claude Code, svc-proj,/ }).click();
    await page.getByRole('textbox', { name: 'Message' }).fill('run the tests please');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.message[data-state="injected"]').getByText('typed').waitFor({ timeout: 20_000 });
    await bothSchemes(page, 'session');
    // and with its menu open
    await page.getByRole('button', { name: 'Session menu' }).click();
    await page.getByRole('group', { name: 'Session' }).getByRole('button', { name: 'Force end' }).waitFor();
    await bothSchemes(page, 'session-menu');
    await page.getByRole('button', { name: 'Session menu' }).click();
    // the panels the menu opens
    await fromSessionMenu(page, 'Files');
    await page.getByRole('list', { name: 'Files of svc-proj' }).waitFor({ timeout: 20_000 });
    await bothSchemes(page, 'session-files');
    await fromSessionMenu(page, 'Schedule…');
    await page.getByLabel('At most').waitFor();
    await bothSchemes(page, 'session-schedule');
  }, 90_000);

  it('a shell session', async () => {
    await page.goto(`${relay.url}/#/s/${encodeURIComponent(hookId)}/svc-proj-sh`);
    await page.getByRole('textbox', { name: 'Message' }).waitFor();
    await bothSchemes(page, 'session-shell');
  }, 60_000);

  it('watching a pane', async () => {
    await page.goto(`${relay.url}/#/w/${encodeURIComponent(hookId)}/svc-proj`);
    await page.locator('.xterm-rows').getByText('you said: run the tests please').waitFor({ timeout: 20_000 });
    await bothSchemes(page, 'watch');
  }, 60_000);

  it('a new session: folder, agent, branch, first message', async () => {
    await page.goto(`${relay.url}/#/`);
    await page.getByRole('link', { name: 'New session' }).click();
    await page.getByRole('radio', { name: /proj/ }).waitFor({ timeout: 20_000 });
    await page.getByRole('textbox', { name: 'First message' }).fill('look at the failing test');
    await bothSchemes(page, 'new-session');
  }, 60_000);

  it('the device and its safety codes', async () => {
    await page.goto(`${relay.url}/#/device`);
    await page
      .getByLabel('safety code with laptop')
      .getByText(/^\d{4} \d{4}/)
      .waitFor({ timeout: 15_000 });
    await bothSchemes(page, 'device');
  }, 60_000);
});
