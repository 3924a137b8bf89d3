/**
 * File view, the listener's side (spec 4.11.3; docs/files.md "File view"): the project of a session (the git top
 * level of its pane's folder, else the folder) listed as git sees it (tracked files and untracked files not covered
 * by `.gitignore`), a file read, or its uncommitted diff, answered sealed to the device that asked. Rules in
 * core/files/view.ts: plain relative paths only, a symlink leading out of the project refused, secret files listed
 * and never shown, secret-looking strings masked with secretlint's recommended rules, binary files and the part of a
 * large one beyond 256 KiB not read. Each answer is a line of the read log; `svc file-view off` turns it off.
 */
import { execFile } from 'node:child_process';
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  realpathSync,
  statSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import {
  changeFileView,
  checkViewPath,
  FILE_VIEW_LOG_KEPT,
  FILE_VIEW_ON,
  type FileViewChange,
  FileViewRead,
  FileViewSettings,
  fileViewRefusal,
  isPrivatePath,
  isSecretFile,
  MAX_LISTED,
  MAX_SHOWN_BYTES,
  maskRanges,
} from '../../core/files/view.js';
import type { FileRequest, FileResultBody } from '../../core/protocol/bodies.js';
import type { SessionRecord } from '../../core/protocol/index.js';
import { activePane } from '../../core/sessions/inventory.js';
import { withFileLockSync } from '../fileLock.js';
import { ensurePrivateDir, writeFileAtomic } from '../files.js';

export type FileAnswer = Omit<FileResultBody, 'session' | 'seq'>;

/** git in `cwd`; every path argument is taken literally (a file named `*` is that file, never a pattern). */
/** New files shown in a diff, at most (each is one git call). */
export const MAX_UNTRACKED_DIFFS = 50;

function git(cwd: string, args: string[]): Promise<{ ok: boolean; out: string; cut: boolean }> {
  return new Promise((resolve) => {
    execFile(
      'git',
      ['-C', cwd, '--literal-pathspecs', ...args],
      { maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' },
      (err, stdout) => {
        const cut = (err as { code?: string } | null)?.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER';
        resolve({ ok: !err || cut, out: stdout ?? '', cut });
      },
    );
  });
}

/**
 * Secret-looking strings in `text` masked (secretlint's recommended rules); how many were. secretlint is loaded at
 * the first file shown, not with the listener (it is a tenth of an idle listener's memory).
 */
export async function maskSecrets(text: string, filePath: string): Promise<{ text: string; masked: number }> {
  const [{ lintSource }, { creator: recommended }] = await Promise.all([
    import('@secretlint/core'),
    import('@secretlint/secretlint-rule-preset-recommend'),
  ]);
  const result = await lintSource({
    source: { content: text, filePath, contentType: 'text' },
    options: { config: { rules: [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: recommended }] } },
  });
  const ranges = result.messages.map((m) => m.range as [number, number]);
  return { text: maskRanges(text, ranges), masked: ranges.length };
}

/** The project's paths as git lists them (tracked, and untracked not ignored); a folder outside git is walked. */
async function listing(root: string, isGit: boolean): Promise<string[]> {
  if (isGit) {
    const r = await git(root, ['ls-files', '-co', '--exclude-standard', '-z']);
    return [...new Set(r.out.split('\0').filter(Boolean))].sort();
  }
  const out: string[] = [];
  const walk = (dir: string, rel: string) => {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (out.length > MAX_LISTED * 2) return;
      if (name === '.git' || name === 'node_modules') continue;
      const path = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, name), { throwIfNoEntry: false });
      if (st?.isDirectory()) walk(join(dir, name), path);
      else if (st) out.push(path);
    }
  };
  walk(root, '');
  return out;
}

export interface FileViewDeps {
  /** `~/.svc/file-view.json`: where file view is off. */
  settingsPath: string;
  /** `~/.local/state/svc/file-view.log`: the last 50 reads (0600). */
  logPath: string;
  /** The person's home directory: its private folders are never shown, and it is no project by default. */
  home: string;
}

