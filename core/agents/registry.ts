/**
 * The agent registry: what svc knows of each terminal coding agent, as data (spec 4.4 numbers them A1..A16, in
 * this order; the order is stable). Per agent: its subcommand and command, display name, the process names tmux
 * shows for it, and capabilities from the spec — names its own session (2.2), accepts a scheduled prompt (4.8.6),
 * remote-origin hook (4.13), live timeline source (4.12), approval reading (4.11.2) — plus its screen rules
 * (`core/agents/screens.ts`) and submit strategy. `docs/agents.md` says, per agent, what was seen of the real program.
 *
 * Submit strategies (how a typed message is made to really submit) come from the field notes
 * (`research/field-notes.md`, "Injection: what goes wrong"):
 * - Codex takes an Enter within 120 ms of a paste as a newline (`PASTE_ENTER_SUPPRESS_WINDOW` in its TUI);
 *   it also treats >= 3 characters arriving < 8 ms apart as a paste, so `send-keys -l` + Enter never submits.
 * - Gemini CLI has been seen to swallow the Enter that follows a paste: verify and retry once.
 * - Multi-line text typed with `send-keys -l` submits at the first newline: such text is always pasted.
 * The `inputLine` patterns of A1-A3 are checked against screens captured from the real programs
 * (`test/fixtures/screens/`, `test/unit/agents/registry.test.ts`); a pattern that finds nothing makes the check answer
 * "unknown" (no retry Enter), never a guess. Agents whose input line no fixture shows have none (unverified).
 */
import { startProgramName } from '../tmux/startCommand.js';
import { SCREEN_RULES, type ScreenRules } from './screens.js';

export type SubmitKind = 'literal' | 'paste';

export interface SubmitStrategy {
  /** `literal`: `send-keys -l` + Enter in one call (spec 4.7). `paste`: one bracketed paste, wait, Enter. */
  kind: SubmitKind;
  /** Wait between the text landing and the Enter. */
  enterDelayMs: number;
  /**
   * The agent's input line: the LAST screen line matching it is the input, capture group 1 its content.
   * Without it a submit cannot be checked (`'unverified'`).
   */
  inputLine?: RegExp;
  /**
   * The input line counts only with a horizontal rule (a line of `─`) at most this many lines above it: above that
   * rule is the transcript, whose echo of a sent message looks just like the input line (Claude Code `❯ …`,
   * Gemini CLI ` > …`). A screen whose last match has no rule there shows no input line (a dialog replaced it).
   */
  inputBelowRule?: number;
  /**
   * A line that, as the next non-blank line below a match, shows the match is the transcript's echo of a sent
   * message and not the input line (Codex draws its status, `Working (… esc to interrupt)` or `Waiting for startup
   * · esc cancel`, above its composer; a message sent while it starts up shows that status right below its echo,
   * with no composer on screen).
   */
  inputEchoAbove?: RegExp;
  /** How long the looks after an Enter wait for the input to empty (they stop at the first that settles it).
   *  Default `DEFAULT_VERIFY_DELAY_MS`. */
  verifyDelayMs?: number;
  /**
   * Send one more Enter when two looks after the first Enter both show our text still in the input line. Only for
   * an agent seen to swallow an Enter (Gemini CLI after a paste): the looks cannot tell a swallowed Enter from a
   * taken one the agent has not redrawn yet, and an Enter that lands in a dialog drawn a moment later answers it.
   */
  retryEnter?: true;
  /** How long the looks after the first Enter wait before the one retry Enter. Default `DEFAULT_RETRY_DELAY_MS`. */
  retryDelayMs?: number;
  /** The agent's screen rules (`agentSubmit` adds its trusted ones): a check that reads a prompt stops. */
  screen?: ScreenRules;
}

/**
 * How long a push for an agent with `typeAfterTurn` waits for its turn to end before it is typed anyway (the agent
 * then queues it), when the relay's replay window does not say less: the relay's default window. A long turn gets the
 * message within that time, and a screen rule that misreads a finished turn cannot hold messages for ever.
 */
export const TURN_WAIT_MS = 120_000;

