/**
 * Injection end to end: real tmux on a private socket, the fake agent (test/fakes/fake-agent.mjs) in the pane.
 * The fake's event log (FAKE_AGENT_LOG) gives exact assertions: what was submitted, and when an Enter was
 * taken as a newline or swallowed. Waits are bounded polls; no assertion depends on timing.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActor, toPromise } from 'xstate';
import { injectText, realSleep } from '../../actors/agents/inject.js';
import { typeKeysLogic } from '../../actors/seal/e2ee.js';
import { agentById, agentSubmit, genericProgram, type SubmitStrategy } from '../../core/agents/registry.js';
import { fakeAgentCommand, startTmuxServer, type TmuxServer, waitFor } from '../helpers/tmux.js';

interface AgentEvent {
  event: string;
  t: number;
  text?: string;
  sinceTextMs?: number;
}

let server: TmuxServer;
let counter = 0;

beforeAll(async () => {
  server = await startTmuxServer();
});
afterAll(async () => {
  await server.cleanup();
});

/** Start the fake agent as `processName` in a new session; resolves once its input line is drawn. */
async function startAgent(processName: string, env: Record<string, string | number> = {}, name?: string) {
  counter += 1;
  const session = name ?? `svc-inject-${counter}`;
  const log = join(server.dir, `${session}.log`);
  await server.newSession(session, fakeAgentCommand(processName, { FAKE_AGENT_LOG: log, ...env }));
  const prompt = String(env.FAKE_AGENT_PROMPT ?? '›');
  const events = async (): Promise<AgentEvent[]> => {
    const text = await readFile(log, 'utf8').catch(() => '');
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as AgentEvent);
  };
  await waitFor(async () => (await events()).some((e) => e.event === 'ready'), { what: `${session} ready` });
  await waitFor(async () => (await server.capture(session)).split('\n').at(-1)?.startsWith(prompt), {
    what: `${session} input line`,
  });
  const submits = async () => (await events()).filter((e) => e.event === 'submit').map((e) => e.text);
  return { session, log, events, submits, inputLine: async () => (await server.capture(session)).split('\n').at(-1) };
}

const inject = (target: string, text: string, strategy: SubmitStrategy) =>
  injectText({ tmux: server.tmux, target, text, strategy, sleep: realSleep });

const codex = agentById('A2')!.submit;
// The fake agent draws no rule above its input line, as Claude Code and Gemini CLI do: their strategies without that
// requirement (the rest is what the listener uses).
const { inputBelowRule: _claudeRule, ...claude } = agentById('A1')!.submit;
const { inputBelowRule: _geminiRule, ...gemini } = agentById('A3')!.submit;
const literal = genericProgram.submit;

describe('a message reaches the agent and is submitted', () => {
  it('Codex strategy: one paste, one Enter, verified on screen', async () => {
    const a = await startAgent('codex');
    const r = await inject(a.session, 'please run the tests', codex);
    expect(r).toMatchObject({ submitted: true, enters: 1 });
    expect(await a.submits()).toEqual(['please run the tests']);
    expect(await server.capture(a.session)).toContain('you said: please run the tests');
    expect(await a.inputLine()).toBe('›');
  });

  it('Claude Code strategy against a ❯ input line', async () => {
    const a = await startAgent('claude', { FAKE_AGENT_PROMPT: '❯' });
    const r = await inject(a.session, 'explain this repo', claude);
    expect(r).toMatchObject({ submitted: true, enters: 1 });
    expect(await a.submits()).toEqual(['explain this repo']);
  });

  it('spec 4.7 literal: typed and submitted in one tmux call, unverified', async () => {
    const a = await startAgent('someagent');
    const r = await inject(a.session, 'hello literal', literal);
    expect(r).toMatchObject({ submitted: 'unverified', enters: 1, plan: { path: 'literal' } });
    await waitFor(async () => (await a.submits()).length === 1);
    expect(await a.submits()).toEqual(['hello literal']);
  });

  it('a text ending in ; arrives with its ; (tmux would take it as a separator)', async () => {
    const a = await startAgent('someagent');
    await inject(a.session, 'run it;', literal);
    await waitFor(async () => (await a.submits()).length === 1);
    expect(await a.submits()).toEqual(['run it;']);
  });
});

