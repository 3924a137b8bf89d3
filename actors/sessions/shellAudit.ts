/**
 * Appends shell-session input to the audit log (spec 4.6, 8): `~/.local/state/svc/shell-audit.log`, the file 0600
 * in a 0700 directory. One `write` per entry on an `O_APPEND` descriptor, so concurrent writers never interleave
 * inside a line. A symlink at the log's path is refused (`O_NOFOLLOW`), so the log cannot be redirected.
 */
import { closeSync, constants, fchmodSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { formatShellAudit, type ShellAuditEntry } from '../../core/sessions/shellAudit.js';
import { ensurePrivateDir } from '../files.js';

export function appendShellAudit(path: string, entry: ShellAuditEntry): void {
  ensurePrivateDir(dirname(path));
  const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    fchmodSync(fd, 0o600); // an older file with a wider mode is narrowed
    writeSync(fd, `${formatShellAudit(entry)}\n`);
  } finally {
    closeSync(fd);
  }
}
