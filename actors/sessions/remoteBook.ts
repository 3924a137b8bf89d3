/**
 * `~/.svc/remote.json` (0600): the sessions in sticky REMOTE (core/sessions/remoteMode.ts), written at each change
 * and read when the listener starts, so a restart (an upgrade, `svc listener --restart`, a crash) keeps the person's
 * choice. A file that cannot be read is said in the log and starts every session local, as the listener did before
 * it kept the file: the next change writes it whole again.
 */
import { existsSync, readFileSync } from 'node:fs';
import { RemoteFile, type RemoteSessions } from '../../core/sessions/remoteMode.js';
import { writeFileAtomic } from '../files.js';

function readRemote(path: string, onError: (message: string) => void): RemoteSessions {
  if (!existsSync(path)) return {};
  try {
    const parsed = RemoteFile.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    if (parsed.success) return parsed.data.sessions;
    onError(`${path} is not a REMOTE list svc wrote (${parsed.error.issues[0]?.message}): every session starts local`);
  } catch (err) {
    onError(`could not read ${path} (${(err as Error).message}): every session starts local`);
  }
  return {};
}

export function createRemoteBook(path: string, opts: { onError: (message: string) => void }) {
  let sessions = readRemote(path, opts.onError);
  return {
    /** The sessions in REMOTE as last saved: for the sessions' supervisor when it starts (or is started again). */
    sessions: (): RemoteSessions => sessions,
    save(next: RemoteSessions) {
      sessions = next;
      try {
        // Not fsynced: REMOTE lost to a power cut only means the person says once more where they drive from.
        writeFileAtomic(path, `${JSON.stringify({ version: 1, sessions } satisfies RemoteFile)}\n`, 0o600, false);
      } catch (err) {
        opts.onError(`could not save the sessions in REMOTE to ${path}: ${(err as Error).message}`);
      }
    },
  };
}