describe('multi-line text arrives as one message', () => {
  const text = 'first line\nsecond line\n\nfourth after a blank';

  it('typed with send-keys -l it would submit early (the failure is real)', async () => {
    const a = await startAgent('someagent');
    await server.tmux.sendLiteral(a.session, 'early\nlate');
    await waitFor(async () => (await a.submits()).length > 0);
    expect(await a.submits()).toEqual(['early']);
    // the rest stays in the input line, unsent (the agent may draw it a moment after the submit)
    await waitFor(async () => (await a.inputLine()) === '› late', { what: "'late' left in the input line" });
    expect(await a.submits()).toEqual(['early']);
  });

  it.each<[string, SubmitStrategy]>([
    ['generic literal (switches to paste)', literal],
    ['codex', codex],
  ])('%s', async (_name, strategy) => {
    const a = await startAgent('codex');
    const r = await inject(a.session, text, strategy);
    expect(r.plan.path).toBe('paste');
    await waitFor(async () => (await a.submits()).length > 0);
    expect(await a.submits()).toEqual([text]);
    expect(await server.capture(a.session)).toContain('you said: first line⏎second line⏎⏎fourth after a blank');
  });
});

describe('Codex paste burst (FAKE_AGENT_PASTE_BURST_MS=150)', () => {
  const burst = { FAKE_AGENT_PASTE_BURST_MS: 150 };

  it('naive send-keys -l + Enter leaves the text unsent: the Enter became a newline', async () => {
    const a = await startAgent('codex', burst);
    const r = await inject(a.session, 'hello codex', literal);
    expect(r.plan.path).toBe('literal');
    await waitFor(async () => (await a.events()).some((e) => e.event === 'newline'), { what: 'the Enter to land' });
    expect(await a.submits()).toEqual([]);
    expect(await a.inputLine()).toBe('› hello codex⏎');
  });

  it('a bracketed paste is not a burst: paste + immediate Enter submits, as in the real Codex', async () => {
    const a = await startAgent('codex', burst);
    await server.tmux.paste(a.session, 'pasted then enter', { bracketed: true });
    await server.tmux.sendKeys(a.session, ['Enter']);
    await waitFor(async () => (await a.submits()).length > 0);
    expect(await a.submits()).toEqual(['pasted then enter']);
    expect((await a.events()).some((e) => e.event === 'newline')).toBe(false);
  });

  it('the Codex strategy submits it', async () => {
    const a = await startAgent('codex', burst);
    const r = await inject(a.session, 'hello codex', codex);
    expect(r).toMatchObject({ submitted: true, enters: 1 });
    expect(await a.submits()).toEqual(['hello codex']);
    expect((await a.events()).some((e) => e.event === 'newline')).toBe(false);
  });

  it('typed text with an Enter too soon is fooled; a check with a retry saves it', async () => {
    const a = await startAgent('codex', burst);
    // Codex's own strategy pastes and has no retry (an Enter must never reach a dialog drawn a moment later). Text
    // typed as keys is a burst to Codex: a retry, where a strategy has one, sees it still there and submits it.
    const hurried: SubmitStrategy = { ...literal, enterDelayMs: 0, retryEnter: true, inputLine: codex.inputLine };
    const r = await inject(a.session, 'hurried', hurried);
    expect(r).toMatchObject({ submitted: true, enters: 2 });
    // the first Enter became a newline; the retry (after the window) submitted
    expect((await a.events()).map((e) => e.event)).toEqual(expect.arrayContaining(['newline', 'submit']));
    expect((await a.submits())[0]?.startsWith('hurried')).toBe(true);
  });
});

describe('an approval dialog that comes up between the paste and its Enter (FAKE_AGENT_DIALOG_ON_PASTE=1)', () => {
  it("Codex's strategy with its screen rules sends no Enter into it: the dialog is still open for the person", async () => {
    const a = await startAgent('codex', { FAKE_AGENT_DIALOG_ON_PASTE: 1 });
    const r = await inject(a.session, 'and then tidy up', agentSubmit(agentById('A2')!));
    expect(r).toMatchObject({ submitted: false, enters: 0, heldFor: 'approval' });
    expect(await server.capture(a.session)).toContain('Would you like to run the following command?');
    // the dialog is still open: Escape cancels it (an Enter sent before would have confirmed and closed it)
    await server.tmux.sendKeys(a.session, ['Escape']);
    await waitFor(async () => (await a.events()).some((e) => ['cancel', 'escape'].includes(e.event)));
    expect((await a.events()).map((e) => e.event)).toEqual(['ready', 'paste', 'cancel']);
  });
});

