/**
 * An in-memory `Git` for unit tests: repositories with worktrees, each worktree a handful of counts standing in for
 * its files and commits, and a record of every call. Refusals follow the real git 2.39 (see actors/worktrees/git.ts):
 * `worktree remove` refuses changes, untracked files and a lock, and removes a worktree with ignored files.
 * Any call can be made to fail once with `failNext`.
 */
import { type Git, GitError } from '../../actors/worktrees/git.js';
import type { WorktreeIndex } from '../../actors/worktrees/worktrees.js';
import type { PathKind, StatusSummary, WorktreeEntry, WorktreeMark } from '../../core/worktrees/worktree.js';

export interface FakeWorktree {
  path: string;
  branch: string | null;
  head: string;
  locked: string | null;
  /** Its directory is gone (git lists it as prunable). */
  missing: boolean;
  changes: number;
  untracked: number;
  ignored: number;
  hidden: number;
  unpushed: number;
  mark: WorktreeMark | null;
}

export interface FakeRepo {
  root: string;
  bare: boolean;
  /** HEAD of the main checkout; null: no commit yet. */
  head: string | null;
  /** Branch → commit. */
  branches: Map<string, string>;
  /** The main worktree first. */
  worktrees: FakeWorktree[];
  stashes: string[];
}

type Op = keyof Git;

export class FakeGit implements Git {
  readonly repos: FakeRepo[] = [];
  /** Things on disk that are not worktrees: path → kind. */
  readonly paths = new Map<string, PathKind>();
  readonly calls: { op: Op; args: unknown[] }[] = [];
  private failures: { op: Op; error: Error }[] = [];
  private commits = 0;

  addRepo(root: string, opts: { bare?: boolean; empty?: boolean; branch?: string } = {}): FakeRepo {
    const head = opts.empty ? null : this.commit();
    const branch = opts.branch ?? 'main';
    const repo: FakeRepo = {
      root,
      bare: opts.bare ?? false,
      head,
      branches: new Map(head ? [[branch, head]] : []),
      worktrees: [],
      stashes: [],
    };
    repo.worktrees.push(this.tree(root, opts.bare ? null : branch, head ?? '0'.repeat(40)));
    this.repos.push(repo);
    return repo;
  }

  /** A worktree added behind svc's back (no mark unless given). */
  addWorktree_(repo: FakeRepo, path: string, branch: string | null, more: Partial<FakeWorktree> = {}): FakeWorktree {
    const head = branch ? (repo.branches.get(branch) ?? repo.head!) : repo.head!;
    if (branch) repo.branches.set(branch, head);
    const wt = { ...this.tree(path, branch, head), ...more };
    repo.worktrees.push(wt);
    return wt;
  }

  worktree(path: string): FakeWorktree | undefined {
    for (const repo of this.repos) {
      const wt = repo.worktrees.find((w) => w.path === path);
      if (wt) return wt;
    }
    return undefined;
  }

  failNext(op: Op, error: Error = new GitError('failed', `fake ${op} failure`)): void {
    this.failures.push({ op, error });
  }

  // -------------------------------------------------------------------------

  async commonDir(dir: string) {
    this.record('commonDir', dir);
    const repo = this.repoAt(dir);
    return repo ? `${repo.root}/.git` : null;
  }

  async listWorktrees(dir: string) {
    this.record('listWorktrees', dir);
    return this.mustRepo(dir).worktrees.map(
      (w, i): WorktreeEntry => ({
        path: w.path,
        head: w.head,
        branch: w.branch,
        bare: i === 0 && this.mustRepo(dir).bare,
        detached: w.branch === null && !(i === 0 && this.mustRepo(dir).bare),
        locked: w.locked,
        prunable: w.missing ? 'gitdir file points to non-existent location' : null,
      }),
    );
  }

