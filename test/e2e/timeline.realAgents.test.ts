/**
 * The live timeline with the REAL Claude Code (test/agents/package.json) against the fake model, in the app in
 * headless Chromium, through the real relay and `svc listener`, on a private tmux server (spec 4.12): a turn with a
 * tool call appears on the session's timeline within a second of Claude Code writing it to its transcript, with its
 * prompt, and the file it read; the relay's database holds none of it in the clear.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeProjectDir } from '../../core/sessions/control.js';
import { type FakeModel, startFakeModel } from '../fakes/fakeModel.js';
import { pairedPhone, type TestBrowser } from '../helpers/browser.js';
import { type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { databaseHolds } from '../helpers/devices.js';
import { agentInstalled, agentProgram, CLAUDE_CODE, waitSettled } from '../helpers/realAgents.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { type TmuxServer, waitFor } from '../helpers/tmux.js';

const SESSION = 'svc-timeline-cc';

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

beforeAll(async () => {
  relay = await startTestRelay();
  model = await startFakeModel();
  let env: NodeJS.ProcessEnv;
  ({ tmux, home, env, hookId } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' }));
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(env));
  if (!agentInstalled(CLAUDE_CODE)) return;
  // Claude Code lives in the same HOME as svc, as on a person's computer: its transcripts are where svc looks
  proj = join(home.home, 'proj');
  mkdirSync(proj);
  execFileSync('git', ['init', '-q', proj]);
  writeFileSync(join(proj, 'notes.txt'), 'alpha line\nbeta line\n');
  const agentEnv = { HOME: home.home, CI: '', ...CLAUDE_CODE.setup({ home: home.home, proj, model: model.url }) };
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

/** The moment Claude Code's transcript first holds a line with `text` (polled every 20 ms). */
async function writtenAt(text: string): Promise<number> {
  const dir = join(home.home, '.claude', 'projects', claudeProjectDir(proj));
  return waitFor(
    () => {
      for (const f of readdirSync(dir).filter((n) => n.endsWith('.jsonl'))) {
        if (readFileSync(join(dir, f), 'utf8').includes(text)) return Date.now();
      }
      return null;
    },
    { timeoutMs: 60_000, intervalMs: 20, what: `${text} in the transcript` },
  );
}

describe.skipIf(!agentInstalled(CLAUDE_CODE))('the live timeline of a real Claude Code session', () => {
  it('shows a turn’s tool call within a second of Claude Code writing it', { timeout: 180_000 }, async () => {
    await page.goto(`${relay.url}/#/s/${encodeURIComponent(hookId)}/${SESSION}`);
    await page
      .getByRole('region', { name: 'Timeline' })
      .getByText(/Nothing yet/)
      .waitFor({ timeout: 30_000 });
    const file = join(proj, 'notes.txt');
    const prompt = `svc-edit ${file}`;
    await tmux.run(['send-keys', '-t', `=${SESSION}:`, '-l', prompt]);
    await tmux.run(['send-keys', '-t', `=${SESSION}:`, 'Enter']);

    const toolWritten = await writtenAt('"name":"Read"');
    const tool = page.getByRole('list', { name: 'Turns' }).locator('.step.tool', { hasText: 'Read' });
    await tool.waitFor({ timeout: 30_000 }).catch(async (e) => {
      const shown = await page.getByRole('region', { name: 'Timeline' }).textContent();
      throw new Error(`${(e as Error).message}\n--- timeline ---\n${shown}\n--- listener ---\n${listener.output()}`);
    });
    const shownAfter = Date.now() - toolWritten;
    process.stderr.write(`timeline: the Read tool on the phone ${shownAfter} ms after Claude Code wrote it\n`);
    expect(shownAfter, 'ms from the transcript to the phone').toBeLessThan(1_000);
    await expect(tool.textContent()).resolves.toContain(file);
    await page.getByText(prompt, { exact: true }).waitFor();
    // the read's outcome follows it (on a timeout, what the phone and the listener showed: CI missed it once)
    await page
      .locator('.step.tool', { hasText: 'Read' })
      .filter({ hasText: '✓' })
      .waitFor({ timeout: 30_000 })
      .catch(async (e) => {
        const shown = await page.getByRole('region', { name: 'Timeline' }).textContent();
        throw new Error(`${(e as Error).message}\n--- timeline ---\n${shown}\n--- listener ---\n${listener.output()}`);
      });
    expect(databaseHolds(relay.dataDir, 'svc-edit')).toBe(false);
    expect(databaseHolds(relay.dataDir, 'notes.txt')).toBe(false);
  });
});
