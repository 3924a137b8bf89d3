/**
 * Pure decisions about the background listener (spec 4.4 rule 4, part 9): is the running daemon stale, and which
 * lines of a process list are the daemon. actors/daemon/daemon.ts does the IO.
 */
import { compareSemver } from '../semver.js';

export type DaemonAge = 'same' | 'older' | 'newer' | 'unknown';

/** How the daemon's version (`listener.version`) compares with the CLI's; `unknown` when either is not semver. */
export function daemonAge(daemonVersion: string | null, cliVersion: string): DaemonAge {
  if (daemonVersion === null) return 'unknown';
  const c = compareSemver(daemonVersion, cliVersion);
  return c === null ? 'unknown' : c < 0 ? 'older' : c > 0 ? 'newer' : 'same';
}

/** The line the wrapper prints before restarting an older daemon (spec 9.2), word for word. */
export function staleLine(oldVersion: string, newVersion: string): string {
  return `listener ${oldVersion} is stale - restarting on ${newVersion}`;
}

/** `svc listener` with one of these flags is a command about the daemon, not the daemon. */
const NOT_THE_DAEMON = new Set([
  '--stop',
  '--restart',
  '--install-service',
  '--uninstall-service',
  '--service-status',
  '--help',
  '-h',
]);

/** The `ps` columns `listenerPidsFromPs` reads. */
export const PS_COLUMNS = 'pid=,ppid=,args=';

/**
 * Pids of `svc listener` daemons in `ps -ww -eo pid=,ppid=,args=` output (spec 9.4): a command line holding one of
 * the entry scripts immediately followed by the word `listener`. `excludePid` (the caller) is left out, and so is a
 * daemon's own child: between fork and exec (a tmux call) it shows its parent's command line for a moment.
 */
export function listenerPidsFromPs(output: string, entryScripts: readonly string[], excludePid: number): number[] {
  const found: { pid: number; ppid: number }[] = [];
  for (const line of output.split('\n')) {
    const m = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const pid = Number(m[1]);
    const args = m[3]!;
    if (pid === excludePid) continue;
    for (const entry of entryScripts) {
      if (!entry) continue;
      const at = args.indexOf(`${entry} listener`);
      if (at < 0 || (at > 0 && args[at - 1] !== ' ')) continue;
      const rest = args.slice(at + entry.length + ' listener'.length);
      if (rest !== '' && !rest.startsWith(' ')) continue;
      if (rest.split(/\s+/).some((word) => NOT_THE_DAEMON.has(word))) continue;
      found.push({ pid, ppid: Number(m[2]) });
      break;
    }
  }
  const pids = new Set(found.map((f) => f.pid));
  return found.filter((f) => !pids.has(f.ppid)).map((f) => f.pid);
}
