/**
 * A computer as the integration tests need it: a private tmux server, a temporary HOME logged in to the relay, and
 * `svc-proj` running the fake Claude Code at its prompt.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { expect } from 'vitest';
import { runSvc, svcEnv, tempHome } from './cli.js';
import { AGENTS_BIN, CLAUDE_CODE } from './realAgents.js';
import { fakeAgentCommand, startTmuxServer, type TmuxServer, waitFor } from './tmux.js';

export interface TestComputer {
  tmux: TmuxServer;
  home: ReturnType<typeof tempHome>;
  env: NodeJS.ProcessEnv;
  /** The computer's id at the relay, from `svc login --json`. */
  hookId: string;
}

export async function loggedInComputer(opts: { url: string; apiKey: string; name: string }): Promise<TestComputer> {
  const tmux = await startTmuxServer();
  const home = tempHome();
  const env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath });
  const login = await runSvc(['login', '--url', opts.url, '--key', opts.apiKey, '--name', opts.name, '--json'], env);
  expect(login.stderr).toBe('');
  await tmux.newSession('svc-proj', fakeAgentCommand('claude'));
  await waitFor(async () => (await tmux.capture('svc-proj')).includes('›'), {
    what: 'the fake agent to draw its prompt',
  });
  return { tmux, home, env, hookId: JSON.parse(login.stdout).hookId };
}

/**
 * The real Claude Code (test/agents) on `computer` as a person has it: a git project `<home>/<name>`, its settings
 * against the fake model at `modelUrl`, tmux's global environment carrying them (the sessions svc starts get it,
 * as they get a person's shell environment), and `svc install` runs (the MCP server, the instruction, the hooks).
 * The env runs `svc` with it.
 */
export async function wiredClaudeCode(
  computer: Pick<TestComputer, 'tmux' | 'home' | 'env'>,
  modelUrl: string,
  name: string,
): Promise<{ env: NodeJS.ProcessEnv; proj: string }> {
  const home = computer.home.home;
  const proj = join(home, name);
  mkdirSync(proj);
  execFileSync('git', ['init', '-q', proj]);
  const agentEnv = { HOME: home, CI: '', DEBIAN_FRONTEND: '', ...CLAUDE_CODE.setup({ home, proj, model: modelUrl }) };
  for (const [k, v] of Object.entries(agentEnv)) await computer.tmux.run(['set-environment', '-g', k, v]);
  const env = { ...computer.env, ...agentEnv, PATH: `${AGENTS_BIN}${delimiter}${computer.env.PATH ?? ''}` };
  const res = await runSvc(['install'], env);
  expect(res.code, `svc install: ${res.stdout}${res.stderr}`).toBe(0);
  return { env, proj };
}
