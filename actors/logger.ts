/**
 * The listener's log: each line to stderr and appended to ~/.svc/listener.log (0600). Messages never carry keys or
 * typed text; the machines only log ids, session names and codes.
 */
import { appendFileSync, chmodSync, closeSync, openSync } from 'node:fs';
import type { LogParams } from '../machines/log.js';

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  line(params: LogParams): void;
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
    if (opts.stderr !== false) process.stderr.write(text);
  };
  return {
    line,
    debug: (message) => line({ level: 'debug', message }),
    info: (message) => line({ level: 'info', message }),
    warn: (message) => line({ level: 'warn', message }),
    error: (message) => line({ level: 'error', message }),
  };
}
