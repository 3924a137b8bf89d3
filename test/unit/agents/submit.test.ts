import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { injectText } from '../../../actors/agents/inject.js';
import { TmuxError } from '../../../actors/tmux/tmux.js';
import { agentById, agentSubmit, type SubmitStrategy } from '../../../core/agents/registry.js';
import { readScreen } from '../../../core/agents/screens.js';
import {
  DEFAULT_RETRY_DELAY_MS,
  DEFAULT_VERIFY_DELAY_MS,
  enterWouldAnswer,
  inputCleared,
  LANDED_WITHIN_MS,
  LITERAL_MAX_BYTES,
  LOOK_MS,
  literalUnsafe,
  normalizeSubmitText,
  PASTE_MIN_ENTER_DELAY_MS,
  planSubmit,
  readInput,
  type SubmitStep,
} from '../../../core/agents/submit.js';
import { FakeTmux } from '../../fakes/fakeTmux.js';

const PROMPT = /^› ?(.*)$/;
const literal: SubmitStrategy = { kind: 'literal', enterDelayMs: 0 };
const literalDelayed: SubmitStrategy = { kind: 'literal', enterDelayMs: 50 };
const paste: SubmitStrategy = { kind: 'paste', enterDelayMs: 300 };
const pasteChecked: SubmitStrategy = { kind: 'paste', enterDelayMs: 300, inputLine: PROMPT, retryEnter: true };

const checks = (verify = DEFAULT_VERIFY_DELAY_MS, retry = DEFAULT_RETRY_DELAY_MS): SubmitStep[] => [
  { op: 'check', final: false, withinMs: retry },
  { op: 'check', final: false, withinMs: 0 },
  { op: 'enter' },
  { op: 'check', final: true, withinMs: verify },
];

describe('normalizeSubmitText', () => {
  it.each([
    ['hello', 'hello'],
    ['hello\n', 'hello'],
    ['hello\r\n\r\n', 'hello'],
    ['a\r\nb\rc', 'a\nb\nc'],
    ['  spaced  ', '  spaced  '],
    ['x\x1b[201~rm -rf ~\r', 'xrm -rf ~'], // a message cannot end the bracketed paste
    ['\x1b[200~in\x1b[201~', 'in'],
    ['\n', ''],
  ])('%j → %j', (text, out) => {
    expect(normalizeSubmitText(text)).toBe(out);
  });
});

describe('literalUnsafe', () => {
  it.each([
    ['plain words', null],
    ['emoji 👋 and 你好', null],
    ['semicolon at the end;', null],
    ['two\nlines', 'newline'],
    ['tab\there', 'control'],
    ['esc \x1b here', 'control'],
    ['ctrl-c \x03', 'control'],
    ['del \x7f', 'control'],
    ['c1 \u009b', 'control'],
    ['a'.repeat(LITERAL_MAX_BYTES), null],
    ['a'.repeat(LITERAL_MAX_BYTES + 1), 'too_long'],
    ['你'.repeat(Math.floor(LITERAL_MAX_BYTES / 3) + 1), 'too_long'], // bytes, not characters
  ])('%j → %s', (text, why) => {
    expect(literalUnsafe(text)).toBe(why);
  });
});

