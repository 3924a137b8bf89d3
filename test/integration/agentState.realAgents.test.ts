/**
 * The phone knows what the REAL Claude Code (test/agents/package.json) does while it does it: against the fake model,
 * through `svc listener` and the real relay on a private tmux server, `GET /computers` says `working` while a 4 s
 * reply is still streaming, `awaiting_approval` while the dialog is still up, and `idle` after. With the 5 s poll
 * alone (the listener's persistent tmux client off) a 4 s turn is over before it would be reported; the screen
 * watch (machines/inventory.ts) is what makes it. Timing figures: `bench/state.ts`, docs/benchmarks.md.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRequests, type FakeModel, startFakeModel, userTurnsHold } from '../fakes/fakeModel.js';
import { runSvc, type SpawnedSvc, spawnSvc, type tempHome } from '../helpers/cli.js';
import { loggedInComputer } from '../helpers/computer.js';
import { agentInstalled, CLAUDE_CODE, type PreparedAgent, prepareAgent, waitSettled } from '../helpers/realAgents.js';
import { api, finalPush, sendPush, startTestRelay, type TestRelay } from '../helpers/relay.js';
import { type TmuxServer, waitFor } from '../helpers/tmux.js';

const SESSION = 'svc-state-cc';

let relay: TestRelay;
let model: FakeModel;
let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let hookId: string;
let listener: SpawnedSvc;
let place: PreparedAgent;
let env: NodeJS.ProcessEnv;

const screen = () => tmux.capture(SESSION);
const state = async () => {
  const { json } = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
  const me = json.computers?.find((c: { hookId: string }) => c.hookId === hookId);
  return me?.sessions.find((s: { name: string }) => s.name === SESSION)?.state as string | undefined;
};
/** As a person at the keyboard: a paste, then Enter (Claude Code takes an Enter right after a paste as part of it). */
async function submit(text: string) {
  const pane = (await tmux.listSessions()).find((s) => s.name === SESSION)!.panes[0]!.id;
  await tmux.tmux.paste({ pane }, text, { bracketed: true });
  await waitFor(async () => (await screen()).includes(text.slice(-12)), { what: 'the prompt in the input' });
  await new Promise((r) => setTimeout(r, 300));
  await tmux.tmux.sendKeys({ pane }, ['Enter']);
}

describe.skipIf(!agentInstalled(CLAUDE_CODE))(
  'the state of the real Claude Code reaches the relay while it lasts',
  () => {
    beforeAll(async () => {
      relay = await startTestRelay();
      model = await startFakeModel({ slowMs: 4_000, slowChunkMs: 200 });
      ({ tmux, home, env, hookId } = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'laptop' }));
      listener = spawnSvc(['listener'], env);
      await listener.waitForLine(/connected to ws:/);
      place = prepareAgent(CLAUDE_CODE, model.url);
      await tmux.newSession(SESSION, place.argv, {
        cwd: place.proj,
        env: place.env,
        options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
      });
      await waitSettled(CLAUDE_CODE, screen, { timeoutMs: 120_000, what: 'Claude Code ready' });
      await waitFor(async () => (await state()) === 'idle', { timeoutMs: 30_000, what: 'idle on the relay' });
    }, 180_000);

    afterAll(async () => {
      await listener?.stop();
      await tmux?.cleanup();
      await place?.cleanup();
      home?.cleanup();
      await model?.close();
      await relay?.close();
    });

    it('working while a 4 s reply streams, then idle', { timeout: 90_000 }, async () => {
      await submit('a slow answer please, svc-slow');
      await waitFor(async () => CLAUDE_CODE.working.test(await screen()), { what: 'Claude Code working' });
      await waitFor(async () => (await state()) === 'working', { timeoutMs: 30_000, intervalMs: 50, what: 'working' });
      // the relay said so while the turn was still on: the screen still shows it
      expect(CLAUDE_CODE.working.test(await screen()), 'the turn was already over').toBe(true);
      await waitFor(async () => (await state()) === 'idle', { timeoutMs: 30_000, what: 'idle after the turn' });
      expect(CLAUDE_CODE.working.test(await screen())).toBe(false);
    });

    it('a push sent while it works is typed once its turn is over, and reaches the model as a turn of its own', {
      timeout: 120_000,
    }, async () => {
      // Claude Code may lose a message typed at the moment its turn ends (docs/agents.md, A1): svc holds it until the
      // screen shows the turn over. A long turn, so the hold is seen while it lasts on a loaded machine.
      model.setSlowMs(20_000);
      try {
        await submit('a long answer please, svc-slow');
        await waitFor(async () => CLAUDE_CODE.working.test(await screen()), { what: 'Claude Code working' });
        const id = await sendPush(relay, SESSION, 'while it works, svc-queued');
        // the listener has it, waiting for the turn: `svc debug state` says so
        await waitFor(
          async () => {
            const res = await runSvc(['debug', 'state', '--json'], env);
            const { actors } = JSON.parse(res.stdout) as { actors: { id: string; summary: { afterTurn?: number } }[] };
            return actors.find((a) => a.id === `session.${SESSION}`)?.summary.afterTurn === 1;
          },
          { timeoutMs: 15_000, what: 'the push held for the turn' },
        );
        // nothing typed yet: the turn is still on, and Claude Code shows no queued message
        const during = await screen();
        expect(CLAUDE_CODE.working.test(during), 'the turn was already over').toBe(true);
        expect(during).not.toContain('svc-queued');
        expect(await finalPush(relay, id, 60_000)).toMatchObject({ state: 'injected' });
        // its own turn: the last message of a request, right after the whole long reply
        await waitFor(
          () =>
            model.requests.some((r) => {
              const messages = (r.body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
              const [reply, last] = messages.slice(-2);
              return (
                last?.role === 'user' &&
                userTurnsHold({ messages: [last] }, 'svc-queued') &&
                reply?.role === 'assistant' &&
                JSON.stringify(reply.content).includes('word100')
              );
            }),
          { timeoutMs: 30_000, what: 'the model given the push after the long reply' },
        ).catch((e) => {
          throw new Error(`${(e as Error).message}\n${describeRequests(model.requests, 'svc-queued')}`);
        });
      } finally {
        model.setSlowMs(4_000);
      }
      await waitFor(async () => (await state()) === 'idle', { timeoutMs: 30_000, what: 'idle after the turn' });
    });

    it('awaiting_approval while the dialog is up, idle once it is declined', { timeout: 90_000 }, async () => {
      await submit('run a command, svc-approve');
      await waitFor(async () => CLAUDE_CODE.approval!.test(await screen()), { what: 'the approval dialog' });
      await waitFor(async () => (await state()) === 'awaiting_approval', {
        timeoutMs: 30_000,
        intervalMs: 50,
        what: 'awaiting_approval',
      });
      expect(CLAUDE_CODE.approval!.test(await screen())).toBe(true);
      await tmux.tmux.sendKeys(SESSION, CLAUDE_CODE.decline!);
      await waitFor(async () => (await state()) === 'idle', { timeoutMs: 30_000, what: 'idle after Esc' });
    });
  },
);
