/**
 * A process's ancestors, parent first, read from `/proc/<pid>/stat` (Linux): what `svc remote-hook` tells the
 * listener so that it can tell the pane's own agent from one nested in it (core/transcripts/pins.ts). Elsewhere (no
 * /proc) it is undefined and the check is left out.
 */
import { readFileSync } from 'node:fs';
import { MAX_ANCESTRY } from '../../core/hooks/control.js';

/** The parent pid in a `/proc/<pid>/stat` line: the field after the state, after the last `)` (a name may hold one). */
export function parentInStat(stat: string): number | null {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ppid = Number.parseInt(fields[1] ?? '', 10);
  return Number.isInteger(ppid) && ppid > 0 ? ppid : null;
}

export function ancestry(pid: number = process.pid, max = MAX_ANCESTRY): number[] | undefined {
  const out: number[] = [];
  let at = pid;
  try {
    while (out.length < max) {
      const parent = parentInStat(readFileSync(`/proc/${at}/stat`, 'utf8'));
      if (parent === null || parent === 1) break;
      out.push(parent);
      at = parent;
    }
  } catch {
    if (out.length === 0) return undefined;
  }
  return out;
}
