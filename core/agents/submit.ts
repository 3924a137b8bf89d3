/**
 * Submit strategies as pure plans: which tmux steps type a message into an agent so that it really submits,
 * and how to read from the screen whether it did. `actors/agents/inject.ts` carries a plan out against `Tmux`.
 *
 * Two paths:
 * - `literal` (spec 4.7): `send-keys -l <text>` then `Enter`, chained in ONE tmux call.
 * - `paste`: the whole text as one bracketed paste; with an input-line rule, looks until the input line shows the
 *   paste (the agent has read it: its own clock for the Enter starts there, however slow the machine), then the
 *   per-agent wait, `Enter`, and looks until the input line empties. For an agent that may swallow an Enter
 *   (`retryEnter`), if the text is still there when the first window ends, a last look, and only if the text is
 *   STILL there one more `Enter`, and looks again.
 *
 * Looks are `LOOK_MS` apart and end at the first that settles it (emptied, or no input line holding our text): a
 * message that went through costs one or two looks, not a fixed wait, and a slow redraw on a busy machine is waited
 * for instead of being read as "not submitted".
 *
 * A look that does not find the input line holding our text sends nothing more: an approval prompt (read with the
 * agent's screen rules), a dialog that replaced the input line, or only transcript lines (the echo of the sent
 * message, which looks like the input line; `inputBelowRule` and `inputEchoAbove` tell them apart) all end the
 * plan. An Enter into an approval prompt would pick its highlighted answer, and a model that answers with a tool
 * call at once puts one up within a few hundred ms of the first Enter.
 *
 * A `literal` strategy still takes the paste path when typing the text would misbehave: a line break (each one
 * would be an Enter and submit early), any other control character (ESC, C-c, Tab … would act as keys), or more
 * than `LITERAL_MAX_BYTES` (tmux refuses a command line of ~16 KiB).
 *
 * A pane in a tmux mode (copy mode after scrolling back, …) takes keys as the mode's commands, and drops the paste
 * markers: when the reading says so, the first step that types leaves the mode first, in the same tmux call.
 */
import type { SubmitStrategy } from './registry.js';
import { readScreen, type ScreenRules } from './screens.js';

export const LITERAL_MAX_BYTES = 8 * 1024;
/** Enter delay used when a `literal` strategy falls back to pasting. */
export const PASTE_MIN_ENTER_DELAY_MS = 150;
/** How long the looks after an Enter wait for the input line to empty before the verdict "not submitted". */
export const DEFAULT_VERIFY_DELAY_MS = 1_500;
/** With `retryEnter`: how long the looks after the first Enter wait before the one retry. */
export const DEFAULT_RETRY_DELAY_MS = 650;
/** How long the looks after a paste wait for the input line to show it before the Enter goes anyway. */
export const LANDED_WITHIN_MS = 1_000;
/** Time between two looks at the screen while waiting for a state. */
export const LOOK_MS = 25;
/** Screen lines read for a check. */
export const CHECK_LINES = 15;

export type SubmitStep =
  /** `send-keys -l text`, with `enter` chained in the same tmux call; `leaveMode` first when set. */
  | { op: 'type'; text: string; enter: boolean; leaveMode?: true }
  /** One bracketed paste of the whole text; `leaveMode` first when set. */
  | { op: 'paste'; text: string; leaveMode?: true }
  | { op: 'wait'; ms: number }
  /** Enter; not sent, and the plan stopped, when the last snapshot reads an approval prompt (`enterWouldAnswer`). */
  | { op: 'enter' }
  /** Read the screen now; it is the "before" for the steps that follow. */
  | { op: 'snapshot' }
  /** Look until the input line differs from the snapshot's (the agent drew the paste), for at most `withinMs`;
   *  then go on either way. Nothing to wait for when the snapshot showed no input line. */
  | { op: 'landed'; withinMs: number }
  /** Look until the input is cleared → submitted, or no input line holding our text is found (a prompt, a dialog,
   *  only the transcript) → unverified (stop, no more keys); for at most `withinMs` (0: one look, now). Still there
   *  at the end → go on with the next steps, or, when `final`, report not submitted. */
  | { op: 'check'; final: boolean; withinMs: number };

/** What the fresh tmux reading says about the pane, as far as a plan depends on it. */
export interface PaneFacts {
  /** `#{pane_in_mode}`: copy mode (scrolled back), view, clock, choose-tree, … */
  inMode?: boolean | undefined;
}

export interface SubmitPlan {
  path: 'literal' | 'paste';
  /** The text that is typed (line breaks normalised, paste markers removed, trailing line breaks dropped). */
  text: string;
  steps: SubmitStep[];
  /** The input-line rule the checks use; absent when the plan has no check. */
  inputLine?: RegExp;
  /** How near below a rule the input line must be (`SubmitStrategy.inputBelowRule`). */
  inputBelowRule?: number;
  /** A line that, right below a match, makes it the transcript's echo (`SubmitStrategy.inputEchoAbove`). */
  inputEchoAbove?: RegExp;
  /** The agent's screen rules: a check that reads an approval prompt stops. */
  screen?: ScreenRules;
}

