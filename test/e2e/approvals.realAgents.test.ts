/**
 * Approvals from the phone with the REAL Claude Code, Codex and Gemini CLI (test/agents/package.json) against the fake
 * model, whose `svc-approve` script calls the agent's shell tool with `touch svc-approval-probe.txt` (the file
 * appears only if it ran): the card in the app in headless Chromium shows the real command and choices; tapping the
 * first choice runs the tool (the model gets its result); Esc at the keyboard before the tap, or the highlight moved
 * with an arrow key, gives `prompt_changed` and types nothing (spec 4.11.2, 7). Real relay, `svc listener`, tmux.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator, Page, Route } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { REFUSAL_TEXT } from '../../core/protocol/refusalText.js';
import { APPROVAL_COMMAND, APPROVAL_PROBE, type FakeModel, startFakeModel } from '../fakes/fakeModel.js';
import { fromSessionMenu, pairedPhone, type TestBrowser } from '../helpers/browser.js';
import { runSvc, type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { databaseHolds } from '../helpers/devices.js';
import {
  agentInstalled,
  CLAUDE_CODE,
  CODEX,
  GEMINI_CLI,
  type PreparedAgent,
  prepareAgent,
  type RealAgent,
  waitSettled,
} from '../helpers/realAgents.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { type TmuxServer, waitFor } from '../helpers/tmux.js';

const START_MS = 120_000;
const STEP_MS = 60_000;
/** The app's inventory request (`GET /computers`), which carries each session's sealed approval card. */
const INVENTORY = /\/computers(\?|$)/;
const CHANGED = REFUSAL_TEXT.prompt_changed.replace(/^Not typed: /, 'not typed: ');

/** What each agent's dialog shows, as its fixtures do (test/fixtures/screens/<id>/awaiting_approval-1.txt). */
const CASES: {
  agent: RealAgent;
  tool: string;
  question: string;
  choices: string[];
  /** The screen once the highlight moved to the second choice. */
  moved: RegExp;
}[] = [
  {
    agent: CLAUDE_CODE,
    tool: 'Bash command',
    question: 'Do you want to proceed?',
    choices: ['Yes', 'Yes, and always allow access to proj/ from this projectdon’t ask again', 'No'],
    moved: /❯ 2\. Yes, and always/,
  },
  {
    agent: CODEX,
    tool: 'Shell command',
    question: 'Would you like to run the following command?',
    choices: [
      'Yes, proceed',
      `Yes, and don't ask again for commands that start with \`${APPROVAL_COMMAND}\`don’t ask again`,
      'No, and tell Codex what to do differently',
    ],
    moved: /› 2\. Yes, and don't ask again/,
  },
  {
    agent: GEMINI_CLI,
    tool: `Shell · ${APPROVAL_COMMAND}`,
    question: 'Allow execution of [Shell]?',
    choices: ['Allow once', 'Allow for this sessiondon’t ask again', 'No, suggest changes (esc)'],
    moved: /● 2\. Allow for this session/,
  },
];

let relay: TestRelay;
let model: FakeModel;
let tmux: TmuxServer;
let home: { cleanup(): void };
let env: NodeJS.ProcessEnv;
let hookId: string;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;

beforeAll(async () => {
  relay = await startTestRelay();
  model = await startFakeModel();
  ({ tmux, home, env, hookId } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' }));
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(env));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  home?.cleanup();
  await model?.close();
  await relay?.close();
});

