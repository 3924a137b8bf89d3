/**
 * `svc install && svc setup` wire the real agents (Claude Code 2.1.197, Codex 0.169.0, Gemini CLI 0.61.0, pi 0.73.1 from
 * test/agents), and each, run in its non-interactive mode against the fake model in a temp HOME, runs svc's hooks
 * itself: the phone's text (the listener's marker waits for it) reaches the model with the REMOTE context, the same
 * kind of text typed without a marker does not, and its Stop-style hook runs `svc remote-hook` at the end of the turn.
 * `svc uninstall` then takes svc's entries out again. Codex 0.169.0 runs them once trusted: setup asks Codex's
 * app-server for their keys and hashes and writes the trust (docs/agents.md).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markerPath, writeMarker } from '../../actors/sessions/marker.js';
import { REMOTE_CONTEXT } from '../../core/hooks/remoteOrigin.js';
import { type FakeModel, startFakeModel } from '../fakes/fakeModel.js';
import { runSvc } from '../helpers/cli.js';
import {
  AGENTS_BIN,
  agentInstalled,
  agentProgram,
  CLAUDE_CODE,
  CODEX,
  GEMINI_CLI,
  PI,
  prepareAgent,
  type RealAgent,
} from '../helpers/realAgents.js';

let model: FakeModel;
beforeAll(async () => {
  model = await startFakeModel();
});
afterAll(async () => {
  await model?.close();
});

type Place = ReturnType<typeof prepareAgent>;

/** The agent once in print mode, as a person's terminal would start it, with `svc` wired by install and setup. */
function printOnce(agent: RealAgent, prompt: string, place: Place): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile(
      agentProgram(agent),
      agent === CODEX ? ['exec', prompt] : ['-p', prompt],
      { cwd: place.proj, env: envOf(place), timeout: 120_000 },
      (_err, stdout, stderr) => resolve(stdout + stderr),
    );
    // nothing to read on stdin (pi reads a piped stdin as part of the prompt)
    child.stdin?.end();
  });
}

const envOf = (place: Place) => ({ ...process.env, ...place.env, PATH: `${AGENTS_BIN}:${process.env.PATH}` });

/** Whether the model saw the REMOTE context in a request whose user turns include `prompt`. */
const sawContext = (prompt: string) =>
  model.requests.some((r) => {
    const body = JSON.stringify(r.body ?? '');
    return body.includes(prompt) && body.includes(REMOTE_CONTEXT.slice(0, 60));
  });

const hookLog = (place: Place) => {
  try {
    return readFileSync(join(place.home, '.svc', 'remote-hook.log'), 'utf8');
  } catch {
    return '';
  }
};

/** The files svc setup and install touch for this agent, as they are now (null: missing). */
function snapshot(files: readonly string[]): (string | null)[] {
  return files.map((f) => (existsSync(f) ? readFileSync(f, 'utf8') : null));
}

