/**
 * Notifications people get (issue 30 item 5), in headless Chromium at phone size with the real relay, `svc listener`
 * and `svc mcp` driven by the real MCP SDK client: a `svc_notify` sent while the app is closed (and notifications
 * are off) is told `delivered: false` with the reason, and the app, opened later, has it in its inbox; one sent while
 * the app is open is `delivered: true`, shows under Needs you and in the inbox, and stays there once after a reload.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pairedPhone, type TestBrowser } from '../helpers/browser.js';
import { type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { svcMcpClient } from '../helpers/mcp.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { waitFor } from '../helpers/tmux.js';

let relay: TestRelay;
let computer: TestComputer;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;
let client: Client;

const notify = async (message: string, title?: string) =>
  (await client.callTool({ name: 'svc_notify', arguments: { message, ...(title ? { title } : {}) } })) as {
    isError?: boolean;
    structuredContent?: { delivered: boolean; code?: string };
    content: { text: string }[];
  };
/** App connections the relay has seen close. */
const appsClosed = () => relay.logs.filter((l) => /ws app \[.*\] closed/.test(l)).length;

beforeAll(async () => {
  relay = await startTestRelay();
  computer = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' });
  listener = spawnSvc(['listener'], computer.env);
  await listener.waitForLine(/connected to ws:/);
  ({ browser, page } = await pairedPhone(computer.env, { viewport: { width: 390, height: 844 } }));
  client = await svcMcpClient(computer.env, computer.tmux, 'svc-proj');
}, 60_000);

afterEach(() => browser?.expectNoErrors());

afterAll(async () => {
  await client?.close();
  await browser?.close();
  await listener?.stop();
  await computer?.tmux.cleanup();
  await relay?.close();
  computer?.home.cleanup();
});

describe('the inbox', () => {
  it('keeps what came while the app was closed; the agent was told it was not delivered, and why', async () => {
    const closedBefore = appsClosed();
    await page.goto('about:blank'); // the app closed: its connection goes
    await waitFor(() => appsClosed() > closedBefore, { what: 'the relay to see the app go', timeoutMs: 15_000 });

    const away = await notify('the nightly build is green', 'CI');
    expect(away.structuredContent).toEqual({ delivered: false, code: 'not_delivered' });
    expect(away.isError).toBeFalsy();
    expect(away.content[0]?.text).toMatch(/no phone has the app open, and none has notifications on/);

    await page.goto(relay.url);
    await page.getByText('Notifications (1)').click();
    const list = page.getByRole('list', { name: 'Notifications' });
    await list.getByText('the nightly build is green').waitFor({ timeout: 15_000 });
    await list.getByRole('link', { name: 'CI' }).waitFor();
    // came while closed: in the inbox, not under Needs you
    expect(await page.locator('.needs-you').getByText('the nightly build is green').count()).toBe(0);
  }, 60_000);

  it('one sent while the app is open is delivered, shows under Needs you, and is kept once across a reload', async () => {
    const here = await notify('tests are running again');
    expect(here.structuredContent).toEqual({ delivered: true });
    await page
      .locator('.needs-you')
      .getByText(/tests are running again/)
      .waitFor({ timeout: 15_000 });
    await page.reload();
    await page.getByText('Online', { exact: true }).waitFor({ timeout: 15_000 });
    await page.getByText('Notifications (2)').click();
    const list = page.getByRole('list', { name: 'Notifications' });
    await list.getByText('tests are running again').waitFor({ timeout: 15_000 });
    expect(await list.getByText('tests are running again').count()).toBe(1);
    expect(await list.getByText('the nightly build is green').count()).toBe(1);
  }, 60_000);
});
