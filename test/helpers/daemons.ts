/**
 * The `svc listener` daemons a test started: found in the process list like the CLI finds them (spec 9.4), kept to
 * the test's own HOME (read from /proc, Linux), and killed after it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { entryScripts } from '../../actors/daemon/daemon.js';
import { listenerPidsFromPs, PS_COLUMNS } from '../../core/daemon/daemon.js';
import { SVC_BIN } from './cli.js';
import { waitFor } from './tmux.js';

export function daemonsOf(home: string): number[] {
  const ps = execFileSync('ps', ['-ww', '-eo', PS_COLUMNS], { encoding: 'utf8' });
  return listenerPidsFromPs(ps, entryScripts(SVC_BIN), process.pid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`HOME=${home}`);
    } catch {
      return false;
    }
  });
}

export async function killDaemonsOf(home: string): Promise<void> {
  for (const pid of daemonsOf(home)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await waitFor(() => daemonsOf(home).length === 0, { what: 'every daemon of the test to be gone' });
}
