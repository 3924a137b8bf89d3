/**
 * The real agents run `svc remote-hook <agent>` as their prompt hook — Claude Code's UserPromptSubmit (given with
 * `--settings`), Gemini CLI's BeforeAgent (in its user settings); `svc setup` is to write these entries — each once
 * in its non-interactive mode against the fake model: the phone's text (the listener's marker) reaches the model
 * with the REMOTE context, the same kind of text without a marker does not.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markerPath, writeMarker } from '../../actors/sessions/marker.js';
import { REMOTE_CONTEXT } from '../../core/hooks/remoteOrigin.js';
import { type FakeModel, startFakeModel } from '../fakes/fakeModel.js';
import { SVC_BIN } from '../helpers/cli.js';
import { agentInstalled, agentProgram, CLAUDE_CODE, GEMINI_CLI, prepareAgent } from '../helpers/realAgents.js';

let model: FakeModel;
beforeAll(async () => {
  model = await startFakeModel();
});
afterAll(async () => {
  await model?.close();
});

function claudePrint(prompt: string, place: Place): Promise<string> {
  const settings = {
    hooks: {
      UserPromptSubmit: [
        { hooks: [{ type: 'command', command: `'${process.execPath}' '${SVC_BIN}' remote-hook claude` }] },
      ],
    },
  };
  return new Promise((resolve) => {
    execFile(
      agentProgram(CLAUDE_CODE),
      ['-p', prompt, '--settings', JSON.stringify(settings)],
      { cwd: place.proj, env: { ...process.env, ...place.env }, timeout: 120_000 },
      (_err, stdout, stderr) => resolve(stdout + stderr),
    );
  });
}

/** Whether the model saw the REMOTE context in a request whose user turns include `prompt`. */
const sawContext = (prompt: string) =>
  model.requests.some((r) => {
    const body = JSON.stringify(r.body ?? '');
    return body.includes(prompt) && body.includes(REMOTE_CONTEXT.slice(0, 60));
  });

type Place = ReturnType<typeof prepareAgent>;

/** The agent run once with the phone's text (a marker waits for it), once with the keyboard's (no marker). */
async function provesRemote(agent: typeof CLAUDE_CODE, run: (prompt: string, place: Place) => Promise<string>) {
  const place = prepareAgent(agent, model.url);
  try {
    const markers = join(place.home, '.svc', 'remote-origin');
    const phone = `phone says hi to ${agent.program}`;
    const keyboard = `keyboard says hi to ${agent.program}`;
    writeMarker(markers, 'svc-proj', place.proj, phone);
    const out = await run(phone, place);
    expect(sawContext(phone), out).toBe(true);
    expect(existsSync(markerPath(markers, place.proj))).toBe(false);
    await run(keyboard, place);
    expect(model.requests.some((r) => JSON.stringify(r.body ?? '').includes(keyboard))).toBe(true);
    expect(sawContext(keyboard)).toBe(false);
  } finally {
    await place.cleanup();
  }
}

describe.skipIf(!agentInstalled(CLAUDE_CODE))('Claude Code with svc remote-hook', () => {
  it('the phone’s text carries the REMOTE context to the model; the keyboard’s does not', async () => {
    await provesRemote(CLAUDE_CODE, claudePrint);
  }, 300_000);
});

/** Gemini CLI with its BeforeAgent hook in its user settings, run once in non-interactive mode. */
function geminiPrint(prompt: string, place: Place): Promise<string> {
  const file = join(place.home, '.gemini', 'settings.json');
  const settings = JSON.parse(readFileSync(file, 'utf8'));
  settings.hooks = {
    BeforeAgent: [{ hooks: [{ type: 'command', command: `'${process.execPath}' '${SVC_BIN}' remote-hook gemini` }] }],
  };
  writeFileSync(file, JSON.stringify(settings));
  return new Promise((resolve) => {
    execFile(
      agentProgram(GEMINI_CLI),
      ['-p', prompt],
      { cwd: place.proj, env: { ...process.env, ...place.env }, timeout: 120_000 },
      (_err, stdout, stderr) => resolve(stdout + stderr),
    );
  });
}

describe.skipIf(!agentInstalled(GEMINI_CLI))('Gemini CLI with svc remote-hook', () => {
  it('the phone’s text carries the REMOTE context to the model; the keyboard’s does not', async () => {
    await provesRemote(GEMINI_CLI, geminiPrint);
  }, 300_000);
});
