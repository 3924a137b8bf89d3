/**
 * Approval dialogs read from fixtures of the real programs (test/fixtures/screens/<id>/awaiting_approval-*.txt,
 * captured by test/fixtures/capture/approval-dialogs.capture.ts): each reads as its tool, command or diff, and
 * choices; the highlight is part of the fingerprint; the keys svc types for a choice.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { typeKeysLogic } from '../../../actors/seal/e2ee.js';
import { approvalKeys, decideApprovalInput, PromptChangedError, readApproval } from '../../../core/agents/approvals.js';
import { readScreen, SCREEN_LINES, SCREEN_RULES } from '../../../core/agents/screens.js';
import { lastScreenLines } from '../../../core/tmux/tmux.js';
import { DANGER_COMMAND, EDIT_NEW, EDIT_OLD, LONG_COMMAND } from '../../fakes/fakeModel.js';

const fixture = (agent: string, n: number) =>
  readFileSync(join('test/fixtures/screens', agent, `awaiting_approval-${n}.txt`), 'utf8');
const read = (agent: string, n: number) => readApproval(agent, { text: fixture(agent, n) });
const SHORT = 'touch svc-approval-probe.txt';

interface Row {
  agent: string;
  n: number;
  tool: RegExp;
  /** Lines the detail must show, in order (the long command joined back from its wrapped lines). */
  detail: string[];
  choices: string[];
  always: boolean[];
  highlighted: number | null;
}

const ROWS: Row[] = [
  {
    agent: 'A1',
    n: 1,
    tool: /^Bash command$/,
    detail: [SHORT],
    choices: ['Yes', 'Yes, and always allow access to proj/ from this project', 'No'],
    always: [false, true, false],
    highlighted: 0,
  },
  {
    agent: 'A1',
    n: 2,
    tool: /^Bash command$/,
    detail: [LONG_COMMAND],
    choices: ['Yes', 'Yes, and always allow access to proj/ from this project', 'No'],
    always: [false, true, false],
    highlighted: 0,
  },
  {
    agent: 'A1',
    n: 3,
    tool: /^Edit file$/,
    detail: ['notes.txt', `-${EDIT_OLD}`, `+${EDIT_NEW}`],
    choices: ['Yes', 'Yes, allow all edits during this session (shift+tab)', 'No'],
    always: [false, true, false],
    highlighted: 0,
  },
  {
    agent: 'A1',
    n: 4,
    tool: /^Bash command$/,
    detail: [SHORT],
    choices: ['Yes', 'Yes, and always allow access to proj/ from this project', 'No'],
    always: [false, true, false],
    highlighted: 1,
  },
  ...[1, 2, 4].map((n) => ({
    agent: 'A2',
    n,
    tool: /^Shell command$/,
    detail: ['Environment: local', 'Reason: Create a probe file', `$ ${n === 2 ? LONG_COMMAND : SHORT}`],
    choices: [
      'Yes, proceed',
      `Yes, and don't ask again for commands that start with \`${n === 2 ? LONG_COMMAND : SHORT}\``,
      'No, and tell Codex what to do differently',
    ],
    always: [false, true, false],
    highlighted: n === 4 ? 1 : 0,
  })),
  {
    agent: 'A2',
    n: 3,
    tool: /^Edit notes\.txt$/,
    // the diff is the cell Codex draws right above its dialog
    detail: ['Edited notes.txt (+1 -1)', `2 -${EDIT_OLD}`, `2 +${EDIT_NEW}`, 'Destination: /tmp/'],
    choices: ['Yes, proceed', "Yes, and don't ask again for these files", 'No, and tell Codex what to do differently'],
    always: [false, true, false],
    highlighted: 0,
  },
  {
    agent: 'A3',
    n: 1,
    tool: /^Shell/,
    detail: [SHORT],
    choices: ['Allow once', 'Allow for this session', 'No, suggest changes (esc)'],
    always: [false, true, false],
    highlighted: 0,
  },
  {
    agent: 'A3',
    n: 2,
    tool: /^Shell/,
    detail: [LONG_COMMAND],
    choices: ['Allow once', 'Allow for this session', 'No, suggest changes (esc)'],
    always: [false, true, false],
    highlighted: 0,
  },
  {
    agent: 'A3',
    n: 3,
    tool: /^Edit · notes\.txt/,
    detail: [`- ${EDIT_OLD}`, `+ ${EDIT_NEW}`],
    choices: ['Allow once', 'Allow for this session', 'Modify with external editor', 'No, suggest changes (esc)'],
    always: [false, true, false, false],
    highlighted: 0,
  },
  {
    agent: 'A3',
    n: 4,
    tool: /^Shell/,
    detail: [SHORT],
    choices: ['Allow once', 'Allow for this session', 'No, suggest changes (esc)'],
    always: [false, true, false],
    highlighted: 1,
  },
  {
    agent: 'A4',
    n: 1,
    tool: /^⚠️ Dangerous command$/,
    detail: [DANGER_COMMAND],
    choices: ['Yes', 'No'],
    always: [false, false],
    highlighted: 0,
  },
  {
    agent: 'A4',
    n: 4,
    tool: /^⚠️ Dangerous command$/,
    detail: [DANGER_COMMAND],
    choices: ['Yes', 'No'],
    always: [false, false],
    highlighted: 1,
  },
  {
    agent: 'A5',
    n: 1,
    tool: /^Shell command$/,
    detail: [`$ ${SHORT}`],
    choices: ['Allow once', 'Allow always', 'Reject'],
    always: [false, true, false],
    highlighted: null,
  },
  {
    agent: 'A5',
    n: 2,
    tool: /^Shell command$/,
    detail: [`$ ${LONG_COMMAND}`],
    choices: ['Allow once', 'Allow always', 'Reject'],
    always: [false, true, false],
    highlighted: null,
  },
  {
    agent: 'A5',
    n: 3,
    tool: /^Edit notes\.txt$/,
    detail: [`- ${EDIT_OLD}`, `+ ${EDIT_NEW}`],
    choices: ['Allow once', 'Allow always', 'Reject'],
    always: [false, true, false],
    highlighted: null,
  },
];