/**
 * Up to `MAX_SHOWN_BYTES` of a regular file, never blocking: the type is checked before opening and again on the
 * opened descriptor, which is opened non-blocking and without following a link (a named pipe or a device swapped
 * in meanwhile is refused, not waited on), and the cap holds however much the file grows while it is read.
 */
function readCapped(real: string): { bytes: Buffer; size: number } | 'not_a_file' {
  if (!statSync(real).isFile()) return 'not_a_file';
  const fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return 'not_a_file';
    const buf = Buffer.alloc(Math.min(st.size, MAX_SHOWN_BYTES));
    let n = 0;
    while (n < buf.length) {
      const got = readSync(fd, buf, n, buf.length - n, n);
      if (got === 0) break;
      n += got;
    }
    return { bytes: buf.subarray(0, n), size: st.size };
  } finally {
    closeSync(fd);
  }
}

export function readFileViewSettings(path: string): FileViewSettings {
  try {
    const parsed = FileViewSettings.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    // a broken file fails closed: file view stays off until it is fixed (or `svc file-view on --global`)
    return parsed.success ? parsed.data : { ...FILE_VIEW_ON, global: true };
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? FILE_VIEW_ON : { ...FILE_VIEW_ON, global: true };
  }
}

export function changeFileViewSettings(path: string, change: FileViewChange): FileViewSettings {
  ensurePrivateDir(dirname(path));
  return withFileLockSync(path, { waitMs: 5_000, maxAgeMs: 5_000 }, () => {
    const before = readFileViewSettings(path);
    const next = changeFileView(before, change);
    writeFileAtomic(path, `${JSON.stringify(next)}\n`);
    return next;
  });
}

/** The read log's lines, oldest first. */
export function readFileViewLog(path: string): FileViewRead[] {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter(Boolean)
    .flatMap((l) => {
      try {
        const r = FileViewRead.safeParse(JSON.parse(l));
        return r.success ? [r.data] : [];
      } catch {
        return [];
      }
    });
}

function logRead(path: string, read: FileViewRead): void {
  ensurePrivateDir(dirname(path));
  withFileLockSync(path, { waitMs: 5_000, maxAgeMs: 5_000 }, () => {
    const kept = [...readFileViewLog(path), read].slice(-FILE_VIEW_LOG_KEPT);
    writeFileAtomic(path, `${kept.map((r) => JSON.stringify(r)).join('\n')}\n`, 0o600, false);
  });
}

/** The project root of a session: its pane's folder's git top level, else the folder; real paths. */
export async function projectOf(record: SessionRecord | undefined): Promise<{ root: string; isGit: boolean } | null> {
  const cwd = record ? activePane(record)?.path : undefined;
  if (!cwd) return null;
  const top = await git(cwd, ['rev-parse', '--show-toplevel']);
  const root = top.ok && top.out.trim() ? top.out.trim() : cwd;
  try {
    return { root: realpathSync(root), isGit: top.ok && top.out.trim() !== '' };
  } catch {
    return null;
  }
}

