/** listener.pid and listener.version (spec 2.6, 9): who the running daemon is and what it booted from. */
import { readFileSync, rmSync } from 'node:fs';
import { writeFileAtomic } from '../files.js';

export function readPid(path: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The process is gone or only a zombie waiting for its parent (init) to reap it: on some systems init takes a
 * second or more, and `kill(pid, 0)` still succeeds on a zombie.
 */
export function hasExited(pid: number): boolean {
  if (!isAlive(pid)) return true;
  try {
    // `pid (comm) S …`: the state follows the last `)` (comm may hold spaces and parentheses)
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return false; // no /proc (macOS): kill(pid, 0) is all there is
  }
}

/** A live process whose command line is an svc listener (guards against a recycled pid). */
export function isListenerProcess(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return cmdline.some((arg) => arg === 'listener');
  } catch {
    return true; // no /proc (macOS): trust the pid file
  }
}

/**
 * The version first, then the pid: a starter waits for the pid file to name the new daemon (actors/daemon/daemon.ts), so
 * once it does, the version file is already the new daemon's, never the one it replaced.
 */
export function writeDaemonFiles(paths: { pid: string; version: string }, version: string): void {
  writeFileAtomic(paths.version, `${version}\n`);
  writeFileAtomic(paths.pid, `${process.pid}\n`);
}

export function removePidFile(path: string): void {
  if (readPid(path) === process.pid) rmSync(path, { force: true });
}
