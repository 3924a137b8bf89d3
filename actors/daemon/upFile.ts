/**
 * `~/.svc/up.json` (0600): the running `svc up`'s pid and addresses, so a second one says where the first is
 * (docs/hosting.md). Written once the relay listens, removed when that `svc up` stops.
 */
import { readFileSync, rmSync } from 'node:fs';
import { writeFileAtomic } from '../files.js';

export interface RunningUp {
  pid: number;
  relayUrl: string;
  appUrl: string;
}

/** The `svc up` in `file`, if its process is alive (this one included); null when none, unreadable or gone. */
export function runningUp(file: string): RunningUp | null {
  try {
    const { pid, relayUrl, appUrl } = JSON.parse(readFileSync(file, 'utf8')) as Partial<Record<string, unknown>>;
    if (typeof pid !== 'number' || typeof relayUrl !== 'string' || typeof appUrl !== 'string') return null;
    if (pid !== process.pid) process.kill(pid, 0);
    return { pid, relayUrl, appUrl };
  } catch {
    return null;
  }
}

export function writeRunningUp(file: string, up: Omit<RunningUp, 'pid'>): void {
  const body = { pid: process.pid, ...up, startedAt: Date.now() };
  writeFileAtomic(file, `${JSON.stringify(body)}\n`, 0o600, false);
}

/** Removes the file if it is this process's. */
export function clearRunningUp(file: string): void {
  if (runningUp(file)?.pid === process.pid) rmSync(file, { force: true });
}
