/**
 * What an approval dialog asks, read from the pane as data beside the screen rules (core/agents/screens.ts): the
 * tool, the command or the diff, the question, the choices and which one is highlighted, and a fingerprint of all
 * of it. The phone shows the reading as a card; an answer carries the fingerprint back and is typed only while a
 * reading taken after it arrived has the same fingerprint (spec 4.11.2, 7 `prompt_changed`).
 *
 * Rules per agent, each backed by fixtures of the real program (`test/fixtures/screens/<id>/awaiting_approval-*.txt`,
 * `test/unit/agents/approvals.test.ts`). A dialog the rules do not know gets a reading with `readable: false` and a
 * fingerprint of the screen's last lines, so raw keys still need the prompt the phone showed. Pure: the web app
 * computes the same fingerprint from the pane it draws.
 */
import { lastScreenLines } from '../tmux/tmux.js';
import { lastLines, SCREEN_LINES, SCREEN_RULES } from './screens.js';

export interface ApprovalChoice {
  /** As the dialog words it, without its number. */
  label: string;
  /** The choice stops the agent asking again (for the session, the project, or for good): marked on the card. */
  always: boolean;
}

export interface ApprovalPrompt {
  /** The agent's registry id: the keys of an answer are its own. */
  agent: string;
  /** The dialog could be read into tool, detail and choices (false: a layout the rules do not know). */
  readable: boolean;
  /** What the agent wants to use, as the dialog titles it: `Bash command`, `Shell`, `Edit notes.txt`, … */
  tool: string;
  /** The command, or the diff, line by line as shown (wrapped lines stay as the dialog wraps them). */
  detail: string[];
  /** The dialog's question. */
  question: string;
  choices: ApprovalChoice[];
  /** Index into `choices` of the highlighted one; null when the screen does not show it (A5: colour only). */
  highlighted: number | null;
  /** Of the agent, tool, detail, question, choices and highlight: any change to the dialog changes it. */
  fingerprint: string;
}

/** A prompt as read from the screen, before its agent and fingerprint are put to it. */
type Reading = Omit<ApprovalPrompt, 'fingerprint' | 'agent'>;

interface DialogRules {
  source: string;
  /** The dialog starts at the last line matching this (searched from the bottom of the pane). */
  start: RegExp;
  /** Borders to strip from each line of the dialog (box drawing), in order, repeatedly. */
  strip?: RegExp[];
  /** A choice line: group 1 the highlight marker (empty when not highlighted), 2 the number, 3 the label. */
  choice?: RegExp;
  /** The dialog ends at the last line matching this (its hints); the start is searched above it. */
  end?: RegExp;
  /**
   * Choices without numbers, one per line, the block right above `end` (A4): group 1 the highlight marker, 2 the
   * label. The question is the last line above them that asks one; the detail is between the title and the choices.
   */
  listChoice?: RegExp;
  /** Choices all on one line (A5): the line, and how its labels are separated. */
  choiceRow?: { line: RegExp; split: RegExp; end: RegExp };
  /** The question line. */
  question: RegExp;
  /** The title line (first non-blank after `start`, or after it on the start line): group 1 the tool. */
  tool: RegExp;
  /** Lines that are dialog chrome, not detail (a description under the command, hints). */
  skip?: RegExp[];
  /** Keys that choose choice `i` (0-based) of `n`, from `highlighted`. */
  keys(i: number, n: number, highlighted: number | null): string[];
}

/** A dialog with a reader of its own, for a layout the generic rules do not fit (A2). */
interface DialogReader {
  source: string;
  read(text: string): Reading | null;
  keys: DialogRules['keys'];
}

