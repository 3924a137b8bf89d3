/**
 * Session control from the phone with the REAL Claude Code (test/agents/package.json) against the fake model, in
 * the app in headless Chromium, through the real relay and `svc listener`, on a private tmux server: End types
 * Claude Code's own `/exit` (the session ends as at the keyboard); the ended session is offered under "Past
 * sessions"; Resume runs `claude --resume <its id>` from Claude Code's own session store in a new session of the
 * same name, which shows the earlier conversation; Force end kills it; Forget takes it off the list.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeProjectDir } from '../../core/sessions/control.js';
import { type FakeModel, PLAIN_REPLY, startFakeModel } from '../fakes/fakeModel.js';
import { fromSessionMenu, pairedPhone, sessionControl, type TestBrowser } from '../helpers/browser.js';
import { type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { agentInstalled, agentProgram, CLAUDE_CODE, waitSettled } from '../helpers/realAgents.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { type TmuxServer, waitFor } from '../helpers/tmux.js';

const SESSION = 'svc-ctl-cc';
const STEP_MS = 60_000;

let relay: TestRelay;
let model: FakeModel;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let hookId: string;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;
let proj: string;

const screen = () => tmux.capture(SESSION);
const running = async () =>
  (await tmux.run(['list-sessions', '-F', '#{session_name}']).catch(() => '')).split('\n').includes(SESSION);
const sessionPage = () => page.goto(`${relay.url}/#/s/${encodeURIComponent(hookId)}/${SESSION}`);

async function until(fn: () => boolean | Promise<boolean>, what: string): Promise<void> {
  try {
    await waitFor(fn, { timeoutMs: STEP_MS, intervalMs: 100, what });
  } catch (e) {
    const shown = await screen().catch(() => '(no session)');
    throw new Error(`${(e as Error).message}\n--- screen ---\n${shown}\n--- listener ---\n${listener.output()}`);
  }
}

/** Taps `label`, then the confirmation `confirm`, and waits for the outcome `done` in the status line. */
const control = (label: string, confirm: string, done: RegExp) =>
  sessionControl(page, { label, confirm, done, timeoutMs: STEP_MS }, () => listener.output());

beforeAll(async () => {
  relay = await startTestRelay();
  model = await startFakeModel();
  let env: NodeJS.ProcessEnv;
  ({ tmux, home, env, hookId } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' }));
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(env));
  if (!agentInstalled(CLAUDE_CODE)) return;
  // Claude Code lives in the same HOME as svc, as on a person's computer: its session store is where svc looks.
  proj = join(home.home, 'proj');
  mkdirSync(proj);
  execFileSync('git', ['init', '-q', proj]);
  const agentEnv = { HOME: home.home, CI: '', ...CLAUDE_CODE.setup({ home: home.home, proj, model: model.url }) };
  // A person's shell environment is tmux's global one: a session the listener starts (the resume) gets it.
  for (const [k, v] of Object.entries(agentEnv)) await tmux.run(['set-environment', '-g', k, v]);
  await tmux.newSession(SESSION, [agentProgram(CLAUDE_CODE)], {
    cwd: proj,
    env: agentEnv,
    options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
  });
  await waitSettled(CLAUDE_CODE, screen, { timeoutMs: 120_000, what: 'Claude Code ready' });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  await model?.close();
  await relay?.close();
  await home?.removeWhenFree();
});

describe
  .skipIf(!agentInstalled(CLAUDE_CODE))
  .sequential('ending, resuming and forgetting a real Claude Code session', () => {
    it('End types /exit; the session ends and is offered under Past sessions', { timeout: 3 * STEP_MS }, async () => {
      // one exchange, so Claude Code files the session in its store
      await tmux.run(['send-keys', '-t', `=${SESSION}:`, '-l', 'hello there']);
      await tmux.run(['send-keys', '-t', `=${SESSION}:`, 'Enter']);
      await until(async () => (await screen()).includes(PLAIN_REPLY), 'the reply on screen');
      await waitSettled(CLAUDE_CODE, screen, { timeoutMs: STEP_MS, what: 'ready after the reply' });
      await sessionPage();
      await control('End session', 'End it', /The exit command was typed/);
      await until(async () => !(await running()), 'the session ended (Claude Code quit)');
      // the list offers it as past, resumable
      await page.goto(`${relay.url}/#/`);
      await page.getByText('Past sessions (1)').click();
      await page
        .getByRole('list', { name: 'past sessions of laptop' })
        .getByText('resumable')
        .waitFor({ timeout: STEP_MS });
    });

    it('Resume runs claude --resume with its own session id; the earlier conversation is back', {
      timeout: 3 * STEP_MS,
    }, async () => {
      const filed = readdirSync(join(home.home, '.claude', 'projects', claudeProjectDir(proj))).filter((f) =>
        f.endsWith('.jsonl'),
      );
      expect(filed).toHaveLength(1);
      const id = filed[0]!.replace(/\.jsonl$/, '');
      await sessionPage();
      await page.getByText(/^ended /).waitFor({ timeout: STEP_MS });
      await control('Resume', 'Resume it', /Resumed/);
      await until(running, 'the resumed session in tmux');
      const start = await tmux.run(['display-message', '-p', '-t', `=${SESSION}:`, '#{pane_start_command}']);
      expect(start).toContain(`--resume ${id}`);
      await until(async () => (await screen()).includes('hello there'), 'the earlier prompt on screen');
      await waitSettled(CLAUDE_CODE, screen, { timeoutMs: STEP_MS, what: 'resumed Claude Code ready' });
      // running again: no longer past
      await page.getByRole('button', { name: 'Force end', exact: true, includeHidden: true }).waitFor({
        state: 'attached',
        timeout: STEP_MS,
      });
    });

    it('Force end kills the session only after the confirmation', { timeout: 3 * STEP_MS }, async () => {
      await fromSessionMenu(page, 'Force end');
      await page.getByRole('button', { name: 'Cancel', exact: true }).click();
      expect(await running()).toBe(true);
      await control('Force end', 'Kill it', /The tmux session was killed/);
      await until(async () => !(await running()), 'the session killed');
    });

    it('Forget takes the past session off the list', { timeout: 3 * STEP_MS }, async () => {
      await sessionPage();
      await control('Forget', 'Forget it', /Forgotten/);
      await page.goto(`${relay.url}/#/`);
      await page.getByRole('region', { name: 'computer laptop' }).waitFor();
      await until(async () => (await page.getByText(/Past sessions/).count()) === 0, 'no past sessions listed');
      expect(listener.output()).toMatch(new RegExp(`${SESSION}: forgotten`));
    });
  });
