/**
 * `~/.local/state/svc/schedules` (spec 2.6; core/schedules/book.ts): read, and changed under its lock with an atomic
 * write (0600, in a 0700 directory). `svc schedule add/rm` and the listener both change it; each change is a
 * read-modify-write under the lock, so neither loses the other's.
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { type BookChange, changeBook, emptySchedules, SchedulesFile } from '../../core/schedules/book.js';
import { withFileLockSync } from '../fileLock.js';
import { ensurePrivateDir, writeFileAtomic } from '../files.js';

export class ScheduleFileError extends Error {
  constructor(
    message: string,
    readonly code: 'bad_schedules_file' | 'too_many_schedules' | 'no_such_schedule' = 'bad_schedules_file',
  ) {
    super(message);
  }
}

/** The schedules; a missing file is none, a broken one an error naming the file (it is never overwritten then). */
export function readSchedules(path: string): SchedulesFile {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return emptySchedules();
    throw new ScheduleFileError(`${path}: ${(err as Error).message}`);
  }
  let parsed: ReturnType<typeof SchedulesFile.safeParse>;
  try {
    parsed = SchedulesFile.safeParse(JSON.parse(text));
  } catch {
    throw new ScheduleFileError(`${path} is not JSON; fix or remove it`);
  }
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join('.') || 'top level';
    throw new ScheduleFileError(`${path} is not a schedules file (at ${where}); fix or remove it`);
  }
  return parsed.data;
}

/** Applies `change` under the file's lock; a refused change throws with its code and writes nothing. */
export function changeSchedules(path: string, change: BookChange): SchedulesFile {
  ensurePrivateDir(dirname(path));
  return withFileLockSync(path, { waitMs: 5_000, maxAgeMs: 5_000 }, () => {
    const result = changeBook(readSchedules(path), change);
    if (!result.ok) throw new ScheduleFileError(result.message, result.code);
    if (result.changed) writeFileAtomic(path, `${JSON.stringify(result.file, null, 2)}\n`);
    return result.file;
  });
}
