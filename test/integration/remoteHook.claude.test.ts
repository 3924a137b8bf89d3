/**
 * The real Claude Code runs `svc remote-hook claude` as its UserPromptSubmit hook (here given with `--settings`;
 * `svc setup` is to write it): the phone's text (the listener's marker) reaches the model with the REMOTE context,
 * the same text without a marker does not.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markerPath, writeMarker } from '../../actors/marker.js';
import { REMOTE_CONTEXT } from '../../core/hooks/remoteOrigin.js';
import { type FakeModel, startFakeModel } from '../fakes/fakeModel.js';
import { SVC_BIN } from '../helpers/cli.js';
import { agentInstalled, agentProgram, CLAUDE_CODE, prepareAgent } from '../helpers/realAgents.js';

let model: FakeModel;
beforeAll(async () => {
  model = await startFakeModel();
});
afterAll(async () => {
  await model?.close();
});

function claudePrint(prompt: string, place: ReturnType<typeof prepareAgent>): Promise<string> {
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

describe.skipIf(!agentInstalled(CLAUDE_CODE))('Claude Code with svc remote-hook', () => {
  it('the phone’s text carries the REMOTE context to the model; the keyboard’s does not', async () => {
    const place = prepareAgent(CLAUDE_CODE, model.url);
    try {
      const markers = join(place.home, '.svc', 'remote-origin');
      writeMarker(markers, 'svc-proj', place.proj, 'phone says hi');
      const out = await claudePrint('phone says hi', place);
      expect(sawContext('phone says hi'), out).toBe(true);
      expect(existsSync(markerPath(markers, place.proj))).toBe(false);
      await claudePrint('keyboard says hi', place);
      expect(model.requests.some((r) => JSON.stringify(r.body ?? '').includes('keyboard says hi'))).toBe(true);
      expect(sawContext('keyboard says hi')).toBe(false);
    } finally {
      await place.cleanup();
    }
  }, 300_000);
});
