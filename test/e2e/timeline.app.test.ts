/**
 * The session timeline in the app (headless Chromium) when the phone's link drops: a step the listener uploads
 * while the phone is away reaches it once it is back, without reopening the screen. The transcript is the real
 * Claude Code's (test/fixtures/transcripts/A1), written into its store as Claude Code would; the listener, the
 * relay and the app are the real ones. The phone's socket is cut and kept from reconnecting through Playwright's
 * WebSocket routing, so the relay and the listener see a phone that went away and came back.
 */
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page, WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeProjectDir } from '../../core/sessions/control.js';
import { pairedPhone, type TestBrowser } from '../helpers/browser.js';
import { type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { startTestRelay, type TestRelay, waitFor } from '../helpers/relay.js';

const SESSION = 'svc-tl-app';

let relay: TestRelay;
let computer: TestComputer;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;

beforeAll(async () => {
  relay = await startTestRelay();
  computer = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' });
  listener = spawnSvc(['listener'], computer.env);
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(computer.env));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await computer?.tmux.cleanup();
  await relay?.close();
  await computer?.home.removeWhenFree();
});

describe('the timeline when the phone’s link drops', () => {
  it('shows a step stored while the phone was offline once it is back', { timeout: 90_000 }, async () => {
    // the phone's sockets go through here: `cut` closes the one open and refuses new ones until it is undone
    let blocked = false;
    let open: WebSocketRoute | null = null;
    await page.routeWebSocket(/\/ws$/, (ws) => {
      if (blocked) return void ws.close({ code: 1006 });
      ws.connectToServer();
      open = ws;
    });
    await page.reload();
    await page.getByText('Online', { exact: true }).waitFor({ timeout: 15_000 });

    const project = join(computer.home.home, 'proj');
    mkdirSync(project);
    const lines = readFileSync('test/fixtures/transcripts/A1/session.jsonl', 'utf8').trim().split('\n');
    const call = lines.findIndex((l) => l.includes('"type":"tool_use"'));
    const outcome = lines.findIndex((l) => l.includes('"type":"tool_result"'));
    expect(call).toBeGreaterThan(0);
    expect(outcome).toBe(call + 1);
    await computer.tmux.newSession(SESSION, ['cat'], {
      cwd: project,
      options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
    });
    const store = join(computer.home.home, '.claude', 'projects', claudeProjectDir(project));
    mkdirSync(store, { recursive: true });
    const transcript = join(store, '9f7cad6b-8561-4da3-baa0-ecdb6906eb73.jsonl');
    writeFileSync(transcript, `${lines.slice(0, call + 1).join('\n')}\n`);

    await page.goto(`${relay.url}/#/s/${encodeURIComponent(computer.hookId)}/${SESSION}`);
    const bash = page.getByRole('list', { name: 'Turns' }).locator('.step.tool', { hasText: 'Bash' });
    await bash.waitFor({ timeout: 20_000 });
    expect(await bash.textContent()).toMatch(/^… /);

    // the phone goes away (a tunnel, a lift); the agent goes on and the listener uploads its step meanwhile
    browser.allowConsoleErrors(/WebSocket/);
    blocked = true;
    (open as WebSocketRoute | null)?.close({ code: 1006 });
    await page.getByText(/^(Offline|Connecting)/).waitFor({ timeout: 15_000 });
    const stored = () => relay.logs.filter((l) => l.includes(`/${SESSION}: chunk`)).length;
    const before = stored();
    appendFileSync(transcript, `${lines[outcome]}\n`);
    await waitFor(() => stored() > before, { timeoutMs: 15_000, what: 'the outcome stored by the relay' });
    expect(await bash.textContent()).toMatch(/^… /); // not seen yet: the phone is away

    // back: the outcome shows on the screen that stayed open
    blocked = false;
    await page.getByText('Online', { exact: true }).waitFor({ timeout: 30_000 });
    await page
      .getByRole('list', { name: 'Turns' })
      .locator('.step.tool', { hasText: 'Bash' })
      .filter({ hasText: '✓' })
      .waitFor({ timeout: 15_000 });
  });
});
