/**
 * A computer as the integration tests need it: a private tmux server, a temporary HOME logged in to the relay, and
 * `svc-proj` running the fake Claude Code at its prompt.
 */
import { expect } from 'vitest';
import { runSvc, svcEnv, tempHome } from './cli.js';
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
