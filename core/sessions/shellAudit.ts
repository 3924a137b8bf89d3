/**
 * The shell-session audit line (spec 4.6, 8): time, session, pane, kind, foreground program, and the text only
 * when the shell itself was in front; input to anything else (a `sudo` or `ssh` password prompt) is recorded by
 * its length only. Pure; actors/sessions/shellAudit.ts appends the line to ~/.local/state/svc/shell-audit.log.
 *
 *   2025-05-01T09:30:00.000Z session=svc-app-sh pane=%3 kind=insert program=bash text="git status"
 *   2025-05-01T09:30:12.000Z session=svc-app-sh pane=%3 kind=insert program=sudo len=11
 *
 * One entry is one line whatever the input: control bytes, line and paragraph separators, `"` and `\` are escaped
 * (`\n`, `\x1b`, `\u2028`, …), and a field with a space or `=` is quoted.
 */
import { isInteractiveShell } from './refusals.js';

export interface ShellAuditEntry {
  /** When the input was typed (epoch ms or a Date). */
  at: number | Date;
  session: string;
  /** The pane id (`%3`). */
  pane: string;
  /** What was typed: `insert` (text), `keys` (named keys), … */
  kind: string;
  /** `#{pane_current_command}` when it was typed. */
  program: string;
  text: string;
}

const SHORT_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '"': '\\"', '\\': '\\\\' };

/** `\`, `"` and every control or separator character escaped: the result has no line break of any kind. */
export function escapeAuditText(text: string): string {
  let out = '';
  for (const ch of text) {
    const short = SHORT_ESCAPES[ch];
    if (short) {
      out += short;
      continue;
    }
    const c = ch.codePointAt(0)!;
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (c === 0x2028 || c === 0x2029) out += `\\u${c.toString(16)}`;
    else out += ch;
  }
  return out;
}

/** A field value: as is when plain, quoted (and escaped) when it is empty or holds anything else. */
function field(value: string): string {
  return /^[A-Za-z0-9%@._:/+-]+$/.test(value) ? value : `"${escapeAuditText(value)}"`;
}

/** Whether the text is recorded: only when the shell itself was in front (spec 8). */
export function auditShowsText(program: string): boolean {
  return isInteractiveShell(program);
}

/** One line, without the trailing newline. The length counts characters (code points), not bytes. */
export function formatShellAudit(entry: ShellAuditEntry): string {
  const time = new Date(entry.at).toISOString();
  const head = `${time} session=${field(entry.session)} pane=${field(entry.pane)} kind=${field(entry.kind)} program=${field(entry.program)}`;
  return auditShowsText(entry.program)
    ? `${head} text="${escapeAuditText(entry.text)}"`
    : `${head} len=${[...entry.text].length}`;
}
