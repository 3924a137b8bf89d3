/**
 * A session is a conversation (issue 30 item 1), in the app in headless Chromium at a phone's size, with the real
 * relay and `svc listener`: the agent's turns come from a real Claude Code transcript (test/fixtures/transcripts/A1)
 * in Claude Code's own store, its first reply changed to Markdown that also tries to run script. The reply reads as
 * Markdown and nothing in it runs or loads; the tool line says what ran; a message sent from the phone waits after
 * the last turn and moves into its turn when the transcript shows it; Force end is behind the menu, never the most
 * prominent control; the message box stays at the bottom of the screen however long the conversation.
 */
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { claudeProjectDir } from '../../core/sessions/control.js';
import { APPROVAL_COMMAND, PLAIN_REPLY } from '../fakes/fakeModel.js';
import { accessibilityFindings } from '../helpers/a11y.js';
import { fromSessionMenu, pairedPhone, screenshotPath, type TestBrowser } from '../helpers/browser.js';
import { type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { svcMcpClient } from '../helpers/mcp.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { fakeAgentCommand } from '../helpers/tmux.js';

const SESSION = 'svc-talk';
const PHONE = { width: 390, height: 844 };
const LONG_LINE = `const result = ${'"x".repeat(3) + '.repeat(30)}"end";`;
const REPLY = [
  '## Plan',
  'Ran **the tests**: all `3` passed.',
  '',
  '- first',
  '- second',
  '',
  '* [x] tests pass',
  '* [ ] docs',
  '',
  '3. third step',
  '4. fourth step',
  '',
  '```ts',
  LONG_LINE,
  '```',
  '',
  '<img src=x onerror="window.__svcXss = 1">',
  '<script>window.__svcXss = 2</script>',
  '',
  '[open me](javascript:window.__svcXss=3) and [the docs](https://example.org/docs)',
  '',
  '![tracker](https://example.org/t.png)',
].join('\n');
const SECOND_PROMPT = 'run a command, svc-approve';

let relay: TestRelay;
let computer: TestComputer;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;
let transcript: string;
let rest: string[];
let project: string;

beforeAll(async () => {
  relay = await startTestRelay();
  computer = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' });
  project = join(computer.home.home, 'proj');
  mkdirSync(project);
  await computer.tmux.newSession(SESSION, fakeAgentCommand('claude'), {
    cwd: project,
    options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
  });
  listener = spawnSvc(['listener'], computer.env);
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(computer.env, { viewport: PHONE }));
  // the transcript Claude Code wrote, its first reply made Markdown; the second turn comes later. Written once the
  // phone is paired: history is sealed for the devices paired when it is read
  const lines = readFileSync('test/fixtures/transcripts/A1/session.jsonl', 'utf8')
    .replaceAll(PLAIN_REPLY, JSON.stringify(REPLY).slice(1, -1))
    .trim()
    .split('\n');
  const second = lines.findIndex((l) => l.includes(SECOND_PROMPT));
  expect(second).toBeGreaterThan(0);
  const store = join(computer.home.home, '.claude', 'projects', claudeProjectDir(project));
  mkdirSync(store, { recursive: true });
  transcript = join(store, '9f7cad6b-8561-4da3-baa0-ecdb6906eb73.jsonl');
  writeFileSync(transcript, `${lines.slice(0, second).join('\n')}\n`);
  rest = lines.slice(second);
}, 90_000);

afterEach(() => browser?.expectNoErrors());

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await computer?.tmux.cleanup();
  await relay?.close();
  await computer?.home.removeWhenFree();
});

