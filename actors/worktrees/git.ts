/**
 * The git adapter; the worktree operations built on it are in `actors/worktrees/worktrees.ts`.
 *
 * Every git call goes through the `Git` interface; `createGit` runs `git -C <dir> …` with `execFile` (argument
 * arrays, never a shell string). The adapter also answers the few filesystem questions the worktree rules need
 * (what is at a path; the `svc-wt` mark in a worktree's private git dir), so one fake (`test/fakes/fakeGit.ts`)
 * stands in for all of it. `WorktreeIndex` is the list of repositories that have svc worktrees
 * (`~/.svc/worktrees.json`), so they can be found from anywhere.
 *
 * What git 2.39 does, measured (and pinned in `test/integration/worktree*.test.ts`):
 * - `git worktree remove` without `--force` refuses modified, staged and untracked files and a locked worktree,
 *   but DELETES ignored files (`node_modules/`, `*.log` in `info/exclude`) and assume-unchanged files with edits:
 *   those are checked here first, as late as possible (`removeIfFree` re-checks right before removing).
 * - It removes a registered worktree whose directory is gone (exit 0): svc holds such a one instead.
 * - `git worktree list` and `rev-parse --show-toplevel` print real paths (symlinks resolved).
 * - `git check-ref-format --branch` rejects `a..b`, `-x`, `HEAD`, `x.lock`; it expands `@{-1}` to the previous
 *   branch (so its output must equal the name given); `@` is accepted.
 * - `git worktree add` of a branch checked out elsewhere: `fatal: 'b' is already checked out at '<path>'`.
 * - `git stash list` is shared by all worktrees; an entry's subject is `WIP on <branch>: …` or `On <branch>: …`
 *   (`(no branch)` when made on a detached HEAD).
 * - Environment variables such as `GIT_DIR` and `GIT_WORK_TREE` would point every call at another repository;
 *   they are removed from the environment of every call. `GIT_OPTIONAL_LOCKS=0` keeps `status` from taking the
 *   index lock the user's own git may need; `LC_ALL=C` keeps messages parseable.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  type PathKind,
  parseHidden,
  parseMark,
  parseStatus,
  parseWorktreeList,
  type StatusSummary,
  WORKTREE_MARK_FILE,
  type WorktreeEntry,
  type WorktreeMark,
} from '../../core/worktrees/worktree.js';

export type GitErrorCode = 'no_git' | 'timeout' | 'failed';

/** A git call that failed; `message` is git's own first error line. */
export class GitError extends Error {
  override readonly name = 'GitError';
  constructor(
    readonly code: GitErrorCode,
    message: string,
    readonly stderr = '',
    readonly exitCode: number | null = null,
  ) {
    super(message);
  }
}

export interface Git {
  /** The repository's common git dir (absolute) for a directory inside it; null outside git. */
  commonDir(dir: string): Promise<string | null>;
  /** `git worktree list --porcelain`: the main worktree first. */
  listWorktrees(dir: string): Promise<WorktreeEntry[]>;
  /** What `git check-ref-format --branch` makes of a name; null when git rejects it. */
  checkBranchName(name: string): Promise<string | null>;
  branchExists(dir: string, branch: string): Promise<boolean>;
  /** The commit `rev` names (`HEAD`, a branch), or null. */
  resolveCommit(dir: string, rev: string): Promise<string | null>;
  mergeBase(dir: string, a: string, b: string): Promise<string | null>;
  /** `git worktree add`: the existing `branch`, or a new one at `newBranchFrom`. */
  addWorktree(dir: string, path: string, branch: string, opts?: { newBranchFrom?: string }): Promise<void>;
  /** Plain `git worktree remove <path>`: never `--force`, so git itself refuses a dirty or locked worktree. */
  removeWorktree(dir: string, path: string): Promise<void>;
  /** `git status --porcelain --ignored --untracked-files=normal` in the worktree, counted. */
  status(worktree: string): Promise<StatusSummary>;
  /** Tracked files hidden from status (assume-unchanged; skip-worktree and present). */
  hiddenFiles(worktree: string): Promise<{ count: number; example?: string }>;
  /** Commits reachable from the worktree's HEAD but not from `base` nor any remote-tracking branch. */
  unpushed(worktree: string, base: string | null): Promise<number>;
  /** `git stash list --format=%gs`: the subject of every stash entry (shared by all worktrees). */
  stashSubjects(dir: string): Promise<string[]>;
  /** What is at a path, without following a symlink. */
  pathKind(path: string): Promise<PathKind>;
  /** The `svc-wt` mark of the repository's worktree at `path` (found even when its directory is gone). */
  readMark(dir: string, path: string): Promise<WorktreeMark | null>;
  /** Write the mark into the private git dir of the worktree at `path`. */
  writeMark(path: string, mark: WorktreeMark): Promise<void>;
}

export interface CreateGitOptions {
  /** The git program; an absolute path when PATH may not reach it (launchd, systemd). */
  bin?: string;
  /** Per call; a hung git must not hang the daemon. `worktree remove` gets five times as long. */
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** Variables that would make git look at another repository than the one `-C` names. */
const REPO_ENV = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_COMMON_DIR',
  'GIT_OBJECT_DIRECTORY',
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_NAMESPACE',
  'GIT_PREFIX',
];

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

const firstErrorLine = (stderr: string): string =>
  (
    stderr
      .split('\n')
      .map((l) => l.trim())
      .find((l) => /^(fatal|error):/.test(l)) ??
    stderr.trim().split('\n')[0] ??
    ''
  ).replace(/^(fatal|error):\s*/, '');