  async checkBranchName(name: string) {
    this.record('checkBranchName', name);
    const bad =
      name === '' ||
      name === 'HEAD' ||
      name.startsWith('-') ||
      name.startsWith('.') ||
      name.endsWith('.') ||
      name.endsWith('/') ||
      name.endsWith('.lock') ||
      name.includes('..') ||
      name.includes('@{') ||
      /[\s~^:?*[\\\x00-\x1f\x7f]/.test(name);
    return bad ? null : name;
  }

  async branchExists(dir: string, branch: string) {
    this.record('branchExists', dir, branch);
    return this.mustRepo(dir).branches.has(branch);
  }

  async resolveCommit(dir: string, rev: string) {
    this.record('resolveCommit', dir, rev);
    const repo = this.mustRepo(dir);
    if (rev === 'HEAD') {
      const wt = this.worktreeOf(dir);
      return !wt || wt === repo.worktrees[0] ? repo.head : wt.head;
    }
    return repo.branches.get(rev) ?? null;
  }

  async mergeBase(dir: string, a: string, _b: string) {
    this.record('mergeBase', dir, a, _b);
    return a;
  }

  async addWorktree(dir: string, path: string, branch: string, opts: { newBranchFrom?: string } = {}) {
    this.record('addWorktree', dir, path, branch, opts);
    const repo = this.mustRepo(dir);
    if (this.paths.has(path) || this.worktree(path))
      throw new GitError('failed', `'${path}' already exists`, `fatal: '${path}' already exists\n`, 128);
    if (opts.newBranchFrom !== undefined) {
      if (repo.branches.has(branch)) throw new GitError('failed', `a branch named '${branch}' already exists`, '', 128);
      repo.branches.set(branch, opts.newBranchFrom);
    } else {
      const at = repo.worktrees.find((w) => w.branch === branch);
      if (at) {
        const stderr = `Preparing worktree (checking out '${branch}')\nfatal: '${branch}' is already checked out at '${at.path}'\n`;
        throw new GitError('failed', `'${branch}' is already checked out at '${at.path}'`, stderr, 128);
      }
    }
    repo.worktrees.push(this.tree(path, branch, repo.branches.get(branch)!));
  }

  async removeWorktree(dir: string, path: string) {
    this.record('removeWorktree', dir, path);
    const repo = this.mustRepo(dir);
    const wt = repo.worktrees.find((w) => w.path === path);
    if (!wt || wt === repo.worktrees[0]) throw new GitError('failed', `'${path}' is not a working tree`, '', 128);
    if (wt.locked !== null) throw new GitError('failed', `cannot remove a locked working tree`, '', 128);
    if (wt.changes > 0 || wt.untracked > 0)
      throw new GitError('failed', `'${path}' contains modified or untracked files, use --force to delete it`, '', 128);
    repo.worktrees.splice(repo.worktrees.indexOf(wt), 1); // ignored files go with it, as in git
  }

  async status(worktree: string): Promise<StatusSummary> {
    this.record('status', worktree);
    const wt = this.mustWorktree(worktree);
    return { changes: wt.changes, untracked: wt.untracked, ignored: wt.ignored, examples: {} };
  }

  async hiddenFiles(worktree: string) {
    this.record('hiddenFiles', worktree);
    return { count: this.mustWorktree(worktree).hidden };
  }

  async unpushed(worktree: string, base: string | null) {
    this.record('unpushed', worktree, base);
    return this.mustWorktree(worktree).unpushed;
  }

  async stashSubjects(dir: string) {
    this.record('stashSubjects', dir);
    return [...this.mustRepo(dir).stashes];
  }

  async pathKind(path: string): Promise<PathKind> {
    this.record('pathKind', path);
    const wt = this.worktree(path);
    if (wt) return wt.missing ? 'nothing' : 'directory';
    return this.paths.get(path) ?? 'nothing';
  }

  async readMark(dir: string, path: string) {
    this.record('readMark', dir, path);
    return this.mustRepo(dir).worktrees.find((w) => w.path === path)?.mark ?? null;
  }

  async writeMark(path: string, mark: WorktreeMark) {
    this.record('writeMark', path, mark);
    this.mustWorktree(path).mark = mark;
  }

  // -------------------------------------------------------------------------

  private commit(): string {
    this.commits += 1;
    return this.commits.toString(16).padStart(40, '0');
  }

  private tree(path: string, branch: string | null, head: string): FakeWorktree {
    return {
      path,
      branch,
      head,
      locked: null,
      missing: false,
      changes: 0,
      untracked: 0,
      ignored: 0,
      hidden: 0,
      unpushed: 0,
      mark: null,
    };
  }

  private record(op: Op, ...args: unknown[]): void {
    this.calls.push({ op, args });
    const i = this.failures.findIndex((f) => f.op === op);
    if (i !== -1) {
      const [failure] = this.failures.splice(i, 1);
      throw failure!.error;
    }
  }

  private repoAt(dir: string): FakeRepo | undefined {
    const within = (root: string) => dir === root || dir.startsWith(`${root}/`);
    return this.repos.find(
      (r) => within(`${r.root}/.git`) || r.worktrees.some((w) => !w.missing && within(w.path)) || within(r.root),
    );
  }

  private worktreeOf(dir: string): FakeWorktree | undefined {
    const repo = this.repoAt(dir);
    return repo?.worktrees
      .filter((w) => dir === w.path || dir.startsWith(`${w.path}/`))
      .sort((a, b) => b.path.length - a.path.length)[0];
  }

  private mustRepo(dir: string): FakeRepo {
    const repo = this.repoAt(dir);
    if (!repo) throw new GitError('failed', `cannot change to '${dir}': No such file or directory`, '', 128);
    return repo;
  }

  private mustWorktree(path: string): FakeWorktree {
    const wt = this.worktree(path);
    if (!wt || wt.missing)
      throw new GitError('failed', `cannot change to '${path}': No such file or directory`, '', 128);
    return wt;
  }
}

/** An in-memory `WorktreeIndex`. */
export function memoryIndex(initial: string[] = []): WorktreeIndex & { list: string[] } {
  const list = [...initial];
  return {
    list,
    repos: async () => [...list],
    add: async (repo) => {
      if (!list.includes(repo)) list.push(repo);
    },
  };
}