describe('an Enter swallowed after a paste (FAKE_AGENT_SWALLOW_ENTER=1)', () => {
  const swallow = { FAKE_AGENT_SWALLOW_ENTER: 1, FAKE_AGENT_PROMPT: '>' };

  it('paste + Enter without a check leaves it unsent (the failure is real)', async () => {
    const a = await startAgent('gemini', swallow);
    const r = await inject(a.session, 'say hi', { kind: 'paste', enterDelayMs: 100 });
    expect(r).toMatchObject({ submitted: 'unverified', enters: 1 });
    await waitFor(async () => (await a.events()).some((e) => e.event === 'swallow'));
    expect(await a.submits()).toEqual([]);
  });

  it('the Gemini strategy sees the text still there and its one retry Enter submits it', async () => {
    const a = await startAgent('gemini', swallow);
    const r = await inject(a.session, 'say hi', gemini);
    expect(r).toMatchObject({ submitted: true, enters: 2 });
    expect((await a.events()).filter((e) => ['swallow', 'submit'].includes(e.event)).map((e) => e.event)).toEqual([
      'swallow',
      'submit',
    ]);
    expect(await a.submits()).toEqual(['say hi']);
  });
});

describe('content arrives intact', () => {
  it('unicode typed literally: emoji, CJK, accents', async () => {
    const a = await startAgent('someagent');
    const text = 'emoji 👋🏽 CJK 你好世界 café ∑ ש';
    const r = await inject(a.session, text, literal);
    expect(r.plan.path).toBe('literal');
    await waitFor(async () => (await a.submits()).length === 1);
    expect(await a.submits()).toEqual([text]);
    expect(await server.capture(a.session)).toContain(`you said: ${text}`);
  });

  it('control bytes are pasted as text, never acted on as keys', async () => {
    const a = await startAgent('someagent');
    // C-c would clear the input and C-u too, ESC would start a sequence: inside the paste they are text
    const text = 'tab\there bell\x07 ctrl-c\x03 ctrl-u\x15 esc\x1b[31mred\x1b[0m 👋 你好';
    const r = await inject(a.session, text, literal);
    expect(r.plan.path).toBe('paste');
    await waitFor(async () => (await a.submits()).length === 1);
    expect(await a.submits()).toEqual([text]);
    expect(await server.capture(a.session)).toContain(
      'you said: tab␉here bell␇ ctrl-c␃ ctrl-u␕ esc␛[31mred␛[0m 👋 你好',
    );
  });

  it('a message cannot end the bracketed paste early and smuggle keys', async () => {
    const a = await startAgent('someagent');
    const r = await inject(a.session, 'innocent\x1b[201~\rsecond part', codex);
    expect(r.submitted).toBe(true);
    expect(await a.submits()).toEqual(['innocent\nsecond part']);
  });

  it('a long text (past tmux command-line limit) arrives whole, as one message', async () => {
    const a = await startAgent('someagent');
    const text = `${'0123456789'.repeat(3000)} end`;
    const r = await inject(a.session, text, literal);
    expect(r.plan.path).toBe('paste');
    await waitFor(async () => (await a.submits()).length === 1, { timeoutMs: 10_000 });
    expect((await a.submits())[0]).toBe(text);
  });
});

describe('targets are exact', () => {
  it('proj and proj-2 each get only their own message', async () => {
    const p1 = await startAgent('codex', {}, 'proj');
    const p2 = await startAgent('codex', {}, 'proj-2');
    await inject('proj', 'for proj', codex);
    await inject('proj-2', 'for proj-2', codex);
    expect(await p1.submits()).toEqual(['for proj']);
    expect(await p2.submits()).toEqual(['for proj-2']);
    await expect(inject('proj-3', 'nobody', codex)).rejects.toMatchObject({ code: 'no_session' });
    await expect(inject('proj-', 'nobody', literal)).rejects.toMatchObject({ code: 'no_session' });
  });

  it('a pane id works as a target', async () => {
    const a = await startAgent('codex');
    const [session] = (await server.tmux.listSessions()).filter((s) => s.name === a.session);
    const r = await injectText({
      tmux: server.tmux,
      target: { pane: session!.panes[0]!.id },
      text: 'by pane id',
      strategy: codex,
      sleep: realSleep,
    });
    expect(r.submitted).toBe(true);
    expect(await a.submits()).toEqual(['by pane id']);
  });
});

