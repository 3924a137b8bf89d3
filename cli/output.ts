import { wipeProgress } from './progress.js';

/**
 * How commands end on error: one line on stderr (a progress line still shown wiped first), exit code 1, the stack
 * only with SVC_DEBUG=1.
 */
export function fail(err: unknown): void {
  wipeProgress();
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`svc: ${message}\n`);
  if (process.env.SVC_DEBUG && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  process.exitCode = 1;
}