describe.sequential('a session is a conversation', () => {
  it('renders the agent’s reply as Markdown; nothing it writes runs or loads', async () => {
    await page.goto(`${relay.url}/#/s/${encodeURIComponent(computer.hookId)}/${SESSION}`);
    const reply = page.locator('.bubble.agent', { hasText: 'Plan' });
    await reply
      .locator('h2', { hasText: 'Plan' })
      .waitFor({ timeout: 30_000 })
      .catch(async (e) => {
        const shown = await page.locator('main').textContent();
        throw new Error(`${(e as Error).message}\n--- screen ---\n${shown}\n--- listener ---\n${listener.output()}`);
      });
    expect(await reply.locator('strong').textContent()).toBe('the tests');
    expect(await reply.locator('ul').first().locator('li').allTextContents()).toEqual(['first', 'second']);
    // a task list keeps its boxes (to read, not to tick); a numbered list keeps its numbers
    expect(await reply.locator('input[type="checkbox"][disabled]').count()).toBe(2);
    expect(await reply.locator('input[type="checkbox"][checked]').count()).toBe(1);
    expect(await reply.locator('ol').getAttribute('start')).toBe('3');
    expect(await reply.locator('pre code').textContent()).toContain(LONG_LINE);
    // the person's prompt, in their own bubble, before it
    await page.locator('.bubble.you').getByText('hello there', { exact: true }).waitFor();

    // raw HTML is text; the script link is text; the image is a link, never loaded
    expect(await reply.textContent()).toContain('<img src=x onerror="window.__svcXss = 1">');
    expect(await reply.textContent()).toContain('<script>');
    expect(await page.locator('.conversation img, .conversation script, .conversation iframe').count()).toBe(0);
    expect(await page.evaluate(() => (window as { __svcXss?: number }).__svcXss)).toBeUndefined();
    expect(await reply.locator('a', { hasText: 'open me' }).count()).toBe(0);
    expect(await page.locator('.conversation a[href^="javascript"]').count()).toBe(0);
    const docs = reply.locator('a', { hasText: 'the docs' });
    expect(await docs.getAttribute('href')).toBe('https://example.org/docs');
    expect(await docs.getAttribute('target')).toBe('_blank');
    expect(await docs.getAttribute('rel')).toContain('noreferrer');
    expect(await reply.locator('a', { hasText: 'tracker' }).getAttribute('href')).toBe('https://example.org/t.png');

    // a long code line scrolls inside its block; the page itself never scrolls sideways
    const widths = await page.evaluate(() => {
      const pre = document.querySelector('.bubble.agent pre')!;
      return { pre: pre.scrollWidth > pre.clientWidth, page: document.documentElement.scrollWidth - innerWidth };
    });
    expect(widths).toEqual({ pre: true, page: 0 });
    // and it reads well with a screen reader and a finger, in both schemes
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      expect(await accessibilityFindings(page), colorScheme).toEqual([]);
    }
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      await page.screenshot({ path: screenshotPath(`conversation-${colorScheme}`) });
    }
    await page.emulateMedia({ colorScheme: 'light' });
  }, 60_000);

  it('a message from the phone waits after the last turn, then sits in its own turn with what ran', async () => {
    await page.getByRole('textbox', { name: 'Message' }).fill(SECOND_PROMPT);
    await page.getByRole('button', { name: 'Send' }).click();
    const sent = page.locator('.message[data-state="injected"]', { hasText: SECOND_PROMPT });
    await sent.getByText('typed').waitFor({ timeout: 30_000 });
    const turns = page.getByRole('list', { name: 'Turns' }).locator(':scope > li');
    expect(await turns.count()).toBe(2);
    expect(await turns.nth(1).locator('.step').count()).toBe(0);

    // Claude Code writes the turn: the message is its prompt, the tool line after it says what ran
    appendFileSync(transcript, `${rest.join('\n')}\n`);
    const tool = turns.nth(1).locator('.step.tool', { hasText: 'Bash' });
    await tool.filter({ hasText: '✓' }).waitFor({ timeout: 30_000 });
    expect(await tool.locator('.tool-target').textContent()).toBe(APPROVAL_COMMAND);
    expect(await turns.count()).toBe(2);
    expect(await turns.nth(1).locator('.message[data-state="injected"]').textContent()).toContain(SECOND_PROMPT);
  }, 90_000);

  it('a question waits above the message box; answered, it folds into the conversation after the turn it came in', async () => {
    const client = await svcMcpClient(computer.env, computer.tmux, SESSION);
    try {
      const pending = client.callTool(
        { name: 'svc_ask', arguments: { question: 'Merge the branch now?', choices: ['Merge', 'Later'], timeout: 60 } },
        undefined,
        { timeout: 90_000 },
      );
      const waiting = page.locator('.session-foot .ask-card', { hasText: 'Merge the branch now?' });
      await waiting.waitFor({ timeout: 20_000 });
      // nothing of it in the conversation while it waits
      expect(await page.locator('.conversation .turn-event').count()).toBe(0);
      await waiting.getByRole('button', { name: 'Merge' }).click();
      expect((await pending).structuredContent).toMatchObject({ status: 'answered', answer: 'Merge' });
      const turns = page.getByRole('list', { name: 'Turns' }).locator(':scope > li');
      const folded = turns.nth(1).locator('.turn-event[data-state="answered"]');
      await folded.waitFor({ timeout: 15_000 });
      expect(await folded.textContent()).toContain('Merge the branch now? · “Merge”');
      expect(await turns.count()).toBe(2);
      await waiting.waitFor({ state: 'detached', timeout: 15_000 });
    } finally {
      await client.close();
    }
  }, 90_000);

  it('keeps Force end behind the menu, and the message box at the bottom of the screen', async () => {
    // the only filled button in view is Send; no control that ends the session is in view
    const filled = await page.evaluate(() =>
      [...document.querySelectorAll<HTMLElement>('button, a.button')]
        .filter(
          (b) =>
            b.offsetParent !== null &&
            getComputedStyle(b).backgroundColor ===
              getComputedStyle(document.querySelector('button.primary')!).backgroundColor,
        )
        .map((b) => b.textContent),
    );
    expect(filled).toEqual(['Send']);
    expect(await page.getByRole('button', { name: 'Force end' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'End session' }).count()).toBe(0);
    await fromSessionMenu(page, 'Force end');
    await page.getByText(`Kill the tmux session ${SESSION}?`).waitFor();
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await page.getByRole('button', { name: 'Session menu' }).click();

    // scrolled to the top of a conversation longer than the screen, the box is still in view at the bottom
    await page.evaluate(() => {
      const filler = document.createElement('div');
      filler.style.height = '2000px';
      document.querySelector('.conversation')!.prepend(filler);
      window.scrollTo(0, 0);
    });
    const box = await page.getByRole('textbox', { name: 'Message' }).boundingBox();
    expect(box).not.toBeNull();
    expect(box!.y + box!.height).toBeLessThanOrEqual(PHONE.height);
    expect(box!.y).toBeGreaterThan(PHONE.height / 2);
  }, 60_000);
});
