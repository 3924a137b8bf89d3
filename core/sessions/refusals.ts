/**
 * Whether the listener may type a push into a session (spec 7). Pure: every fact comes in as an argument.
 * The rules are checked in a fixed order so the reported code is the most fundamental one.
 */
import type { PaneInfo, RefusalCode } from '../protocol/index.js';
import { SESSION_NAME_RE } from '../protocol/index.js';

/** Spec 7.1: programs that make a pane an interactive shell. */
export const INTERACTIVE_SHELLS: ReadonlySet<string> = new Set([
  'bash',
  'zsh',
  'fish',
  'sh',
  'dash',
  'ksh',
  'tcsh',
  'csh',
  'pwsh',
]);

/** tmux reports a login shell as `-bash`; a path may sneak in from some platforms. */
export function isInteractiveShell(command: string): boolean {
  const base = command.replace(/^-/, '').split('/').pop() ?? '';
  return INTERACTIVE_SHELLS.has(base);
}

export function isValidSessionName(name: string): boolean {
  return name.length > 0 && name.length <= 128 && SESSION_NAME_RE.test(name);
}

export interface InjectionFacts {
  target: string;
  body: string;
  /** The session's active pane, or undefined when tmux has no such session. */
  pane: PaneInfo | undefined;
  /** A `svc sh` session (spec 4.6): the shell rules 7.2/7.3 below apply to it. */
  shellSession: boolean;
  /** A subagent card `<session>.<n>` (spec 4.14). */
  subagent: boolean;
  /** Whether the push named this computer explicitly (7.2). */
  addressedToThisComputer: boolean;
  /** The agent's screen shows an approval prompt: typed text could answer it (never answered for the user). */
  approvalPending?: boolean;
  /**
   * The agent's screen should have been read (trusted screen rules) and was not: an approval prompt could be up
   * unseen, so nothing is typed (fail closed).
   */
  screenUnreadable?: boolean;
}

const CONTROL_BYTES = /[\u0000-\u0008\u000b-\u001f\u007f]/;

/** Everything but the rate limit, which needs the bucket's state and is checked last. */
export function refusalFor(facts: InjectionFacts): RefusalCode | null {
  if (!isValidSessionName(facts.target)) return 'invalid_target'; // 7.4
  if (facts.subagent) return 'subagent_view_only'; // 7.5
  if (!facts.pane) return 'session_not_found';
  if (facts.body.length === 0) return 'empty_body';
  if (facts.shellSession) {
    if (!facts.addressedToThisComputer) return 'not_for_this_computer'; // 7.2
    if (CONTROL_BYTES.test(facts.body) || facts.body.includes('\n')) return 'shell_input_forbidden'; // 7.3
    // a known agent started inside the shell session is read as that agent: its dialog is never typed into
    if (facts.screenUnreadable) return 'screen_unreadable';
    if (facts.approvalPending) return 'approval_pending';
    return null;
  }
  if (isInteractiveShell(facts.pane.command)) return 'shell_in_front'; // 7.1
  if (facts.screenUnreadable) return 'screen_unreadable';
  if (facts.approvalPending) return 'approval_pending';
  return null;
}
