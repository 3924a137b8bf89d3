/**
 * Reading and writing the agents' own config files for `svc install` / `uninstall` / `verify` (the edits
 * themselves are pure: core/hooks/edit.ts). What install added is recorded in `~/.svc/installed.json`, so uninstall
 * takes out exactly that and nothing the user wrote.
 *
 * - A file that is a symlink (dotfiles kept in a repository) is edited at its target, so the link stays a link;
 *   the backup and the record name the path svc knows (the link).
 * - The first change to a file keeps a copy beside it, `<file>.svc-backup`, never overwritten later; uninstall
 *   deletes that copy only when the file is again byte-identical to it.
 * - Writes are atomic (a temp file beside the target, fsync, rename) and keep the file's mode. Unlike
 *   actors/files.ts `writeFileAtomic` this never changes a directory's mode: these files live in the home
 *   directory and in folders the agents own.
 * - A file that cannot be read or parsed is refused in one line and nothing is written to it.
 */

import { createHash } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import {
  addElement,
  addEntry,
  type ConfigFormat,
  isEmptyTable,
  type JsonValue,
  readConfig,
  removeElement,
  removeEntry,
  sameValue,
  valueAt,
} from '../../core/hooks/edit.js';
import type { Wiring } from '../../core/hooks/wiring.js';
import { writeFileAtomic } from '../files.js';

/** One entry install added, as recorded. */
export interface RecordedEntry {
  agentId: string;
  /** The path svc names (a symlink stays one: the edit goes to its target). */
  file: string;
  format: ConfigFormat;
  path: string[];
  value: JsonValue;
  /** How many keys of `path` install created (core/hooks/edit.ts `addEntry`). */
  created: number;
  /** The file before install: missing, empty, or with content. */
  before: 'missing' | 'empty' | 'content';
  /** The outermost folder install made for a missing file (`~/.gemini`): uninstall removes it again when empty. */
  madeDir?: string;
  /** `value` is one element of the list at `path` (a hook), not the value at `path`. */
  element?: true;
}

/** A whole file `svc install` wrote (pi's extension): removed by uninstall while it is still what svc wrote. */
export interface RecordedFile {
  agentId: string;
  file: string;
  sha256: string;
}

export interface InstallRecord {
  version: 1;
  entries: RecordedEntry[];
  files?: RecordedFile[];
}

export const BACKUP_SUFFIX = '.svc-backup';

export function recordPath(home: string): string {
  return join(home, '.svc', 'installed.json');
}

export function readRecord(home: string): InstallRecord {
  const path = recordPath(home);
  if (!existsSync(path)) return { version: 1, entries: [] };
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as InstallRecord;
  if (parsed?.version !== 1 || !Array.isArray(parsed.entries)) throw new Error(`${path}: not a record svc wrote`);
  return parsed;
}

function writeRecord(home: string, record: InstallRecord): void {
  const path = recordPath(home);
  if (record.entries.length === 0 && (record.files ?? []).length === 0) rmSync(path, { force: true });
  else writeFileAtomic(path, `${JSON.stringify(record, null, 2)}\n`);
}

/** The node error's code and a short cause, for one-line messages. */
function cause(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'is a directory';
  if (code === 'ENOTDIR') return 'a folder on its path is a file';
  return code ?? (err instanceof Error ? err.message.split('\n')[0] : String(err)) ?? 'failed';
}

interface FileState {
  /** Where the content is (the symlink's target). */
  target: string;
  text: string;
  /** The file's bytes as read: what must still be there right before it is replaced. */
  bytes: Buffer;
  /** `latin1` for a file that is not valid UTF-8: read and written byte for byte. */
  encoding: 'utf8' | 'latin1';
  exists: boolean;
  mode: number;
}

/** Another process changed the file between our read and our replace: the edit is done again on what it holds. */
class ChangedMeanwhile extends Error {}

/** Tries of one edit when another process keeps rewriting the file. */
const EDIT_TRIES = 5;

