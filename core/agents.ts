/**
 * The agent registry: what svc knows of each terminal coding agent, as data.
 * Spec 4.4 numbers the agents A1..A16; this file starts with A1-A3 and grows by adding entries
 * (later issues add the remaining agents, screen rules, hooks and transcript sources as more fields).
 *
 * Submit strategies (how a typed message is made to really submit) come from the field notes
 * (`research/field-notes.md`, "Injection: what goes wrong"):
 * - Codex takes an Enter within 120 ms of a paste as a newline (`PASTE_ENTER_SUPPRESS_WINDOW` in its TUI);
 *   it also treats >= 3 characters arriving < 8 ms apart as a paste, so `send-keys -l` + Enter never submits.
 * - Gemini CLI has been seen to swallow the Enter that follows a paste: verify and retry once.
 * - Multi-line text typed with `send-keys -l` submits at the first newline: such text is always pasted.
 * The `inputLine` patterns come from `research/agent-screens.md`, not yet from fixtures captured from the real
 * programs: a pattern that finds nothing makes the check answer "unknown" (no retry Enter), never a guess.
 */

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
  /** Wait after an Enter before reading the screen. Default `DEFAULT_VERIFY_DELAY_MS`. */
  verifyDelayMs?: number;
  /** Wait before the one retry Enter. Default `DEFAULT_RETRY_DELAY_MS`. */
  retryDelayMs?: number;
}

export interface AgentSpec {
  /** Spec numbering: `A1`..`A16`; `generic` for a program the registry does not know. */
  id: string;
  /** Display name for picker labels (`<project> · <name>`). */
  name: string;
  /** `svc <subcommand>` (spec 4.4: equal to the agent's own command name, except `cc`). */
  subcommand: string;
  /** The program the wrapper runs. */
  command: string;
  /** What `#{pane_current_command}` shows while the agent is in front (the command is always included). */
  processNames: readonly string[];
  submit: SubmitStrategy;
}

/** Claude Code's input box (`❯`, older `>`), Gemini's (`│ > … │`). */
const BOXED_PROMPT = /^\s*(?:[│┃|]\s*)?[>❯]\s?(.*?)\s*(?:[│┃|])?\s*$/;
/** Codex's composer line starts with `›`. */
const CODEX_PROMPT = /^\s*›\s?(.*?)\s*$/;

export const AGENTS: readonly AgentSpec[] = [
  {
    id: 'A1',
    name: 'Claude Code',
    subcommand: 'cc',
    command: 'claude',
    processNames: ['claude'],
    submit: { kind: 'paste', enterDelayMs: 200, inputLine: BOXED_PROMPT },
  },
  {
    id: 'A2',
    name: 'Codex',
    subcommand: 'codex',
    command: 'codex',
    processNames: ['codex'],
    // 120 ms suppress window after a paste; 300 ms leaves margin for a loaded machine.
    submit: { kind: 'paste', enterDelayMs: 300, inputLine: CODEX_PROMPT },
  },
  {
    id: 'A3',
    name: 'Gemini CLI',
    subcommand: 'gemini',
    command: 'gemini',
    processNames: ['gemini'],
    // Seen to swallow the Enter after a paste: the check + one retry Enter covers it.
    submit: { kind: 'paste', enterDelayMs: 200, inputLine: BOXED_PROMPT, retryDelayMs: 400 },
  },
];

/** Any other program: spec 4.7's two steps, unverified. */
export const genericProgram: AgentSpec = {
  id: 'generic',
  name: 'Program',
  subcommand: '',
  command: '',
  processNames: [],
  submit: { kind: 'literal', enterDelayMs: 0 },
};

/** Programs that run an agent's script: the process name says nothing about which agent it is. */
export const INTERPRETERS: ReadonlySet<string> = new Set(['node', 'nodejs', 'bun', 'deno', 'python', 'python3']);

const basename = (p: string): string => p.slice(p.lastIndexOf('/') + 1);

export function agentById(id: string): AgentSpec | undefined {
  return AGENTS.find((a) => a.id === id);
}

export function agentForSubcommand(subcommand: string): AgentSpec | undefined {
  return AGENTS.find((a) => a.subcommand === subcommand);
}

/** The agent whose process is in front, from `#{pane_current_command}` (a bare name or a path). */
export function agentForCommand(paneCurrentCommand: string): AgentSpec | undefined {
  const name = basename(paneCurrentCommand.trim());
  if (!name) return undefined;
  return AGENTS.find((a) => a.command === name || a.processNames.includes(name));
}

/**
 * The first word of `#{pane_start_command}` (tmux quotes a one-string command: `"claude --resume"`).
 * Returns its basename, or '' when there is none.
 */
export function startProgram(paneStartCommand: string | undefined): string {
  if (!paneStartCommand) return '';
  let s = paneStartCommand.trim();
  if (s.startsWith('"') && s.endsWith('"') && s.length >= 2) s = s.slice(1, -1).trim();
  const first = s.split(/\s+/)[0] ?? '';
  return basename(first.replace(/^["']|["']$/g, ''));
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
  return (agentForPane(pane) ?? genericProgram).submit;
}
