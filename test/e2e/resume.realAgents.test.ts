/**
 * Ending and resuming past sessions of the REAL Codex, Gemini CLI, pi and opencode (test/agents/package.json)
 * against the fake model, from the app in headless Chromium, through the real relay and `svc listener` on a private
 * tmux server (Claude Code's are in claude-control.test.ts). Each agent lives in svc's own HOME, as on a person's
 * computer, so its session store is where svc looks: one exchange, End from the phone (the agent's own exit
 * command), the session is offered under Past sessions as resumable, Resume runs the agent's own resume with the id
 * its store filed, and the earlier conversation is on screen again.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeModel, PLAIN_REPLY, startFakeModel } from '../fakes/fakeModel.js';
import { pairedPhone, sessionControl, type TestBrowser } from '../helpers/browser.js';
import { type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import {
  agentInstalled,
  agentProgram,
  CODEX,
  GEMINI_CLI,
  killProcessesUnder,
  OPENCODE,
  PI,
  type RealAgent,
  waitSettled,
} from '../helpers/realAgents.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { type TmuxServer, waitFor } from '../helpers/tmux.js';

const STEP_MS = 90_000;
/** Each agent's own resume of a session by id, as its help documents it (`codex resume <id>`, …). */
const RESUME_WITH: Record<string, string> = { A2: 'resume', A3: '--resume', A4: '--session', A5: '--session' };
const PROMPT = 'hello there, remember the word teal';

let relay: TestRelay;
let model: FakeModel;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let hookId: string;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;

beforeAll(async () => {
  relay = await startTestRelay();
  model = await startFakeModel();
  let env: NodeJS.ProcessEnv;
  ({ tmux, home, env, hookId } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' }));
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(env));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  await model?.close();
  await relay?.close();
  // Codex starts a background app-server of its own from this HOME that outlives its session
  if (home) killProcessesUnder(home.home);
  await home?.removeWhenFree();
});

/**
 * The id the agent's own store filed for the conversation in `proj`, read here from the store as a person could
 * (its session list or its files), to hold the resume's command line to. The agent's program runs asynchronously:
 * this process serves the relay and the fake model, which `gemini --list-sessions` asks for a summary (run
 * synchronously, it blocked both: the relay answered no ping for 10 s, and the phone's Resume was "Not sent").
 */
async function filedId(agent: RealAgent, proj: string, env: NodeJS.ProcessEnv, whileRunning = false): Promise<string> {
  const run = async (args: string[]) =>
    (
      await promisify(execFile)(agentProgram(agent), args, {
        cwd: proj,
        env: { ...process.env, ...env },
        timeout: 60_000,
      })
    ).stdout;
  switch (agent.id) {
    case 'A2': {
      // `codex resume` lists them interactively only: its rollout files, whose first line names the session
      const root = join(home.home, '.codex', 'sessions');
      const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.jsonl'));
      expect(files).toHaveLength(1);
      return /([0-9a-f-]{36})\.jsonl$/.exec(files[0]!)![1]!;
    }
    case 'A3': {
      if (whileRunning) {
        // its files: `gemini --list-sessions` first has the model summarise the newest earlier session and writes
        // that into its file, which the running Gemini CLI is writing too (seen in CI: the list stayed empty). The
        // sessions there by id, as Gemini CLI counts them: a resumed one under load may also leave a file of its
        // header alone, in the minute it started, under the same id (its chat started once before the resume)
        const root = join(home.home, '.gemini', 'tmp');
        const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) =>
          /chats\/session-[^/]*\.jsonl$/.test(f),
        );
        const heads = files.map((f) => `${f}: ${readFileSync(join(root, f), 'utf8').split('\n')[0]}`);
        const ids = new Set(heads.map((h) => /"sessionId":"([^"]+)"/.exec(h)?.[1]));
        expect(ids.size, heads.join('\n')).toBe(1);
        return [...ids][0]!;
      }
      // `Available sessions for this project (1):` / `  1. <prompt> (<when>) [<uuid>]`
      const ids = [...(await run(['--list-sessions'])).matchAll(/\[([0-9a-f-]{36})\]/g)].map((m) => m[1]!);
      expect(ids).toHaveLength(1);
      return ids[0]!;
    }
    case 'A4': {
      const dir = join(home.home, '.pi', 'agent', 'sessions');
      const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.jsonl'));
      expect(files).toHaveLength(1);
      return /_([0-9a-f-]{36})\.jsonl$/.exec(files[0]!)![1]!;
    }
    case 'A5': {
      // `opencode session list`: a table whose rows start with the session's id
      const ids = [...(await run(['session', 'list'])).matchAll(/\b(ses_[A-Za-z0-9]+)\b/g)].map((m) => m[1]!);
      expect(new Set(ids).size).toBe(1);
      return ids[0]!;
    }
    default:
      throw new Error(`no store for ${agent.id}`);
  }
}

