/**
 * The relay's log: three levels, one line each. Nothing logged may carry an API key or a push body.
 */

export interface Log {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/**
 * One plain line per message on stderr (stdout stays free for a command's own output): the time, the level, the
 * message, as the listener's log has them. Not consola's reporter: it measures the display width of every line,
 * which was 16 % of the relay's CPU under load, two lines per push (`bench/relay.ts --profile`, docs/benchmarks.md).
 */
export function defaultLog(): Log {
  const line = (level: string) => (msg: string) => {
    process.stderr.write(`${new Date().toISOString()} ${level} ${msg}\n`);
  };
  return { info: line('info '), warn: line('warn '), error: line('error') };
}

/** A thrown value for the log: the stack of a real error (a bug worth reading), else its text. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`;
  return String(error);
}
