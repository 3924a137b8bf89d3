/**
 * The rules that keep an agent asking (spec 4.13.4, issue 32 item 3): `svc install` writes svc's short instruction,
 * as a marked block, where each REAL agent (test/agents) reads the person's standing instructions, and the agent
 * hands it to its model; `svc uninstall` takes exactly that out. A fresh HOME per agent, the fake model on loopback,
 * real tmux; the model's own request is the truth of what the agent read.
 */
import { existsSync, readFileSync } from 'node:fs';
import { delimiter } from 'node:path';
import { describe, expect, it } from 'vitest';
import { injectText, realSleep } from '../../actors/agents/inject.js';
import { createTmux } from '../../actors/tmux/tmux.js';
import { agentById } from '../../core/agents/registry.js';
import { RULES_TEXT, wirings } from '../../core/hooks/wiring.js';
import { userTexts } from '../fakes/fakeModel.js';
import { modelAndTmux } from '../helpers/agentRig.js';
import { runSvc } from '../helpers/cli.js';
import {
  AGENTS_BIN,
  agentInstalled,
  CLAUDE_CODE,
  CODEX,
  GEMINI_CLI,
  prepareAgent,
  type RealAgent,
  waitSettled,
} from '../helpers/realAgents.js';
import { waitFor } from '../helpers/tmux.js';

const files = modelAndTmux();

/** A line of the instruction, as the model's request carries it (JSON-escaped there, so compared unescaped). */
const SAID = 'end every response with a call to `svc_ask`';

for (const agent of [CLAUDE_CODE, CODEX, GEMINI_CLI] as RealAgent[]) {
  describe.skipIf(!agentInstalled(agent))(`${agent.id} ${agent.program}`, () => {
    it('svc install writes the instruction where it reads it; its model gets it; svc uninstall takes it out', async () => {
      const place = prepareAgent(agent, files.model().url);
      const tmux = createTmux({ socketPath: files.server().socketPath, persistent: true });
      try {
        const env: NodeJS.ProcessEnv = {
          ...process.env,
          ...place.env,
          PATH: `${AGENTS_BIN}${delimiter}${process.env.PATH}`,
        };
        for (const name of Object.keys(env)) if (name.startsWith('SVC_')) delete env[name];
        const file = wirings({ home: place.home, ...place.env }, { node: '', svcBin: '' }).find(
          (w) => w.kind === 'rules' && w.agentId === agent.id,
        )!.file;
        const install = await runSvc(['install'], env);
        expect(install.stdout, install.stderr).toContain(`: added svc's standing instruction (${file})`);
        expect(readFileSync(file, 'utf8')).toContain(RULES_TEXT);

        const { paneId } = await tmux.newSession({
          name: `svc-rules-${agent.id.toLowerCase()}`,
          cwd: place.proj,
          command: place.argv,
          env: place.env,
        });
        const screen = () => tmux.capture({ pane: paneId }, 50);
        await waitSettled(agent, screen, { timeoutMs: 120_000 });
        const text = `hello with rules ${Math.random().toString(36).slice(2, 8)}`;
        const strategy = agentById(agent.id)!.submit;
        await injectText({ tmux, target: { pane: paneId }, text, strategy, sleep: realSleep });
        // the request that carries the person's text carries the instruction too (side requests, a title or a
        // router's, may come first: any of them will do)
        await waitFor(
          () =>
            files
              .model()
              .requests.some(
                (r) => userTexts(r.body).some((t) => t.includes(text)) && JSON.stringify(r.body).includes(SAID),
              ),
          { timeoutMs: 60_000, what: `a request with "${text}" and the instruction` },
        ).catch((err) => {
          const bodies = files.model().requests.map((r) => JSON.stringify(r.body).slice(0, 3000));
          throw new Error(`${err.message}; the model got:\n${bodies.join('\n---\n')}`);
        });

        const uninstall = await runSvc(['uninstall'], env);
        expect(uninstall.code, uninstall.stdout + uninstall.stderr).toBe(0);
        // svc made the file: it goes with the block
        expect(existsSync(file)).toBe(false);
      } finally {
        tmux.close();
        await place.cleanup();
      }
    }, 300_000);
  });
}
