/**
 * Each REAL agent (test/agents) ends itself on the exit command svc types for End on the phone and for a scheduled
 * run's max-runtime (core/sessions/control.ts EXIT_COMMANDS), typed as the session actor has it typed
 * (actors/agents/inject.ts typeExitCommand): the text, then Enter once it is drawn. The session then ends by itself;
 * nothing is killed. (Typed as keys, the text and its Enter in one tmux call, Codex 0.169 and Gemini CLI 0.61 took
 * the Enter as a newline and stayed; as a message's paste and Enter, Gemini CLI stayed too: this file found both.)
 */
import { describe, expect, it } from 'vitest';
import { typeExitCommand } from '../../actors/agents/inject.js';
import { createTmux } from '../../actors/tmux/tmux.js';
import { EXIT_COMMANDS } from '../../core/sessions/control.js';
import { modelAndTmux } from '../helpers/agentRig.js';
import {
  agentInstalled,
  CLAUDE_CODE,
  CODEX,
  GEMINI_CLI,
  PI,
  prepareAgent,
  type RealAgent,
  waitSettled,
} from '../helpers/realAgents.js';
import { waitFor } from '../helpers/tmux.js';

const files = modelAndTmux();

for (const agent of [CLAUDE_CODE, CODEX, GEMINI_CLI, PI] as RealAgent[]) {
  describe.skipIf(!agentInstalled(agent))(`${agent.id} ${agent.program}`, () => {
    it(`ends itself on ${EXIT_COMMANDS[agent.id]} typed as svc types it`, async () => {
      const exit = EXIT_COMMANDS[agent.id];
      expect(exit, 'an exit command for this agent').toBeDefined();
      const place = prepareAgent(agent, files.model().url);
      const tmux = createTmux({ socketPath: files.server().socketPath, persistent: true });
      const name = `svc-exit-${agent.id.toLowerCase()}`;
      try {
        const { paneId } = await tmux.newSession({ name, cwd: place.proj, command: place.argv, env: place.env });
        await waitSettled(agent, () => tmux.capture({ pane: paneId }, 50), { timeoutMs: 120_000 });
        await typeExitCommand(tmux, { paneId, text: exit! });
        await waitFor(async () => !(await tmux.hasSession(name)), {
          timeoutMs: 30_000,
          what: `${agent.program} to end on ${exit}`,
        }).catch(async (err) => {
          throw new Error(`${err.message}; its screen:\n${await tmux.capture({ pane: paneId }, 50).catch(String)}`);
        });
      } finally {
        tmux.close();
        await place.cleanup();
      }
    }, 200_000);
  });
}
