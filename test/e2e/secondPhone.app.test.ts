/**
 * Every paired phone gets everything (issue 30 item 4), in headless Chromium at phone size, with the real relay, `svc
 * listener`, tmux and the real MCP SDK client: a first phone pairs and sends a message (the computer pins it); a
 * second phone pairs with the link `svc pair` printed and does nothing else; the agent's `svc_ask` then reaches the
 * second phone, which reads and answers it. A third phone paired with a link cut of the computer's secret (as a
 * link of an earlier svc, or one made elsewhere) says in words why the question does not open there.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pairAndSend, pairingLink, startBrowser, type TestBrowser } from '../helpers/browser.js';
import { runSvc, type SpawnedSvc, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { svcMcpClient } from '../helpers/mcp.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';
import { fakeAgentCommand, startTmuxServer, type TmuxServer, waitFor } from '../helpers/tmux.js';

const PHONE = { width: 390, height: 844 };

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let hookId: string;
let listener: SpawnedSvc;
let browser: TestBrowser;
let client: Client;

type ToolResult = { content: { text: string }[]; structuredContent?: Record<string, unknown> };
const ask = (args: Record<string, unknown>) =>
  client.callTool({ name: 'svc_ask', arguments: args }, undefined, { timeout: 120_000 }) as Promise<ToolResult>;

const newLink = async () => {
  const pair = await runSvc(['pair'], env);
  expect(pair.code, pair.stderr).toBe(0);
  return pairingLink(pair.stdout);
};

async function pairOnly(link: string): Promise<Page> {
  const page = await browser.newPage({ viewport: PHONE });
  await page.goto(link);
  await page.getByText('Online', { exact: true }).waitFor({ timeout: 20_000 });
  return page;
}

beforeAll(async () => {
  relay = await startTestRelay();
  tmux = await startTmuxServer();
  home = tempHome();
  env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath });
  const login = await runSvc(['login', '--url', relay.url, '--key', relay.apiKey, '--name', 'laptop', '--json'], env);
  expect(login.code, login.stderr).toBe(0);
  hookId = JSON.parse(login.stdout).hookId;
  await tmux.newSession('svc-proj', fakeAgentCommand('claude'));
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  await listener.waitForLine(/control socket/);
  browser = await startBrowser();
  client = await svcMcpClient(env, tmux);
}, 90_000);

afterAll(async () => {
  await client?.close().catch(() => {});
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  await relay?.close();
  home?.cleanup();
});

describe('every paired phone gets everything', () => {
  it('a phone that never sent anything reads and answers the question, once paired with this computer’s link', async () => {
    // the first phone: paired, and it has sent a message (the computer knows it)
    const first = await browser.newPage({ viewport: PHONE });
    await pairAndSend(first, {
      link: await newLink(),
      origin: relay.url,
      hookId,
      session: 'svc-proj',
      message: 'hello from the first phone',
      tmux,
    });
    // the second phone: paired, nothing else
    const second = await pairOnly(await newLink());

    const pending = ask({ question: 'Ship the release?', choices: ['Ship it', 'Wait'], timeout: 90 });
    for (const page of [first, second]) {
      const card = page.getByRole('listitem', { name: 'question from svc-proj' });
      await card.getByText('Ship the release?').waitFor({ timeout: 20_000 });
    }
    await second
      .getByRole('listitem', { name: 'question from svc-proj' })
      .getByRole('button', { name: 'Ship it' })
      .click();
    const result = await pending;
    expect(result.structuredContent).toMatchObject({ status: 'answered', answer: 'Ship it' });
    await waitFor(() => /phone .* pinned: it paired with this computer's link/.test(listener.output()), {
      what: 'the listener saying it pinned the second phone',
    });
  }, 120_000);

  it('a phone paired with a link that lacks the computer’s secret says why the question does not open', async () => {
    const cut = (await newLink()).replace(/\.[A-Za-z0-9_-]{43}$/, '');
    const third = await pairOnly(cut);
    const pending = ask({ question: 'Rotate the keys?', choices: ['Yes', 'No'], timeout: 10 });
    const card = third.getByRole('listitem', { name: 'question from svc-proj' });
    await card.getByText(/was not sealed for this phone: the computer did not know this phone yet/).waitFor({
      timeout: 20_000,
    });
    expect(await card.getByText('Rotate the keys?').count()).toBe(0);
    expect((await pending).structuredContent).toMatchObject({ status: 'expired' });
  }, 120_000);
});
