/** Pieces the `svc relay` commands share: the data directory argument and the one-line error exit. */
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where `svc relay` keeps relay.db unless --data says otherwise. */
export function defaultRelayDataDir(): string {
  return join(homedir(), '.svc', 'relay');
}

export const dataArg = {
  type: 'string',
  description: 'Directory holding relay.db (default ~/.svc/relay)',
  valueHint: 'DIR',
} as const;

/** One line on stderr and exit code 1; the stack only with SVC_DEBUG=1. */
export function fail(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`svc relay: ${message}\n`);
  if (process.env.SVC_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  process.exitCode = 1;
}