for (const agent of [CODEX, GEMINI_CLI, PI, OPENCODE]) {
  const session = `svc-res-${agent.id.toLowerCase()}`;
  describe.skipIf(!agentInstalled(agent)).sequential(`${agent.id} ${agent.program}: end and resume`, () => {
    let proj: string;
    let agentEnv: Record<string, string>;
    const screen = () => tmux.capture(session);
    const running = async () =>
      (await tmux.run(['list-sessions', '-F', '#{session_name}']).catch(() => '')).split('\n').includes(session);
    const sessionPage = () => page.goto(`${relay.url}/#/s/${encodeURIComponent(hookId)}/${session}`);

    async function until(fn: () => boolean | Promise<boolean>, what: string): Promise<void> {
      try {
        await waitFor(fn, { timeoutMs: STEP_MS, intervalMs: 200, what: `${agent.id} ${what}` });
      } catch (e) {
        const shown = await screen().catch(() => '(no session)');
        throw new Error(`${(e as Error).message}\n--- screen ---\n${shown}\n--- listener ---\n${listener.output()}`);
      }
    }

    /** The person types at the keyboard: one paste, then Enter (as the listener types a message). */
    async function say(text: string): Promise<void> {
      const pane = (await tmux.listSessions()).find((s) => s.name === session)!.panes[0]!.id;
      await tmux.tmux.paste({ pane }, text, { bracketed: true });
      await new Promise((r) => setTimeout(r, 400));
      await tmux.tmux.sendKeys({ pane }, ['Enter']);
    }

    const control = (label: string, confirm: string, done: RegExp) =>
      sessionControl(page, { label, confirm, done, timeoutMs: STEP_MS }, () => listener.output());

    beforeAll(async () => {
      proj = join(home.home, `proj-${agent.id.toLowerCase()}`);
      mkdirSync(proj);
      execFileSync('git', ['init', '-q', proj]);
      agentEnv = { HOME: home.home, CI: '', ...agent.setup({ home: home.home, proj, model: model.url }) };
      // a person's shell environment is tmux's global one: the session the listener starts (the resume) gets it
      for (const [k, v] of Object.entries(agentEnv)) await tmux.run(['set-environment', '-g', k, v]);
      await tmux.newSession(session, [agentProgram(agent), ...(agent.args ?? [])], {
        cwd: proj,
        env: agentEnv,
        options: { '@svc-kind': 'agent', '@svc-agent': agent.id, '@svc-project': `proj-${agent.id}` },
      });
      await waitSettled(agent, screen, { timeoutMs: 120_000, what: 'ready at start' });
    }, 150_000);

    afterAll(async () => {
      await tmux.run(['kill-session', '-t', `=${session}`]).catch(() => {});
    });

    it('End types its exit command; the session is offered under Past sessions, resumable', {
      timeout: 4 * STEP_MS,
    }, async () => {
      // one exchange, so the agent files the session in its store
      await say(PROMPT);
      await until(async () => (await screen()).includes(PLAIN_REPLY), 'the reply on screen');
      await waitSettled(agent, screen, { timeoutMs: STEP_MS, what: 'ready after the reply' });
      await sessionPage();
      await control('End session', 'End it', /The exit command was typed/);
      await until(async () => !(await running()), 'the session ended (the agent quit)');
      await page.goto(`${relay.url}/#/`);
      // listed under the (folded) Past sessions, marked resumable
      await page
        .locator('ul[aria-label="past sessions of laptop"] a.session-link')
        .filter({ hasText: session })
        .getByText('resumable')
        .waitFor({ state: 'attached', timeout: STEP_MS });
    });

    it('Resume runs its own resume with the id its store filed; the earlier conversation is back', {
      timeout: 4 * STEP_MS,
    }, async () => {
      const id = await filedId(agent, proj, agentEnv);
      await sessionPage();
      await page.getByText(/^ended /).waitFor({ timeout: STEP_MS });
      await control('Resume', 'Resume it', /Resumed/);
      await until(running, 'the resumed session in tmux');
      const start = await tmux.run(['display-message', '-p', '-t', `=${session}:`, '#{pane_start_command}']);
      expect(start).toContain(`${RESUME_WITH[agent.id]} ${id}`);
      await until(async () => (await screen()).includes(PROMPT), 'the earlier prompt on screen');
      await waitSettled(agent, screen, { timeoutMs: STEP_MS, what: 'ready after the resume' });
      // the conversation goes on: the model is sent the earlier turn with the new one
      const before = model.requests.length;
      await say('and again');
      await until(
        () => model.requests.slice(before).some((r) => JSON.stringify(r.body ?? '').includes(PROMPT)),
        'a request after the resume carrying the earlier prompt',
      );
      // the same conversation went on (not a copy of it): the store still has the one session, under its id (asked
      // again until it settles: a list asked while the agent writes may miss the file being written)
      await waitSettled(agent, screen, { timeoutMs: STEP_MS, what: 'ready after the next reply' });
      let last: unknown;
      await until(async () => {
        try {
          last = await filedId(agent, proj, agentEnv, true);
        } catch (e) {
          last = e;
        }
        return last === id;
      }, `the store to list the one session ${id}`).catch((e) => {
        throw new Error(`${(e as Error).message}\nlast: ${String(last)}`);
      });
    });
  });
}