async function wiredAndProven(agent: RealAgent, command: string, files: (place: Place) => string[]) {
  const place = prepareAgent(agent, model.url);
  try {
    const before = snapshot(files(place));
    const env = envOf(place);
    const install = await runSvc(['install'], env);
    expect(install.code, install.stdout + install.stderr).toBe(0);
    const setup = await runSvc(['setup'], env);
    expect(setup.code, setup.stdout + setup.stderr).toBe(0);
    const wired = snapshot(files(place));
    expect((await runSvc(['setup'], env)).stdout).not.toMatch(/\badded\b/);
    expect(snapshot(files(place))).toEqual(wired);
    const verify = await runSvc(['verify'], env);
    expect(verify.stdout).toMatch(/agent [^\n]*: [^\n]*; hooks: wired/);

    const markers = join(place.home, '.svc', 'remote-origin');
    const phone = `phone says hi to ${command}`;
    const keyboard = `keyboard says hi to ${command}`;
    writeMarker(markers, 'svc-proj', place.proj, phone);
    const out = await printOnce(agent, phone, place);
    expect(sawContext(phone), out).toBe(true);
    expect(existsSync(markerPath(markers, place.proj))).toBe(false);
    // the Stop-style hook ran at the end of the turn (no listener here to tell: the hook says so and exits 0)
    expect(hookLog(place)).toContain(`${command}: turn finished`);

    await printOnce(agent, keyboard, place);
    expect(model.requests.some((r) => JSON.stringify(r.body ?? '').includes(keyboard))).toBe(true);
    expect(sawContext(keyboard)).toBe(false);

    const uninstall = await runSvc(['uninstall'], env);
    expect(uninstall.code, uninstall.stdout + uninstall.stderr).toBe(0);
    const after = snapshot(files(place));
    // the agent may have written its own keys into its files meanwhile; what svc wrote is gone either way
    for (const [i, text] of after.entries()) {
      if (text === wired[i] || before[i] === undefined) continue;
      expect(text ?? '').not.toContain('remote-hook');
      expect(text ?? '').not.toContain('svc-remote');
    }
    expect(after.filter((t) => t !== null).join('\n')).not.toMatch(/svc-remote|remote-hook/);
  } finally {
    await place.cleanup();
  }
}

describe.skipIf(!agentInstalled(CLAUDE_CODE))('Claude Code wired by svc setup', () => {
  it('runs svc’s plugin script on UserPromptSubmit and Stop: the phone’s text carries the REMOTE context', async () => {
    await wiredAndProven(CLAUDE_CODE, 'claude', (p) => [
      join(p.home, '.claude', 'settings.json'),
      join(p.home, '.claude.json'),
    ]);
  }, 300_000);
});

describe.skipIf(!agentInstalled(CODEX))('Codex wired by svc setup', () => {
  it('trusts and runs svc’s UserPromptSubmit and Stop hooks: the phone’s text carries the REMOTE context', async () => {
    await wiredAndProven(CODEX, 'codex', (p) => [
      join(p.home, '.codex', 'hooks.json'),
      join(p.home, '.codex', 'config.toml'),
    ]);
  }, 300_000);

  it('svc verify asks Codex whether it trusts svc’s hooks, and says so when it does not', async () => {
    const place = prepareAgent(CODEX, model.url);
    try {
      const env = envOf(place);
      expect((await runSvc(['setup'], env)).code).toBe(0);
      expect((await runSvc(['verify'], env)).stdout).toMatch(/Codex[^\n]*hooks: wired$/m);
      // the person (or a Codex update) took the trust away: Codex now skips the hooks
      const config = join(place.home, '.codex', 'config.toml');
      const text = readFileSync(config, 'utf8');
      writeFileSync(config, text.replace(/\[hooks\.state\.[^\n]*\]\ntrusted_hash = [^\n]*\n?/g, ''));
      expect(readFileSync(config, 'utf8')).not.toContain('trusted_hash');
      expect((await runSvc(['verify'], env)).stdout).toMatch(/Codex[^\n]*hooks: wired, but Codex does not trust them/);
      // svc setup trusts them again
      expect((await runSvc(['setup'], env)).code).toBe(0);
      expect((await runSvc(['verify'], env)).stdout).toMatch(/Codex[^\n]*hooks: wired$/m);
    } finally {
      await place.cleanup();
    }
  }, 300_000);
});

describe.skipIf(!agentInstalled(GEMINI_CLI))('Gemini CLI wired by svc setup', () => {
  it('runs svc remote-hook on BeforeAgent and AfterAgent: the phone’s text carries the REMOTE context', async () => {
    await wiredAndProven(GEMINI_CLI, 'gemini', (p) => [join(p.home, '.gemini', 'settings.json')]);
  }, 300_000);
});

describe.skipIf(!agentInstalled(PI))('pi wired by svc setup', () => {
  it('loads svc’s extension: before_agent_start carries the REMOTE context, agent_end tells svc', async () => {
    await wiredAndProven(PI, 'pi', (p) => [join(p.home, '.pi', 'agent', 'extensions', 'svc-remote.ts')]);
  }, 300_000);
});
