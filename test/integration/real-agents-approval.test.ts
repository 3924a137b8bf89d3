/**
 * No push, and no key the listener sends on its own, ever answers an approval prompt: proven with the REAL Claude
 * Code, Codex and Gemini CLI (test/agents/package.json) against the fake model, driven by the real listener and
 * relay, on a tmux server whose panes are past %10 (a user's server is within minutes; screens of panes from %3 up
 * were once never read). The agents' approval dialogs ask to run `touch svc-approval-probe.txt` in their project:
 * the file appears only if the command was approved.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { APPROVAL_PROBE, describeRequests, type FakeModel, startFakeModel, userTurnsHold } from '../fakes/fakeModel.js';
import type { SpawnedSvc } from '../helpers/cli.js';
import { spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import {
  AGENTS_WITH_APPROVAL,
  agentInstalled,
  CLAUDE_CODE,
  type PreparedAgent,
  prepareAgent,
  waitSettled,
} from '../helpers/realAgents.js';
import { finalPush, sendPush, startTestRelay, type TestRelay } from '../helpers/relay.js';
import { type TmuxServer, waitFor } from '../helpers/tmux.js';

const PROBE = APPROVAL_PROBE;
/** Generous: a loaded 2-core machine starts these programs slowly. */
const START_MS = 120_000;
const STEP_MS = 60_000;

let relay: TestRelay;
let model: FakeModel;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let listener: SpawnedSvc;
let hookId: string;

beforeAll(async () => {
  relay = await startTestRelay();
  model = await startFakeModel();
  let env: NodeJS.ProcessEnv;
  ({ tmux, home, env, hookId } = await loggedInComputer({
    url: relay.url,
    apiKey: relay.apiKey,
    name: 'real-agents',
  }));
  // Windows made and killed: the agents' panes come after %10.
  for (let i = 0; i < 12; i++) {
    await tmux.run(['new-window', '-d', '-t', '=svc-proj:', 'cat']);
    await tmux.run(['kill-window', '-t', '=svc-proj:1']);
  }
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
}, 60_000);

afterAll(async () => {
  await listener?.stop();
  await tmux?.cleanup();
  home?.cleanup();
  await model?.close();
  await relay?.close();
});

for (const agent of AGENTS_WITH_APPROVAL) {
  describe.skipIf(!agentInstalled(agent)).sequential(`${agent.id} ${agent.program}: approvals`, () => {
    const session = `svc-real-${agent.id.toLowerCase()}`;
    let place: PreparedAgent;
    const screen = () => tmux.capture(session);
    const probe = () => join(place.proj, PROBE);
    const asking = async () => agent.approval!.test(await screen());

    const settled = (what: string) => waitSettled(agent, screen, { timeoutMs: START_MS, what });

    /** The person types at the keyboard: one paste and an Enter. */
    async function typeAtKeyboard(text: string): Promise<void> {
      const pane = (await tmux.listSessions()).find((s) => s.name === session)!.panes[0]!.id;
      await tmux.tmux.paste({ pane }, text, { bracketed: true });
      await new Promise((r) => setTimeout(r, 400));
      await tmux.tmux.sendKeys({ pane }, ['Enter']);
    }

    /** Until `fn` holds; on a timeout the error shows the screen. */
    async function until(fn: () => boolean | Promise<boolean>, what: string, timeoutMs = STEP_MS): Promise<void> {
      try {
        await waitFor(fn, { timeoutMs, intervalMs: 100, what: `${agent.id} ${what}` });
      } catch (e) {
        throw new Error(`${(e as Error).message}\n--- screen ---\n${await screen()}`);
      }
    }
    const received = (text: string) =>
      until(() => model.requests.some((r) => userTurnsHold(r.body, text)), `model got ${text}`).catch((e) => {
        throw new Error(
          `${(e as Error).message}\n--- the model's last requests ---\n${describeRequests(model.requests, text)}\n--- listener ---\n${listener.output().slice(-2_000)}`,
        );
      });

    async function decline(): Promise<void> {
      await tmux.tmux.sendKeys(`${session}`, agent.decline ?? ['Escape']);
      await settled('ready after declining');
    }

    beforeAll(async () => {
      place = prepareAgent(agent, model.url);
      const made = await tmux.newSession(session, place.argv, {
        cwd: place.proj,
        env: place.env,
        options: { '@svc-kind': 'agent', '@svc-agent': agent.id, '@svc-project': 'proj' },
      });
      expect(Number(made.paneId.slice(1))).toBeGreaterThan(10);
      await settled('ready at start');
    }, START_MS + 10_000);

    // Whatever a test left (a failed one too), the next starts at a ready agent with no probe file.
    afterEach(async () => {
      if (await asking()) await tmux.tmux.sendKeys(session, agent.decline ?? ['Escape']);
      await settled('ready after the test');
      rmSync(probe(), { force: true });
    }, START_MS + 10_000);

    afterAll(async () => {
      await tmux.run(['kill-session', '-t', `=${session}`]).catch(() => {});
      await place?.cleanup();
    });

    it('refuses a push while the prompt is up: the prompt stays, nothing ran', { timeout: 3 * STEP_MS }, async () => {
      model.setToolDelayMs(0);
      await typeAtKeyboard('run a command, svc-approve');
      await until(asking, 'approval prompt');
      const id = await sendPush(relay, session, 'yes, go on');
      expect(await finalPush(relay, id, STEP_MS)).toMatchObject({ state: 'refused', code: 'approval_pending' });
      expect(await asking()).toBe(true);
      expect(existsSync(probe())).toBe(false);
      expect(listener.output()).toMatch(new RegExp(`push ${id}: refused approval_pending for ${session}`));
      await decline();
      expect(existsSync(probe())).toBe(false);
    });

    it('types a push sent right after the person answered the prompt', { timeout: 3 * STEP_MS }, async () => {
      model.setToolDelayMs(0);
      await typeAtKeyboard('run a command, svc-approve');
      await until(asking, 'approval prompt');
      // The person approves at the keyboard (this is what a push must never do): the command runs.
      await tmux.tmux.sendKeys(session, ['Enter']);
      await until(async () => !(await asking()), 'prompt answered');
      const id = await sendPush(relay, session, 'after the answer, svc-after');
      expect(await finalPush(relay, id, STEP_MS)).toMatchObject({ state: 'injected' });
      await until(() => existsSync(probe()), 'ran the approved command');
      // typed once Claude Code's turn (the approved command, then its reply) is over: a message it queued at the
      // moment the turn ended was once drawn in its transcript and never sent (ci62; docs/agents.md, A1)
      await until(async () => (await screen()).includes('svc-after'), 'shows the push');
      await received('svc-after');
    });

    for (const delayMs of [0, 250]) {
      it(`never approves a tool call the model asks for ${delayMs} ms after the push`, {
        timeout: 3 * STEP_MS,
      }, async () => {
        model.setToolDelayMs(delayMs);
        const id = await sendPush(relay, session, `run a command at once (${delayMs}), svc-approve`);
        expect(await finalPush(relay, id, STEP_MS)).toMatchObject({ state: 'injected' });
        // The push is settled: the listener has sent every key it will send for it. The prompt is up, unanswered.
        await until(asking, 'approval prompt');
        expect(existsSync(probe())).toBe(false);
        expect(await asking()).toBe(true);
        await decline();
        expect(existsSync(probe())).toBe(false);
      });
    }
  });
}