for (const c of CASES) {
  const { agent } = c;
  const session = `svc-approve-${agent.id.toLowerCase()}`;
  describe.skipIf(!agentInstalled(agent)).sequential(`${agent.id} ${agent.program}: approvals from the phone`, () => {
    let place: PreparedAgent;
    const screen = () => tmux.capture(session);
    const asking = async () => agent.approval!.test(await screen());
    const probe = () => join(place.proj, APPROVAL_PROBE);
    /** Requests that carried a tool's result (the fake answers them with its `done` script). */
    const toolResults = () => model.requests.filter((r) => r.script === 'done').length;
    const settled = (what: string) =>
      waitSettled(agent, screen, { timeoutMs: START_MS, what }).catch(async (e) => {
        throw new Error(`${(e as Error).message}\n--- screen ---\n${await screen()}`);
      });

    async function until(fn: () => boolean | Promise<boolean>, what: string): Promise<void> {
      try {
        await waitFor(fn, { timeoutMs: STEP_MS, intervalMs: 100, what: `${agent.id} ${what}` });
      } catch (e) {
        throw new Error(
          `${(e as Error).message}\n--- screen ---\n${await screen()}\n--- listener ---\n${listener.output()}`,
        );
      }
    }

    /** Until the app shows `text` in `card`; on a timeout the error shows the card, the screen and the log. */
    async function shows(card: Locator, text: string): Promise<void> {
      await card
        .getByText(text)
        .waitFor({ timeout: STEP_MS })
        .catch(async (e) => {
          const shown = await card.textContent().catch(() => '?');
          const state = await runSvc(['debug', 'state'], env);
          throw new Error(
            `${(e as Error).message}\n--- card ---\n${shown}\n--- screen ---\n${await screen()}\n--- listener ---\n${listener.output()}\n--- state ---\n${state.stdout.slice(0, 4000)}`,
          );
        });
    }

    /**
     * Holds the app's inventory requests (the card comes with the inventory) until the returned function lets them
     * go: the app keeps showing the card as it was while the keyboard changes the prompt, so a tap carries the old
     * prompt's fingerprint whatever the machine's speed.
     */
    async function holdInventory(): Promise<() => Promise<void>> {
      const held: Route[] = [];
      const hold = (route: Route) => {
        held.push(route);
      };
      await page.route(INVENTORY, hold);
      return async () => {
        await page.unroute(INVENTORY, hold);
        for (const route of held) await route.continue().catch(() => {});
      };
    }

    /** The person types at the keyboard: one paste and an Enter; then the card of the dialog it brings. */
    async function cardShown(): Promise<Locator> {
      const pane = (await tmux.listSessions()).find((s) => s.name === session)!.panes[0]!.id;
      await tmux.tmux.paste({ pane }, 'run a command, svc-approve', { bracketed: true });
      await new Promise((r) => setTimeout(r, 400));
      await tmux.tmux.sendKeys({ pane }, ['Enter']);
      await until(asking, 'the approval dialog on screen');
      const card = page.getByRole('region', { name: 'Approval' });
      await shows(card, c.question);
      return card;
    }

    beforeAll(async () => {
      place = prepareAgent(agent, model.url);
      await tmux.newSession(session, place.argv, {
        cwd: place.proj,
        env: place.env,
        options: { '@svc-kind': 'agent', '@svc-agent': agent.id, '@svc-project': 'proj' },
      });
      await settled('ready at start');
      await page.goto(`${relay.url}/#/s/${encodeURIComponent(hookId)}/${session}`);
      await page.getByRole('button', { name: 'Session menu' }).waitFor({ timeout: 15_000 });
    }, START_MS + 30_000);

    // Whatever a test left, the next starts at a ready agent with no probe file.
    afterEach(async () => {
      if (await asking()) await tmux.tmux.sendKeys(session, agent.decline ?? ['Escape']);
      await settled('ready after the test');
      rmSync(probe(), { force: true });
    }, START_MS + 10_000);

    afterAll(async () => {
      await tmux.run(['kill-session', '-t', `=${session}`]).catch(() => {});
      await place?.cleanup();
    });

    it('the card shows the real command and choices; the first choice runs the tool', {
      timeout: 3 * STEP_MS,
    }, async () => {
      const card = await cardShown();
      await shows(card, c.tool);
      expect(await card.locator('.approval-detail').textContent()).toContain(APPROVAL_COMMAND);
      expect(await card.locator('.approval-choices button').allTextContents()).toEqual(c.choices);
      const results = toolResults();
      await card.getByRole('button', { name: c.choices[0], exact: true }).click();
      await until(() => existsSync(probe()), 'the approved command ran');
      await until(() => toolResults() > results, 'the model got the tool result');
      await shows(card, `${c.choices[0]}: typed on the computer.`);
      // the prompt went: so does the card
      await card.getByText(c.question).waitFor({ state: 'detached', timeout: STEP_MS });
      // sealed: the relay's database never held the command
      expect(databaseHolds(relay.dataDir, APPROVAL_COMMAND)).toBe(false);
    });

    it('Esc at the keyboard before the tap: prompt_changed, nothing typed', { timeout: 3 * STEP_MS }, async () => {
      const card = await cardShown();
      const first = card.getByRole('button', { name: c.choices[0], exact: true });
      await first.waitFor();
      // the person taps the card as it was: the app does not learn of the Esc before the tap
      const release = await holdInventory();
      await tmux.tmux.sendKeys(session, ['Escape']);
      await until(async () => !(await asking()), 'the dialog gone');
      await first.click();
      await shows(card, `${c.choices[0]}: ${CHANGED}`);
      await release();
      expect(existsSync(probe())).toBe(false);
      expect(await asking()).toBe(false);
      expect(listener.output()).toMatch(new RegExp(`refused prompt_changed for ${session}`));
    });

    it('the highlight moved at the keyboard: prompt_changed, nothing typed', { timeout: 3 * STEP_MS }, async () => {
      const card = await cardShown();
      const first = card.getByRole('button', { name: c.choices[0], exact: true });
      await first.waitFor();
      // the person taps the card as it was: the app does not learn of the move before the tap
      const release = await holdInventory();
      await tmux.tmux.sendKeys(session, ['Down']);
      await until(async () => c.moved.test(await screen()), 'the highlight on the second choice');
      await first.click();
      await shows(card, `${c.choices[0]}: ${CHANGED}`);
      // still asking, the highlight where the person put it, nothing ran
      expect(await screen()).toMatch(c.moved);
      expect(existsSync(probe())).toBe(false);
      await release();
    });

    it('the card follows the highlight moved at the keyboard; a tap on it then answers', {
      timeout: 3 * STEP_MS,
    }, async () => {
      const card = await cardShown();
      await tmux.tmux.sendKeys(session, ['Down']);
      await until(async () => c.moved.test(await screen()), 'the highlight on the second choice');
      // the card the app shows now is the moved prompt's (its highlight on the second choice)
      await card
        .locator('.approval-choices button[data-choice="1"][aria-current="true"]')
        .waitFor({ timeout: STEP_MS });
      const results = toolResults();
      await card.getByRole('button', { name: c.choices[0], exact: true }).click();
      await shows(card, `${c.choices[0]}: typed on the computer.`);
      await until(() => existsSync(probe()), 'the approved command ran');
      await until(() => toolResults() > results, 'the model got the tool result');
    });

    it('a key from Watch reaches the prompt the Watch shows (its fingerprint matches)', {
      timeout: 3 * STEP_MS,
    }, async () => {
      await cardShown();
      await fromSessionMenu(page, 'Watch');
      await page.locator('.xterm-rows').getByText(c.question).waitFor({ timeout: STEP_MS });
      await page.getByRole('button', { name: 'Down arrow' }).click();
      await page.getByText('↓: typed').waitFor({ timeout: STEP_MS });
      await until(async () => c.moved.test(await screen()), 'the highlight moved from the phone');
      expect(existsSync(probe())).toBe(false);
      await page.goBack();
    });
  });
}
