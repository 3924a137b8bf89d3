/**
 * tmux control mode (`tmux -C attach-session`), as pure functions: the command line the listener writes and the
 * replies it reads. `actors/tmux/control.ts` runs the client; `actors/tmux/tmux.ts` sends its calls through it.
 *
 * What tmux 3.3a does in control mode (checked by hand and in `test/integration/tmuxControl.test.ts`):
 * - Each line written is parsed like a line of a configuration file, not like argv: an unquoted word may be a
 *   separator, a comment or `~`. A double-quoted word keeps everything except `\`-escapes (`\\`, `\"`, `\$`,
 *   `\n`, octal `\ooo`), `$NAME` (expanded) and a leading `~` (expanded to a home directory even inside quotes;
 *   `\176` is a literal `~`). So every argument goes double-quoted with `\`, `"`, `$`, `~` and every control
 *   character written as an escape. Lines of megabytes are read whole (no "command too long" as for argv).
 * - Every command of a line answers with its own block: `%begin <time> <number> <flags>`, its output lines,
 *   `%end …` or `%error …` with the same three numbers. `flags` is 1 for a command the client sent (0 for the
 *   attach itself and hooks). A command that fails ends the line: the commands after it do not run and print
 *   nothing. A line that does not parse answers with one `%error` block.
 * - Anything else is a notification (`%session-changed …`, `%exit`, …) and comes between blocks.
 * - Output is not escaped: a pane that shows `%end …` puts that line inside a `capture-pane` block. So each line
 *   the listener writes starts and ends with `display-message -p <nonce>` (`controlLine`), and `ReplyReader`
 *   takes a reply as complete only when its own end nonce closes it: a pane cannot know the nonce, so it cannot
 *   end a reply early or forge the next one. A block that does not fit what the reader expects means the stream
 *   cannot be trusted any more: `desync`, and the client is restarted.
 */

/** One argument, double-quoted, every character tmux's parser would act on escaped. */
export function controlArg(arg: string): string {
  let out = '"';
  for (const ch of arg) {
    const code = ch.codePointAt(0)!;
    if (ch === '\\' || ch === '"' || ch === '$') out += `\\${ch}`;
    else if (ch === '~' || code < 0x20 || code === 0x7f) out += `\\${code.toString(8).padStart(3, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

const startMark = (nonce: string) => `svc-begin-${nonce}`;
const endMark = (nonce: string) => `svc-end-${nonce}`;

/**
 * The line for `commands` (each an argv without the program), between two `display-message -p` that print the
 * nonce marks. The nonce must be made of letters and digits (`display-message` expands `#` and `%`).
 */
export function controlLine(commands: readonly (readonly string[])[], nonce: string): string {
  if (!/^[A-Za-z0-9]+$/.test(nonce)) throw new Error('a control-mode nonce is letters and digits');
  const all = [['display-message', '-p', startMark(nonce)], ...commands, ['display-message', '-p', endMark(nonce)]];
  return `${all.map((cmd) => cmd.map(controlArg).join(' ')).join(' ; ')}\n`;
}

export interface ControlBlock {
  ok: boolean;
  /** The output lines, each ending in `\n` (as the same command prints outside control mode). */
  output: string;
  /** Sent by this client (`flags` 1); the attach and hooks are 0. */
  fromClient: boolean;
}

export type ControlEvent =
  | { kind: 'block'; block: ControlBlock }
  | { kind: 'notification'; name: string; text: string }
  | { kind: 'exit'; reason: string };

const BEGIN = /^%begin (\d+) (\d+) (\d+)$/;

/**
 * Splits what the client prints into blocks and notifications. A block ends only at `%end`/`%error` with the
 * same three numbers as its `%begin`; other lines inside a block are output, whatever they look like.
 */
export class ControlParser {
  private rest = '';
  private open: { numbers: string; lines: string[]; fromClient: boolean } | null = null;

  feed(chunk: string): ControlEvent[] {
    const events: ControlEvent[] = [];
    const lines = (this.rest + chunk).split('\n');
    this.rest = lines.pop()!;
    for (const line of lines) {
      const event = this.line(line);
      if (event) events.push(event);
    }
    return events;
  }

  private line(line: string): ControlEvent | null {
    if (this.open) {
      const { numbers, lines, fromClient } = this.open;
      if (line === `%end ${numbers}` || line === `%error ${numbers}`) {
        this.open = null;
        const output = lines.map((l) => `${l}\n`).join('');
        return { kind: 'block', block: { ok: line.startsWith('%end'), output, fromClient } };
      }
      lines.push(line);
      return null;
    }
    const begin = BEGIN.exec(line);
    if (begin) {
      this.open = { numbers: `${begin[1]} ${begin[2]} ${begin[3]}`, lines: [], fromClient: begin[3] === '1' };
      return null;
    }
    if (line === '%exit' || line.startsWith('%exit ')) return { kind: 'exit', reason: line.slice(6) };
    if (line.startsWith('%')) {
      const space = line.indexOf(' ');
      return {
        kind: 'notification',
        name: space < 0 ? line.slice(1) : line.slice(1, space),
        text: space < 0 ? '' : line.slice(space + 1),
      };
    }
    return null; // nothing else is printed between blocks
  }
}

export type ReplyStep =
  | { kind: 'more' }
  | { kind: 'done'; stdout: string }
  | { kind: 'failed'; stderr: string }
  | { kind: 'desync'; why: string };

/**
 * One written line's reply, assembled from the client's blocks in order: the start mark, the commands' blocks,
 * the end mark (`done`, their output joined as one call would print it) or the first `%error` (`failed`, its
 * text as stderr: the rest of the line did not run).
 */
export class ReplyReader {
  private started = false;
  private stdout = '';

  constructor(private readonly nonce: string) {}

  push(block: ControlBlock): ReplyStep {
    if (!this.started) {
      if (block.ok && block.output === `${startMark(this.nonce)}\n`) {
        this.started = true;
        return { kind: 'more' };
      }
      // a line that did not parse answers with one error block and no mark
      if (!block.ok && block.output.startsWith('parse error')) return { kind: 'failed', stderr: block.output.trim() };
      return { kind: 'desync', why: 'a reply that does not start with its mark' };
    }
    if (!block.ok) return { kind: 'failed', stderr: block.output.trim() };
    if (block.output === `${endMark(this.nonce)}\n`) return { kind: 'done', stdout: this.stdout };
    this.stdout += block.output;
    return { kind: 'more' };
  }
}
