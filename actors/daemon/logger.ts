/**
 * The listener's log: each line to stderr and appended to ~/.svc/listener.log (0600). Messages never carry keys or
 * typed text; the machines only log ids, session names and codes.
 *
 * stderr may be a pipe that closes (`svc listener 2>&1 | head`): a write to it then fails with EPIPE, reported
 * as an 'error' event. The logger stops writing to a stream that failed (the file keeps every line), and
 * `watchStdio` tells the caller once, so it can stop cleanly instead of looping on errors it would log to the
 * same closed pipe.
 */
import { appendFileSync, chmodSync, closeSync, openSync } from 'node:fs';
import type { LogParams } from '../../machines/log.js';

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  line(params: LogParams): void;
}

/** stdout or stderr failed (a closed pipe): never written to again by this process. */
const failedStreams = new Set<NodeJS.WriteStream>();

/** Whether an error is a write to a closed pipe or socket on a standard stream. */
export function isClosedPipe(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'EPIPE' || code === 'ERR_STREAM_DESTROYED' || code === 'ECONNRESET';
}

/** Write to stdout or stderr unless it failed before; a write that throws marks it failed. */
export function writeStd(stream: NodeJS.WriteStream, text: string): void {
  if (failedStreams.has(stream) || stream.destroyed || !stream.writable) return;
  try {
    stream.write(text);
  } catch {
    failedStreams.add(stream);
  }
}

/**
 * Watch stdout and stderr for errors (EPIPE when the reader went away). The first one marks the stream failed and
 * calls `onClosed` once with what happened; the error is never rethrown, so it cannot reach `uncaughtException`.
 */
export function watchStdio(onClosed: (what: string) => void): void {
  let told = false;
  for (const [name, stream] of [
    ['stdout', process.stdout],
    ['stderr', process.stderr],
  ] as const) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      failedStreams.add(stream);
      if (told) return;
      told = true;
      onClosed(`${name} closed (${err.code ?? err.message})`);
    });
  }
}

export function createLogger(opts: { file?: string; stderr?: boolean; debug?: boolean }): Logger {
  if (opts.file) {
    closeSync(openSync(opts.file, 'a', 0o600));
    chmodSync(opts.file, 0o600);
  }
  const line = ({ level, message }: LogParams) => {
    if (level === 'debug' && !opts.debug) return;
    const text = `${new Date().toISOString()} ${level.padEnd(5)} ${message}\n`;
    // A log deleted while we run is made again: owner-only, like the first one (the mode applies on creation).
    if (opts.file) appendFileSync(opts.file, text, { mode: 0o600 });
    if (opts.stderr !== false) writeStd(process.stderr, text);
  };
  return {
    line,
    debug: (message) => line({ level: 'debug', message }),
    info: (message) => line({ level: 'info', message }),
    warn: (message) => line({ level: 'warn', message }),
    error: (message) => line({ level: 'error', message }),
  };
}
