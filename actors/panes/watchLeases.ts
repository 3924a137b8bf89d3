/**
 * `~/.svc/watches.json` (0600): the leases of the live panes (core/panes/watchLeases.ts). Written when a stream starts,
 * at each renewal and when it stops for good; read once when the listener starts, to resume the streams whose lease
 * is still running. A file that cannot be read resumes nothing (and is replaced at the next write): nothing is lost
 * but a stream the phone asks for again anyway.
 */
import { readFileSync } from 'node:fs';
import {
  emptyLeases,
  type LeaseLeft,
  LeasesFile,
  leasesLeft,
  withLease,
  withoutLease,
} from '../../core/panes/watchLeases.js';
import type { LeaseParams } from '../../machines/paneWatch.js';
import { writeFileAtomic } from '../files.js';

function readLeases(path: string): LeasesFile {
  try {
    const parsed = LeasesFile.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    return parsed.success ? parsed.data : emptyLeases();
  } catch {
    return emptyLeases();
  }
}

export function createLeaseBook(path: string, opts: { now?: () => number; onError?: (message: string) => void } = {}) {
  const now = opts.now ?? Date.now;
  let file = readLeases(path);
  const save = (next: LeasesFile) => {
    file = next;
    try {
      // Not fsynced: a lease lost to a power cut only means the phone asks again.
      writeFileAtomic(path, `${JSON.stringify(file)}\n`, 0o600, false);
    } catch (err) {
      opts.onError?.(`could not save the live pane leases ${path}: ${(err as Error).message}`);
    }
  };
  return {
    /** The leases still running now, to resume once connected (machines/listener.ts checks the pins then). */
    left: (): LeaseLeft[] => leasesLeft(file, now()),
    record: ({ leaseMs, ...lease }: LeaseParams) => save(withLease(file, { ...lease, until: now() + leaseMs }, now())),
    forget: ({ deviceId, session }: { deviceId: string; session: string }) =>
      save(withoutLease(file, deviceId, session)),
  };
}