/** Choices that stop the agent asking again. */
const ALWAYS = /\balways\b|don['’]t ask again|for this session|during this session|allow all\b/i;

const digit = (i: number) => [String(i + 1)];

/** From the highlighted choice, up or down to choice `i`, then Enter. */
const moveAndEnter = (i: number, _n: number, highlighted: number | null): string[] => {
  const from = highlighted ?? 0;
  return [...Array.from({ length: Math.abs(i - from) }, () => (i > from ? 'Down' : 'Up')), 'Enter'];
};

/** A1 Claude Code 2.1.197: a rule, the tool's title, the command or diff, `Do you want to …?`, numbered choices. */
const CLAUDE_CODE: DialogRules = {
  source: 'claude 2.1.197',
  start: /^\s*─{20,}\s*$/,
  choice: /^\s*(❯)?\s*(\d+)\.\s+(.+?)\s*$/,
  question: /^\s*(Do you want to .+\?)\s*$/,
  tool: /^\s*(\S.*?)\s*$/,
  skip: [/^\s*Esc to cancel/, /^\s*╌{10,}\s*$/],
  // a number key chooses and confirms at once in its select lists (approvalAnswer in meta.json)
  keys: digit,
};

/** A3 Gemini CLI 0.61.0: a box; `? <Tool>  <what>`, an inner box with the command, `Allow execution of …?`. */
const GEMINI_CLI: DialogRules = {
  source: 'gemini 0.61.0',
  start: /^\s*╭─/,
  strip: [/^\s*│\s?/, /\s?│\s*$/, /^\s*[╭╰]─+[╮╯]\s*$/],
  choice: /^\s*(●)?\s*(\d+)\.\s+(.+?)\s*$/,
  question: /^\s*((?:Allow execution of|Apply this change|Allow|Do you want).*\?)\s*$/,
  tool: /^\s*\?\s+(.+?)\s*$/,
  keys: digit,
};

/** A5 opencode 1.18.33: `△ Permission required`, `# <Tool>`, the command, the choices on one row. */
const OPENCODE: DialogRules = {
  source: 'opencode 1.18.33',
  start: /△ Permission required/,
  // the sidebar of a wide pane (text from column 150 on, after a gap; an edit's new side starts near 80), the bar
  strip: [/(?<=^.{150,})\s{3,}\S.*$/, /^\s*┃\s?/],
  // the hints after a wide gap are not choices
  choiceRow: { line: /^\s*Allow once\s{2,}/, split: /\s{2,}/, end: /\s{10,}/ },
  question: /(Permission required)/,
  tool: /^\s*(?:#|→)\s+(.+?)\s*$/,
  skip: [/^\s*\/\S+:\S+\s*$/, /•\s*OpenCode/],
  // the highlight is colour only: go to the first choice (Left does not wrap), then right, then confirm
  keys: (i, n) => [...Array.from({ length: n }, () => 'Left'), ...Array.from({ length: i }, () => 'Right'), 'Enter'],
};

/**
 * A4 pi 0.73.1 has no dialog of its own: an approval extension asks with `ctx.ui.select(title, options)` (its
 * example permission gate: `⚠️ Dangerous command:` / the command / `Allow?` / `→ Yes` / `  No`), drawn between two
 * rules above `↑↓ navigate  enter select  escape/ctrl+c cancel`. The title's first line stands for the tool.
 */
const PI_SELECT: DialogRules = {
  source: 'pi 0.73.1 (ctx.ui.select of an extension)',
  start: /^\s*─{20,}\s*$/,
  end: /↑↓ navigate\s+enter select/,
  listChoice: /^\s*(→)?\s+(\S.*?)\s*$/,
  question: /^\s*(\S.*\?)\s*$/,
  tool: /^\s*(\S.*?):?\s*$/,
  keys: moveAndEnter,
};

/**
 * A2 Codex 0.169.0: the question first (`Would you like to run the following command?`, `… make the following
 * edits?`, `… grant these permissions?`, `Do you want to approve network access to "<host>"?`, `<server> needs your
 * approval.`), then `Key: value` lines and the command (`$ …`), then numbered choices with `›` at the highlighted
 * one, each ending in its shortcut (`(y)`, `(esc)`), over `Press enter to confirm or esc to cancel`. An edit's diff
 * is not in the dialog: it is the `• Edited <file> (+n -m)` cell right above it, which the card shows too.
 */
const CODEX: DialogReader = { source: 'codex-cli 0.169.0', read: (text) => readCodex(text), keys: moveAndEnter };

export const DIALOG_RULES: Readonly<Record<string, DialogRules | DialogReader>> = {
  A1: CLAUDE_CODE,
  A2: CODEX,
  A3: GEMINI_CLI,
  A4: PI_SELECT,
  A5: OPENCODE,
};

/** FNV-1a, 32 bits, from `seed`: two of them make the fingerprint (change detection, not a secret). */
function fnv(text: string, seed: number): string {
  let h = seed;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

export function fingerprintOf(agent: string, prompt: Reading): string {
  const text = JSON.stringify([agent, prompt.tool, prompt.detail, prompt.question, prompt.choices, prompt.highlighted]);
  return `${fnv(text, 0x811c9dc5)}${fnv(text, 0x050c5d1f)}`;
}

/** A line without its borders: each pattern removed, again and again while one matches (boxes nest). */
const stripLine = (line: string, strip: readonly RegExp[] | undefined): string => {
  let out = line.replace(/\s+$/, '');
  for (let before = ''; before !== out; ) {
    before = out;
    for (const re of strip ?? []) out = out.replace(re, '').replace(/\s+$/, '');
  }
  return out;
};

/** Drops blank lines at both ends and the indentation all lines share. */
function tidy(lines: readonly string[]): string[] {
  const out = [...lines];
  while (out.length && out[0]!.trim() === '') out.shift();
  while (out.length && out[out.length - 1]!.trim() === '') out.pop();
  const indent = Math.min(...out.filter((l) => l.trim()).map((l) => /^\s*/.exec(l)![0].length));
  return out.map((l) => l.slice(Number.isFinite(indent) ? indent : 0));
}

/** The dialog of a screen read by `rules`, or null when its parts are not all there. */
function readDialog(rules: DialogRules | DialogReader, text: string): Reading | null {
  if ('read' in rules) return rules.read(text);
  const all = text.split('\n');
  if (rules.end) return readList(rules, all);
  const startAt = all.findLastIndex((l) => rules.start.test(l));
  if (startAt < 0) return null;
  const lines = all.slice(startAt).map((l) => stripLine(l, rules.strip));
  // the title: on the start line after the marker (A5), or the first non-blank line after it
  let toolAt = lines.findIndex((l, i) => i > 0 && l.trim() !== '' && !rules.question.test(l));
  if (rules === OPENCODE) toolAt = lines.findIndex((l) => rules.tool.test(l));
  // a title's parts are set apart by wide gaps (`? Shell  touch x`): one line, parts joined by ` · `
  const tool =
    toolAt >= 0
      ? rules.tool
          .exec(lines[toolAt]!)?.[1]
          ?.split(/\s{2,}/)
          .join(' · ')
      : undefined;
  const questionAt = lines.findIndex((l, i) => i > (rules === OPENCODE ? -1 : toolAt) && rules.question.test(l));
  if (!tool || questionAt < 0) return null;
  const question = rules.question.exec(lines[questionAt]!)![1]!;
  const choices: ApprovalChoice[] = [];
  let highlighted: number | null = null;
  let lastChoiceAt = -1;
  lines.forEach((l, i) => {
    if (rules.choice && i > questionAt) {
      const m = rules.choice.exec(l);
      if (m && Number(m[2]) === choices.length + 1) {
        if (m[1]) highlighted = choices.length;
        choices.push({ label: m[3]!, always: ALWAYS.test(m[3]!) });
        lastChoiceAt = i;
      }
    } else if (rules.choiceRow?.line.test(l) && choices.length === 0) {
      const row = l.trim().split(rules.choiceRow.end)[0]!;
      for (const label of row.split(rules.choiceRow.split)) choices.push({ label, always: ALWAYS.test(label) });
      lastChoiceAt = i;
    }
  });
  if (choices.length < 2) return null;
  // the detail: between the title and the question (A1, A3), or between the title and the choices (A5)
  const detailEnd = rules === OPENCODE ? lastChoiceAt : questionAt;
  const detail = tidy(
    lines.slice(toolAt + 1, detailEnd).filter((l) => !rules.skip?.some((re) => re.test(l)) && !/^\s*[╭╰]/.test(l)),
  );
  return { readable: true, tool, detail, question, choices, highlighted };
}

/** A dialog whose choices are a list above its hints (A4): see PI_SELECT. */
function readList(rules: DialogRules, all: readonly string[]): Reading | null {
  const endAt = all.findLastIndex((l) => rules.end!.test(l));
  if (endAt < 0) return null;
  const startAt = all.slice(0, endAt).findLastIndex((l) => rules.start.test(l));
  if (startAt < 0) return null;
  const lines = all.slice(startAt + 1, endAt).map((l) => l.replace(/\s+$/, ''));
  const choices: ApprovalChoice[] = [];
  let highlighted: number | null = null;
  let at = lines.length - 1;
  while (at >= 0 && lines[at]!.trim() === '') at--;
  const block: { label: string; marked: boolean }[] = [];
  for (; at >= 0; at--) {
    const m = rules.listChoice!.exec(lines[at]!);
    // a choice line is indented under the title: a line flush left, or blank, ends the block
    if (!m || !/^\s{2,}|^\s*→/.test(lines[at]!)) break;
    block.unshift({ label: m[2]!, marked: m[1] !== undefined });
  }
  block.forEach((c, i) => {
    if (c.marked) highlighted = i;
    choices.push({ label: c.label, always: ALWAYS.test(c.label) });
  });
  const head = lines.slice(0, at + 1);
  const titleAt = head.findIndex((l) => l.trim() !== '');
  if (choices.length < 2 || titleAt < 0) return null;
  const tool = rules.tool.exec(head[titleAt]!)?.[1];
  const questionAt = head.findLastIndex((l) => rules.question.test(l));
  const question = questionAt > titleAt ? rules.question.exec(head[questionAt]!)![1]! : '';
  const detail = tidy(head.slice(titleAt + 1, questionAt > titleAt ? questionAt : head.length));
  return tool ? { readable: true, tool, detail, question, choices, highlighted } : null;
}

const CODEX_END = /^\s*Press enter to confirm or esc to cancel\s*$/;
const CODEX_QUESTION = /^\s*((?:Would you like to|Do you want to) .+\?|\S.* needs your approval\.)\s*$/;
const CODEX_CHOICE = /^\s*(›)?\s*(\d+)\.\s+(.+?)\s*$/;
/** The shortcut after a choice's words: `(y)`, `(esc)`, `(shift+tab)`. */
const CODEX_SHORTCUT = /\s+\((?:[a-z]|esc|[a-z]+\+[a-z]+)\)$/;
/** The history cell of a proposed edit, right above its dialog. */
const CODEX_EDIT_CELL = /^•\s+(?:Edited|Added|Deleted)\s+(\S+)\s+\(\+\d+\s+-\d+\)$/;

/** What Codex asks about, named from its question (the dialog has no title). */
function codexTool(question: string, detail: readonly string[]): string {
  if (/run the following command/.test(question)) return 'Shell command';
  if (/make the following edits/.test(question)) {
    const file = detail.map((l) => /^Destination:\s*(.+)$/.exec(l)?.[1]).find(Boolean);
    return file ? `Edit ${file.split('/').pop()}` : 'Edit files';
  }
  if (/network access/.test(question)) return 'Network access';
  if (/grant these permissions/.test(question)) return 'Permissions';
  if (/send input/.test(question)) return 'Terminal input';
  const server = /^(\S.*) needs your approval\.$/.exec(question)?.[1];
  return server ? `MCP · ${server}` : 'Codex';
}

/** Whether a choice's line (its words after the number) is one word: a wrap that cut a word too long for it. */
const oneWord = (line: string) => !/\s/.test(line.trim().replace(/^(›\s*)?\d+\.\s+/, ''));

/**
 * A2 Codex's dialog: see CODEX. Read from the bottom, so that nothing the model wrote can pose as part of it: the
 * choices are the numbered block right above the hints (1..n, exactly one `›`); the question is the one line that
 * asks, between the last line of the conversation (text at column 0: `•`, `›`, `■`) and the choices, or the
 * dialog is not read. A choice wrapped over lines is joined back: without a space after a hyphen or a line that is
 * one word (the wrap cut a word too long for the line), else with one.
 */
function readCodex(text: string): Reading | null {
  const all = text.split('\n').map((l) => l.replace(/\s+$/, ''));
  const endAt = all.findLastIndex((l) => CODEX_END.test(l));
  if (endAt < 0) return null;
  const firstChoiceAt = all.slice(0, endAt).findLastIndex((l) => /^\s*(›\s*)?1\.\s+\S/.test(l));
  if (firstChoiceAt < 0) return null;
  const labels: string[] = [];
  let highlighted: number | null = null;
  let marks = 0;
  for (let i = firstChoiceAt; i < endAt; i++) {
    const line = all[i]!;
    const m = CODEX_CHOICE.exec(line);
    if (m && Number(m[2]) === labels.length + 1) {
      if (m[1]) [highlighted, marks] = [labels.length, marks + 1];
      labels.push(m[3]!);
    } else if (m && /^\s*›/.test(line))
      return null; // a marked line out of order: not a dialog svc knows
    else if (line.trim() !== '') {
      const before = all[i - 1]!;
      const joiner = /\w-$/.test(before) || oneWord(before) ? '' : ' ';
      labels[labels.length - 1] += joiner + line.trim();
    }
  }
  if (labels.length < 2 || marks !== 1) return null;
  const choices = labels.map((raw) => {
    const label = raw.replace(CODEX_SHORTCUT, '');
    return { label, always: ALWAYS.test(label) };
  });
  const historyAt = all.slice(0, firstChoiceAt).findLastIndex((l) => /^\S/.test(l));
  const asks = all
    .map((l, i) => ({ l, i }))
    .filter(({ l, i }) => i > historyAt && i < firstChoiceAt && CODEX_QUESTION.test(l));
  if (asks.length !== 1) return null;
  const questionAt = asks[0]!.i;
  const question = CODEX_QUESTION.exec(all[questionAt]!)![1]!;
  const dialog = tidy(all.slice(questionAt + 1, firstChoiceAt).filter((l) => l.trim() !== ''));
  // an edit: its diff is the conversation's last cell (`• Edited <file> (+n -m)`), when it names the destination
  let cell: string[] = [];
  const destination = dialog.map((l) => /^Destination:\s*(.+)$/.exec(l)?.[1]).find(Boolean);
  const header = historyAt >= 0 ? CODEX_EDIT_CELL.exec(all[historyAt]!) : null;
  if (/make the following edits/.test(question) && destination && header) {
    const file = header[1]!;
    if (destination === file || destination.endsWith(`/${file}`)) {
      const blank = all.findIndex((l, i) => i > historyAt && l.trim() === '');
      cell = all
        .slice(historyAt, blank < 0 ? questionAt : Math.min(blank, questionAt))
        .filter((l) => !/^\s*\+ Show details$/.test(l));
    }
  }
  const detail = [...tidy(cell.map((l) => l.replace(/^•\s/, '  '))), ...dialog];
  return { readable: true, tool: codexTool(question, dialog), detail, question, choices, highlighted };
}

/**
 * The approval dialog on a screen of agent `agent` (a registry id). Call it for a screen whose state reads
 * `awaiting_approval`. An agent with trusted screen rules whose dialog is not readable this time gets an unread
 * prompt (`readable: false`): its fingerprint is of the last lines of the screen, where the dialog
 * is, so keys still need the prompt the phone showed. Null for an agent with no trusted screen rules.
 */
export function readApproval(agent: string, screen: { text: string }): ApprovalPrompt | null {
  // the lines the listener's inventory reads: the card, the last look before typing and the app's Watch (which
  // have the whole pane) all read one dialog the same way, so one prompt has one fingerprint
  const text = lastScreenLines(screen.text, SCREEN_LINES);
  const rules = DIALOG_RULES[agent];
  const read = rules ? readDialog(rules, text) : null;
  if (read) return { agent, ...read, fingerprint: fingerprintOf(agent, read) };
  // not readable this time (a layout the rules do not know): the last lines stand for it
  const screenRules = SCREEN_RULES[agent];
  if (!screenRules?.trusted) return null;
  const unread = {
    readable: false,
    tool: '',
    detail: lastLines(text, screenRules.lines),
    question: '',
    choices: [],
    highlighted: null,
  };
  return { agent, ...unread, fingerprint: fingerprintOf(agent, unread) };
}

/** The keys that choose choice `index` of `prompt` on its agent's dialog; [] when svc cannot answer it. */
export function approvalKeys(prompt: ApprovalPrompt, index: number): string[] {
  const rules = DIALOG_RULES[prompt.agent];
  if (!rules || !prompt.readable || !Number.isInteger(index) || index < 0 || index >= prompt.choices.length) return [];
  return rules.keys(index, prompt.choices.length, prompt.highlighted);
}

/** Which choice of a prompt its answer names, and the keys for it. */
export type AnswerDecision = { ok: true; keys: string[] } | { ok: false; code: 'prompt_changed' | 'bad_key_name' };

/**
 * May input reach a session whose fresh reading (taken after the input arrived) shows `onScreen` (null: no approval
 * prompt)? An answer needs that very prompt (same fingerprint: same dialog, same highlight) and a readable one;
 * other keys, while a prompt shows, need its fingerprint too (the sender saw that prompt). Pure, spec 7.
 */
export function decideApprovalInput(
  input: { kind: 'type'; fingerprint?: string } | { kind: 'answer'; fingerprint: string; choice: number },
  onScreen: ApprovalPrompt | null,
): AnswerDecision | { ok: true; keys: null } {
  if (input.kind === 'answer') {
    if (!onScreen || onScreen.fingerprint !== input.fingerprint || !onScreen.readable)
      return { ok: false, code: 'prompt_changed' };
    const keys = approvalKeys(onScreen, input.choice);
    return keys.length > 0 ? { ok: true, keys } : { ok: false, code: 'bad_key_name' };
  }
  if (onScreen && input.fingerprint !== onScreen.fingerprint) return { ok: false, code: 'prompt_changed' };
  return { ok: true, keys: null };
}

/**
 * How long after the check on the fresh reading the screen is read once more, right before an approval is typed:
 * a key pressed at the keyboard just before (Esc, an arrow) has reached the program but may not be drawn yet; a
 * prompt still the same after this is the one the person answered. Measured: Claude Code 2.1.197 redraws an Esc
 * within about 100 ms (test/e2e/approvals.realAgents.test.ts found the race without it).
 */
export const APPROVAL_CONFIRM_MS = 300;

/** The error an answer's last look throws when the prompt is no longer the one answered. */
export class PromptChangedError extends Error {
  readonly code = 'prompt_changed' as const;
  constructor() {
    super('the approval prompt changed before the answer was typed');
  }
}

/** Whether a screen still shows the prompt of `fingerprint` (of agent `agent`). */
export function stillShows(agent: string, fingerprint: string, screen: { text: string }): boolean {
  return readApproval(agent, screen)?.fingerprint === fingerprint;
}
