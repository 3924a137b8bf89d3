/**
 * `~/.svc/muted.json` (0600): the projects whose prompts are never flagged as from the phone (core/hooks/mute.ts).
 * Changed under its lock, written atomically; the hook only reads it, and a file it cannot read counts as "nothing
 * muted" with a line in the hook's log (the hook never blocks the agent).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyMute, type MuteChange, MuteList, NO_MUTES } from '../../core/hooks/mute.js';
import { withFileLockSync } from '../fileLock.js';
import { ensurePrivateDir, writeFileAtomic } from '../files.js';

export const muteFilePath = (svcDir: string) => join(svcDir, 'muted.json');

export class MuteFileError extends Error {}

/** The list; a missing file is an empty list, a broken one an error naming the file. */
export function readMutes(svcDir: string): MuteList {
  const path = muteFilePath(svcDir);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return NO_MUTES;
    throw new MuteFileError(`${path}: ${(err as Error).message}`);
  }
  let parsed: ReturnType<typeof MuteList.safeParse>;
  try {
    parsed = MuteList.safeParse(JSON.parse(text));
  } catch {
    throw new MuteFileError(`${path} is not JSON; fix or remove it (svc unmute --all writes a new one)`);
  }
  if (!parsed.success) throw new MuteFileError(`${path} is not a mute list; fix or remove it`);
  return parsed.data;
}

export function changeMutes(svcDir: string, change: MuteChange): { list: MuteList; changed: boolean } {
  ensurePrivateDir(svcDir);
  const path = muteFilePath(svcDir);
  return withFileLockSync(path, { waitMs: 5_000, maxAgeMs: 5_000 }, () => {
    // unmuting everything is also the way out of a broken file
    const before = change.kind === 'unmute-all' ? safeRead(svcDir) : readMutes(svcDir);
    const result = applyMute(before, change);
    if (result.changed || change.kind === 'unmute-all') writeFileAtomic(path, `${JSON.stringify(result.list)}\n`);
    return result;
  });
}

function safeRead(svcDir: string): MuteList {
  try {
    return readMutes(svcDir);
  } catch {
    return NO_MUTES;
  }
}