export interface AgentSpec {
  /** Spec numbering: `A1`..`A16`; `generic` for a program the registry does not know. */
  id: string;
  /** Display name for picker labels (`<project> · <name>`). */
  name: string;
  /** `svc <subcommand>` (spec 4.4: equal to the agent's own command name, except `cc`). */
  subcommand: string;
  /** The program the wrapper runs. */
  command: string;
  /**
   * What `#{pane_current_command}` shows while the agent is in front, besides `command`. An agent run by an
   * interpreter shows as `node` (see `INTERPRETERS`): `agentForPane` then goes by the pane's start command.
   */
  processNames: readonly string[];
  /** Spec 2.2: the agent names the session itself; the picker label is `<that name> · <Agent>`. `null`: it does not. */
  namesOwnSession: SessionNaming | null;
  /** Spec 4.8.6: `schedule add … --prompt` is allowed (A1-A4 only). */
  acceptsScheduledPrompt: boolean;
  /** Spec 4.13: the prompt-submit hook that sees a remote-origin marker. */
  hookKind: HookKind;
  /** Spec 4.12: where the live timeline is read. */
  timelineSource: TimelineSource;
  /** Spec 4.11.2: how an approval prompt's content is read for the phone. */
  approvalReading: ApprovalReading;
  /** How its state is read from its pane (`core/agents/screens.ts`); `null`: no rules, always `unknown`. */
  screenRules: ScreenRules | null;
  submit: SubmitStrategy;
  /**
   * A message for it is typed only once its screen no longer reads `working` (the push waits in its session actor,
   * at most what is left of the relay's replay window): for an agent seen to lose a message typed during its turn. Claude Code queues such a
   * message, draws it in its transcript, and sometimes never sends it to the model when its turn ends at that moment
   * (docs/agents.md, A1).
   */
  typeAfterTurn?: true;
}

/**
 * An agent that names its own session does it with the terminal title escape (OSC 0/2), which tmux keeps as
 * `#{pane_title}` (read in the same inventory query as the panes). `pattern` takes the name out of the title
 * (capture group 1); a title it does not match (the host name tmux shows before any title is set, the agent's
 * default title) names nothing. `verified`: the pattern was checked against titles set by the real program.
 */
export interface SessionNaming {
  from: 'pane_title';
  pattern: RegExp;
  verified: boolean;
}

export type HookKind =
  /** A1: `UserPromptSubmit` hook shipped in the service's plugin (`svc-remote.sh`). */
  | 'plugin-user-prompt-submit'
  /** A2: `UserPromptSubmit` hook entry written by `svc install`. */
  | 'user-prompt-submit'
  /** A3: `BeforeAgent` hook entry written by `svc install`. */
  | 'before-agent'
  /** A4: a `before_agent_start` extension installed by `svc install`. */
  | 'before-agent-start-extension'
  /** No hook: remote mode only through an `svc_ask` answer (4.13.4). */
  | 'none';

export type TimelineSource = 'transcript' | 'database' | 'none';

/** `screen`: read from the pane; `extension`: reported by an approval extension (A4); `none`: not read. */
export type ApprovalReading = 'screen' | 'extension' | 'none';

/**
 * Claude Code's input line `❯ …` between two rules (2.1.197; older `│ > … │` box), Gemini's ` >   …` (0.61.0,
 * older `│ > … │`). Both checked against captured screens (test/fixtures/screens/A1, A3).
 */
const BOXED_PROMPT = /^\s*(?:[│┃|]\s*)?[>❯]\s?(.*?)\s*(?:[│┃|])?\s*$/;
/** Codex's composer line starts with `›` (0.169.0 shows the placeholder `› Ask Codex to do anything` when empty). */
const CODEX_PROMPT = /^\s*›\s?(.*?)\s*$/;
/** Codex's status line, drawn above its composer: `◦ Working (3s • esc to interrupt)`, `Waiting for startup · esc cancel`. */
const CODEX_STATUS = /\besc (?:to interrupt|cancel)\b/;

/** A braille spinner frame or a star glyph the agent puts before its title (the name never starts with one). */
const TITLE_GLYPHS = '(?:[\\u2800-\\u28ff✳✻✽✶✢·*]\\s+)?(?![\\u2800-\\u28ff✳✻✽✶✢·*]\\s)';

