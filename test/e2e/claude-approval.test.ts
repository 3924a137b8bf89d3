/**
 * Approvals from the phone with the REAL Claude Code (test/agents/package.json) against the fake model, whose
 * `svc-approve` script calls its Bash tool with `touch svc-approval-probe.txt` (the file appears only if it ran):
 * the card in the app in headless Chromium shows the real command and choices; tapping "Yes" runs the tool (the
 * model gets its result); Esc at the keyboard before the tap, or the highlight moved with an arrow key, gives
 * `prompt_changed` and types nothing (spec 4.11.2, 7). Real relay, real `svc listener`, real tmux.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { REFUSAL_TEXT } from '../../core/protocol/refusalText.js';
import { APPROVAL_COMMAND, APPROVAL_PROBE, type FakeModel, startFakeModel } from '../fakes/fakeModel.js';
import { pairedPhone, type TestBrowser } from '../helpers/browser.js';
import { runSvc, type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { databaseHolds } from '../helpers/devices.js';
import { agentInstalled, CLAUDE_CODE, type PreparedAgent, prepareAgent, waitSettled } from '../helpers/realAgents.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { type TmuxServer, waitFor } from '../helpers/tmux.js';

const SESSION = 'svc-approve-cc';
const PROBE = APPROVAL_PROBE;
const START_MS = 120_000;
const STEP_MS = 60_000;

let relay: TestRelay;
let model: FakeModel;
let tmux: TmuxServer;
let home: { cleanup(): void };
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;
let place: PreparedAgent;
let svcEnvironment: NodeJS.ProcessEnv;

const screen = () => tmux.capture(SESSION);
const asking = async () => CLAUDE_CODE.approval!.test(await screen());
const probe = () => join(place.proj, PROBE);
/** Tool results the model was sent (Anthropic Messages), as text. */
const toolResults = () =>
  model.requests.flatMap((r) =>
    ((r.body as { messages?: { content: unknown }[] })?.messages ?? []).flatMap((m) =>
      Array.isArray(m.content) ? (m.content as { type?: string }[]).filter((p) => p.type === 'tool_result') : [],
    ),
  ).length;

async function until(fn: () => boolean | Promise<boolean>, what: string, timeoutMs = STEP_MS): Promise<void> {
  try {
    await waitFor(fn, { timeoutMs, intervalMs: 100, what });
  } catch (e) {
    throw new Error(
      `${(e as Error).message}\n--- screen ---\n${await screen()}\n--- listener ---\n${listener.output()}`,
    );
  }
}

/** The person types at the keyboard: one paste and an Enter. */
async function typeAtKeyboard(text: string): Promise<void> {
  const pane = (await tmux.listSessions()).find((s) => s.name === SESSION)!.panes[0]!.id;
  await tmux.tmux.paste({ pane }, text, { bracketed: true });
  await new Promise((r) => setTimeout(r, 400));
  await tmux.tmux.sendKeys({ pane }, ['Enter']);
}

/** Until the app shows `text` in `card`; on a timeout the error shows the screen and the listener's log. */
async function shows(card: Locator, text: string): Promise<void> {
  await card
    .getByText(text)
    .waitFor({ timeout: STEP_MS })
    .catch(async (e) => {
      const html = await card.textContent().catch(() => '?');
      throw new Error(
        `${(e as Error).message}\n--- card ---\n${html}\n--- screen ---\n${await screen()}\n--- listener ---\n${listener.output()}`,
      );
    });
}

/** Asks for the approval, and waits for its card in the app. */
async function cardShown(): Promise<Locator> {
  await typeAtKeyboard('run a command, svc-approve');
  await until(asking, 'the approval dialog on screen');
  const card = page.getByRole('region', { name: 'Approval' });
  await card
    .getByText(APPROVAL_COMMAND)
    .waitFor({ timeout: STEP_MS })
    .catch(async (e) => {
      const state = await runSvc(['debug', 'state'], svcEnvironment);
      throw new Error(
        `${(e as Error).message}\n--- listener ---\n${listener.output()}\n--- state ---\n${state.stdout.slice(0, 6000)}${state.stderr}`,
      );
    });
  return card;
}

