/**
 * The git adapter, and the worktree operations built on it (`--wt`, `svc worktree`, the `worktree.<slug>` actor).
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
import { lstat, mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fromPromise } from 'xstate';
import { svcPaths } from '../core/paths.js';
import {
  branchSlug,
  countStashes,
  explainAddFailure,
  type PathKind,
  parseHidden,
  parseMark,
  parseStatus,
  parseWorktreeList,
  planWorktree,
  type SessionView,
  type StatusSummary,
  sessionsHolding,
  WORKTREE_MARK_FILE,
  type WorktreeEntry,
  type WorktreeFacts,
  type WorktreeMark,
  type WorktreePlanFacts,
  worktreeDirName,
  worktreeHold,
  worktreeSessionName,
} from '../core/worktree.js';
import type { RemoveOutcome, WorktreeInput } from '../machines/worktree.js';

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

// ---------------------------------------------------------------------------
// The index of repositories with svc worktrees

/** Where svc worktrees may be: main checkouts that `--wt` has made a worktree of. Only a hint: the mark decides. */
export interface WorktreeIndex {
  repos(): Promise<string[]>;
  add(repo: string): Promise<void>;
}

/** `~/.svc/worktrees.json` unless told otherwise. */
export function defaultIndexFile(home = homedir()): string {
  return join(svcPaths(home).dir, 'worktrees.json');
}