function readState(file: string): FileState {
  let target = file;
  let exists = false;
  try {
    lstatSync(file);
    target = realpathSync(file);
    exists = true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    // a dangling symlink has an lstat but no realpath: refuse it rather than write beside it
    if (existsLink(file)) throw new Error('a symlink to nothing');
  }
  if (!exists) return { target, text: '', bytes: Buffer.alloc(0), encoding: 'utf8', exists, mode: 0o600 };
  const st = statSync(target);
  if (!st.isFile()) throw Object.assign(new Error('not a file'), { code: 'EISDIR' });
  const bytes = readFileSync(target);
  try {
    return { target, text: UTF8.decode(bytes), bytes, encoding: 'utf8', exists, mode: st.mode & 0o777 };
  } catch {
    // not UTF-8 (a Latin-1 comment): one character per byte, so every byte svc does not touch is written back as is
    return { target, text: bytes.toString('latin1'), bytes, encoding: 'latin1', exists, mode: st.mode & 0o777 };
  }
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const nonAscii = (text: string) => text.replace(/[\u0000-\u007f]/g, '').length;

/** `text` as the bytes to write for a file read as `state`. */
function encode(state: FileState, text: string): Buffer {
  if (state.encoding === 'utf8') return Buffer.from(text, 'utf8');
  // a file that is not UTF-8 keeps its own bytes; what svc adds or takes out must be plain ASCII then
  if (/[^\u0000-\u00ff]/.test(text) || nonAscii(text) !== nonAscii(state.text))
    throw new Error('not UTF-8 text, and the entry is not plain ASCII: edit it by hand');
  return Buffer.from(text, 'latin1');
}

function existsLink(file: string): boolean {
  try {
    return lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Where a test puts "another process writes the file" between svc's edit and its replace, which a real agent does
 * whenever it saves its own config. Nothing sets it outside tests.
 */
export const editSeam: { beforeReplace: ((target: string) => void) | null } = { beforeReplace: null };

/**
 * Atomic replace that leaves directories' modes alone and keeps the file's own mode. With `expect` (the bytes read
 * before the edit), the file is read once more right before the rename: another process that rewrote it meanwhile
 * (an agent saving its own config) throws `ChangedMeanwhile`, and nothing of ours replaces its write. Returns the
 * outermost folder it had to make, if any.
 */
function writeKeepingMode(
  target: string,
  content: string | Buffer,
  mode: number,
  expect?: Buffer | null,
): string | undefined {
  const made = mkdirSync(dirname(target), { recursive: true });
  const tmp = `${target}.${process.pid}.svc-tmp`;
  const fd = openSync(tmp, 'w', mode);
  try {
    writeSync(fd, typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    editSeam.beforeReplace?.(target);
    if (expect !== undefined) {
      const now = existsSync(target) ? readFileSync(target) : null;
      if (expect === null ? now !== null : now === null || !now.equals(expect)) throw new ChangedMeanwhile();
    }
    renameSync(tmp, target);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  return made;
}

/** Remove the folders install made for a file, innermost first, as long as they are empty. */
function removeMadeDirs(target: string, madeDir: string): void {
  for (let dir = dirname(target); dir.startsWith(madeDir); dir = dirname(dir)) {
    try {
      rmdirSync(dir);
    } catch {
      return; // not empty (the agent or the user put something there): it stays
    }
    if (dir === madeDir) return;
  }
}

export type InstallOutcome =
  | { agentId: string; file: string; result: 'added' | 'would add' | 'already' }
  /** The file holds an `svc` entry svc did not write (or the user changed): left as it is. */
  | { agentId: string; file: string; result: 'user entry' }
  | { agentId: string; file: string; result: 'refused'; reason: string };

/** Wire one agent: add its entry, keep a backup on the first change, record what was added. */
export function installOne(home: string, w: Wiring, dryRun: boolean): InstallOutcome {
  for (let tries = 1; ; tries++) {
    try {
      return installOnce(home, w, dryRun);
    } catch (err) {
      if (!(err instanceof ChangedMeanwhile)) throw err;
      if (tries >= EDIT_TRIES)
        return {
          agentId: w.agentId,
          file: w.file,
          result: 'refused',
          reason: `${w.file} kept changing while svc edited it; try again`,
        };
    }
  }
}

function installOnce(home: string, w: Wiring, dryRun: boolean): InstallOutcome {
  const base = { agentId: w.agentId, file: w.file };
  let state: FileState;
  try {
    state = readState(w.file);
  } catch (err) {
    return { ...base, result: 'refused', reason: `cannot read ${w.file}: ${cause(err)}` };
  }
  const spec = { format: w.format, path: w.path, value: w.value };
  const added = w.element ? addElement(state.text, spec) : addEntry(state.text, spec);
  if (added.kind === 'invalid') return { ...base, result: 'refused', reason: `${w.file}: ${added.reason}` };
  if (added.kind === 'present') return { ...base, result: added.same ? 'already' : 'user entry' };
  if (dryRun) return { ...base, result: 'would add' };
  // the record first: an entry recorded but never written is harmless (uninstall finds it absent), an entry
  // written but not recorded could never be taken out
  const before = !state.exists ? 'missing' : state.text === '' ? 'empty' : 'content';
  try {
    const record = readRecord(home);
    record.entries = record.entries.filter((e) => !sameEntry(e, w));
    record.entries.push({
      agentId: w.agentId,
      file: w.file,
      format: w.format,
      path: [...w.path],
      value: w.value,
      created: added.created,
      before,
      ...(w.element ? { element: true as const } : {}),
    });
    writeRecord(home, record);
  } catch (err) {
    return { ...base, result: 'refused', reason: `cannot write ${recordPath(home)}: ${cause(err)}` };
  }
  let madeDir: string | undefined;
  try {
    const backup = w.file + BACKUP_SUFFIX;
    if (state.exists && !existsSync(backup)) copyFileSync(state.target, backup);
    madeDir = writeKeepingMode(state.target, encode(state, added.text), state.mode, state.exists ? state.bytes : null);
  } catch (err) {
    if (err instanceof ChangedMeanwhile) throw err;
    return { ...base, result: 'refused', reason: `cannot write ${w.file}: ${cause(err)}` };
  }
  if (madeDir) {
    const record = readRecord(home);
    const mine = record.entries.find((e) => sameEntry(e, w));
    if (mine) mine.madeDir = madeDir;
    writeRecord(home, record);
  }
  return { ...base, result: 'added' };
}

/** The record's entry for this wiring (hooks share a file, and could share a list). */
function sameEntry(e: RecordedEntry, w: Wiring): boolean {
  return e.file === w.file && sameValue(e.path, w.path) && (!w.element || sameValue(e.value, w.value));
}

export type UninstallOutcome =
  | { agentId: string; file: string; result: 'removed' | 'would remove' | 'absent' }
  /** The user changed svc's entry since: left as it is, and dropped from the record. */
  | { agentId: string; file: string; result: 'changed' }
  | { agentId: string; file: string; result: 'refused'; reason: string };

/** Takes one recorded entry out of its file; throws `ChangedMeanwhile` when another process rewrote the file. */
function uninstallEntry(e: RecordedEntry, dryRun: boolean, out: UninstallOutcome[], kept: RecordedEntry[]): void {
  const base = { agentId: e.agentId, file: e.file };
  let state: FileState;
  try {
    state = readState(e.file);
  } catch (err) {
    out.push({ ...base, result: 'refused', reason: `cannot read ${e.file}: ${cause(err)}` });
    kept.push(e);
    return;
  }
  if (!state.exists) {
    out.push({ ...base, result: 'absent' });
    return;
  }
  const spec = { format: e.format, path: e.path, value: e.value };
  const r = e.element ? removeElement(state.text, spec, e.created) : removeEntry(state.text, spec, e.created);
  if (r.kind === 'invalid') {
    out.push({ ...base, result: 'refused', reason: `${e.file}: ${r.reason}` });
    kept.push(e);
    return;
  }
  if (r.kind !== 'removed') {
    out.push({ ...base, result: r.kind });
    return;
  }
  if (dryRun) {
    out.push({ ...base, result: 'would remove' });
    kept.push(e);
    return;
  }
  const left = readConfig(r.text, e.format);
  const emptied = left.ok && isEmptyTable(left.value);
  try {
    if (emptied && e.before === 'missing') {
      unlinkSync(state.target);
      if (e.madeDir) removeMadeDirs(state.target, e.madeDir);
    } else
      writeKeepingMode(
        state.target,
        encode(state, emptied && e.before === 'empty' ? '' : r.text),
        state.mode,
        state.bytes,
      );
    // the backup goes only when the file is again byte for byte what it was before install
    const backup = e.file + BACKUP_SUFFIX;
    const now = existsSync(state.target) ? readFileSync(state.target) : null;
    if (existsSync(backup) && now?.equals(readFileSync(backup))) unlinkSync(backup);
  } catch (err) {
    if (err instanceof ChangedMeanwhile) throw err;
    out.push({ ...base, result: 'refused', reason: `cannot write ${e.file}: ${cause(err)}` });
    kept.push(e);
    return;
  }
  out.push({ ...base, result: 'removed' });
}

/** Take out everything the record says install added. */
export function uninstallAll(home: string, dryRun: boolean): UninstallOutcome[] {
  const record = readRecord(home);
  const out: UninstallOutcome[] = [];
  const kept: RecordedEntry[] = [];
  // last added, first taken out: an entry that made a shared table (`hooks` for two events) goes after the entries
  // added into that table later, so the table it made goes with it
  for (const e of [...record.entries].reverse()) {
    const base = { agentId: e.agentId, file: e.file };
    for (let tries = 1; ; tries++) {
      try {
        uninstallEntry(e, dryRun, out, kept);
        break;
      } catch (err) {
        if (!(err instanceof ChangedMeanwhile)) throw err;
        if (tries < EDIT_TRIES) continue;
        out.push({ ...base, result: 'refused', reason: `${e.file} kept changing while svc edited it; try again` });
        kept.push(e);
        break;
      }
    }
  }
  const keptFiles: RecordedFile[] = [];
  for (const f of record.files ?? []) {
    const base = { agentId: f.agentId, file: f.file };
    let text: string | null = null;
    try {
      text = readFileSync(f.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        out.push({ ...base, result: 'refused', reason: `cannot read ${f.file}: ${cause(err)}` });
        keptFiles.push(f);
        continue;
      }
    }
    if (text === null) out.push({ ...base, result: 'absent' });
    else if (sha256(text) !== f.sha256) out.push({ ...base, result: 'changed' });
    else if (dryRun) {
      out.push({ ...base, result: 'would remove' });
      keptFiles.push(f);
    } else {
      try {
        unlinkSync(f.file);
        out.push({ ...base, result: 'removed' });
      } catch (err) {
        out.push({ ...base, result: 'refused', reason: `cannot remove ${f.file}: ${cause(err)}` });
        keptFiles.push(f);
      }
    }
  }
  if (!dryRun) writeRecord(home, { version: 1, entries: kept.reverse(), files: keptFiles });
  return out;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Write a whole file that is svc's own (pi's extension). An existing file with other content is the user's: left
 * alone (`user entry`). Recorded so uninstall removes it while it is still what svc wrote.
 */
export function installFile(
  home: string,
  f: { agentId: string; file: string; content: string },
  dryRun: boolean,
): InstallOutcome {
  const base = { agentId: f.agentId, file: f.file };
  let existing: string | null = null;
  try {
    existing = readFileSync(f.file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      return { ...base, result: 'refused', reason: `cannot read ${f.file}: ${cause(err)}` };
  }
  if (existing === f.content) return { ...base, result: 'already' };
  const record = (() => {
    try {
      return readRecord(home);
    } catch {
      return null;
    }
  })();
  const ours = record?.files?.find((r) => r.file === f.file);
  // a file there that svc did not write, or that the user changed since: theirs
  if (existing !== null && !(ours && sha256(existing) === ours.sha256)) return { ...base, result: 'user entry' };
  if (dryRun) return { ...base, result: 'would add' };
  try {
    const next = readRecord(home);
    next.files = [...(next.files ?? []).filter((r) => r.file !== f.file), { ...base, sha256: sha256(f.content) }];
    writeRecord(home, next);
  } catch (err) {
    return { ...base, result: 'refused', reason: `cannot write ${recordPath(home)}: ${cause(err)}` };
  }
  try {
    writeKeepingMode(f.file, f.content, 0o644);
  } catch (err) {
    return { ...base, result: 'refused', reason: `cannot write ${f.file}: ${cause(err)}` };
  }
  return { ...base, result: 'added' };
}

/** Whether svc's own file is there as svc writes it now. */
export function fileState(file: string, content: string): WiredState {
  try {
    return readFileSync(file, 'utf8') === content ? 'wired' : 'other entry';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'not wired' : 'unreadable';
  }
}

export type WiredState = 'wired' | 'not wired' | 'other entry' | 'unreadable';

/** What an agent's config holds at svc's key: for `svc verify`. */
export function wiredState(w: Wiring): WiredState {
  let state: FileState;
  try {
    state = readState(w.file);
  } catch {
    return 'unreadable';
  }
  const reading = readConfig(state.text, w.format);
  if (!reading.ok) return 'unreadable';
  const v = valueAt(reading.value, w.path);
  if (w.element) return Array.isArray(v) && v.some((e) => sameValue(e, w.value)) ? 'wired' : 'not wired';
  if (v === undefined) return 'not wired';
  return sameValue(v, w.value) ? 'wired' : 'other entry';
}