describe('planSubmit', () => {
  it.each<[string, string, SubmitStrategy, string, SubmitStep[]]>([
    [
      'literal: one call, text and Enter chained (spec 4.7)',
      'run the tests',
      literal,
      'literal',
      [{ op: 'type', text: 'run the tests', enter: true }],
    ],
    [
      'literal with a delay: type, wait, Enter',
      'run',
      literalDelayed,
      'literal',
      [{ op: 'type', text: 'run', enter: false }, { op: 'wait', ms: 50 }, { op: 'enter' }],
    ],
    [
      'literal + multi-line text: switches to the paste path',
      'line one\nline two',
      literal,
      'paste',
      [{ op: 'paste', text: 'line one\nline two' }, { op: 'wait', ms: PASTE_MIN_ENTER_DELAY_MS }, { op: 'enter' }],
    ],
    [
      'literal + control characters: pasted, never typed as keys',
      'a\tb\x1bc',
      literal,
      'paste',
      [{ op: 'paste', text: 'a\tb\x1bc' }, { op: 'wait', ms: PASTE_MIN_ENTER_DELAY_MS }, { op: 'enter' }],
    ],
    [
      'literal + trailing newline: trimmed, stays literal',
      'ok\n',
      literal,
      'literal',
      [{ op: 'type', text: 'ok', enter: true }],
    ],
    [
      'paste without a rule: paste, wait, Enter',
      'hi',
      paste,
      'paste',
      [{ op: 'paste', text: 'hi' }, { op: 'wait', ms: 300 }, { op: 'enter' }],
    ],
    [
      'paste with a rule: snapshot, paste, until it shows, wait, snapshot, Enter, looks, one retry, last looks',
      'hi',
      pasteChecked,
      'paste',
      [
        { op: 'snapshot' },
        { op: 'paste', text: 'hi' },
        { op: 'landed', withinMs: LANDED_WITHIN_MS },
        { op: 'wait', ms: 300 },
        { op: 'snapshot' },
        { op: 'enter' },
        ...checks(),
      ],
    ],
    [
      'literal with a rule: checked too',
      'hi',
      { kind: 'literal', enterDelayMs: 0, inputLine: PROMPT, retryEnter: true, verifyDelayMs: 10, retryDelayMs: 20 },
      'literal',
      [{ op: 'type', text: 'hi', enter: true }, ...checks(10, 20)],
    ],
    ['empty text: nothing to do', '', literal, 'literal', []],
    ['only line breaks: nothing to do', '\r\n\n', pasteChecked, 'paste', []],
  ])('%s', (_name, text, strategy, path, steps) => {
    const plan = planSubmit(text, strategy);
    expect(plan.path).toBe(path);
    expect(plan.steps).toEqual(steps);
  });

  it('every multi-line text is pasted whatever the strategy, and never typed', () => {
    for (const strategy of [literal, literalDelayed, paste, pasteChecked]) {
      const plan = planSubmit('a\nb', strategy);
      expect(plan.steps.some((s) => s.op === 'type')).toBe(false);
      expect(plan.steps.filter((s) => s.op === 'paste')).toHaveLength(1);
    }
  });

  it('a long text is pasted (tmux refuses long command lines)', () => {
    expect(planSubmit('x'.repeat(LITERAL_MAX_BYTES + 1), literal).path).toBe('paste');
  });

  it('a pane in a tmux mode: only the first step that types leaves it, on every path', () => {
    const inMode = { inMode: true };
    expect(planSubmit('run', literal, inMode).steps).toEqual([
      { op: 'type', text: 'run', enter: true, leaveMode: true },
    ]);
    expect(planSubmit('run', literalDelayed, inMode).steps).toEqual([
      { op: 'type', text: 'run', enter: false, leaveMode: true },
      { op: 'wait', ms: 50 },
      { op: 'enter' },
    ]);
    expect(planSubmit('a\nb', pasteChecked, inMode).steps).toEqual([
      { op: 'snapshot' },
      { op: 'paste', text: 'a\nb', leaveMode: true },
      { op: 'landed', withinMs: LANDED_WITHIN_MS },
      { op: 'wait', ms: 300 },
      { op: 'snapshot' },
      { op: 'enter' },
      ...checks(),
    ]);
    expect(planSubmit('\n', literal, inMode).steps).toEqual([]);
  });

  it('a pane in no mode is typed into as before', () => {
    for (const strategy of [literal, literalDelayed, paste, pasteChecked]) {
      for (const pane of [{}, { inMode: false }, { inMode: undefined }]) {
        expect(planSubmit('x\ny', strategy, pane)).toEqual(planSubmit('x\ny', strategy));
        expect(planSubmit('x', strategy, pane).steps.some((s) => 'leaveMode' in s)).toBe(false);
      }
    }
  });

  it('Codex: one bracketed paste, until it shows, the shipped wait, one Enter, a check that knows its status line', () => {
    const strategy = agentById('A2')!.submit;
    const plan = planSubmit('hello', strategy);
    expect(plan.steps.slice(1, 4)).toEqual([
      { op: 'paste', text: 'hello' },
      { op: 'landed', withinMs: LANDED_WITHIN_MS },
      { op: 'wait', ms: strategy.enterDelayMs },
    ]);
    expect(plan.steps.filter((s) => s.op === 'enter')).toHaveLength(1);
    expect(plan.inputEchoAbove).toBe(strategy.inputEchoAbove);
  });
});

