/**
 * Reading an agent's state from its pane, as data: per agent, ordered rules matched against the last non-blank
 * lines of `tmux capture-pane -p` (and the pane title, `#{pane_title}`, which several agents keep in step with
 * their state). Practice from `research/agent-screens.md`: read only the bottom of the pane; an approval cue
 * outranks a busy cue, which outranks an idle cue; a new state counts only once every reading for 250 ms showed
 * it; idle only once the screen has stopped changing for 500 ms.
 *
 * A rule set is `trusted` only when fixtures captured from the real program (`test/fixtures/screens/<id>/`) back
 * every state it claims; `test/unit/agents/screens.test.ts` holds each fixture to its state. An untrusted rule set, or
 * none, reads `unknown`: a state with no trustworthy cue is never guessed. How each fixture was captured:
 * `test/fixtures/screens/README.md`; what each agent looks like: `docs/agents.md`.
 */

export type AgentState = 'idle' | 'working' | 'awaiting_approval' | 'unknown';
/** The states a rule can claim. */
export type RuleState = Exclude<AgentState, 'unknown'>;
/** A reading: a state, or `frozen` when a view that hides the state is open (the previous state stands). */
export type ScreenReading = AgentState | 'frozen';

export interface ScreenRule {
  state: RuleState;
  /** Matches when any of these matches one of the lines read (each line on its own). */
  any?: readonly RegExp[];
  /** Matches when any of these matches the pane title (`#{pane_title}`). */
  title?: readonly RegExp[];
}

export interface ScreenRules {
  /** Backed by fixtures of the real program for every state its rules claim (see the file comment). */
  trusted: boolean;
  /** Program and version the rules were written against (the fixtures' `meta.json`). */
  source: string;
  /** How many non-blank lines from the bottom are read. */
  lines: number;
  rules: readonly ScreenRule[];
  /** A view that hides the state (Claude Code's transcript view): while one shows, the reading is `frozen`. */
  freeze?: readonly RegExp[];
}

export interface Screen {
  /** `tmux capture-pane -p` output. */
  text: string;
  /** `#{pane_title}`; tmux shows the host name until a program sets a title. */
  title?: string | undefined;
}

export const DEFAULT_LINES = 12;
/** A rule claiming idle is believed only after the screen has not changed for this long. */
export const IDLE_QUIET_MS = 500;
/**
 * A new state is accepted once every reading for this long has shown it (and at least two readings did): a
 * redraw that shows something else for a moment is never reported, a real change is within about a second.
 */
export const CONFIRM_MS = 250;

/** Outranking order: the first state any rule claims wins. */
const PRECEDENCE: readonly RuleState[] = ['awaiting_approval', 'working', 'idle'];

/** A braille spinner frame (U+2800–U+28FF) leading the title: Claude Code and Codex while they work. */
const BRAILLE_SPINNER_TITLE = /^[\u2800-\u28ff]\s/;

// ---------------------------------------------------------------------------------------------------------------
// The rules. Every cue below was seen in a fixture unless its comment says otherwise.