export type SubmitResult = true | false | 'unverified';

// ---------------------------------------------------------------------------

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const PASTE_MARKERS = /\u001b\[20[01]~/g;

const utf8Length = (s: string): number => new TextEncoder().encode(s).length;

/**
 * What will be typed: CRLF and CR become LF (tmux turns each LF into one CR when pasting), trailing line breaks
 * are dropped (they would only add empty lines or an early Enter), and the bracketed-paste markers are removed
 * so a message cannot end the paste early and have the rest taken as keys.
 */
export function normalizeSubmitText(text: string): string {
  let out = text.replace(/\r\n?/g, '\n').replace(PASTE_MARKERS, '');
  while (out.endsWith('\n')) out = out.slice(0, -1);
  return out;
}

/** Why a text cannot be typed with `send-keys -l`; `null` when it can. */
export function literalUnsafe(text: string): 'newline' | 'control' | 'too_long' | null {
  if (text.includes('\n')) return 'newline';
  if (CONTROL.test(text)) return 'control';
  if (utf8Length(text) > LITERAL_MAX_BYTES) return 'too_long';
  return null;
}

function checkSteps(strategy: SubmitStrategy): SubmitStep[] {
  const verify = strategy.verifyDelayMs ?? DEFAULT_VERIFY_DELAY_MS;
  const retry = strategy.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS;
  if (!strategy.retryEnter) return [{ op: 'check', final: true, withinMs: verify }];
  return [
    { op: 'check', final: false, withinMs: retry },
    // a last look right before the retry: a prompt that came up meanwhile must not get the Enter
    { op: 'check', final: false, withinMs: 0 },
    { op: 'enter' },
    { op: 'check', final: true, withinMs: verify },
  ];
}

export function planSubmit(rawText: string, strategy: SubmitStrategy, pane: PaneFacts = {}): SubmitPlan {
  const text = normalizeSubmitText(rawText);
  const verify = strategy.inputLine !== undefined;
  const withRule = verify
    ? {
        inputLine: strategy.inputLine as RegExp,
        ...(strategy.inputBelowRule !== undefined ? { inputBelowRule: strategy.inputBelowRule } : {}),
        ...(strategy.inputEchoAbove ? { inputEchoAbove: strategy.inputEchoAbove } : {}),
        ...(strategy.screen ? { screen: strategy.screen } : {}),
      }
    : {};
  if (text === '') return { path: strategy.kind, text, steps: [] };
  const leave = pane.inMode ? { leaveMode: true as const } : {};

  if (strategy.kind === 'literal' && literalUnsafe(text) === null) {
    const steps: SubmitStep[] =
      strategy.enterDelayMs > 0
        ? [{ op: 'type', text, enter: false, ...leave }, { op: 'wait', ms: strategy.enterDelayMs }, { op: 'enter' }]
        : [{ op: 'type', text, enter: true, ...leave }];
    return { path: 'literal', text, steps: verify ? [...steps, ...checkSteps(strategy)] : steps, ...withRule };
  }

  const enterDelayMs =
    strategy.kind === 'paste' ? strategy.enterDelayMs : Math.max(strategy.enterDelayMs, PASTE_MIN_ENTER_DELAY_MS);
  const steps: SubmitStep[] = verify
    ? [
        { op: 'snapshot' },
        { op: 'paste', text, ...leave },
        { op: 'landed', withinMs: LANDED_WITHIN_MS },
        { op: 'wait', ms: enterDelayMs },
        { op: 'snapshot' },
      ]
    : [
        { op: 'paste', text, ...leave },
        { op: 'wait', ms: enterDelayMs },
      ];
  steps.push({ op: 'enter' });
  if (verify) steps.push(...checkSteps(strategy));
  return { path: 'paste', text, steps, ...withRule };
}

// ---------------------------------------------------------------------------
// Reading the input line

const nonSticky = (re: RegExp): RegExp =>
  re.global || re.sticky ? new RegExp(re.source, re.flags.replace(/[gy]/g, '')) : re;

/** A horizontal rule: a line of `─` alone (a box edge such as `╰───` is not one). */
const RULE = /^\s*─{8,}\s*$/;

/** Where a match of the input-line rule counts as the input line (`SubmitStrategy`'s fields of the same names). */
export interface InputPlace {
  belowRule?: number | undefined;
  echoAbove?: RegExp | undefined;
}

/**
 * The content of the input line: capture group 1 of the LAST screen line the rule matches; `null` if none. With
 * `belowRule`, that line counts only with a horizontal rule at most `belowRule` lines above it; with `echoAbove`,
 * only when the next non-blank line below it does not match that. Otherwise it is a transcript line and the screen
 * shows no input line (`null`).
 */
export function readInput(screen: string, inputLine: RegExp, place: InputPlace = {}): string | null {
  const re = nonSticky(inputLine);
  const lines = screen.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = re.exec(lines[i] ?? '');
    if (!m) continue;
    const { belowRule, echoAbove } = place;
    if (belowRule !== undefined && !lines.slice(Math.max(0, i - belowRule), i).some((l) => RULE.test(l))) return null;
    const below = lines.slice(i + 1).find((l) => l.trim() !== '');
    if (echoAbove && below !== undefined && nonSticky(echoAbove).test(below)) return null;
    return m[1] ?? '';
  }
  return null;
}