describe('readInput', () => {
  it.each([
    ['banner\nyou said: hi\n› typing', 'typing'],
    ['› old\nsomething\n› ', ''],
    ['no prompt here', null],
    ['', null],
  ])('%j → %j', (screen, input) => {
    expect(readInput(screen, PROMPT)).toBe(input);
  });

  it('a global regex is not stateful between calls', () => {
    const g = /^› ?(.*)$/g;
    expect(readInput('› a', g)).toBe('a');
    expect(readInput('› a', g)).toBe('a');
  });
});

describe('inputCleared', () => {
  it.each<[string, { after: string; before?: string; inputLine?: RegExp; text: string }, boolean | 'unknown']>([
    ['no rule', { after: '› ', text: 'hi' }, 'unknown'],
    [
      'no input line on screen (a dialog?)',
      { after: 'Allow command? [y/n]', inputLine: PROMPT, text: 'hi' },
      'unknown',
    ],
    ['empty input', { after: 'you said: hi\n› ', inputLine: PROMPT, text: 'hi' }, true],
    ['text still there', { after: '› hello world', inputLine: PROMPT, text: 'hello world' }, false],
    ['short text still there (exact)', { after: '› y', inputLine: PROMPT, text: 'y' }, false],
    ['Enter became a newline (Codex)', { after: '› hello world⏎', inputLine: PROMPT, text: 'hello world' }, false],
    [
      'multi-line text shown on one line',
      { after: '› first line⏎second line', inputLine: PROMPT, text: 'first line\nsecond line' },
      false,
    ],
    [
      'long text shown by its tail',
      { after: '› …the very end of it', inputLine: PROMPT, text: `${'x'.repeat(300)} the very end of it` },
      false,
    ],
    ['placeholder after submit', { after: '› Ask Codex to do anything', inputLine: PROMPT, text: 'fix the bug' }, true],
    [
      'short text vs a placeholder that contains it: not confused',
      { after: '› Type your message', inputLine: PROMPT, text: 'y' },
      true,
    ],
    [
      'paste shown as a placeholder, unchanged by the Enter',
      {
        before: '› [Pasted text #1 +12 lines]',
        after: '› [Pasted text #1 +12 lines]',
        inputLine: PROMPT,
        text: 'a\nb',
      },
      false,
    ],
    [
      'paste shown as a placeholder, then cleared',
      { before: '› [Pasted text #1 +12 lines]', after: '› ', inputLine: PROMPT, text: 'a\nb' },
      true,
    ],
    [
      'the user typed something else meanwhile',
      { before: '› fix the bug', after: '› my own words', inputLine: PROMPT, text: 'fix the bug' },
      true,
    ],
    [
      'the echo above does not count, the input line does',
      { after: 'you said: hello world\n› ', inputLine: PROMPT, text: 'hello world' },
      true,
    ],
    [
      'whitespace differences ignored',
      { after: '›   hello    world  ', inputLine: PROMPT, text: 'hello world' },
      false,
    ],
  ])('%s', (_name, check, expected) => {
    expect(inputCleared(check)).toBe(expected);
  });
});