describe('a pane in a tmux mode (the person scrolled back and walked away)', () => {
  /** `cat` below 200 lines of history, so copy mode has somewhere to scroll to. */
  async function catSession() {
    counter += 1;
    const session = `svc-mode-${counter}`;
    const { paneId } = await server.newSession(session, 'seq 1 200; exec cat');
    await waitFor(async () => (await server.capture({ pane: paneId })).includes('200'), { what: 'the history' });
    const mode = async () =>
      (await server.run(['display-message', '-p', '-t', paneId, '#{pane_in_mode} #{pane_mode}'])).trim();
    /** The pane as the inventory reads it. */
    const reading = async () => (await server.listSessions()).find((s) => s.name === session)?.panes[0];
    /** How many screen lines are exactly `line`: cat echoes a typed line and then prints it. */
    const count = async (line: string) =>
      (await server.capture({ pane: paneId })).split('\n').filter((l) => l === line).length;
    return { session, paneId, mode, reading, count };
  }

  const modes: [string, (pane: string) => string[]][] = [
    ['copy-mode', (pane) => ['copy-mode', '-u', '-t', pane]],
    // run-shell with no client shows its output in the pane's view mode
    ['view-mode', (pane) => ['run-shell', '-t', pane, 'echo some output']],
    ['clock-mode', (pane) => ['clock-mode', '-t', pane]],
    ['tree-mode', (pane) => ['choose-tree', '-t', pane]],
  ];

  it('scrolled back in copy mode: the reading says so, the text and its Enter reach the program, the mode is gone', async () => {
    const c = await catSession();
    await server.run(['copy-mode', '-u', '-t', c.paneId]);
    const scrolled = await server.run(['display-message', '-p', '-t', c.paneId, '#{scroll_position}']);
    expect(Number(scrolled)).toBeGreaterThan(0);
    const pane = await c.reading();
    expect(pane?.inMode).toBe(true);

    const r = await injectText({
      tmux: server.tmux,
      target: { pane: c.paneId },
      text: 'hello q world',
      strategy: literal,
      pane: { inMode: pane?.inMode },
      sleep: realSleep,
    });
    expect(r.leftMode).toBe(true);
    await waitFor(async () => (await c.count('hello q world')) === 2, { what: 'cat to echo the line' });
    expect(await c.mode()).toBe('0');
  });

  it.each(modes)('%s is left the same way', async (name, enter) => {
    const c = await catSession();
    await server.run(enter(c.paneId));
    expect(await c.mode()).toBe(`1 ${name}`);
    await injectText({
      tmux: server.tmux,
      target: { pane: c.paneId },
      text: `typed past ${name}`,
      strategy: literal,
      pane: { inMode: (await c.reading())?.inMode },
      sleep: realSleep,
    });
    await waitFor(async () => (await c.count(`typed past ${name}`)) === 2, { what: 'cat to echo the line' });
    expect(await c.mode()).toBe('0');
  });

  it('a multi-line message to an agent in copy mode is still one bracketed paste, submitted once', async () => {
    // In a mode, paste-buffer -p drops the markers (it asks the mode's screen), so each line break would submit.
    const a = await startAgent('codex');
    await server.run(['copy-mode', '-t', `=${a.session}:`]);
    const pane = (await server.listSessions()).find((s) => s.name === a.session)?.panes[0];
    expect(pane?.inMode).toBe(true);
    const r = await injectText({
      tmux: server.tmux,
      target: a.session,
      text: 'first line\nsecond line',
      strategy: codex,
      pane: { inMode: pane?.inMode },
      sleep: realSleep,
    });
    expect(r).toMatchObject({ submitted: true, leftMode: true });
    expect(await a.submits()).toEqual(['first line\nsecond line']);
  });

  it('key input from the live pane leaves the mode too: text then keys reach the program', async () => {
    const c = await catSession();
    await server.run(['copy-mode', '-u', '-t', c.paneId]);
    const input = { session: c.session, paneId: c.paneId, text: 'keys in q', keys: ['Enter'], inMode: true };
    await toPromise(createActor(typeKeysLogic(server.tmux), { input }).start());
    await waitFor(async () => (await c.count('keys in q')) === 2, { what: 'cat to echo the line' });
    expect(await c.mode()).toBe('0');
  });
});
