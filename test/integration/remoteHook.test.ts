/**
 * `svc remote-hook <agent>` as the agent's hook runs it: stdin in, the agent's hook output (or nothing) out, exit 0
 * always; the marker is the one the listener's own writer makes (actors/sessions/marker.ts).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { markerPath, writeMarker } from '../../actors/sessions/marker.js';
import { REMOTE_CONTEXT } from '../../core/hooks/remoteOrigin.js';
import { SVC_BIN, svcEnv, tempHome } from '../helpers/cli.js';

function hook(
  agent: string,
  input: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [SVC_BIN, 'remote-hook', agent], { env, timeout: 10_000 }, (err, stdout) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, ms: Date.now() - t0 }),
    );
    child.stdin?.end(input);
  });
}

describe('svc remote-hook', () => {
  it('flags the listener’s text once, never the keyboard’s, and always exits 0', async () => {
    const { home, cleanup } = tempHome();
    try {
      const env = svcEnv(home);
      const markers = join(home, '.svc', 'remote-origin');
      const proj = join(home, 'proj');
      const input = (prompt: string) =>
        JSON.stringify({ session_id: 's', cwd: proj, hook_event_name: 'UserPromptSubmit', prompt });

      // typed at the keyboard while a phone message's marker waits: not flagged, marker kept for the phone's text
      writeMarker(markers, 'svc-proj', proj, 'run the tests');
      const keyboard = await hook('claude', input('run the tests!'), env);
      expect(keyboard).toMatchObject({ code: 0, stdout: '' });
      expect(existsSync(markerPath(markers, proj))).toBe(true);

      const phone = await hook('claude', input('run the tests'), env);
      expect(phone.code).toBe(0);
      expect(JSON.parse(phone.stdout)).toEqual({
        hookSpecificOutput: { hookEventName: 'UserPromptSubmit', additionalContext: REMOTE_CONTEXT },
      });
      // one-shot: the same text again (now typed at the keyboard) is not flagged
      expect(existsSync(markerPath(markers, proj))).toBe(false);
      expect(await hook('claude', input('run the tests'), env)).toMatchObject({ code: 0, stdout: '' });

      // Gemini CLI's BeforeAgent gets its own event name
      writeMarker(markers, 'svc-proj', proj, 'hello');
      const gemini = await hook('gemini', input('hello'), env);
      expect(JSON.parse(gemini.stdout).hookSpecificOutput.hookEventName).toBe('BeforeAgent');

      // a stale marker is not a match
      writeMarker(markers, 'svc-proj', proj, 'late', Date.now() - 120_000);
      expect(await hook('codex', input('late'), env)).toMatchObject({ code: 0, stdout: '' });

      // bad input and an unknown agent: quiet, exit 0, one log line each
      expect(await hook('codex', 'not json', env)).toMatchObject({ code: 0, stdout: '' });
      expect(await hook('nope', input('x'), env)).toMatchObject({ code: 0, stdout: '' });
      const log = readFileSync(join(home, '.svc', 'remote-hook.log'), 'utf8');
      expect(log).toMatch(/claude: remote prompt in svc-proj/);
      expect(log).toMatch(/codex: not remote \(stale\)/);
      expect(log).toMatch(/codex: hook input is not a prompt, a stop or a start event with a cwd/);
      expect(log).toMatch(/nope: unknown agent nope/);
    } finally {
      cleanup();
    }
  });

  it('never waits for input that does not come: it exits 0 within its time limit', async () => {
    const { home, cleanup } = tempHome();
    try {
      const t0 = Date.now();
      const res = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
        // stdin left open: the hook must not wait for it
        const child = execFile(
          process.execPath,
          [SVC_BIN, 'remote-hook', 'claude'],
          { env: svcEnv(home), timeout: 10_000 },
          (err, stdout) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout }),
        );
        void child;
      });
      expect(res).toEqual({ code: 0, stdout: '' });
      // node's own start-up is most of it on a loaded machine; the hook itself gives up after 400 ms
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect(readFileSync(join(home, '.svc', 'remote-hook.log'), 'utf8')).toMatch(/no hook input in time|time limit/);
    } finally {
      cleanup();
    }
  });
});
