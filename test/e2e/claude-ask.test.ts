/**
 * The real Claude Code (test/agents/package.json pins it) asks the person through `svc mcp`: wired with its own
 * `--mcp-config`, against the fake model (test/fakes/fakeModel.ts), which answers a prompt with a call of
 * `mcp__svc__svc_ask`. The question shows in the app in headless Chromium, a tap answers it, and the model's next
 * request carries the answer as the tool's result. Real relay, real `svc listener`, real tmux.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shellQuote } from '../../core/tmux/tmux.js';
import { ASK_INPUT, type FakeModel, startFakeModel } from '../fakes/fakeModel.js';
import { pairedPhone, type TestBrowser } from '../helpers/browser.js';
import { runSvc, type SpawnedSvc, SVC_BIN, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { databaseHolds } from '../helpers/devices.js';
import { startTestRelay, type TestRelay, waitFor } from '../helpers/relay.js';
import { startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

const CLAUDE = resolve(import.meta.dirname, '../agents/node_modules/.bin/claude');
const KEY = 'sk-ant-fake-key-0123456789abcdefghij';

let relay: TestRelay;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let listener: SpawnedSvc;
let browser: TestBrowser;
let page: Page;
let model: FakeModel;

/** Whether the model's latest request offered svc's ask tool. */
function offersAsk(): boolean {
  const last = model.requests.filter((r) => r.url.startsWith('/v1/messages')).at(-1);
  const tools = (last?.body as { tools?: { name?: string }[] } | undefined)?.tools ?? [];
  return tools.some((t) => t.name === 'mcp__svc__svc_ask');
}

/** The tool results of the model's requests (Anthropic Messages), as text. */
function toolResults(): string[] {
  const out: string[] = [];
  for (const r of model.requests) {
    const messages = (r.body as { messages?: { role: string; content: unknown }[] } | undefined)?.messages ?? [];
    for (const m of messages) {
      if (!Array.isArray(m.content)) continue;
      for (const part of m.content as { type?: string; content?: unknown }[]) {
        if (part.type !== 'tool_result') continue;
        out.push(typeof part.content === 'string' ? part.content : JSON.stringify(part.content));
      }
    }
  }
  return out;
}

beforeAll(async () => {
  relay = await startTestRelay();
  tmux = await startTmuxServer();
  home = tempHome();
  model = await startFakeModel();
  env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath });
  expect((await runSvc(['login', '--url', relay.url, '--key', relay.apiKey, '--name', 'laptop'], env)).code).toBe(0);
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  await listener.waitForLine(/control socket/);
  ({ browser, page } = await pairedPhone(env));
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await listener?.stop();
  await tmux?.cleanup();
  await model?.close();
  await relay?.close();
  // Claude Code may still be writing its backups as tmux takes it down: try until the directory is gone.
  await home?.removeWhenFree();
});

describe('Claude Code asks through svc mcp', () => {
  it.skipIf(!existsSync(CLAUDE))(
    'the model calls svc_ask, the phone shows it, a tap answers, the answer is the tool result',
    { timeout: 120_000 },
    async () => {
      const proj = join(home.home, 'proj');
      mkdirSync(proj);
      execFileSync('git', ['init', '-q', proj]);
      // Claude Code's own files: onboarding done, the fake key approved, the project trusted, svc_ask allowed.
      writeFileSync(
        join(home.home, '.claude.json'),
        JSON.stringify({
          hasCompletedOnboarding: true,
          theme: 'dark',
          customApiKeyResponses: { approved: [KEY.slice(-20)], rejected: [] },
          projects: { [proj]: { hasTrustDialogAccepted: true, allowedTools: ['mcp__svc__svc_ask'] } },
        }),
      );
      const mcpConfig = join(home.home, 'svc-mcp.json');
      writeFileSync(
        mcpConfig,
        JSON.stringify({ mcpServers: { svc: { type: 'stdio', command: process.execPath, args: [SVC_BIN, 'mcp'] } } }),
      );
      const agentEnv = {
        HOME: home.home,
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        ANTHROPIC_BASE_URL: model.url,
        ANTHROPIC_API_KEY: KEY,
        DISABLE_AUTOUPDATER: '1',
        DISABLE_TELEMETRY: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      };
      const command = [
        'exec',
        'env',
        ...Object.entries(agentEnv).map(([k, v]) => shellQuote(`${k}=${v}`)),
        shellQuote(CLAUDE),
        '--mcp-config',
        shellQuote(mcpConfig),
        '--allowedTools',
        'mcp__svc__svc_ask',
      ].join(' ');
      await tmux.run(['new-session', '-d', '-s', 'svc-proj', '-c', proj, '-x', '200', '-y', '50', command]);
      const screen = () => tmux.capture('svc-proj');
      await waitFor(async () => /\? for shortcuts/.test(await screen()), {
        timeoutMs: 60_000,
        intervalMs: 250,
        what: 'Claude Code ready for a prompt',
      });

      const prompt = async (text: string) => {
        const before = model.requests.length;
        await tmux.run(['send-keys', '-t', '=svc-proj:', '-l', text]);
        await waitFor(async () => (await screen()).includes(text), { what: `${text} in the input` });
        await tmux.run(['send-keys', '-t', '=svc-proj:', 'Enter']);
        await waitFor(() => model.requests.length > before, { timeoutMs: 30_000, what: `a request for ${text}` });
      };
      // Claude Code makes its first requests before its MCP servers are connected: plain prompts until a request
      // offers svc's tool (each answered with one line), then the one that makes the model call it.
      for (let i = 1; !offersAsk(); i++) {
        if (i > 10) throw new Error('Claude Code never offered mcp__svc__svc_ask to the model');
        await prompt(`hello ${i}`);
        await waitFor(async () => /\? for shortcuts/.test(await screen()), { timeoutMs: 30_000, what: 'ready again' });
      }
      await prompt('please svc-ask me');

      const card = page.getByRole('listitem', { name: 'question from svc-proj' });
      await card
        .getByText(ASK_INPUT.question)
        .waitFor({ timeout: 45_000 })
        .catch(async (error) => {
          // What Claude Code shows, what the model was asked and offered, what the listener did.
          const offered = model.requests.map(
            (r) =>
              `${r.url} ${r.script ?? ''} ${r.tool ?? ''} tools=${JSON.stringify(((r.body as { tools?: { name: string }[] })?.tools ?? []).map((t) => t.name).join(','))}`,
          );
          process.stderr.write(`${await screen()}\n${offered.join('\n')}\n${listener.output()}\n`);
          throw error;
        });
      const tapped = Date.now();
      await card.getByRole('button', { name: 'Yes, deploy' }).click();
      const result = await waitFor(() => toolResults().find((t) => t.includes('Yes, deploy')), {
        timeoutMs: 30_000,
        intervalMs: 50,
        what: 'the answer as the tool result in the next model request',
      });
      expect(Date.now() - tapped).toBeLessThan(30_000);
      expect(result).toContain('Yes, deploy');
      expect(model.requests.some((r) => r.tool === 'mcp__svc__svc_ask')).toBe(true);
      await card.getByText('Answered').waitFor({ timeout: 10_000 });
      expect(databaseHolds(relay.dataDir, ASK_INPUT.question)).toBe(false);
    },
  );
});