/** Paste as one unit, wait, Enter, unverified: for agents whose input line no captured screen shows. */
const PASTE_UNVERIFIED: SubmitStrategy = { kind: 'paste', enterDelayMs: 200 };

/** The capabilities no-one has shown for an agent yet (A6-A16 mostly): nothing beyond injection. */
const PLAIN = {
  namesOwnSession: null,
  acceptsScheduledPrompt: false,
  hookKind: 'none',
  timelineSource: 'none',
  approvalReading: 'none',
  screenRules: null,
  submit: PASTE_UNVERIFIED,
} as const satisfies Partial<AgentSpec>;

export const AGENTS: readonly AgentSpec[] = [
  {
    id: 'A1',
    name: 'Claude Code',
    subcommand: 'cc',
    command: 'claude',
    // 2.x runs a native binary called `claude` (tmux shows `claude`)
    processNames: ['claude'],
    // `✳ Claude Code` until the first prompt, then `✳ <title the model chose>` (braille spinner while working)
    namesOwnSession: {
      from: 'pane_title',
      pattern: new RegExp(`^${TITLE_GLYPHS}(?!Claude Code$)(\\S.*?)\\s*$`),
      verified: true,
    },
    acceptsScheduledPrompt: true,
    hookKind: 'plugin-user-prompt-submit',
    timelineSource: 'transcript',
    approvalReading: 'screen',
    screenRules: SCREEN_RULES.A1 ?? null,
    // input line right below a rule (test/fixtures/screens/A1). The real 2.1.197 submitted every Enter 0-100 ms
    // after a paste, quiet and loaded (bench/submit.ts, docs/benchmarks.md): 50 ms is the floor plus a margin.
    submit: { kind: 'paste', enterDelayMs: 50, inputLine: BOXED_PROMPT, inputBelowRule: 1 },
    typeAfterTurn: true,
  },
  {
    id: 'A2',
    name: 'Codex',
    subcommand: 'codex',
    command: 'codex',
    // the npm package's launcher is a node script (tmux shows `node`, found by the start command); a native
    // install shows `codex`
    processNames: ['codex'],
    // `<thread title> | <folder>`, with `[ ! ] Action Required | ` (the `!` blinks: `[ . ]`) or a spinner in front; only `<folder>` before
    // the first prompt
    namesOwnSession: {
      from: 'pane_title',
      pattern: new RegExp(`^${TITLE_GLYPHS}(?:\\[ \\S \\] Action Required \\| )?(.+?) \\| [^|]+$`),
      verified: true,
    },
    acceptsScheduledPrompt: true,
    hookKind: 'user-prompt-submit',
    timelineSource: 'transcript',
    approvalReading: 'none',
    screenRules: SCREEN_RULES.A2 ?? null,
    // A bracketed paste: Codex's 120 ms Enter-suppress window is for bursts of typed keys only, an explicit paste
    // clears it. The real 0.169 took every Enter from 10 ms after the paste (`npm run bench:submit`); 50 ms is that
    // floor with a margin, as for Claude Code and pi.
    submit: { kind: 'paste', enterDelayMs: 50, inputLine: CODEX_PROMPT, inputEchoAbove: CODEX_STATUS },
  },
  {
    id: 'A3',
    name: 'Gemini CLI',
    subcommand: 'gemini',
    command: 'gemini',
    // node script: tmux shows `node`
    processNames: ['gemini'],
    // its title is its state (`◇  Ready (proj)`, `✦  Working… (proj)`), not a session name
    namesOwnSession: null,
    acceptsScheduledPrompt: true,
    hookKind: 'before-agent',
    timelineSource: 'transcript',
    approvalReading: 'screen',
    screenRules: SCREEN_RULES.A3 ?? null,
    // a rule, `Shift+Tab to accept edits`, a blank line, then the input line (test/fixtures/screens/A3)
    // An Enter within 40 ms (its own clock) of a paste it does not trust is a newline, not a submit (0.61.0's
    // `recentUnsafePasteTime`; every paste outside the kitty keyboard protocol). The real 0.61.0 swallowed every Enter
    // 0-25 ms after a paste and took every one from 50 ms (bench/submit.ts): 100 ms, counted from when it draws the
    // paste (on a busy machine it reads the paste late, and a wait from the send was not enough). The check + one
    // retry Enter (after 650 ms of looks, as before) covers what is left.
    submit: {
      kind: 'paste',
      enterDelayMs: 100,
      inputLine: BOXED_PROMPT,
      inputBelowRule: 4,
      retryEnter: true,
    },
  },
  {
    id: 'A4',
    name: 'pi',
    subcommand: 'pi',
    command: 'pi',
    // sets its process title: tmux shows `pi`
    processNames: ['pi'],
    // title `π - <folder>`: not a session name
    namesOwnSession: null,
    acceptsScheduledPrompt: true,
    hookKind: 'before-agent-start-extension',
    timelineSource: 'transcript',
    approvalReading: 'extension',
    screenRules: SCREEN_RULES.A4 ?? null,
    // its input line is a bare line between two rules, no prompt glyph: no rule can find it, unverified. The real
    // 0.73.1 submitted every Enter 0-100 ms after a paste (bench/submit.ts): 50 ms.
    submit: { kind: 'paste', enterDelayMs: 50 },
  },
  {
    id: 'A5',
    name: 'opencode',
    subcommand: 'opencode',
    command: 'opencode',
    // a native binary: tmux shows `opencode`
    processNames: ['opencode'],
    // `OC | <session title>`
    namesOwnSession: { from: 'pane_title', pattern: /^OC \| (\S.*?)\s*$/, verified: true },
    acceptsScheduledPrompt: false,
    hookKind: 'none',
    timelineSource: 'database',
    approvalReading: 'screen',
    screenRules: SCREEN_RULES.A5 ?? null,
    // the input box's lines look like the transcript's (`┃  …`): no line rule, unverified
    submit: PASTE_UNVERIFIED,
  },
  {
    id: 'A6',
    name: 'Cursor Agent',
    subcommand: 'cursor-agent',
    command: 'cursor-agent',
    processNames: ['cursor-agent'],
    ...PLAIN,
  },
  {
    id: 'A7',
    name: 'Hermes',
    subcommand: 'hermes',
    command: 'hermes',
    // a Python console script: tmux shows the interpreter (spec 7 `no agent in pane`), found by the start command
    processNames: ['hermes'],
    ...PLAIN,
    // spec 2.2 says it names its session; how its title looks was not seen here (PyPI is not reachable)
    namesOwnSession: { from: 'pane_title', pattern: new RegExp(`^${TITLE_GLYPHS}(\\S.*?)\\s*$`), verified: false },
  },
  { id: 'A8', name: 'Copilot CLI', subcommand: 'copilot', command: 'copilot', processNames: ['copilot'], ...PLAIN },
  {
    id: 'A9',
    name: 'Qwen Code',
    subcommand: 'qwen',
    command: 'qwen',
    // node script: tmux shows `node`
    processNames: ['qwen'],
    ...PLAIN,
    // its title is its state and folder (`◐︎ Qwen - proj`), not a session name
    approvalReading: 'screen',
    screenRules: SCREEN_RULES.A9 ?? null,
    // One paste, one Enter, no check: the Enter, 0-200 ms after the paste, always submitted the real 0.24.4 (it drops
    // one only on Windows or Node < 20, by its source), and while it works the text is queued and sent after the
    // turn (meta.json `submitCheck`). A check + retry Enter does harm here: its input line (`> …` at the left edge)
    // shows a suggested next prompt after a reply, and while it is slow to redraw the check reads that as our text
    // not sent; the retry Enter then accepted the suggestion into the input, and the next message went out as
    // `run the testssvc …` (seen with its process stopped for 0.5-1.2 s, as a loaded machine does). Unverified.
    submit: { kind: 'paste', enterDelayMs: 200 },
  },
  { id: 'A10', name: 'Cline', subcommand: 'cline', command: 'cline', processNames: ['cline'], ...PLAIN },
  { id: 'A11', name: 'Crush', subcommand: 'crush', command: 'crush', processNames: ['crush'], ...PLAIN },
  { id: 'A12', name: 'Droid', subcommand: 'droid', command: 'droid', processNames: ['droid'], ...PLAIN },
  { id: 'A13', name: 'Amp', subcommand: 'amp', command: 'amp', processNames: ['amp'], ...PLAIN },
  { id: 'A14', name: 'Auggie', subcommand: 'auggie', command: 'auggie', processNames: ['auggie'], ...PLAIN },
  { id: 'A15', name: 'Kimi Code', subcommand: 'kimi', command: 'kimi', processNames: ['kimi'], ...PLAIN },
  { id: 'A16', name: 'Goose', subcommand: 'goose', command: 'goose', processNames: ['goose'], ...PLAIN },
];

