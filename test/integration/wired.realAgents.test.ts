/**
 * Issue 11's whole path with the real agents, as a person meets it: in a fresh HOME `svc login`, `svc install`,
 * `svc setup`, the listener running, and Claude Code 2.1.197 / Codex 0.169.0 (test/agents) in a tmux session against
 * the fake model. A message from the phone is typed by the listener, the agent's own hook (wired by setup) sees it:
 * the model's request carries the REMOTE context and `svc debug state --json` shows the session in REMOTE; the turn's
 * end reaches the phone as a sealed "finished its turn"; the same text typed at the keyboard is not flagged and
 * ends REMOTE. For Claude Code, the model's svc_ask call reaches the phone through the MCP server install wired.
 */
import { delimiter } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REMOTE_CONTEXT } from '../../core/hooks/remoteOrigin.js';
import { ASK_INPUT, type FakeModel, type LoggedRequest, startFakeModel, userTexts } from '../fakes/fakeModel.js';
import { runSvc, type SpawnedSvc, spawnSvc, svcEnv } from '../helpers/cli.js';
import { computerDevice, registerTestDevice, type TestDevice } from '../helpers/devices.js';
import {
  AGENTS_BIN,
  agentInstalled,
  CLAUDE_CODE,
  CODEX,
  type PreparedAgent,
  prepareAgent,
  type RealAgent,
  waitSettled,
} from '../helpers/realAgents.js';
import { sendPush, startTestRelay, type TestRelay, TestSocket, waitFor } from '../helpers/relay.js';
import { startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

const START_MS = 120_000;
const STEP_MS = 60_000;

let relay: TestRelay;
let model: FakeModel;

beforeAll(async () => {
  relay = await startTestRelay();
  model = await startFakeModel();
});
afterAll(async () => {
  await model?.close();
  await relay?.close();
});

/** How many times the REMOTE context is in a request (the conversation keeps earlier turns' context). */
const contexts = (body: unknown) => JSON.stringify(body ?? '').split(REMOTE_CONTEXT.slice(0, 60)).length - 1;

/** The fake model serves both agents, and an agent may still send a request after its session ended: each test
 * looks at its own agent's API only (Claude Code: Anthropic Messages; Codex: OpenAI Responses). */
const API: Record<string, LoggedRequest['api']> = { claude: 'anthropic', codex: 'responses' };

/** The first of this agent's requests whose user turns hold `text`, and the most REMOTE contexts any such holds. */
function requestWith(program: string, text: string): { index: number; contexts: number } | null {
  const matching = model.requests.flatMap((r, i) =>
    r.api === API[program] && userTexts(r.body).some((t) => t.includes(text)) ? [i] : [],
  );
  if (matching.length === 0) return null;
  return { index: matching[0]!, contexts: Math.max(...matching.map((i) => contexts(model.requests[i]!.body))) };
}

/** The most REMOTE contexts any of this agent's requests before `index` held: what its conversation carried. */
const contextsBefore = (program: string, index: number) =>
  Math.max(
    0,
    ...model.requests
      .slice(0, index)
      .filter((r) => r.api === API[program])
      .map((r) => contexts(r.body)),
  );

const offersAsk = () =>
  model.requests.some((r) =>
    JSON.stringify((r.body as { tools?: unknown })?.tools ?? []).match(/"(mcp__svc__)?svc_ask"/),
  );

for (const agent of [CLAUDE_CODE, CODEX] as RealAgent[]) {
  describe.skipIf(!agentInstalled(agent)).sequential(`${agent.program} wired by svc install and svc setup`, () => {
    const session = `svc-wired-${agent.program}`;
    let place: PreparedAgent;
    let tmux: TmuxServer;
    let env: NodeJS.ProcessEnv;
    let listener: SpawnedSvc;
    let key: string;
    let app: TestDevice;
    let computer: { id: string; publicKey: string };
    let sock: TestSocket;
    const screen = () => tmux.capture(session);

    async function until(fn: () => boolean | Promise<boolean>, what: string, timeoutMs = STEP_MS): Promise<void> {
      try {
        await waitFor(fn, { timeoutMs, intervalMs: 100, what: `${agent.program}: ${what}` });
      } catch (e) {
        throw new Error(
          `${(e as Error).message}\n--- screen ---\n${await screen()}\n--- listener ---\n${listener.output().slice(-3000)}`,
        );
      }
    }

    async function remoteRegion(): Promise<string | undefined> {
      const res = await runSvc(['debug', 'state', '--json'], env);
      const actors = JSON.parse(res.stdout).actors as { id: string; value: Record<string, string> | null }[];
      return actors.find((a) => a.id === `session.${session}`)?.value?.remote;
    }

    beforeAll(async () => {
      key = (await relay.createAccount()).apiKey;
      place = prepareAgent(agent, model.url);
      tmux = await startTmuxServer();
      env = svcEnv(place.home, {
        SVC_TMUX_SOCKET: tmux.socketPath,
        PATH: `${AGENTS_BIN}${delimiter}${process.env.PATH ?? ''}`,
      });
      const login = await runSvc(['login', '--url', relay.url, '--key', key, '--name', 'laptop', '--json'], env);
      expect(login.code, login.stderr).toBe(0);
      const hookId = JSON.parse(login.stdout).hookId as string;
      for (const step of ['install', 'setup']) {
        const res = await runSvc([step], env);
        expect(res.code, `svc ${step}: ${res.stdout}${res.stderr}`).toBe(0);
      }
      listener = spawnSvc(['listener'], env);
      await listener.waitForLine(/connected to ws:/);
      await listener.waitForLine(/control socket/);
      computer = await computerDevice({ url: relay.url, apiKey: key }, hookId);
      app = await registerTestDevice({ url: relay.url, apiKey: key }, 'app', 'phone');
      sock = await TestSocket.open(relay.wsUrl, key);
      sock.send({ type: 'subscribe', role: 'app', deviceId: app.deviceId });
      await sock.next('subscribed');
      await tmux.newSession(session, place.argv, { cwd: place.proj, env: { ...place.env, PATH: env.PATH ?? '' } });
      await waitSettled(agent, screen, { timeoutMs: START_MS, what: 'ready at start' });
    }, START_MS + 60_000);

    afterAll(async () => {
      await sock?.close();
      await listener?.stop();
      await tmux?.cleanup();
      await place?.cleanup();
    });

    it('a message from the phone is known as remote: REMOTE context, REMOTE state, a sealed finished notice', {
      timeout: 3 * STEP_MS,
    }, async () => {
      await until(async () => (await remoteRegion()) === 'local', 'the session actor');
      const text = `phone asks ${agent.program} to look around`;
      await sendPush({ url: relay.url, apiKey: key }, session, text);
      // the agent may send the prompt in a side request first (a title, a suggestion): wait for the turn's own
      const carried = () => {
        const got = requestWith(agent.program, text);
        return got !== null && got.contexts > contextsBefore(agent.program, got.index);
      };
      await until(carried, 'the model got the phone’s text with the REMOTE context');
      await until(async () => (await remoteRegion()) === 'remote', 'REMOTE in svc debug state');
      const frame = await sock.next('notify.new', (f) => f.kind === 'turn' && f.session === session, STEP_MS);
      expect(await app.open('notify', frame.envelope, computer.publicKey)).toMatchObject({
        kind: 'turn',
        session,
        message: 'finished its turn',
      });
      await waitSettled(agent, screen, { timeoutMs: STEP_MS, what: 'ready after the turn' });
    });

    it('the same kind of text typed at the keyboard is not flagged, and REMOTE ends', {
      timeout: 3 * STEP_MS,
    }, async () => {
      const text = `keyboard asks ${agent.program} to look around`;
      await tmux.run(['send-keys', '-t', `=${session}:`, '-l', text]);
      await until(async () => (await screen()).includes(text), 'the text in the input');
      await tmux.run(['send-keys', '-t', `=${session}:`, 'Enter']);
      await until(() => requestWith(agent.program, text) !== null, 'the model got the keyboard’s text');
      await until(async () => (await remoteRegion()) === 'local', 'local again in svc debug state');
      await waitSettled(agent, screen, { timeoutMs: STEP_MS, what: 'ready after the turn' });
      // the turn is over: none of its requests brought a new REMOTE context (the phone's earlier turn keeps its own)
      const got = requestWith(agent.program, text)!;
      expect(got.contexts).toBe(contextsBefore(agent.program, got.index));
    });

    // shown with Claude Code; Codex's wired MCP server is checked by install.test.ts (`codex mcp list`)
    if (agent === CLAUDE_CODE)
      it('the model’s svc_ask reaches the phone through the MCP server install wired', {
        timeout: 3 * STEP_MS,
      }, async () => {
        // Claude Code offers an MCP server's tools once the server is connected: by now it has been for turns
        expect(offersAsk()).toBe(true);
        await sendPush({ url: relay.url, apiKey: key }, session, 'please svc-ask me');
        const frame = await sock
          .next('ask.new', (f) => f.session === session, STEP_MS)
          .catch(async (e) => {
            throw new Error(
              `${(e as Error).message}\n--- screen ---\n${await screen()}\n--- listener ---\n${listener.output().slice(-2000)}\n--- tools called ---\n${model.requests.map((r) => r.tool ?? '-').join(' ')}\n--- pane ---\n${await tmux.run(['capture-pane', '-p', '-t', `=${session}:`])}\n--- last request ---\n${JSON.stringify(model.requests.at(-1)?.body).slice(-1500)}`,
            );
          });
        const body = (await app.open('ask.question', frame.envelope, computer.publicKey)) as { question: string };
        expect(body.question).toBe(ASK_INPUT.question);
      });
  });
}