/** The index as a JSON file `{ "repos": [...] }`, replaced atomically (a lost race loses a hint, never a worktree). */
export function createWorktreeIndex(file = defaultIndexFile()): WorktreeIndex {
  const read = async (): Promise<string[]> => {
    try {
      const parsed = JSON.parse(await readFile(file, 'utf8')) as { repos?: unknown };
      return Array.isArray(parsed.repos) ? parsed.repos.filter((r): r is string => typeof r === 'string') : [];
    } catch {
      return [];
    }
  };
  return {
    repos: read,
    async add(repo) {
      const repos = await read();
      if (repos.includes(repo)) return;
      await mkdir(dirname(file), { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}.tmp`;
      await writeFile(tmp, `${JSON.stringify({ repos: [...repos, repo].sort() }, null, 2)}\n`, { mode: 0o600 });
      await rename(tmp, file);
    },
  };
}

// ---------------------------------------------------------------------------
// `--wt <branch>`

export type EnsureWorktreeResult =
  | {
      ok: true;
      /** The worktree's directory (real path). */
      path: string;
      /** The main checkout's root (real path). */
      repo: string;
      /** Its directory name, the `<repo>` of `<repo>-wt-<slug>`. */
      repoName: string;
      branch: string;
      branchSlug: string;
      /** The tmux session to run in it: `svc-<repo>-wt-<slug>`. */
      sessionName: string;
      /** false: an existing worktree of this branch at this path was reused. */
      created: boolean;
      /** It carries the svc mark (made by `--wt`); a worktree someone else made there is reused but never marked. */
      marked: boolean;
    }
  | { ok: false; message: string };

export interface EnsureWorktreeOptions {
  git: Git;
  /** Where `--wt` was run: anywhere inside the repository or one of its worktrees. */
  cwd: string;
  branch: string;
  /** Default: `~/.svc/worktrees.json`. */
  index?: WorktreeIndex;
  now?: () => number;
}

/** Find or make the worktree of `branch` beside the main checkout (spec 4.4 `--wt`, rules 2 and 3). */
export async function ensureWorktree(options: EnsureWorktreeOptions): Promise<EnsureWorktreeResult> {
  const { git, cwd, branch, now = Date.now } = options;
  try {
    return await ensure(git, cwd, branch, options.index ?? createWorktreeIndex(), now);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    return { ok: false, message: `--wt: ${message.split('\n')[0]}` };
  }
}

async function ensure(
  git: Git,
  cwd: string,
  branch: string,
  index: WorktreeIndex,
  now: () => number,
): Promise<EnsureWorktreeResult> {
  const slug = branchSlug(branch);
  const inGit = (await git.commonDir(cwd)) !== null;
  const entries = inGit ? await git.listWorktrees(cwd) : [];
  const main = entries[0];
  const mainRoot = main?.path ?? null;
  const repoName = mainRoot === null ? '' : basename(mainRoot).replace(/\.git$/, '');
  const path = mainRoot === null ? '' : join(dirname(mainRoot), worktreeDirName(repoName, slug));

  const facts: WorktreePlanFacts = {
    branch,
    normalizedBranch: null,
    mainRoot,
    bare: main?.bare ?? false,
    head: null,
    path,
    pathKind: 'nothing',
    atPath: null,
    checkedOutAt: null,
    branchExists: false,
  };
  // Each fact is only asked for when the ones before it did not already decide (a refusal is one line).
  if (mainRoot !== null && !facts.bare) {
    facts.normalizedBranch = branch.startsWith('-') ? null : await git.checkBranchName(branch);
    if (facts.normalizedBranch === branch) {
      const here = entries.find((e) => e.path === path);
      facts.atPath = here ? { branch: here.branch, missing: here.prunable !== null } : null;
      facts.pathKind = await git.pathKind(path);
      facts.checkedOutAt = entries.find((e) => e.branch === branch && e.path !== path)?.path ?? null;
      facts.branchExists = await git.branchExists(mainRoot, branch);
      facts.head = await git.resolveCommit(cwd, 'HEAD');
    }
  }
  const plan = planWorktree(facts);
  if (plan.action === 'refuse') return { ok: false, message: plan.message };

  const result = (created: boolean, marked: boolean): EnsureWorktreeResult => ({
    ok: true,
    path,
    repo: mainRoot!,
    repoName,
    branch,
    branchSlug: slug,
    sessionName: worktreeSessionName(repoName, slug),
    created,
    marked,
  });

  if (plan.action === 'reuse') {
    const marked = (await git.readMark(mainRoot!, path)) !== null;
    if (marked) await index.add(mainRoot!);
    return result(false, marked);
  }

  try {
    // From the main checkout, with HEAD already resolved: `cwd` may be anywhere, even inside `.git`.
    if (plan.newBranch) await git.addWorktree(mainRoot!, path, branch, { newBranchFrom: facts.head! });
    else await git.addWorktree(mainRoot!, path, branch);
  } catch (e) {
    // Another `--wt` of the same branch may have made it a moment ago: then it is simply reused.
    const again = (await git.listWorktrees(mainRoot!).catch(() => [])).find((w) => w.path === path);
    if (again?.branch === branch && again.prunable === null) return result(false, false);
    return { ok: false, message: explainAddFailure(e instanceof GitError ? e.stderr || e.message : String(e), branch) };
  }

  // The branch's own work is what is beyond where it started: HEAD for a new branch; for an existing one, where it
  // meets the HEAD `--wt` ran from (unrelated history: null, every commit of it counts).
  const base = plan.newBranch
    ? facts.head
    : facts.head === null
      ? null
      : await git.mergeBase(mainRoot!, facts.head, `refs/heads/${branch}`);
  await git.writeMark(path, {
    version: 1,
    branch,
    slug,
    repoName,
    sessionName: worktreeSessionName(repoName, slug),
    base,
    createdAt: now(),
  });
  await index.add(mainRoot!);
  return result(true, true);
}

// ---------------------------------------------------------------------------
// Finding svc worktrees and what holds them

/** A worktree made by `--wt`, as found in its repository. */
export interface SvcWorktree extends WorktreeInput {
  repoName: string;
  mark: WorktreeMark;
}

export interface FindResult {
  worktrees: SvcWorktree[];
  /** Repositories that could not be read (one line each). */
  problems: string[];
}

/** Every marked worktree of the indexed repositories and of the repository `cwd` is in (if any). */
export async function findSvcWorktrees(options: { git: Git; index: WorktreeIndex; cwd?: string }): Promise<FindResult> {
  const { git, index, cwd } = options;
  const repos = new Set(await index.repos());
  if (cwd !== undefined && (await git.commonDir(cwd)) !== null) {
    const main = (await git.listWorktrees(cwd).catch(() => []))[0];
    if (main && !main.bare) repos.add(main.path);
  }
  const worktrees: SvcWorktree[] = [];
  const problems: string[] = [];
  for (const repo of [...repos].sort()) {
    let entries: WorktreeEntry[];
    try {
      const kind = await git.pathKind(repo);
      if (kind !== 'directory') {
        problems.push(`${repo}: repository not found`);
        continue;
      }
      entries = await git.listWorktrees(repo);
    } catch (e) {
      problems.push(`${repo}: ${e instanceof Error ? e.message : String(e)}`);
      continue;
    }
    for (const entry of entries.slice(1)) {
      const mark = await git.readMark(repo, entry.path).catch(() => null);
      if (!mark) continue;
      worktrees.push({
        slug: mark.slug,
        path: entry.path,
        repo,
        repoName: mark.repoName,
        branch: entry.branch ?? mark.branch,
        sessionName: mark.sessionName,
        mark,
      });
    }
  }
  return { worktrees, problems };
}

/** What the caller knows of tmux: the live sessions, or why it could not ask. */
export type SessionsKnown = { sessions: readonly SessionView[] } | { unknown: string };

/** Gather every fact `worktreeHold` needs. Git errors propagate: a caller that cannot know must not remove. */
export async function gatherWorktreeFacts(git: Git, wt: WorktreeInput, known: SessionsKnown): Promise<WorktreeFacts> {
  const entries = await git.listWorktrees(wt.repo);
  const entry = entries.slice(1).find((e) => e.path === wt.path);
  const facts: WorktreeFacts = {
    registered: entry !== undefined,
    marked: false,
    sessions: 'sessions' in known ? sessionsHolding(known.sessions, wt.sessionName, wt.path) : [],
    locked: entry?.locked ?? null,
    missing: false,
    changes: 0,
    untracked: 0,
    ignored: 0,
    hidden: 0,
    unpushed: 0,
    stashes: 0,
  };
  if ('unknown' in known) facts.sessionsUnknown = known.unknown;
  if (!entry) return facts;
  const mark = await git.readMark(wt.repo, wt.path);
  facts.marked = mark !== null;
  facts.missing = entry.prunable !== null || (await git.pathKind(wt.path)) !== 'directory';
  if (facts.missing || !mark) return facts;
  const [status, hidden, unpushed, stashes] = await Promise.all([
    git.status(wt.path),
    git.hiddenFiles(wt.path),
    git.unpushed(wt.path, mark.base),
    git.stashSubjects(wt.repo),
  ]);
  facts.changes = status.changes;
  facts.untracked = status.untracked;
  facts.ignored = status.ignored;
  facts.hidden = hidden.count;
  facts.unpushed = unpushed;
  // A stash made on a detached HEAD says `(no branch)`: it cannot be told apart, so it does not count.
  facts.stashes = entry.branch === null ? 0 : countStashes(stashes, entry.branch);
  facts.examples = { ...status.examples, ...(hidden.example === undefined ? {} : { hidden: hidden.example }) };
  return facts;
}

/**
 * Remove the worktree if nothing holds it, looking again right before (the world may have changed since the last
 * look), then plain `git worktree remove` — which itself refuses a worktree that became dirty in between.
 * Never `--force`, never a directory removed by hand, never a branch deleted.
 */
export async function removeIfFree(git: Git, wt: WorktreeInput, known: SessionsKnown): Promise<RemoveOutcome> {
  const hold = worktreeHold(await gatherWorktreeFacts(git, wt, known));
  if (hold) return { removed: false, reason: hold.reason };
  try {
    await git.removeWorktree(wt.repo, wt.path);
    return { removed: true };
  } catch (e) {
    if (e instanceof GitError && e.code === 'failed') return { removed: false, reason: `git refused: ${e.message}` };
    throw e;
  }
}

// ---------------------------------------------------------------------------
// Actors for `machines/worktree.ts`

/** `checkWorktree`: the facts, with no session (the machine only asks once the listener saw it gone). */
export function checkWorktreeActor(git: Git) {
  return fromPromise<WorktreeFacts, WorktreeInput>(({ input }) => gatherWorktreeFacts(git, input, { sessions: [] }));
}

/** `removeWorktree`: `removeIfFree`, with no session. */
export function removeWorktreeActor(git: Git) {
  return fromPromise<RemoveOutcome, WorktreeInput>(({ input }) => removeIfFree(git, input, { sessions: [] }));
}
