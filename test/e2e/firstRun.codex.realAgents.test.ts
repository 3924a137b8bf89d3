/**
 * The README's path with the REAL Codex (test/agents/package.json) against the fake model, as a new user takes it: a
 * computer just booted (tmux's default socket in an empty TMUX_TMPDIR, no server yet, no ~/.svc, no LANG, no SVC_
 * settings), `svc up` in one terminal, the pairing link it prints opened on the phone (headless Chromium), and
 * `svc codex --detach` in the project from another terminal, `codex` found on PATH. Then from the phone only: a
 * message typed into Codex, the approval dialog it brings answered on the card (the command runs, the model gets
 * its result), End, and Resume with the id Codex filed, the earlier conversation back on screen.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_COMMAND, APPROVAL_PROBE, type FakeModel, PLAIN_REPLY, startFakeModel } from '../fakes/fakeModel.js';
import { pairingLink, sessionControl, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { type SpawnedSvc, SVC_BIN, spawnSvc, svcEnv } from '../helpers/cli.js';
import { killDaemonsOf } from '../helpers/daemons.js';
import { databaseHolds } from '../helpers/devices.js';
import { AGENTS_BIN, agentInstalled, CODEX, killProcessesUnder, waitSettled } from '../helpers/realAgents.js';
import { endTmuxServer, runTmux, waitFor } from '../helpers/tmux.js';

const START_MS = 120_000;
const STEP_MS = 90_000;
const SESSION = 'svc-proj';
const PROMPT = 'hello there, remember the word teal';

let root: string;
let home: string;
let proj: string;
let env: NodeJS.ProcessEnv;
let model: FakeModel;
let up: SpawnedSvc;
let url: string;
let hookId: string;
let browser: TestBrowser;
let page: Page;

const defaultSocket = () => join(root, 'tmux-tmp', `tmux-${process.getuid?.() ?? 0}`, 'default');
const screen = () => runTmux(defaultSocket(), ['capture-pane', '-p', '-t', `=${SESSION}:`]);
const running = async () =>
  (await runTmux(defaultSocket(), ['list-sessions', '-F', '#{session_name}']).catch(() => ''))
    .split('\n')
    .includes(SESSION);
const listenerLog = () => {
  const file = join(home, '.svc', 'listener.log');
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
};

/** `svc <args>` from another terminal in the project, as the README has it: a pipe, no TTY. */
function svc(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SVC_BIN, ...args], { cwd: proj, env, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

async function until(fn: () => boolean | Promise<boolean>, what: string): Promise<void> {
  try {
    await waitFor(fn, { timeoutMs: STEP_MS, intervalMs: 200, what: `A2 ${what}` });
  } catch (e) {
    const shown = await screen().catch(() => '(no session)');
    throw new Error(
      `${(e as Error).message}\n--- screen ---\n${shown}\n--- svc up ---\n${up.output()}${listenerLog()}`,
    );
  }
}

const settled = (what: string) =>
  waitSettled(CODEX, screen, { timeoutMs: START_MS, what }).catch(async (e) => {
    throw new Error(`${(e as Error).message}\n--- screen ---\n${await screen().catch(() => '(no session)')}`);
  });

const sessionPage = () => page.goto(`${url}/#/s/${encodeURIComponent(hookId)}/${SESSION}`);

/** What a person does on the phone: type `text` in the session's message box and send it. */
async function send(text: string): Promise<void> {
  await page.getByRole('textbox', { name: 'Message' }).fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
  await page
    .locator('.message[data-state="injected"]')
    .getByText(text)
    .waitFor({ timeout: STEP_MS })
    .catch(async (e) => {
      throw new Error(`${(e as Error).message}\n--- screen ---\n${await screen()}\n--- listener ---\n${listenerLog()}`);
    });
}

const control = (label: string, confirm: string, done: RegExp) =>
  sessionControl(page, { label, confirm, done, timeoutMs: STEP_MS }, () => up.output() + listenerLog());

describe
  .skipIf(!agentInstalled(CODEX))
  .sequential('the README with Codex: svc up, pair, svc codex, then the phone', () => {
    beforeAll(async () => {
      root = mkdtempSync(join(tmpdir(), 'svc-first-codex-'));
      home = join(root, 'home');
      proj = join(root, 'proj');
      mkdirSync(home);
      mkdirSync(join(root, 'tmux-tmp'));
      mkdirSync(proj);
      execFileSync('git', ['init', '-q', proj]);
      model = await startFakeModel();
      // the person's shell: Codex installed on PATH and set up for its provider (here the fake model); a terminal, not
      // a CI job (Gemini CLI and others start differently under CI=true)
      env = svcEnv(home, {
        TMUX_TMPDIR: join(root, 'tmux-tmp'),
        PATH: `${AGENTS_BIN}:${process.env.PATH}`,
        SHELL: '/bin/sh',
        CI: '',
        DEBIAN_FRONTEND: '',
        ...CODEX.setup({ home, proj, model: model.url }),
      });
      for (const name of Object.keys(env))
        if (name === 'LANG' || name === 'LANGUAGE' || name.startsWith('LC_') || name.startsWith('SVC_'))
          delete env[name];

      up = spawnSvc(['up', '--port', '0'], env);
      const line = await up.waitForLine(/^\s+relay\s+http:\/\/127\.0\.0\.1:\d+/, 60_000);
      await up.waitForLine(/connected to ws:/, 60_000);
      url = /http:\/\/127\.0\.0\.1:\d+/.exec(line)![0];
      hookId = JSON.parse(readFileSync(join(home, '.svc', 'config.json'), 'utf8')).hookId as string;
      // the link `svc up` printed, opened on the phone
      browser = await startBrowser();
      page = await browser.newPage();
      await page.goto(pairingLink(up.output()));
      await page.getByText('Online', { exact: true }).waitFor({ timeout: 30_000 });
    }, START_MS);

    afterAll(async () => {
      await browser?.close();
      await up?.stop('SIGINT');
      await killDaemonsOf(home);
      await endTmuxServer(defaultSocket());
      await model?.close();
      // Codex starts a background app-server of its own from HOME that outlives its session
      killProcessesUnder(root);
      rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    });

    afterEach(() => browser?.expectNoErrors());

    it('svc codex --detach starts Codex on the default socket; a message from the phone reaches its model', {
      timeout: START_MS + 2 * STEP_MS,
    }, async () => {
      // svc verify sees the phone just paired: when it was seen, notifications off, the address it uses
      const verify = await svc(['verify']);
      expect(verify.stdout).toMatch(/^ok\s+phones\s+1 paired$/m);
      expect(verify.stdout).toMatch(
        new RegExp(
          `^\\s+Chrome on Linux: seen (just now|\\d+ min ago); notifications off; at ${url.replace(/[.]/g, '\\.')} \\(this computer only\\)$`,
          'm',
        ),
      );
      expect(await svc(['codex', '--detach'])).toMatchObject({ code: 0, stdout: `${SESSION}\n` });
      expect(existsSync(defaultSocket())).toBe(true);
      await settled('ready at start');
      await sessionPage();
      await send(PROMPT);
      await until(async () => (await screen()).includes(PLAIN_REPLY), 'the reply on screen');
      expect(model.requests.some((r) => JSON.stringify(r.body ?? '').includes(PROMPT))).toBe(true);
      // sealed all the way: the relay under ~/.svc never held what was typed or read
      expect(databaseHolds(join(home, '.svc', 'relay'), PROMPT)).toBe(false);
      expect(databaseHolds(join(home, '.svc', 'relay'), PLAIN_REPLY)).toBe(false);
    });

    it('Codex asks to run a command: the card shows it, a tap on its first choice runs it', {
      timeout: 4 * STEP_MS,
    }, async () => {
      await settled('ready before the approval');
      await send('run a command, svc-approve');
      await until(async () => CODEX.approval!.test(await screen()), 'the approval dialog on screen');
      const card = page.getByRole('region', { name: 'Approval' });
      await card.getByText('Would you like to run the following command?').waitFor({ timeout: STEP_MS });
      expect(await card.locator('.approval-detail').textContent()).toContain(APPROVAL_COMMAND);
      const done = model.requests.filter((r) => r.script === 'done').length;
      await card.getByRole('button', { name: 'Yes, proceed', exact: true }).click();
      await until(() => existsSync(join(proj, APPROVAL_PROBE)), 'the approved command ran');
      await until(() => model.requests.filter((r) => r.script === 'done').length > done, 'the model got the result');
      await card.getByText('Yes, proceed: typed on the computer.').waitFor({ timeout: STEP_MS });
      expect(databaseHolds(join(home, '.svc', 'relay'), APPROVAL_COMMAND)).toBe(false);
    });

    it('End from the phone quits Codex; Resume runs `codex resume <id>` and the conversation is back', {
      timeout: 5 * STEP_MS,
    }, async () => {
      await settled('ready before End');
      await control('End session', 'End it', /The exit command was typed/);
      await until(async () => !(await running()), 'the session ended (Codex quit)');
      // the id Codex filed: its rollout file's name
      const store = join(home, '.codex', 'sessions');
      const files = readdirSync(store, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.jsonl'));
      expect(files).toHaveLength(1);
      const id = /([0-9a-f-]{36})\.jsonl$/.exec(files[0]!)![1]!;
      await page.goto(`${url}/#/`);
      await page
        .locator('ul[aria-label^="past sessions of"] a.session-link')
        .filter({ hasText: SESSION })
        .getByText('resumable')
        .waitFor({ state: 'attached', timeout: STEP_MS });
      await sessionPage();
      await page.getByText(/^ended /).waitFor({ timeout: STEP_MS });
      await control('Resume', 'Resume it', /Resumed/);
      await until(running, 'the resumed session on the default socket');
      const start = await runTmux(defaultSocket(), [
        'display-message',
        '-p',
        '-t',
        `=${SESSION}:`,
        '#{pane_start_command}',
      ]);
      expect(start).toContain(`resume ${id}`);
      await until(async () => (await screen()).includes(PROMPT), 'the earlier prompt on screen');
      await settled('ready after the resume');
      const before = model.requests.length;
      await send('and again');
      await until(
        () => model.requests.slice(before).some((r) => JSON.stringify(r.body ?? '').includes(PROMPT)),
        'a request after the resume carrying the earlier prompt',
      );
    });
  });
