/**
 * Schedules from the phone (spec 4.8.9), in the app in headless Chromium, through the real relay and `svc listener`
 * on a private tmux server: the screen of an agent session schedules that agent again (the listener takes the folder
 * and the program from the session, not from the phone), the computer's sealed list shows it with its prompt, and
 * Remove takes it out of the schedules file. The relay holds the prompt only sealed.
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSchedules } from '../../actors/schedules/scheduleFile.js';
import { fromSessionMenu, pairedPhone, type TestBrowser } from '../helpers/browser.js';
import { type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { databaseHolds } from '../helpers/devices.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { fakeAgentScript, type TmuxServer, waitFor } from '../helpers/tmux.js';

const SESSION = 'svc-nightly';
const PROMPT = 'check the nightly build 7f3a';

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let hookId: string;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;
let project: string;
let claude: string;

const schedulesFile = () => join(home.home, '.local', 'state', 'svc', 'schedules');

beforeAll(async () => {
  relay = await startTestRelay();
  let env: NodeJS.ProcessEnv;
  ({ tmux, home, env, hookId } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' }));
  project = join(home.home, 'nightly');
  mkdirSync(project);
  claude = fakeAgentScript(home.home, 'claude');
  await tmux.newSession(SESSION, [claude], {
    cwd: project,
    options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'nightly' },
  });
  listener = spawnSvc(['listener'], { ...env, PATH: `${dirname(claude)}:${process.env.PATH}` });
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(env));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  await relay?.close();
  home?.cleanup();
});

describe.sequential('schedules in the app', () => {
  it('schedules an agent session from its screen; the listener takes the folder and program from the session', async () => {
    await page.goto(`${relay.url}/#/s/${encodeURIComponent(hookId)}/${SESSION}`);
    await fromSessionMenu(page, 'Schedule…');
    await page.getByLabel('Time', { exact: true }).fill('06:45');
    await page.getByLabel('Days').selectOption('weekdays');
    await page.getByLabel('At most').selectOption('1h');
    await page.getByLabel('Prompt').fill(PROMPT);
    await page.getByRole('button', { name: 'Schedule', exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Scheduled/ })
      .waitFor({ timeout: 30_000 });
    // taken: the form is ready for another
    expect(await page.getByLabel('Prompt').inputValue()).toBe('');
    expect(await page.getByLabel('Time', { exact: true }).inputValue()).toBe('07:30');

    const [entry, ...more] = readSchedules(schedulesFile()).schedules;
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      agent: 'A1',
      cwd: project,
      command: claude,
      project: 'nightly',
      prompt: PROMPT,
      maxRuntimeMs: 3_600_000,
      when: { kind: 'at', hour: 6, minute: 45, days: [1, 2, 3, 4, 5] },
    });
    expect(listener.output()).toMatch(new RegExp(`schedule for ${SESSION}, asked by .*: made ${entry!.id}`));
  }, 60_000);

  it('lists the computer’s schedules, sealed: the relay never holds the prompt in the clear', async () => {
    await page.goto(`${relay.url}/#/`);
    await page.getByText('Schedules (1)').click({ timeout: 30_000 });
    const list = page.getByRole('list', { name: 'schedules of laptop' });
    await list.getByText('Claude Code in nightly').waitFor();
    await list.getByText(/weekdays 06:45 · at most 1h/).waitFor();
    await list.getByText(PROMPT).waitFor();
    await waitFor(() => !databaseHolds(relay.dataDir, 'nightly build 7f3a'), { what: 'nothing in the clear' });
  }, 60_000);

  it('Remove asks first, then takes the schedule out of the file', async () => {
    await page.getByRole('button', { name: 'Remove', exact: true }).click();
    await page.getByRole('button', { name: 'Remove it', exact: true }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Removed/ })
      .waitFor({ timeout: 30_000 });
    expect(readSchedules(schedulesFile()).schedules).toEqual([]);
    await page.getByText('No schedules left.').waitFor({ timeout: 30_000 });
    await page.getByText('Schedules (0)').waitFor();
  }, 60_000);
});
