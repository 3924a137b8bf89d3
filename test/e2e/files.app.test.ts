/**
 * File view in the app (spec 4.11.3), in headless Chromium through the real relay and `svc listener` on a private
 * tmux server: the session screen's Files list is the project as git lists it; a file opens with its planted token
 * masked; a secret file says it is not shown; Changes shows the uncommitted diff, masked too.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromSessionMenu, pairedPhone, type TestBrowser } from '../helpers/browser.js';
import { type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import type { TmuxServer } from '../helpers/tmux.js';

const SESSION = 'svc-files-app';
const TOKEN = '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';
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd });

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let hookId: string;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;

beforeAll(async () => {
  relay = await startTestRelay();
  let env: NodeJS.ProcessEnv;
  ({ tmux, home, env, hookId } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' }));
  const project = join(home.home, 'proj');
  mkdirSync(project);
  git(project, 'init', '-q', '-b', 'main');
  writeFileSync(join(project, 'config.ts'), 'export const token = "";\n');
  writeFileSync(join(project, 'server.pem'), '-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n');
  git(project, 'add', '.');
  git(project, 'commit', '-qm', 'first');
  writeFileSync(join(project, 'config.ts'), `export const token = "${TOKEN}";\n`);
  await tmux.newSession(SESSION, ['cat'], {
    cwd: project,
    options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
  });
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(env));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  await relay?.close();
  home?.cleanup();
});

describe.sequential('file view in the app', () => {
  it('lists the project, opens a file masked, keeps a secret file closed, shows the changes', async () => {
    await page.goto(`${relay.url}/#/s/${encodeURIComponent(hookId)}/${SESSION}`);
    await fromSessionMenu(page, 'Files');
    const files = page.getByRole('list', { name: `Files of ${SESSION}` });
    await files.getByRole('button', { name: 'config.ts' }).click({ timeout: 30_000 });
    const text = page.getByLabel('config.ts');
    await text.waitFor();
    expect(await text.textContent()).toMatch(/^export const token = "•+";/);
    await page.getByText('1 secret-looking string(s) masked.').waitFor();

    await files.getByRole('button', { name: /server\.pem/ }).click();
    await page.getByText('A secret file: listed, never shown.').waitFor();
    expect(await page.getByText('BEGIN CERTIFICATE').count()).toBe(0);

    await page.getByRole('button', { name: 'Changes', exact: true }).click();
    const diff = page.getByLabel('Uncommitted changes');
    await diff.waitFor();
    expect(await diff.textContent()).toContain('+export const token = "•');
    expect(await page.content()).not.toContain(TOKEN);
    // coloured: an added line in the scheme's "good" colour, a removed one in its "bad"
    const added = diff.locator('.diff-add', { hasText: '+export const token' });
    const removed = diff.locator('.diff-del').first();
    const colour = (l: typeof added) => l.evaluate((e) => getComputedStyle(e).color);
    expect(await colour(added)).toBe('rgb(26, 127, 55)');
    expect(await colour(removed)).toBe('rgb(180, 35, 24)');
  }, 90_000);

  it('sends a file to the computer: it lands in ~/Downloads/Svc under its name, a second one beside it', async () => {
    const data = Buffer.from(`notes from the phone ${'x'.repeat(300_000)}\n`); // two chunks
    const picker = page.getByLabel('Send a file to the computer');
    await picker.setInputFiles({ name: 'phone notes.txt', mimeType: 'text/plain', buffer: data });
    const saved = join(home.home, 'Downloads', 'Svc', 'phone notes.txt');
    await page
      .getByRole('status')
      .filter({ hasText: `Sent: saved on the computer as ${saved}.` })
      .waitFor({ timeout: 30_000 });
    expect(readFileSync(saved).equals(data)).toBe(true);
    await picker.setInputFiles({ name: 'phone notes.txt', mimeType: 'text/plain', buffer: Buffer.from('again') });
    await page
      .getByRole('status')
      .filter({ hasText: /phone notes \(2\)\.txt/ })
      .waitFor({ timeout: 30_000 });
    expect(readFileSync(saved).equals(data)).toBe(true);
  }, 90_000);

  it('Attach in the message box sends the file and names it in the message, as @path for Claude Code', async () => {
    const box = page.getByRole('textbox', { name: 'Message' });
    await box.fill('please read');
    await page.getByLabel('Attach a file').setInputFiles({
      name: 'plan.md',
      mimeType: 'text/markdown',
      buffer: Buffer.from('# the plan\n'),
    });
    const saved = join(home.home, 'Downloads', 'Svc', 'plan.md');
    await page.locator('.composer-note', { hasText: `Sent: saved on the computer as ${saved}.` }).waitFor({
      timeout: 30_000,
    });
    expect(readFileSync(saved, 'utf8')).toBe('# the plan\n');
    expect(await box.inputValue()).toBe(`please read @${saved} `);
    // a name with a space is given as the plain path, which every agent opens
    await page.getByLabel('Attach a file').setInputFiles({
      name: 'two words.md',
      mimeType: 'text/markdown',
      buffer: Buffer.from('x'),
    });
    const spaced = join(home.home, 'Downloads', 'Svc', 'two words.md');
    await page.locator('.composer-note', { hasText: spaced }).waitFor({ timeout: 30_000 });
    expect(await box.inputValue()).toBe(`please read @${saved} ${spaced} `);
  }, 90_000);
});