const squash = (s: string): string => s.replace(/\s+/g, ' ').trim();

/** Up to `n` code points from the start (or end) of `s`, stopping at a control character. */
function probe(line: string, n: number, fromEnd: boolean): string {
  const parts = line.split(CONTROL);
  const piece = squash((fromEnd ? parts.at(-1) : parts[0]) ?? '');
  const cps = [...piece];
  return (fromEnd ? cps.slice(-n) : cps.slice(0, n)).join('').trim();
}

const MIN_PROBE = 3;
const PROBE_LEN = 16;

/**
 * Did the input line empty after an Enter?
 * - `'unknown'`: no rule; the screen shows an approval prompt (by the agent's screen rules); or the rule finds no
 *   input line on screen (a dialog, another view, only the transcript's echo of the message).
 * - `true`: the input is empty, or shows something that is neither our text nor what it showed before the
 *   Enter (a placeholder, the user's own typing).
 * - `false`: it still shows our text (its first or last line), or shows exactly what it showed before the
 *   Enter (covers agents that show a paste as a placeholder such as `[Pasted text #1]`).
 */
export function inputCleared(check: {
  after: string;
  before?: string | undefined;
  inputLine?: RegExp | undefined;
  inputBelowRule?: number | undefined;
  inputEchoAbove?: RegExp | undefined;
  screen?: ScreenRules | undefined;
  text: string;
}): boolean | 'unknown' {
  const place = { belowRule: check.inputBelowRule, echoAbove: check.inputEchoAbove };
  if (!check.inputLine) return 'unknown';
  if (check.screen && readScreen(check.screen, { text: check.after }) === 'awaiting_approval') return 'unknown';
  const afterRaw = readInput(check.after, check.inputLine, place);
  if (afterRaw === null) return 'unknown';
  const after = squash(afterRaw);
  if (after === '') return true;

  const lines = normalizeSubmitText(check.text)
    .split('\n')
    .filter((l) => l.trim() !== '');
  const first = lines[0] ?? '';
  const last = lines.at(-1) ?? '';
  if (after === squash(first) || after === squash(last)) return false;
  for (const p of [probe(first, PROBE_LEN, false), probe(last, PROBE_LEN, true)]) {
    if ([...p].length >= MIN_PROBE && after.includes(p)) return false;
  }

  if (check.before !== undefined) {
    const before = readInput(check.before, check.inputLine, place);
    if (before !== null && squash(before) !== '' && squash(before) === after) return false;
  }
  return true;
}

/**
 * May the Enter after a paste be sent, given the screen read just before it? Not when it shows an approval prompt
 * (by the agent's trusted rules): the prompt came up after the pane was judged free (the agent was working and asked
 * meanwhile), and its highlighted choice is what an Enter would take. No rules, no reading: the Enter goes.
 */
export function enterWouldAnswer(check: { screen?: ScreenRules | undefined; before?: string | undefined }): boolean {
  if (!check.screen || check.before === undefined) return false;
  return readScreen(check.screen, { text: check.before }) === 'awaiting_approval';
}

/**
 * Has the agent drawn the paste? `true` when the input line now differs from what it showed before the paste (our
 * text, or a placeholder for it); `'unknown'` when there is nothing to compare (no rule, or no input line before
 * the paste: a dialog, another view); `false` while it still shows what it showed before.
 */
export function pasteLanded(check: {
  before: string;
  after: string;
  inputLine?: RegExp | undefined;
  inputBelowRule?: number | undefined;
  inputEchoAbove?: RegExp | undefined;
}): boolean | 'unknown' {
  if (!check.inputLine) return 'unknown';
  const place = { belowRule: check.inputBelowRule, echoAbove: check.inputEchoAbove };
  const before = readInput(check.before, check.inputLine, place);
  if (before === null) return 'unknown';
  const after = readInput(check.after, check.inputLine, place);
  return after !== null && squash(after) !== squash(before);
}