beforeAll(async () => {
  relay = await startTestRelay();
  model = await startFakeModel();
  let env: NodeJS.ProcessEnv;
  let hookId: string;
  ({ tmux, home, env, hookId } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' }));
  svcEnvironment = env;
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(env));
  if (!agentInstalled(CLAUDE_CODE)) return;
  place = prepareAgent(CLAUDE_CODE, model.url);
  await tmux.newSession(SESSION, place.argv, {
    cwd: place.proj,
    env: place.env,
    options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
  });
  await waitSettled(CLAUDE_CODE, screen, { timeoutMs: START_MS, what: 'Claude Code ready' });
  await page.goto(`${relay.url}/#/s/${encodeURIComponent(hookId)}/${SESSION}`);
  await page.getByRole('link', { name: 'Watch' }).waitFor({ timeout: 15_000 });
}, START_MS + 60_000);

afterEach(async () => {
  if (!place) return;
  if (await asking()) await tmux.tmux.sendKeys(SESSION, ['Escape']);
  await waitSettled(CLAUDE_CODE, screen, { timeoutMs: STEP_MS, what: 'ready after the test' }).catch(async (e) => {
    throw new Error(`${(e as Error).message}\n--- screen ---\n${await screen()}`);
  });
  rmSync(probe(), { force: true });
}, START_MS + 10_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await tmux?.run(['kill-session', '-t', `=${SESSION}`]).catch(() => {});
  await tmux?.cleanup();
  await place?.cleanup();
  home?.cleanup();
  await model?.close();
  await relay?.close();
});

describe.skipIf(!agentInstalled(CLAUDE_CODE)).sequential('approvals of the real Claude Code from the phone', () => {
  it('the card shows the real command and choices; tapping Yes runs the tool', { timeout: 3 * STEP_MS }, async () => {
    const card = await cardShown();
    await card.getByText('Bash command').waitFor();
    await card.getByText('Do you want to proceed?').waitFor();
    const choices = card.locator('.approval-choices button');
    expect(await choices.allTextContents()).toEqual([
      'Yes',
      'Yes, and always allow access to proj/ from this project' + 'don’t ask again',
      'No',
    ]);
    const results = toolResults();
    await card.getByRole('button', { name: 'Yes', exact: true }).click();
    await until(() => existsSync(probe()), 'the approved command ran');
    await until(() => toolResults() > results, 'the model got the tool result');
    await card.getByText('Yes: typed on the computer.').waitFor({ timeout: STEP_MS });
    // the prompt went: so does the card
    await card.getByText(APPROVAL_COMMAND).waitFor({ state: 'detached', timeout: STEP_MS });
    // sealed: the relay's database never held the command
    expect(databaseHolds(relay.dataDir, APPROVAL_COMMAND)).toBe(false);
  });

  it('Esc at the keyboard before the tap: prompt_changed, nothing typed', { timeout: 3 * STEP_MS }, async () => {
    const card = await cardShown();
    const yes = card.getByRole('button', { name: 'Yes', exact: true });
    await yes.waitFor();
    await tmux.tmux.sendKeys(SESSION, ['Escape']);
    await yes.click();
    await shows(card, `Yes: ${REFUSAL_TEXT.prompt_changed.replace(/^Not typed: /, 'not typed: ')}`);
    expect(existsSync(probe())).toBe(false);
    expect(await asking()).toBe(false);
    expect(listener.output()).toMatch(new RegExp(`refused prompt_changed for ${SESSION}`));
  });

  it('the highlight moved at the keyboard: prompt_changed, nothing typed', { timeout: 3 * STEP_MS }, async () => {
    const card = await cardShown();
    const yes = card.getByRole('button', { name: 'Yes', exact: true });
    await yes.waitFor();
    await tmux.tmux.sendKeys(SESSION, ['Down']);
    await until(async () => /❯ 2\. Yes, and always/.test(await screen()), 'the highlight on the second choice');
    await yes.click();
    await shows(card, `Yes: ${REFUSAL_TEXT.prompt_changed.replace(/^Not typed: /, 'not typed: ')}`);
    // still asking, the highlight where the person put it, nothing ran
    expect(await screen()).toMatch(/❯ 2\. Yes, and always/);
    expect(existsSync(probe())).toBe(false);
  });
});