/** Any other program: spec 4.7's two steps, unverified. */
export const genericProgram: AgentSpec = {
  id: 'generic',
  name: 'Program',
  subcommand: '',
  command: '',
  processNames: [],
  ...PLAIN,
  submit: { kind: 'literal', enterDelayMs: 0 },
};

/** Programs that run an agent's script: the process name says nothing about which agent it is. */
export const INTERPRETERS: ReadonlySet<string> = new Set(['node', 'nodejs', 'bun', 'deno', 'python', 'python3']);

const basename = (p: string): string => p.slice(p.lastIndexOf('/') + 1);

/** The agents whose scheduled session may be given a prompt (spec 4.8.6, 7.7): Claude Code, Codex, Gemini CLI, pi. */
export const PROMPT_AGENTS: ReadonlySet<string> = new Set(['A1', 'A2', 'A3', 'A4']);

export function agentById(id: string): AgentSpec | undefined {
  return AGENTS.find((a) => a.id === id);
}

export function agentForSubcommand(subcommand: string): AgentSpec | undefined {
  // the program's own name too: `svc claude` is `svc cc`
  return AGENTS.find((a) => a.subcommand === subcommand) ?? AGENTS.find((a) => a.command === subcommand);
}

/** The agent whose process is in front, from `#{pane_current_command}` (a bare name or a path). */
export function agentForCommand(paneCurrentCommand: string): AgentSpec | undefined {
  const name = basename(paneCurrentCommand.trim());
  if (!name) return undefined;
  return AGENTS.find((a) => a.command === name || a.processNames.includes(name));
}