const squeeze = (text: string) => text.replace(/\s+/g, '');

describe('approval dialogs of the real programs', () => {
  it.each(ROWS)('$agent awaiting_approval-$n reads as its tool, detail and choices', (row) => {
    const text = fixture(row.agent, row.n);
    expect(readScreen(SCREEN_RULES[row.agent], { text })).toBe('awaiting_approval');
    const prompt = read(row.agent, row.n);
    expect(prompt).not.toBeNull();
    expect(prompt!.readable).toBe(true);
    expect(prompt!.tool).toMatch(row.tool);
    // wrapped lines joined back: a wrap cuts a command anywhere, so spaces are left out of the comparison
    const all = squeeze(prompt!.detail.join(''));
    for (const want of row.detail) expect(all, JSON.stringify(prompt!.detail)).toContain(squeeze(want));
    expect(prompt!.choices.map((c) => c.label)).toEqual(row.choices);
    expect(prompt!.choices.map((c) => c.always)).toEqual(row.always);
    expect(prompt!.highlighted).toBe(row.highlighted);
    expect(prompt!.fingerprint).toMatch(/^[0-9a-f]{16}$/);
  });

  it('a moved highlight changes the fingerprint; the rest of the screen does not', () => {
    for (const agent of ['A1', 'A2', 'A3', 'A4']) {
      const first = read(agent, 1)!;
      const moved = read(agent, 4)!;
      expect(moved.tool).toBe(first.tool);
      expect(moved.detail).toEqual(first.detail);
      expect(moved.fingerprint, agent).not.toBe(first.fingerprint);
      // the conversation above the dialog is not part of it
      const scrolled = readApproval(agent, { text: `an earlier line\n${fixture(agent, 1)}` })!;
      expect(scrolled.fingerprint, agent).toBe(first.fingerprint);
    }
  });

  it('a different command or another agent gives another fingerprint', () => {
    const prints = ROWS.filter((r) => r.n !== 4).map((r) => read(r.agent, r.n)!.fingerprint);
    expect(new Set(prints).size).toBe(prints.length);
  });

  it('a dialog whose layout the rules do not know is not read, but it has a fingerprint', () => {
    // Codex's dialog without its choices (a version that draws them otherwise)
    const cut = fixture('A2', 1).replace(/^.*\d\. .*$/gm, '');
    const prompt = readApproval('A2', { text: cut })!;
    expect(readScreen(SCREEN_RULES.A2, { text: cut })).toBe('awaiting_approval');
    expect(prompt).toMatchObject({ readable: false, choices: [], highlighted: null });
    expect(prompt.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(prompt.fingerprint).not.toBe(read('A2', 1)!.fingerprint);
    expect(approvalKeys(prompt, 0)).toEqual([]);
  });

  it('an edit dialog of Codex shows the diff of the cell right above it, only when it names the destination', () => {
    expect(read('A2', 3)!.detail.join('\n')).toContain(EDIT_NEW);
    const other = fixture('A2', 3).replace('• Edited notes.txt (+1 -1)', '• Edited other.txt (+1 -1)');
    const prompt = readApproval('A2', { text: other })!;
    expect(prompt.readable).toBe(true);
    expect(prompt.detail.join('\n')).not.toContain(EDIT_NEW);
    expect(prompt.detail).toContain(`Destination: ${/Destination: (\S+)/.exec(fixture('A2', 3))![1]}`);
  });

  it('Codex: what the model wrote cannot pose as the dialog (a question or numbered lines inside the command)', () => {
    const short = fixture('A2', 1);
    // numbered lines in the command are detail; the choices are the block above the hints
    const numbered = short.replace(
      '  $ touch svc-approval-probe.txt',
      '  $ printf "%s" \\\n  1. first item\n  2. second item',
    );
    const prompt = readApproval('A2', { text: numbered })!;
    expect(prompt.choices.map((c) => c.label)).toEqual(read('A2', 1)!.choices.map((c) => c.label));
    expect(prompt.highlighted).toBe(0);
    expect(prompt.detail.join('\n')).toContain('1. first item');
    // a second question under the real one (a line of the command): not read, so not answerable from the card
    const posing = short.replace(
      '  $ touch svc-approval-probe.txt',
      '  $ cat <<EOF\n  Would you like to run the following command?\n  EOF',
    );
    expect(readApproval('A2', { text: posing })!.readable).toBe(false);
    // no highlight, or two: not a dialog svc knows
    expect(readApproval('A2', { text: short.replace('› 1. Yes', '  1. Yes') })!.readable).toBe(false);
  });

  it('one dialog has one fingerprint whether the reader has the last 40 lines or the whole pane', () => {
    for (const agent of ['A1', 'A2', 'A3', 'A4', 'A5'])
      for (const n of [1, 2, 3, 4]) {
        let text: string;
        try {
          text = fixture(agent, n);
        } catch {
          continue;
        }
        const whole = readApproval(agent, { text: `${'an earlier line\n'.repeat(60)}${text}\n\n` })!;
        const cut = readApproval(agent, { text: lastScreenLines(text, SCREEN_LINES) })!;
        expect(cut.fingerprint, `${agent} ${n}`).toBe(whole.fingerprint);
        expect(cut.readable, `${agent} ${n}`).toBe(true);
      }
  });

  it('a screen with no dialog reads as none (agents with rules), or an unread prompt', () => {
    const idle = readFileSync('test/fixtures/screens/A1/idle-2.txt', 'utf8');
    expect(readApproval('A1', { text: idle })?.readable ?? false).toBe(false);
    expect(readApproval('A99', { text: fixture('A1', 1) })).toBeNull();
  });

  it('the keys for a choice: a digit (A1, A3), from the highlight to it and Enter (A2, A4), or to the first and along (A5)', () => {
    expect(approvalKeys(read('A2', 1)!, 0)).toEqual(['Enter']);
    expect(approvalKeys(read('A2', 1)!, 2)).toEqual(['Down', 'Down', 'Enter']);
    expect(approvalKeys(read('A2', 4)!, 0)).toEqual(['Up', 'Enter']);
    expect(approvalKeys(read('A4', 1)!, 0)).toEqual(['Enter']);
    expect(approvalKeys(read('A4', 1)!, 1)).toEqual(['Down', 'Enter']);
    expect(approvalKeys(read('A4', 4)!, 0)).toEqual(['Up', 'Enter']);
    expect(approvalKeys(read('A1', 1)!, 0)).toEqual(['1']);
    expect(approvalKeys(read('A1', 4)!, 2)).toEqual(['3']);
    expect(approvalKeys(read('A3', 3)!, 3)).toEqual(['4']);
    expect(approvalKeys(read('A5', 1)!, 2)).toEqual(['Left', 'Left', 'Left', 'Right', 'Right', 'Enter']);
    // no such choice
    expect(approvalKeys(read('A1', 1)!, 3)).toEqual([]);
    expect(approvalKeys(read('A1', 1)!, -1)).toEqual([]);
    expect(approvalKeys(read('A1', 1)!, 0.5)).toEqual([]);
  });

  describe('input against the prompt on screen (spec 7 prompt_changed)', () => {
    const shown = read('A1', 1)!;
    const moved = read('A1', 4)!;
    const codex = readApproval('A2', { text: fixture('A2', 1) })!;
    const unread = readApproval('A2', { text: fixture('A2', 1).replace(/^.*\d\. .*$/gm, '') })!;
    const answer = (fingerprint: string, choice = 0) => ({ kind: 'answer', fingerprint, choice }) as const;
    const typed = (fingerprint?: string): { kind: 'type'; fingerprint?: string } =>
      fingerprint ? { kind: 'type', fingerprint } : { kind: 'type' };
    it.each([
      [
        'the answer to the prompt on screen types its keys',
        answer(shown.fingerprint),
        shown,
        { ok: true, keys: ['1'] },
      ],
      [
        'the answer to a prompt no longer on screen',
        answer(shown.fingerprint),
        null,
        { ok: false, code: 'prompt_changed' },
      ],
      ['the answer after the highlight moved', answer(shown.fingerprint), moved, { ok: false, code: 'prompt_changed' }],
      [
        'the answer to a Codex dialog on screen (A2)',
        answer(codex.fingerprint, 1),
        codex,
        { ok: true, keys: ['Down', 'Enter'] },
      ],
      [
        'an answer for a dialog svc could not read',
        answer(unread.fingerprint),
        unread,
        { ok: false, code: 'prompt_changed' },
      ],
      ['an answer naming no choice of it', answer(shown.fingerprint, 9), shown, { ok: false, code: 'bad_key_name' }],
      ['keys with the fingerprint of the prompt on screen', typed(shown.fingerprint), shown, { ok: true, keys: null }],
      ['keys without a fingerprint while a prompt shows', typed(), shown, { ok: false, code: 'prompt_changed' }],
      [
        'keys with the fingerprint of another prompt',
        typed(moved.fingerprint),
        shown,
        { ok: false, code: 'prompt_changed' },
      ],
      ['keys for Codex need its fingerprint too', typed(), codex, { ok: false, code: 'prompt_changed' }],
      ['keys with no prompt on screen', typed(), null, { ok: true, keys: null }],
      [
        'keys with a stale fingerprint once the prompt is gone',
        typed(shown.fingerprint),
        null,
        { ok: true, keys: null },
      ],
    ] as const)('%s', (_what, input, onScreen, expected) => {
      expect(decideApprovalInput(input, onScreen)).toEqual(expected);
    });
  });

  describe('the last look before an answer is typed (actors/seal/e2ee.ts typeKeysLogic)', () => {
    const run = (now: string, confirm: { agent: string; fingerprint: string } | undefined) => {
      const sent: string[][] = [];
      const tmux = {
        sendLiteral: async () => {},
        sendKeys: async (_: unknown, keys: readonly string[]) => {
          sent.push([...keys]);
        },
        captureScreen: async () => ({ text: now, width: 200, height: 50 }),
        killSession: async () => {},
        panePid: async () => null,
        capture: async () => '',
      };
      const actor = createActor(
        typeKeysLogic(tmux, async () => {}),
        {
          input: { session: 's', paneId: '%1', keys: ['1'], text: '', ...(confirm ? { confirm } : {}) },
        },
      );
      return new Promise<{ sent: string[][]; error?: unknown }>((resolve) => {
        actor.subscribe({ complete: () => resolve({ sent }), error: (error) => resolve({ sent, error }) });
        actor.start();
      });
    };
    const shown = read('A1', 1)!;

    it('types when the prompt is still the one answered', async () => {
      expect(await run(fixture('A1', 1), { agent: 'A1', fingerprint: shown.fingerprint })).toEqual({ sent: [['1']] });
    });

    it('types nothing when an Esc or an arrow at the keyboard got there first', async () => {
      const idle = readFileSync('test/fixtures/screens/A1/idle-2.txt', 'utf8');
      for (const now of [idle, fixture('A1', 4)]) {
        const out = await run(now, { agent: 'A1', fingerprint: shown.fingerprint });
        expect(out.sent).toEqual([]);
        expect(out.error).toBeInstanceOf(PromptChangedError);
      }
    });

    it('keys with no prompt on screen are typed without a look', async () => {
      expect(await run('', undefined)).toEqual({ sent: [['1']] });
    });
  });
});