describe('injectText against the fake tmux', () => {
  function setup(
    pane: { swallowEnters?: number; newlineEnters?: number; prompt?: string | null; frame?: string[] } = {},
  ) {
    const fake = new FakeTmux();
    fake.addSession('svc-proj', { panes: [{ command: 'codex', prompt: '› ', ...pane }] });
    const slept: number[] = [];
    const sleep = async (ms: number) => {
      slept.push(ms);
    };
    return { fake, slept, sleep, pane: fake.pane('svc-proj')! };
  }

  it('literal: one sendLiteral call with Enter; unverified', async () => {
    const { fake, sleep, pane } = setup();
    const r = await injectText({ tmux: fake, target: 'svc-proj', text: 'hi there', strategy: literal, sleep });
    expect(r).toMatchObject({ submitted: 'unverified', enters: 1 });
    expect(fake.calls).toEqual([{ op: 'sendLiteral', target: 'svc-proj', text: 'hi there', enter: true }]);
    expect(pane.submitted).toEqual(['hi there']);
  });

  it('literal + multi-line: pasted as one unit, submitted once', async () => {
    const { fake, sleep, pane, slept } = setup();
    const r = await injectText({ tmux: fake, target: 'svc-proj', text: 'one\ntwo', strategy: literal, sleep });
    expect(r.enters).toBe(1);
    expect(fake.callsOf('paste')).toEqual([{ op: 'paste', target: 'svc-proj', text: 'one\ntwo', bracketed: true }]);
    expect(fake.callsOf('sendLiteral')).toEqual([]);
    expect(pane.submitted).toEqual(['one\ntwo']);
    expect(slept).toEqual([PASTE_MIN_ENTER_DELAY_MS]);
  });

  it('paste + rule, agent submits at once: true after one Enter', async () => {
    const { fake, sleep, slept } = setup();
    const r = await injectText({ tmux: fake, target: 'svc-proj', text: 'hello', strategy: pasteChecked, sleep });
    expect(r).toMatchObject({ submitted: true, enters: 1 });
    // the paste shows at the first look, the input is empty at the first look after the Enter
    expect(slept).toEqual([300, LOOK_MS]);
    expect(fake.calls.map((c) => c.op)).toEqual(['capture', 'paste', 'capture', 'capture', 'sendKeys', 'capture']);
  });

  it('an Enter swallowed after the paste (Gemini): the retry submits it', async () => {
    const { fake, sleep, pane } = setup({ swallowEnters: 1 });
    const r = await injectText({ tmux: fake, target: 'svc-proj', text: 'hello', strategy: pasteChecked, sleep });
    expect(r).toMatchObject({ submitted: true, enters: 2 });
    expect(pane.submitted).toEqual(['hello']);
  });

  it('two Enters swallowed: reports false after exactly one retry', async () => {
    const { fake, sleep, pane } = setup({ swallowEnters: 2 });
    const r = await injectText({ tmux: fake, target: 'svc-proj', text: 'hello', strategy: pasteChecked, sleep });
    expect(r).toMatchObject({ submitted: false, enters: 2 });
    expect(pane.submitted).toEqual([]);
    expect(pane.input).toBe('hello');
  });

  it('no input line on screen: no retry Enter, unverified', async () => {
    const { fake, sleep } = setup({ prompt: null, swallowEnters: 1 });
    const r = await injectText({ tmux: fake, target: 'svc-proj', text: 'hello', strategy: pasteChecked, sleep });
    expect(r).toMatchObject({ submitted: 'unverified', enters: 1 });
  });

  it('the registry strategies run end to end on the fake', async () => {
    for (const [id, prompt] of [
      ['A1', '❯ '],
      ['A2', '› '],
      ['A3', '> '],
    ] as const) {
      // Claude Code and Gemini CLI draw a rule above their input line
      const frame = id === 'A2' ? [] : ['─'.repeat(40)];
      const { fake, sleep, pane } = setup({ prompt, swallowEnters: id === 'A3' ? 1 : 0, frame });
      const r = await injectText({
        tmux: fake,
        target: 'svc-proj',
        text: 'go',
        strategy: agentSubmit(agentById(id)!),
        sleep,
      });
      expect(r.submitted, id).toBe(true);
      expect(pane.submitted, id).toEqual(['go']);
    }
  });

  it('empty text: nothing sent', async () => {
    const { fake, sleep } = setup();
    const r = await injectText({ tmux: fake, target: 'svc-proj', text: '\n', strategy: literal, sleep });
    expect(r).toMatchObject({ submitted: false, enters: 0 });
    expect(fake.calls).toEqual([]);
  });

  it('tmux errors reach the caller typed', async () => {
    const { fake, sleep } = setup();
    await expect(
      injectText({ tmux: fake, target: 'svc-gone', text: 'x', strategy: literal, sleep }),
    ).rejects.toMatchObject({ code: 'no_session' });
    fake.failNext('paste', new TmuxError('failed', 'boom'));
    await expect(
      injectText({ tmux: fake, target: 'svc-proj', text: 'x', strategy: pasteChecked, sleep }),
    ).rejects.toBeInstanceOf(TmuxError);
  });

  it('a pane in copy mode: the keys would go to the mode and be lost; leaving it first types and submits', async () => {
    for (const strategy of [literal, pasteChecked]) {
      const lost = setup();
      lost.pane.inMode = true;
      const r0 = await injectText({ tmux: lost.fake, target: 'svc-proj', text: 'hi', strategy, sleep: lost.sleep });
      expect(r0.leftMode).toBe(false);
      expect(lost.pane.submitted).toEqual([]);

      const { fake, sleep, pane } = setup();
      pane.inMode = true;
      const r = await injectText({
        tmux: fake,
        target: 'svc-proj',
        text: 'hi',
        strategy,
        pane: { inMode: true },
        sleep,
      });
      expect(r.leftMode).toBe(true);
      expect(pane).toMatchObject({ inMode: false, submitted: ['hi'] });
      // left in the call that types, and only there
      expect(fake.calls.filter((c) => 'leaveMode' in c).map((c) => c.op)).toEqual([
        strategy === literal ? 'sendLiteral' : 'paste',
      ]);
    }
  });

  it('targets a pane id as well as a session', async () => {
    const { fake, sleep, pane } = setup();
    await injectText({ tmux: fake, target: { pane: pane.id }, text: 'by id', strategy: literal, sleep });
    expect(pane.submitted).toEqual(['by id']);
  });
});

