import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeModel, PLAIN_REPLY, startFakeModel, userTexts } from '../fakes/fakeModel.js';
import { fromSessionMenu, pairedPhone, type TestBrowser } from '../helpers/browser.js';
import { runSvc, type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer, wiredClaudeCode } from '../helpers/computer.js';
import { agentInstalled, CLAUDE_CODE, waitSettled } from '../helpers/realAgents.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { type TmuxServer, waitFor } from '../helpers/tmux.js';

const A = 'svc-two';
const B = 'svc-two-2';
const STEP_MS = 60_000;

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
const running = async (session: string) =>
  (await tmux.run(['list-sessions', '-F', '#{session_name}']).catch(() => '')).split('\n').includes(session);
const option = async (session: string, name: string) =>
  (await tmux.run(['show-options', '-v', '-t', `=${session}:`, name]).catch(() => '')).trim();
const openSession = async (session: string) => {
  await page.goto(`${relay.url}/#/s/${encodeURIComponent(hookId)}/${session}`);
  await page.getByRole('textbox', { name: 'Message' }).waitFor();
};
/** The prompts the conversation shows with exactly this text. */
const shown = (text: string) => page.locator('.bubble.you').getByText(text, { exact: true }).count();

async function until(fn: () => boolean | Promise<boolean>, what: string): Promise<void> {
  try {
    await waitFor(fn, { timeoutMs: STEP_MS, intervalMs: 100, what });
  } catch (e) {
    const screens = await Promise.all([A, B].map(async (s) => `${s}:\n${await screen(s).catch(() => '(gone)')}`));
    throw new Error(
      `${(e as Error).message}\n${screens.join('\n')}\n--- listener ---\n${listener.output().slice(-4000)}`,
    );
  }
}

/** What a person does on the phone: the session's screen, the message, Send; then the model has it and answered. */
async function send(session: string, text: string): Promise<void> {
  await openSession(session);
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
  await until(
    () => model.requests.some((r) => userTexts(r.body).some((t) => t.includes(text))),
    `the model got "${text}"`,
  );
  await until(async () => (await screen(session)).includes(PLAIN_REPLY), `${session}: the reply on screen`);
  await waitSettled(CLAUDE_CODE, () => screen(session), { timeoutMs: STEP_MS, what: `${session}: ready again` });
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
  ({ env, proj } = await wiredClaudeCode(computer, model.url, 'two'));
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  await listener.waitForLine(/control socket/);
  ({ browser, page } = await pairedPhone(env, { viewport: { width: 390, height: 844 } }));
  for (const name of [A, B]) {
    const started = await runSvc(['cc', '--detach'], env, { cwd: proj });
    expect(started.stdout.trim(), started.stderr).toBe(name);
    await waitSettled(CLAUDE_CODE, () => screen(name), { timeoutMs: 120_000, what: `${name}: Claude Code ready` });
  }
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  await model?.close();
  await relay?.close();
  await home?.removeWhenFree();
});

describe.skipIf(!agentInstalled(CLAUDE_CODE)).sequential('two Claude Code sessions in one folder', () => {
  it('each shows its own turns: Claude Code’s hooks say which conversation runs in which pane', {
    timeout: 5 * STEP_MS,
  }, async () => {
    await send(A, 'words for the first one');
    await send(B, 'words for the second one');
    // each session is pinned to its own conversation (its tmux options), not to the folder's newest
    await until(async () => (await option(A, '@svc-agent-session')) !== '', `${A}: its Claude Code session known`);
    await until(async () => (await option(B, '@svc-agent-session')) !== '', `${B}: its Claude Code session known`);
    expect(await option(A, '@svc-agent-session')).not.toBe(await option(B, '@svc-agent-session'));
    expect(await option(A, '@svc-transcript')).toContain(await option(A, '@svc-agent-session'));

    await openSession(A);
    await until(async () => (await shown('words for the first one')) === 1, `${A}: its prompt in the conversation`);
    await page.locator('.bubble.agent', { hasText: PLAIN_REPLY }).first().waitFor({ timeout: STEP_MS });
    expect(await shown('words for the second one')).toBe(0);
    await openSession(B);
    await until(async () => (await shown('words for the second one')) === 1, `${B}: its prompt in the conversation`);
    expect(await shown('words for the first one')).toBe(0);
  });

  it('ending one and resuming it from the phone runs its own conversation; nothing is repeated', {
    timeout: 5 * STEP_MS,
  }, async () => {
    const ownId = await option(A, '@svc-agent-session');
    await openSession(A);
    await fromSessionMenu(page, 'End session');
    await page.getByRole('button', { name: 'End it', exact: true }).click();
    await until(async () => !(await running(A)), `${A} ended (Claude Code quit)`);
    expect(await running(B)).toBe(true);

    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await page.getByRole('button', { name: 'Resume it', exact: true }).click();
    await until(() => running(A), `${A} resumed`);
    const start = await tmux.run(['display-message', '-p', '-t', `=${A}:`, '#{pane_start_command}']);
    expect(start).toContain(`--resume ${ownId}`);
    await waitSettled(CLAUDE_CODE, () => screen(A), { timeoutMs: STEP_MS, what: `${A}: resumed and ready` });

    await send(A, 'more words for the first one');
    await openSession(A);
    await until(async () => (await shown('more words for the first one')) === 1, `${A}: the new prompt shown`);
    expect(await shown('words for the first one')).toBe(1);
    expect(await shown('words for the second one')).toBe(0);
    // svc-two-2 went on undisturbed, alone in its conversation
    await openSession(B);
    await until(async () => (await shown('words for the second one')) === 1, `${B}: its prompt still there`);
    expect(await shown('more words for the first one')).toBe(0);
  });
});