export function createFileView(deps: FileViewDeps) {
  const answer = async (record: SessionRecord | undefined, request: FileRequest): Promise<FileAnswer> => {
    const project = await projectOf(record);
    if (!project) return { op: request.op, refused: 'session_not_found' };
    const off = fileViewRefusal(readFileViewSettings(deps.settingsPath), project.root, deps.home);
    if (off) return { op: request.op, refused: off };
    const { root, isGit } = project;
    const secret = (path: string) => isSecretFile(path) || isPrivatePath(join(root, path), deps.home);
    const paths = await listing(root, isGit);
    if (request.op === 'list') {
      const changed = new Set<string>();
      if (isGit) {
        const status = await git(root, ['status', '--porcelain', '-z', '--untracked-files=all']);
        for (const entry of status.out.split('\0')) if (entry.length > 3) changed.add(entry.slice(3));
      }
      const entries = paths.slice(0, MAX_LISTED).map((path) => ({
        path,
        size: lstatSync(join(root, path), { throwIfNoEntry: false })?.size ?? 0,
        ...(secret(path) ? { secret: true } : {}),
        ...(changed.has(path) ? { changed: true } : {}),
      }));
      return { op: 'list', entries, ...(paths.length > MAX_LISTED ? { more: paths.length - MAX_LISTED } : {}) };
    }
    const path = request.path;
    if (path !== undefined) {
      const checked = checkViewPath(path);
      if (!checked.ok) return { op: request.op, path: path.slice(0, 300), refused: checked.code };
      if (!paths.includes(path)) return { op: request.op, path, refused: 'not_in_project' };
      if (secret(path)) return { op: request.op, path, secret: true, refused: 'secret_file' };
    }
    if (request.op === 'diff') {
      const files = path !== undefined ? [path] : paths.filter((p) => !secret(p));
      const head = await git(root, ['rev-parse', '--verify', '-q', 'HEAD']);
      const args = ['diff', '--no-color', '--no-ext-diff', ...(head.ok && head.out.trim() ? ['HEAD'] : []), '--'];
      const diff = files.length > 0 ? await git(root, [...args, ...files]) : { ok: true, out: '', cut: false };
      // new files git does not track yet are changes too: each as added whole (`--no-index` against /dev/null, whose
      // exit status 1 only says they differ), up to the size shown
      const wanted = new Set(files);
      const untracked = isGit
        ? (await git(root, ['ls-files', '--others', '--exclude-standard', '-z'])).out
            .split('\0')
            .filter((p) => p && wanted.has(p))
        : [];
      let out = diff.out;
      let unshown = 0;
      for (const [i, file] of untracked.entries()) {
        if (out.length > MAX_SHOWN_BYTES || i >= MAX_UNTRACKED_DIFFS) {
          unshown = untracked.length - i;
          break;
        }
        out += (await git(root, ['diff', '--no-index', '--no-color', '--no-ext-diff', '--', '/dev/null', file])).out;
      }
      const cut = diff.cut || out.length > MAX_SHOWN_BYTES || unshown > 0;
      const masked = await maskSecrets(out.slice(0, MAX_SHOWN_BYTES), path ?? 'diff');
      return {
        op: 'diff',
        ...(path ? { path } : {}),
        text: masked.text,
        masked: masked.masked,
        ...(cut ? { truncated: true } : {}),
      };
    }
    // read: the real file must be inside the real project (a symlink leading out is refused)
    let real: string;
    try {
      real = realpathSync(join(root, path!));
    } catch {
      return { op: 'read', path, refused: 'not_in_project' };
    }
    if (!real.startsWith(`${root}/`)) return { op: 'read', path, refused: 'outside_project' };
    // secrecy is judged on what is read: a link named notes.txt that leads to .env is .env
    if (isPrivatePath(real, deps.home)) return { op: 'read', path, secret: true, refused: 'secret_file' };
    const read = readCapped(real);
    if (read === 'not_a_file') return { op: 'read', path, refused: 'not_a_file' };
    const { bytes, size } = read;
    if (bytes.subarray(0, 8192).includes(0)) return { op: 'read', path, binary: true, size };
    const masked = await maskSecrets(bytes.toString('utf8'), path!);
    return {
      op: 'read',
      path,
      size,
      text: masked.text,
      masked: masked.masked,
      ...(size > MAX_SHOWN_BYTES ? { truncated: true } : {}),
    };
  };

  return {
    /** Answers `request` for `device` about `session` (its live record), and logs it. */
    async answer(session: string, record: SessionRecord | undefined, request: FileRequest, device: string) {
      let result: FileAnswer;
      try {
        result = await answer(record, request);
      } catch {
        result = { op: request.op, refused: 'read_failed' };
      }
      const outcome =
        result.refused ??
        (result.binary ? 'binary, not shown' : result.masked ? `shown, ${result.masked} masked` : 'shown');
      try {
        logRead(deps.logPath, {
          at: Date.now(),
          device,
          session,
          op: request.op,
          ...('path' in request && request.path ? { path: request.path.slice(0, 300) } : {}),
          outcome,
        });
      } catch {
        // the answer still goes; the listener logs the read itself too
      }
      return result;
    },
  };
}