describe('injectText waits for states, not for fixed times (a busy machine)', () => {
  /** A pane drawn late: the paste shows `pasteMs` after it was sent, the emptied input `enterMs` after the Enter. */
  function slowPane(id: string, pasteMs: number, enterMs: number) {
    const rule = id === 'A2' ? [] : ['─'.repeat(40)];
    const prompt = id === 'A2' ? '› ' : id === 'A1' ? '❯ ' : ' > ';
    let now = 0;
    let pastedAt: number | null = null;
    let enteredAt: number | null = null;
    let text = '';
    const shownAtEnter: string[] = [];
    const screen = () => {
      const drawn = pastedAt !== null && now - pastedAt >= pasteMs;
      const cleared = enteredAt !== null && now - enteredAt >= enterMs;
      return ['', ...rule, `${prompt}${drawn && !cleared ? text : ''}`, ''].join('\n');
    };
    const tmux = {
      sendLiteral: async () => {},
      paste: async (_t: unknown, t: string) => {
        text = t;
        pastedAt = now;
      },
      sendKeys: async () => {
        shownAtEnter.push(screen());
        enteredAt ??= now;
      },
      capture: async () => screen(),
    };
    const sleep = async (ms: number) => {
      now += ms;
    };
    return { tmux, sleep, shownAtEnter, at: () => now };
  }

  it.each(['A1', 'A2', 'A3'])('%s: the Enter goes once the pasted text shows, however late it is drawn', async (id) => {
    const strategy = agentSubmit(agentById(id)!);
    const pane = slowPane(id, 400, 0);
    const r = await injectText({ ...pane, target: { pane: '%1' }, text: 'hello there', strategy });
    expect(r).toMatchObject({ submitted: true, enters: 1 });
    expect(pane.shownAtEnter[0]).toContain('hello there');
  });

  it.each(['A1', 'A2'])('%s: an input emptied 600 ms after the Enter is submitted, not "not submitted"', async (id) => {
    const strategy = agentSubmit(agentById(id)!);
    const pane = slowPane(id, 0, 600);
    const r = await injectText({ ...pane, target: { pane: '%1' }, text: 'hello there', strategy });
    expect(r).toMatchObject({ submitted: true, enters: 1 });
    // and it ends at the look that saw it, not at a fixed wait
    expect(pane.at()).toBeLessThan(600 + strategy.enterDelayMs + 2 * LOOK_MS + 1);
  });

  it('an input that never empties: not submitted once the looks have waited their whole window', async () => {
    const strategy = agentSubmit(agentById('A2')!);
    const pane = slowPane('A2', 0, Number.POSITIVE_INFINITY);
    const r = await injectText({ ...pane, target: { pane: '%1' }, text: 'hello there', strategy });
    expect(r).toMatchObject({ submitted: false, enters: 1 });
    expect(pane.at()).toBeGreaterThanOrEqual(DEFAULT_VERIFY_DELAY_MS);
  });
});