/**
 * The program of `#{pane_start_command}` (tmux quotes a one-string command: `"claude --resume"`; the wrapper starts
 * a lone program as `exec 'claude'`, so a leading `exec` is skipped). Returns its basename, or '' when there is none.
 */
export function startProgram(paneStartCommand: string | undefined): string {
  return startProgramName(paneStartCommand);
}

/**
 * The agent in a pane: by the foreground process, else — when that is only an interpreter such as `node` —
 * by the program the pane was started with. `undefined`: no known agent in front.
 */
export function agentForPane(pane: { command: string; startCommand?: string | undefined }): AgentSpec | undefined {
  const byCommand = agentForCommand(pane.command);
  if (byCommand) return byCommand;
  if (!INTERPRETERS.has(basename(pane.command.trim()))) return undefined;
  const start = startProgram(pane.startCommand);
  return start ? agentForCommand(start) : undefined;
}

/** The submit strategy for what is in front of a pane: the agent's, or the generic one. */
export function submitStrategyFor(pane: { command: string; startCommand?: string | undefined }): SubmitStrategy {
  return agentSubmit(agentForPane(pane) ?? genericProgram);
}

/**
 * An agent's submit strategy with its trusted screen rules, so that the check after an Enter sees an approval
 * prompt (and sends no further key into it).
 */
export function agentSubmit(agent: AgentSpec): SubmitStrategy {
  return agent.screenRules?.trusted ? { ...agent.submit, screen: agent.screenRules } : agent.submit;
}

/**
 * The session name an agent gave itself, read from the pane title (spec 2.2); `undefined` when the agent does
 * not name its session, its pattern was never checked against the real program, or the title names nothing
 * (tmux's default title is the host name: pass it as `hostname` to rule it out).
 */
export function sessionNameFromTitle(
  agent: AgentSpec,
  title: string | undefined,
  hostname?: string,
): string | undefined {
  const naming = agent.namesOwnSession;
  if (!naming?.verified || !title) return undefined;
  const m = naming.pattern.exec(title.trim());
  const name = m?.[1]?.trim();
  if (!name) return undefined;
  if (hostname && (name === hostname || name === hostname.split('.')[0])) return undefined;
  return name;
}
