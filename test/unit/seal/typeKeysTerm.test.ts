/**
 * A scheduled run past its max-runtime whose agent did not end on its exit command: the session actor's `term`
 * (machines/session.ts) sends SIGTERM to the pane's process (actors/seal/e2ee.ts typeKeys), a real process here.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { typeKeysLogic } from '../../../actors/seal/e2ee.js';

const run = (panePid: () => Promise<number | null>) => {
  const typed: string[] = [];
  const tmux = {
    sendLiteral: async (_: unknown, text: string) => void typed.push(text),
    sendKeys: async (_: unknown, keys: readonly string[]) => void typed.push(...keys),
    captureScreen: async () => ({ text: '', width: 80, height: 24 }),
    killSession: async () => void typed.push('kill-session'),
    panePid,
    capture: async () => '',
  };
  const actor = createActor(
    typeKeysLogic(tmux, async () => {}),
    {
      input: { session: 's', paneId: '%1', keys: [], text: '', term: true },
    },
  );
  return new Promise<{ typed: string[]; error?: unknown }>((resolve) => {
    actor.subscribe({ complete: () => resolve({ typed }), error: (error) => resolve({ typed, error }) });
    actor.start();
  });
};

describe('term: SIGTERM to the pane’s process', () => {
  it('the process gets SIGTERM; nothing is typed, no session is killed', async () => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    const ended = new Promise<NodeJS.Signals | null>((r) => child.on('exit', (_code, signal) => r(signal)));
    const result = await run(async () => child.pid ?? null);
    expect(result).toEqual({ typed: [] });
    expect(await ended).toBe('SIGTERM');
  });

  it('a pane that is gone: an error, so the run tries again in a minute', async () => {
    const result = await run(async () => null);
    expect(String(result.error)).toMatch(/pane %1 is gone/);
  });
});