/** A real agent's screen as captured (test/fixtures/screens), trailing blank lines dropped. */
const fixture = (id: string, name: string) =>
  readFileSync(new URL(`../../fixtures/screens/${id}/${name}.txt`, import.meta.url), 'utf8').replace(/\n+$/, '');

describe('an approval prompt on screen while the input line still holds our text (the last guard)', () => {
  const TEXT = 'run a command, svc-approve';
  /** The real dialog of each agent, with its input line below it still holding our text (a redraw caught halfway). */
  const both = (id: string) => {
    const line = id === 'A2' ? `› ${TEXT}` : id === 'A1' ? `❯ ${TEXT}` : ` >   ${TEXT}`;
    return [fixture(id, 'awaiting_approval-1'), '─'.repeat(60), line, ''].join('\n');
  };

  it.each(['A1', 'A2', 'A3'])('%s: read as "unknown", never as our text still there', (id) => {
    const strategy = agentSubmit(agentById(id)!);
    const screen = both(id);
    // the input-line rule alone would find our text (so a retry Enter would follow): the prompt must stop it
    expect(readInput(screen, strategy.inputLine!, { belowRule: strategy.inputBelowRule })?.trim()).toBe(TEXT);
    expect(readScreen(strategy.screen!, { text: screen })).toBe('awaiting_approval');
    expect(inputCleared({ after: screen, ...strategy, text: TEXT })).toBe('unknown');
  });

  it.each(['A1', 'A2', 'A3'])('%s: after the first Enter that screen gets no second Enter', async (id) => {
    const strategy = agentSubmit(agentById(id)!);
    let entered = false;
    const enters: string[] = [];
    const idle = fixture(id, 'idle-1');
    const tmux = {
      sendLiteral: async () => {},
      paste: async () => {},
      sendKeys: async () => {
        enters.push(entered ? both(id) : idle);
        entered = true;
      },
      capture: async () => (entered ? both(id) : idle),
    };
    const r = await injectText({ tmux, target: { pane: '%1' }, text: TEXT, strategy, sleep: async () => {} });
    expect(enters).toHaveLength(1);
    expect(r).toMatchObject({ submitted: 'unverified', enters: 1 });
  });
});

describe('an approval prompt that comes up between the paste and its Enter (the agent asked meanwhile)', () => {
  it.each([
    ['A1', 'awaiting_approval-1', true],
    ['A2', 'awaiting_approval-2', true],
    ['A3', 'awaiting_approval-3', true],
    ['A1', 'idle-1', false],
    ['A2', 'working-1', false],
  ])('%s %s: the Enter would answer it: %s', (id, name, answers) => {
    const { screen } = agentSubmit(agentById(id)!);
    expect(enterWouldAnswer({ screen, before: fixture(id, name) })).toBe(answers);
  });

  it('no rules or no reading: the Enter goes', () => {
    expect(enterWouldAnswer({ before: fixture('A2', 'awaiting_approval-1') })).toBe(false);
    expect(enterWouldAnswer({ screen: agentSubmit(agentById('A2')!).screen })).toBe(false);
  });

  it.each(['A1', 'A2', 'A3'])('%s: the paste lands in the dialog; no Enter is sent into it', async (id) => {
    const strategy = agentSubmit(agentById(id)!);
    let pasted = false;
    const keys: string[][] = [];
    const tmux = {
      sendLiteral: async () => {},
      paste: async () => {
        pasted = true;
      },
      sendKeys: async (_t: unknown, k: string[]) => {
        keys.push(k);
      },
      capture: async () => fixture(id, pasted ? 'awaiting_approval-1' : 'idle-1'),
    };
    const r = await injectText({ tmux, target: { pane: '%1' }, text: 'fix it', strategy, sleep: async () => {} });
    expect(keys).toEqual([]);
    expect(r).toMatchObject({ submitted: false, enters: 0, heldFor: 'approval' });
  });
});