export function createGit(options: CreateGitOptions = {}): Git {
  const { bin = 'git', timeoutMs = 60_000 } = options;
  const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env), LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0' };
  for (const name of REPO_ENV) delete env[name];

  /** Resolves with the exit code for any exit; rejects only when git did not run or timed out. */
  function attempt(dir: string | null, args: readonly string[], opts: { timeout?: number; env?: object } = {}) {
    const argv = dir === null ? [...args] : ['-C', dir, ...args];
    const timeout = opts.timeout ?? timeoutMs;
    return new Promise<RunResult>((resolve, reject) => {
      const child = execFile(
        bin,
        argv,
        { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, timeout, env: { ...env, ...opts.env } },
        (error, stdout, stderr) => {
          if (!error) return resolve({ code: 0, stdout, stderr });
          const err = error as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
          if (err.code === 'ENOENT') return reject(new GitError('no_git', `git not found (${bin})`));
          if (err.killed) return reject(new GitError('timeout', `git ${args[0]} timed out after ${timeout} ms`));
          resolve({
            code: typeof err.code === 'number' ? err.code : 1,
            stdout: String(stdout),
            stderr: String(stderr),
          });
        },
      );
      child.stdin?.on('error', () => {});
      child.stdin?.end();
    });
  }

  async function run(dir: string | null, args: readonly string[], opts: { timeout?: number; env?: object } = {}) {
    const result = await attempt(dir, args, opts);
    if (result.code !== 0) {
      const line = firstErrorLine(result.stderr) || `git ${args[0]} exited with ${result.code}`;
      throw new GitError('failed', line, result.stderr, result.code);
    }
    return result.stdout;
  }

  const oneLine = (s: string): string => s.replace(/\n$/, '');

  /** The worktree's private git dir, found from the repository's side: `<common>/worktrees/<id>/gitdir` names it. */
  async function adminDirOf(dir: string, path: string): Promise<string | null> {
    const common = await run(dir, ['rev-parse', '--path-format=absolute', '--git-common-dir']).then(oneLine);
    const root = join(common, 'worktrees');
    const ids = await readdir(root).catch(() => [] as string[]);
    for (const id of ids) {
      const pointer = await readFile(join(root, id, 'gitdir'), 'utf8').catch(() => null);
      if (pointer !== null && dirname(pointer.trim()) === path) return join(root, id);
    }
    return null;
  }

  return {
    async commonDir(dir) {
      const r = await attempt(dir, ['rev-parse', '--path-format=absolute', '--git-common-dir']);
      return r.code === 0 ? oneLine(r.stdout) : null;
    },

    async listWorktrees(dir) {
      return parseWorktreeList(await run(dir, ['worktree', 'list', '--porcelain', '-z']));
    },

    async checkBranchName(name) {
      const r = await attempt(null, ['check-ref-format', '--branch', name]);
      return r.code === 0 ? oneLine(r.stdout) : null;
    },

    async branchExists(dir, branch) {
      const r = await attempt(dir, ['show-ref', '--verify', '--quiet', `refs/heads/${branch}`]);
      if (r.code === 0) return true;
      if (r.code === 1) return false;
      throw new GitError('failed', firstErrorLine(r.stderr), r.stderr, r.code);
    },

    async resolveCommit(dir, rev) {
      const r = await attempt(dir, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`]);
      return r.code === 0 ? oneLine(r.stdout) : null;
    },

    async mergeBase(dir, a, b) {
      const r = await attempt(dir, ['merge-base', '--end-of-options', a, b]);
      if (r.code === 0) return oneLine(r.stdout);
      if (r.code === 1) return null;
      throw new GitError('failed', firstErrorLine(r.stderr), r.stderr, r.code);
    },

    async addWorktree(dir, path, branch, opts = {}) {
      const args =
        opts.newBranchFrom !== undefined
          ? ['worktree', 'add', '-b', branch, '--', path, opts.newBranchFrom]
          : ['worktree', 'add', '--', path, branch];
      await run(dir, args);
    },

    async removeWorktree(dir, path) {
      await run(dir, ['worktree', 'remove', '--', path], { timeout: timeoutMs * 5 });
    },

    async status(worktree) {
      const out = await run(
        worktree,
        [
          'status',
          '--porcelain=v1',
          '-z',
          '--ignored=traditional',
          '--untracked-files=normal',
          '--ignore-submodules=none',
        ],
        { env: { GIT_OPTIONAL_LOCKS: '0' } },
      );
      return parseStatus(out);
    },

    async hiddenFiles(worktree) {
      const out = await run(worktree, ['ls-files', '-v', '-z']);
      return parseHidden(out, (p) => existsSync(join(worktree, p)));
    },

    async unpushed(worktree, base) {
      const args = ['rev-list', '--count', 'HEAD', '--not', '--remotes', ...(base ? [base] : [])];
      return Number.parseInt(await run(worktree, args), 10);
    },

    async stashSubjects(dir) {
      const out = await run(dir, ['stash', 'list', '--format=%gs']);
      return out.split('\n').filter((l) => l !== '');
    },

    async pathKind(path) {
      try {
        const s = await lstat(path);
        return s.isDirectory() ? 'directory' : s.isFile() ? 'file' : 'other';
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'nothing';
        throw e;
      }
    },

    async readMark(dir, path) {
      const admin = await adminDirOf(dir, path);
      if (admin === null) return null;
      const text = await readFile(join(admin, WORKTREE_MARK_FILE), 'utf8').catch(() => null);
      return text === null ? null : parseMark(text);
    },

    async writeMark(path, mark) {
      const admin = oneLine(await run(path, ['rev-parse', '--path-format=absolute', '--git-dir']));
      const file = join(admin, WORKTREE_MARK_FILE);
      const tmp = `${file}.${process.pid}.tmp`;
      await writeFile(tmp, `${JSON.stringify(mark)}\n`, { mode: 0o644 });
      await rename(tmp, file);
    },
  };
}