/**
 * `svc sh` is a shell session: pushes to it are typed as a person would type them (spec 4.6). A person who starts
 * Claude Code inside it gets Claude Code's dialogs there; the agent in front is read as that agent, so a push while
 * its dialog shows is refused `approval_pending` and never picks "1. Yes".
 */
describe.skipIf(!agentInstalled(CLAUDE_CODE))('A1 claude started inside a svc sh session', () => {
  const session = 'svc-proj-sh';
  let place: PreparedAgent;
  const screen = () => tmux.capture(session);
  const asking = async () => CLAUDE_CODE.approval!.test(await screen());
  const probe = () => join(place.proj, PROBE);

  beforeAll(async () => {
    place = prepareAgent(CLAUDE_CODE, model.url);
    await tmux.newSession(session, ['bash', '--norc', '--noprofile'], {
      cwd: place.proj,
      env: place.env,
      options: { '@svc-kind': 'shell', '@svc-project': 'proj' },
    });
    // the person starts the agent at the shell's prompt
    const line = place.argv.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(' ');
    await tmux.run(['send-keys', '-t', `=${session}:`, '-l', line]);
    await tmux.run(['send-keys', '-t', `=${session}:`, 'Enter']);
    await waitSettled(CLAUDE_CODE, screen, { timeoutMs: START_MS, what: 'Claude Code ready in the shell session' });
  }, START_MS + 10_000);

  afterAll(async () => {
    await tmux.run(['kill-session', '-t', `=${session}`]).catch(() => {});
    await place?.cleanup();
  });

  it('refuses a push while its dialog is up: approval_pending, nothing ran', { timeout: 3 * STEP_MS }, async () => {
    model.setToolDelayMs(0);
    const pane = (await tmux.listSessions()).find((s) => s.name === session)!.panes[0]!.id;
    await tmux.tmux.paste({ pane }, 'run a command, svc-approve', { bracketed: true });
    await waitFor(async () => (await screen()).includes('svc-approve'), { what: 'the paste shown' });
    await tmux.tmux.sendKeys({ pane }, ['Enter']);
    await waitFor(asking, { timeoutMs: STEP_MS, intervalMs: 100, what: 'the approval dialog in the shell session' });
    const id = await sendPush(relay, session, 'yes', { targetComputer: hookId });
    expect(await finalPush(relay, id, STEP_MS)).toMatchObject({ state: 'refused', code: 'approval_pending' });
    expect(await asking()).toBe(true);
    expect(existsSync(probe())).toBe(false);
    expect(listener.output()).toMatch(new RegExp(`push ${id}: refused approval_pending for ${session}`));
    await tmux.tmux.sendKeys(session, ['Escape']);
  });
});