describe('the submit check on the real agents’ screens right after an Enter (test/fixtures/submit)', () => {
  // Captured by test/fixtures/capture/submit-screens.capture.ts: the prompt below, answered at once by a tool call.
  const PROMPT_SENT = 'run a command, svc-approve';
  const dir = (id: string) => new URL(`../../fixtures/submit/${id}/`, import.meta.url);
  const timeline = (id: string): { ms: number; text: string }[] => {
    const meta = JSON.parse(readFileSync(new URL('meta.json', dir(id)), 'utf8')) as {
      msSinceEnter: Record<string, number>;
    };
    return Object.entries(meta.msSinceEnter)
      .map(([file, ms]) => ({ ms, text: readFileSync(new URL(file, dir(id)), 'utf8') }))
      .sort((a, b) => a.ms - b.ms);
  };
  const check = (id: string, after: string) => {
    const plan = planSubmit(PROMPT_SENT, agentSubmit(agentById(id)!));
    return inputCleared({ after, ...plan, text: plan.text });
  };
  const gemini = (n: number) => readFileSync(new URL(`after-enter-${n}.txt`, dir('A3')), 'utf8');

  it.each([
    [1, 'our text still in the input line (not submitted yet)', false],
    [2, 'the input line empty again (its placeholder)', true],
    [3, 'thinking, the input line empty', true],
    [5, 'the approval dialog in place of the input line, our message echoed above it', 'unknown'],
  ] as const)('Gemini CLI, screen %i: %s → %s', (n, _what, expected) => {
    expect(check('A3', gemini(n))).toBe(expected);
  });

  it('Gemini CLI: the echo above its dialog once read as the input line still holding our text', () => {
    // What made the listener send the retry Enter that picked "Allow once": the last line the input-line rule
    // matches is the transcript's echo of the message.
    const rule = agentById('A3')!.submit.inputLine!;
    expect(readInput(gemini(5), rule)).toBe(PROMPT_SENT);
    expect(inputCleared({ after: gemini(5), inputLine: rule, text: PROMPT_SENT })).toBe(false);
    // Read as the input line only (below its rule), it is no input line at all; and the dialog is read as one.
    expect(readInput(gemini(5), rule, { belowRule: agentById('A3')!.submit.inputBelowRule })).toBeNull();
    expect(readScreen(agentById('A3')!.screenRules!, { text: gemini(5) })).toBe('awaiting_approval');
  });

  it.each([
    ['A1', 'never'],
    ['A2', 'never'],
    ['A3', 'only onto our text still in the input line'],
  ])('%s: replayed at any speed, the screens after the Enter get a second Enter %s', async (id) => {
    const strategy = agentSubmit(agentById(id)!);
    const screens = timeline(id);
    expect(screens.some((s) => readScreen(strategy.screen, { text: s.text }) === 'awaiting_approval')).toBe(true);
    for (const speed of [0.25, 0.5, 1, 2, 4, 8]) {
      let now = 0;
      let enteredAt: number | null = null;
      /** What the pane showed when each Enter was sent. */
      const enters: string[] = [];
      const showing = () => {
        const since = enteredAt === null ? -1 : now - enteredAt;
        return [...screens].reverse().find((s) => s.ms * speed <= since)?.text ?? screens[0]!.text;
      };
      const tmux = {
        sendLiteral: async () => {},
        paste: async () => {},
        sendKeys: async () => {
          enters.push(showing());
          enteredAt ??= now;
        },
        capture: async () => showing(),
      };
      const sleep = async (ms: number) => {
        now += ms;
      };
      await injectText({ tmux, target: { pane: '%12' }, text: PROMPT_SENT, strategy, sleep });
      const [, ...retries] = enters;
      if (!strategy.retryEnter) expect(retries, `${id} at ×${speed}`).toEqual([]);
      expect(retries.length).toBeLessThanOrEqual(1);
      for (const shown of retries) {
        expect(readScreen(strategy.screen, { text: shown }), `${id} at ×${speed}`).not.toBe('awaiting_approval');
        expect(
          readInput(shown, strategy.inputLine!, {
            belowRule: strategy.inputBelowRule,
            echoAbove: strategy.inputEchoAbove,
          }),
          `${id} at ×${speed}`,
        ).toBe(PROMPT_SENT);
      }
    }
  });
});
