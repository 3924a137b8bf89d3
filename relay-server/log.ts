/**
 * The relay's log: three levels, one line each. Nothing logged may carry an API key or a push body.
 */
import { createConsola } from 'consola';

export interface Log {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/** consola writing every level to stderr, so stdout stays free for a command's own output. */
export function defaultLog(): Log {
  const consola = createConsola({ stdout: process.stderr, stderr: process.stderr });
  return {
    info: (msg) => consola.info(msg),
    warn: (msg) => consola.warn(msg),
    error: (msg) => consola.error(msg),
  };
}

/** A thrown value for the log: the stack of a real error (a bug worth reading), else its text. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`;
  return String(error);
}