/** A1 Claude Code 2.1.197 (fixtures test/fixtures/screens/A1). */
const CLAUDE_CODE: ScreenRules = {
  trusted: true,
  source: 'claude 2.1.197',
  lines: 14,
  freeze: [/Showing detailed transcript/i, /ctrl\+o to toggle/i],
  rules: [
    {
      state: 'awaiting_approval',
      any: [
        /Do you want to proceed\?/,
        /Esc to cancel · Tab to amend/,
        // research/agent-screens.md (edit and create dialogs), not in a fixture
        /Do you want to (?:make this edit|create|allow)/,
      ],
    },
    {
      state: 'working',
      any: [
        /\besc to interrupt\b/i,
        // older releases (research notes)
        /\bctrl\+c to interrupt\b/i,
        // the spinner line with elapsed time and tokens: `✢ Deliberating… (3s · ↓ 11 tokens)`
        /^\s*\S\s+\S.*…\s+\(\d+m?\s?\d*s\s·/,
      ],
      title: [BRAILLE_SPINNER_TITLE],
    },
    { state: 'idle', any: [/\? for shortcuts/] },
  ],
};

/** A2 Codex 0.169.0 (fixtures test/fixtures/screens/A2). */
const CODEX: ScreenRules = {
  trusted: true,
  source: 'codex-cli 0.169.0',
  lines: 14,
  rules: [
    {
      state: 'awaiting_approval',
      any: [/Would you like to run the following command\?/, /Press enter to confirm or esc to cancel/i],
      title: [/Action Required/],
    },
    {
      state: 'working',
      // `• Working (4s • esc to interrupt)`; while the reply streams the status line is gone and only the title's
      // spinner tells (working-2)
      any: [/\besc to interrupt\b/i],
      title: [BRAILLE_SPINNER_TITLE],
    },
    { state: 'idle', any: [/\? for shortcuts/] },
  ],
};

/** A3 Gemini CLI 0.61.0 (fixtures test/fixtures/screens/A3). */
const GEMINI: ScreenRules = {
  trusted: true,
  source: 'gemini 0.61.0',
  lines: 14,
  rules: [
    {
      state: 'awaiting_approval',
      any: [
        /Allow execution of/,
        // research/agent-screens.md, not in a fixture
        /Waiting for user confirmation/,
        /Apply this change\?/,
      ],
      title: [/Action Required/],
    },
    { state: 'working', any: [/\(esc to cancel, \d/, /\besc to cancel\b/], title: [/Working…/] },
    { state: 'idle', any: [/Type your message/], title: [/^\s*◇\s+Ready\b/] },
  ],
};

/**
 * A4 pi 0.73.1 (fixtures test/fixtures/screens/A4). pi has no approval dialog of its own; an approval extension's
 * dialog (`ctx.ui.select`) reads as awaiting approval.
 */
const PI: ScreenRules = {
  trusted: true,
  source: 'pi 0.73.1',
  lines: 12,
  rules: [
    // a dialog of an approval extension (`ctx.ui.select`, e.g. its example permission gate): fixture
    // awaiting_approval-1, where the `Working...` line goes on above it
    { state: 'awaiting_approval', any: [/↑↓ navigate\s+enter select\s+escape\/ctrl\+c cancel/] },
    { state: 'working', any: [/^\s*\S?\s*Working\.\.\.\s*$/] },
    // pi's footer (context use `0.0%/128k`) is on every screen; with no working cue it is idle
    { state: 'idle', any: [/\d+(?:\.\d+)?%\/\d+k\b/] },
  ],
};

/** A5 opencode 1.18.33 (fixtures test/fixtures/screens/A5). */
const OPENCODE: ScreenRules = {
  trusted: true,
  source: 'opencode 1.18.33',
  lines: 14,
  rules: [
    { state: 'awaiting_approval', any: [/Permission required/, /Allow once/] },
    { state: 'working', any: [/\besc interrupt\b/] },
    { state: 'idle', any: [/ctrl\+p commands/] },
  ],
};

/**
 * A9 Qwen Code 0.24.4 (fixtures test/fixtures/screens/A9), a fork of Gemini CLI with its own screens. It writes its
 * state before the title: `◐︎ Qwen - proj` while it works, `✳︎ Qwen - proj` while a dialog waits, nothing at idle.
 */
const QWEN_CODE: ScreenRules = {
  trusted: true,
  source: 'qwen 0.24.4',
  lines: 14,
  rules: [
    {
      state: 'awaiting_approval',
      any: [
        /Allow execution of/,
        /Waiting for user confirmation/,
        /Yes, allow once/,
        // the edit dialog's question in its strings, not in a fixture
        /Apply this change\?/,
      ],
      title: [/^✳/],
    },
    {
      state: 'working',
      // `⠋ Crafting a response… (3s · ↓ 13 tokens · esc to cancel)`, and the hint under the input line
      any: [/\besc to cancel\)/, /Enter to steer · Ctrl\+Q to queue/],
      title: [/^◐/],
    },
    // the approval-mode line under the input (`⏸ Ask permissions (shift + tab to cycle)`, `YOLO mode …`), on every
    // screen but a dialog's; `(tab to cycle)` on Windows (its strings)
    { state: 'idle', any: [/\((?:shift \+ )?tab to cycle\)/] },
  ],
};

/** Rules by agent id. An agent missing here has no rules: `unknown`. */
export const SCREEN_RULES: Readonly<Record<string, ScreenRules>> = {
  A1: CLAUDE_CODE,
  A2: CODEX,
  A3: GEMINI,
  A4: PI,
  A5: OPENCODE,
  A9: QWEN_CODE,
};

// ---------------------------------------------------------------------------------------------------------------
// Reading

/**
 * Lines of each agent pane the listener reads (the last ones, trailing blank lines dropped: `lastScreenLines`): the
 * screen rules look at the last dozen non-blank ones, an approval dialog is read within them
 * (core/agents/approvals.ts), whatever more of the pane another reader has.
 */
export const SCREEN_LINES = 40;

/** The last `n` non-blank lines of a capture, trailing spaces dropped. */
export function lastLines(text: string, n: number): string[] {
  const lines = text
    .split('\n')
    .map((l) => l.replace(/\s+$/, ''))
    .filter((l) => l.trim() !== '');
  return lines.slice(Math.max(0, lines.length - n));
}

const nonSticky = (re: RegExp): RegExp =>
  re.global || re.sticky ? new RegExp(re.source, re.flags.replace(/[gy]/g, '')) : re;

const anyLine = (patterns: readonly RegExp[] | undefined, lines: readonly string[]): boolean =>
  !!patterns?.some((p) => {
    const re = nonSticky(p);
    return lines.some((l) => re.test(l));
  });

/** Does a rule match this screen (its lines read from the bottom, and the title)? */
export function ruleMatches(rule: ScreenRule, lines: readonly string[], title: string | undefined): boolean {
  if (anyLine(rule.any, lines)) return true;
  return title !== undefined && anyLine(rule.title, [title]);
}

/**
 * The state a screen shows, by `rules` (an agent's `screenRules`): `frozen` while a view that hides the state is
 * open; else the highest-ranked state any rule claims; `unknown` when none does or the rules are not trusted.
 */
export function readScreen(rules: ScreenRules | undefined, screen: Screen): ScreenReading {
  if (!rules?.trusted) return 'unknown';
  const lines = lastLines(screen.text, rules.lines || DEFAULT_LINES);
  if (anyLine(rules.freeze, lines)) return 'frozen';
  const claimed = new Set(rules.rules.filter((r) => ruleMatches(r, lines, screen.title)).map((r) => r.state));
  return PRECEDENCE.find((s) => claimed.has(s)) ?? 'unknown';
}

/** FNV-1a (32-bit) of a screen, as hex: cheap change detection for the idle rule, no crypto needed. */
export function screenHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

// ---------------------------------------------------------------------------------------------------------------
// Debounce

export interface DebounceState {
  /** The accepted state: what the phone is shown. */
  state: AgentState;
  /** A different state read on the last reading(s), not yet accepted. */
  candidate: AgentState | null;
  /** How many readings in a row have read `candidate`, and when the first of them was taken (ms). */
  count: number;
  since: number;
  /** Hash of the last screen seen, and when it last changed (ms). */
  screenHash: string | null;
  changedAt: number;
}

export function initialDebounce(now: number): DebounceState {
  return { state: 'unknown', candidate: null, count: 0, since: now, screenHash: null, changedAt: now };
}

/**
 * One reading: the state read from the screen (`reading`), at `now` (ms), with the hash of the screen
 * (`screenHash()` of the captured text). A state different from the accepted one is accepted once every reading
 * for `CONFIRM_MS` showed it (two at least) — and `idle` only once the screen has not changed for `IDLE_QUIET_MS`.
 * In time, not in readings: the same rule holds for readings 5 s apart (the poll) and 250 ms apart (a screen that
 * changed, `screenWatch`). `frozen` keeps the accepted state and forgets any candidate.
 */
export function nextAgentState(prev: DebounceState, reading: ScreenReading, now: number, hash: string): DebounceState {
  const changed = hash !== prev.screenHash;
  const base = { screenHash: hash, changedAt: changed ? now : prev.changedAt };
  if (reading === 'frozen' || reading === prev.state)
    return { ...base, state: prev.state, candidate: null, count: 0, since: now };
  const again = prev.candidate === reading;
  const count = again ? prev.count + 1 : 1;
  const since = again ? prev.since : now;
  const quiet = !changed && now - base.changedAt >= IDLE_QUIET_MS;
  if (count >= 2 && now - since >= CONFIRM_MS && (reading !== 'idle' || quiet))
    return { ...base, state: reading, candidate: null, count: 0, since: now };
  return { ...base, state: prev.state, candidate: reading, count, since };
}

/**
 * Whether a quick look at the agents' screens (`screenWatch`) calls for a full reading: a screen that is not the
 * one the last reading saw, or a state waiting to be confirmed (its time may have come). `watched` pairs each
 * session with its agent pane; `screens` is what the look saw, by pane id.
 */
export function readingDue(
  watched: readonly { session: string; pane: string }[],
  screens: Readonly<Record<string, string>>,
  debounce: Readonly<Record<string, DebounceState>>,
): boolean {
  return watched.some(({ session, pane }) => {
    const d = debounce[session];
    const text = screens[pane];
    if (!d || text === undefined) return false;
    return d.candidate !== null || screenHash(text) !== d.screenHash;
  });
}
