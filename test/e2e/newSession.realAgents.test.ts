/**
 * Start a new agent from the phone (issue 30 item 3), with the REAL Claude Code (test/agents/package.json) against
 * the fake model, wired by `svc install` and `svc setup` as a person's is, the phone in headless Chromium at 390x844, through the real relay and `svc listener`: after one
 * `svc cc --detach` in a folder, the phone's New session offers that folder and Claude Code; Start with a first
 * message runs `svc-site-2` there, the listener types the message once Claude Code is ready, and the phone opens the
 * new session's conversation with the message and the reply in it.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeModel, PLAIN_REPLY, startFakeModel, userTexts } from '../fakes/fakeModel.js';
import { pairedPhone, type TestBrowser } from '../helpers/browser.js';
import { runSvc, type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer, wiredClaudeCode } from '../helpers/computer.js';
import { agentInstalled, CLAUDE_CODE, waitSettled } from '../helpers/realAgents.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { type TmuxServer, waitFor } from '../helpers/tmux.js';

const STEP_MS = 60_000;
const FIRST = 'start by reading the README';

let relay: TestRelay;
let model: FakeModel;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let hookId: string;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;
let proj: string;

const screen = (session: string) => tmux.capture(session);
const option = async (session: string, name: string) =>
  (await tmux.run(['show-options', '-v', '-t', `=${session}:`, name]).catch(() => '')).trim();
const running = async (session: string) =>
  (await tmux.run(['list-sessions', '-F', '#{session_name}']).catch(() => '')).split('\n').includes(session);

async function until(fn: () => boolean | Promise<boolean>, what: string): Promise<void> {
  try {
    await waitFor(fn, { timeoutMs: STEP_MS, intervalMs: 100, what });
  } catch (e) {
    const screens = await Promise.all(
      ['svc-site', 'svc-site-2'].map(async (s) => `${s}:\n${await screen(s).catch(() => '(gone)')}`),
    );
    throw new Error(
      `${(e as Error).message}\n${screens.join('\n')}\n--- listener ---\n${listener.output().slice(-4000)}`,
    );
  }
}

/** A failed wait on the page, with what the page and the listener said. */
async function saying(e: Error): Promise<never> {
  const shown = await page.locator('main').textContent();
  throw new Error(`${e.message}\n--- page ---\n${shown}\n--- listener ---\n${listener.output().slice(-3000)}`);
}

beforeAll(async () => {
  relay = await startTestRelay();
  model = await startFakeModel();
  let computer: TestComputer;
  ({ tmux, home, hookId } = computer = await loggedInComputer({
    url: relay.url,
    apiKey: relay.apiKey,
    name: 'laptop',
  }));
  if (!agentInstalled(CLAUDE_CODE)) return;
  ({ env, proj } = await wiredClaudeCode(computer, model.url, 'site'));
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(env, { viewport: { width: 390, height: 844 } }));
  // the person ran Claude Code there once: svc knows the folder from then on
  const started = await runSvc(['cc', '--detach'], env, { cwd: proj });
  expect(started.stdout.trim(), started.stderr).toBe('svc-site');
  await waitSettled(CLAUDE_CODE, () => screen('svc-site'), { timeoutMs: 120_000, what: 'svc-site: Claude Code ready' });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  await model?.close();
  await relay?.close();
  await home?.removeWhenFree();
});

describe.skipIf(!agentInstalled(CLAUDE_CODE))('a new session from the phone', () => {
  it('folder → agent → first message → Start: Claude Code runs there, gets the message once, and the phone shows the reply', {
    timeout: 5 * STEP_MS,
  }, async () => {
    // Claude Code's SessionStart hook pinned svc-site to its own conversation before any prompt: the new session's
    // file is never taken for svc-site's
    await until(async () => (await option('svc-site', '@svc-agent-session')) !== '', 'svc-site pinned at its start');
    await page.goto(`${relay.url}/#/`);
    await page.getByRole('link', { name: 'New session' }).click();
    // the folder svc ran Claude Code in, newest first, and Claude Code picked for it
    const folder = page.getByRole('radio', { name: /site/ });
    await folder.waitFor({ timeout: STEP_MS }).catch(saying);
    expect(await folder.isChecked()).toBe(true);
    expect(await page.getByRole('radio', { name: 'Claude Code' }).isChecked()).toBe(true);
    await page.getByRole('textbox', { name: 'First message' }).fill(FIRST);
    await page.getByRole('button', { name: 'Start' }).click();

    // the phone opens the new session, named as `svc cc --detach` there would name it
    await until(() => page.url().endsWith(`#/s/${encodeURIComponent(hookId)}/svc-site-2`), 'the new session opened');
    expect(await running('svc-site-2')).toBe(true);
    await until(
      () => model.requests.some((r) => userTexts(r.body).some((t) => t.includes(FIRST))),
      'the model got the first message',
    );
    await until(async () => (await screen('svc-site-2')).includes(PLAIN_REPLY), 'svc-site-2: the reply on screen');
    await page.locator('.bubble.you').getByText(FIRST, { exact: true }).waitFor({ timeout: STEP_MS }).catch(saying);
    await page.locator('.bubble.agent', { hasText: PLAIN_REPLY }).first().waitFor({ timeout: STEP_MS });
    // typed once, into the new session only
    expect(await page.locator('.bubble.you').getByText(FIRST, { exact: true }).count()).toBe(1);
    await listener.waitForLine(/svc-site-2: first prompt typed/);
    expect(await screen('svc-site')).not.toContain(FIRST);
  });
});
