/**
 * The relay's log: three levels, one line each. Nothing logged may carry an API key or a push body.
 */
import { writeSync } from 'node:fs';

export interface Log {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/**
 * One plain line per message on stderr (stdout stays free for a command's own output): the time, the level, the
 * message, as the listener's log has them. Not consola's reporter: it measures the display width of every line,
 * which was 16 % of the relay's CPU under load, two lines per push (`bench/relay.ts --profile`, docs/benchmarks.md).
 * The lines of one turn of the event loop go out in one write (a write per line was a system call per line); what
 * is still held when the process exits is written before it does.
 */
export function defaultLog(): Log {
  const line = (level: string) => (msg: string) => hold(`${new Date().toISOString()} ${level} ${msg}\n`);
  return { info: line('info '), warn: line('warn '), error: line('error') };
}

/** Log lines of this turn of the event loop, not yet written (one buffer for every relay in the process). */
let held = '';
let exitHooked = false;

function hold(text: string): void {
  if (held === '') setImmediate(writeHeld);
  held += text;
  if (!exitHooked) {
    exitHooked = true;
    process.once('exit', () => {
      if (held !== '') writeSync(2, held);
      held = '';
    });
  }
}

function writeHeld(): void {
  const text = held;
  held = '';
  if (text !== '') process.stderr.write(text);
}

/** A thrown value for the log: the stack of a real error (a bug worth reading), else its text. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`;
  return String(error);
}
