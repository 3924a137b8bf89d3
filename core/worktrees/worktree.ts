/**
 * Worktrees made by `svc <agent> --wt <branch>` (spec 4.4 rules 2-3; part 3 "Worktree session ended"): the pure
 * decisions. `actors/worktrees/git.ts` gathers the facts and acts; `machines/worktree.ts` decides when to look.
 *
 * - Where: `<repo>-wt-<slug>` beside the main checkout, on branch `<branch>` (`planWorktree`).
 * - Which are ours: a worktree whose private git dir holds a `svc-wt` mark (`WorktreeMark`); no mark, never touched.
 * - When one may go: nothing holds it (`worktreeHold`), and even then only by plain `git worktree remove`.
 */
import { z } from 'zod/v3';
import { printable } from '../printable.js';

/** The file in the worktree's private git dir (`<common>/worktrees/<id>/svc-wt`) that says svc made it. */
export const WORKTREE_MARK_FILE = 'svc-wt';

/** The mark's content; `base` is the commit the branch's own work is counted from. */
export const WorktreeMark = z.object({
  version: z.literal(1),
  branch: z.string().min(1).max(1024),
  slug: z.string().min(1).max(1024),
  /** The main checkout's directory name (`<repo>` in `<repo>-wt-<slug>`). */
  repoName: z.string().min(1).max(1024),
  sessionName: z.string().min(1).max(1024),
  /** Commits reachable from here are not the branch's own; null: every commit counts (unrelated history). */
  base: z
    .string()
    .regex(/^[0-9a-f]{40,64}$/)
    .nullable(),
  createdAt: z.number().finite(),
});
export type WorktreeMark = z.infer<typeof WorktreeMark>;

/** The mark in a file's text, or null when it is not one (svc then treats the worktree as not its own). */
export function parseMark(text: string): WorktreeMark | null {
  try {
    const parsed = WorktreeMark.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** `feat/x` → `feat-x`: every run of characters outside `[A-Za-z0-9_-]` becomes one `-`. */
export function branchSlug(branch: string): string {
  return branch.replace(/[^A-Za-z0-9_-]+/g, '-');
}

/** The directory name beside the main checkout. */
export function worktreeDirName(repoName: string, slug: string): string {
  return `${repoName}-wt-${slug}`;
}

/** The tmux session of a worktree (spec 4.4): `svc-<repo>-wt-<slug>`, the repo name slugged like a branch. */
export function worktreeSessionName(repoName: string, slug: string): string {
  return `svc-${branchSlug(repoName)}-wt-${slug}`;
}

// ---------------------------------------------------------------------------
// Creating (`--wt`)

/** What is at the target path before anything is made (lstat: a symlink is `other`, never followed). */
export type PathKind = 'nothing' | 'directory' | 'file' | 'other';

export interface WorktreePlanFacts {
  branch: string;
  /** What `git check-ref-format --branch` made of the name; null when git rejected it. */
  normalizedBranch: string | null;
  /** The main checkout's root; null outside git. */
  mainRoot: string | null;
  /** The repository has no working tree of its own. */
  bare: boolean;
  /** HEAD of the directory `--wt` ran in; null when the repository has no commit yet. */
  head: string | null;
  /** The target path (`<parent of main root>/<repo>-wt-<slug>`). */
  path: string;
  pathKind: PathKind;
  /** The repository's worktree registered at `path`, if any. */
  atPath: { branch: string | null; missing: boolean } | null;
  /** Another worktree of the repository that has `branch` checked out. */
  checkedOutAt: string | null;
  branchExists: boolean;
}

export type WorktreePlan =
  | { action: 'reuse' }
  | { action: 'create'; newBranch: boolean }
  | { action: 'refuse'; message: string };

/** What `--wt <branch>` does, from the facts: reuse, create, or refuse with one line. */
export function planWorktree(f: WorktreePlanFacts): WorktreePlan {
  const refuse = (message: string): WorktreePlan => ({ action: 'refuse', message });
  if (f.mainRoot === null) return refuse('--wt needs a git repository: this directory is not inside one');
  if (f.bare) return refuse('--wt needs a repository with a main checkout: this one is bare');
  if (f.branch.startsWith('-') || f.normalizedBranch !== f.branch)
    return refuse(`--wt: git does not accept ${JSON.stringify(f.branch)} as a branch name`);
  if (f.atPath) {
    if (f.atPath.missing)
      return refuse(
        `--wt: ${f.path} is registered as a worktree but its directory is missing (\`git worktree prune\` forgets it)`,
      );
    if (f.atPath.branch === f.branch) return { action: 'reuse' };
    const what =
      f.atPath.branch === null ? 'a worktree with a detached HEAD' : `the worktree of branch ${f.atPath.branch}`;
    return refuse(`--wt: ${f.path} is ${what}, not of ${f.branch}`);
  }
  if (f.pathKind !== 'nothing') {
    const what = f.pathKind === 'directory' ? 'a directory' : f.pathKind === 'file' ? 'a file' : 'something';
    return refuse(`--wt: ${f.path} already exists (${what} that is not the worktree of ${f.branch})`);
  }
  if (f.checkedOutAt !== null) return refuse(`--wt: branch ${f.branch} is already checked out at ${f.checkedOutAt}`);
  if (!f.branchExists && f.head === null) return refuse('--wt: the repository has no commit yet to branch from');
  return { action: 'create', newBranch: !f.branchExists };
}

/** Git's own refusal of `worktree add`, as one line. */
export function explainAddFailure(stderr: string, branch: string): string {
  const checkedOut = /is already (?:checked out|used by worktree) at '([^']*)'/.exec(stderr);
  if (checkedOut) return `--wt: branch ${branch} is already checked out at ${checkedOut[1]}`;
  const line =
    stderr
      .split('\n')
      .map((l) => l.trim())
      .find((l) => /^(fatal|error):/.test(l)) ??
    stderr.trim().split('\n')[0] ??
    '';
  return `--wt: git worktree add failed: ${line.replace(/^(fatal|error):\s*/, '') || 'no message'}`;
}

// ---------------------------------------------------------------------------
// Holding

/** Everything that decides whether a worktree may be removed. Counts are 0 when there is nothing. */
export interface WorktreeFacts {
  /** Still a worktree of its repository (git lists it). */
  registered: boolean;
  /** Carries the `svc-wt` mark. */
  marked: boolean;
  /** Live tmux sessions tied to it (by name, by `@svc-worktree`, or with a pane inside it). */
  sessions: readonly string[];
  /** tmux could not be asked, so no session can be ruled out. */
  sessionsUnknown?: string;
  /** `null`: not locked; otherwise the lock reason (`''` when none was given). */
  locked: string | null;
  /** Registered, but its directory is gone. */
  missing: boolean;
  /** Tracked files changed, staged or not (including submodules). */
  changes: number;
  /** Untracked / ignored entries (a directory git shows as one entry counts once). */
  untracked: number;
  ignored: number;
  /** Tracked files git is told not to look at (assume-unchanged; skip-worktree files present on disk). */
  hidden: number;
  /** Commits of its own (beyond the base it was created from) on no remote-tracking branch. */
  unpushed: number;
  /** Stash entries made on its branch. */
  stashes: number;
  /** One example path for changes / untracked / ignored / hidden, to make the reason useful. */
  examples?: Partial<Record<'changes' | 'untracked' | 'ignored' | 'hidden', string>>;
}

/** Facts with nothing holding, for tests and as a base. */
export const FREE_FACTS: WorktreeFacts = {
  registered: true,
  marked: true,
  sessions: [],
  locked: null,
  missing: false,
  changes: 0,
  untracked: 0,
  ignored: 0,
  hidden: 0,
  unpushed: 0,
  stashes: 0,
};

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/** Why a worktree must stay (every reason, in a fixed order), or null when it may be removed. */
export function worktreeHold(f: WorktreeFacts): { reason: string; reasons: string[] } | null {
  const reasons: string[] = [];
  const eg = (key: keyof NonNullable<WorktreeFacts['examples']>): string =>
    f.examples?.[key] ? ` (${f.examples[key]})` : '';
  if (!f.registered) reasons.push('no longer a worktree of its repository');
  if (!f.marked) reasons.push('not made by svc --wt');
  for (const s of f.sessions) reasons.push(`session ${s} is running`);
  if (f.sessionsUnknown !== undefined) reasons.push(`tmux could not be asked (${f.sessionsUnknown})`);
  if (f.locked !== null) reasons.push(f.locked ? `locked (${f.locked})` : 'locked');
  if (f.missing) reasons.push('its directory is missing (`git worktree prune` forgets it)');
  if (f.changes > 0) reasons.push('uncommitted changes');
  if (f.untracked > 0) reasons.push(`untracked files${eg('untracked')}`);
  if (f.ignored > 0) reasons.push(`ignored files${eg('ignored')}`);
  if (f.hidden > 0)
    reasons.push(`${plural(f.hidden, 'file', 'files')} marked assume-unchanged or skip-worktree${eg('hidden')}`);
  if (f.unpushed > 0) reasons.push(`${plural(f.unpushed, 'commit', 'commits')} not on a remote`);
  if (f.stashes > 0) reasons.push(`${plural(f.stashes, 'stash entry', 'stash entries')} made on its branch`);
  if (reasons.length === 0) return null;
  const clean = reasons.map(printable);
  return { reason: clean.join(', '), reasons: clean };
}

/** The smallest view of a tmux session `sessionsHolding` needs (a `SessionRecord` fits). */
export interface SessionView {
  name: string;
  panes: readonly { path?: string | undefined }[];
  meta?: { worktree?: string | undefined } | undefined;
}

const inside = (dir: string, p: string): boolean => p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

/** Sessions that tie a worktree down: its own session, one marked `@svc-worktree` with its path, or a pane in it. */
export function sessionsHolding(sessions: readonly SessionView[], sessionName: string, path: string): string[] {
  return sessions
    .filter(
      (s) =>
        s.name === sessionName ||
        (s.meta?.worktree !== undefined && inside(path, s.meta.worktree)) ||
        s.panes.some((p) => p.path !== undefined && inside(path, p.path)),
    )
    .map((s) => s.name);
}

/** Stash subjects (`git stash list --format=%gs`) made on `branch`: `WIP on <b>: …` or `On <b>: …`. */
export function countStashes(subjects: readonly string[], branch: string): number {
  // Branch names cannot contain ':', so the prefix is exact.
  return subjects.filter((s) => s.startsWith(`WIP on ${branch}: `) || s.startsWith(`On ${branch}: `)).length;
}

// ---------------------------------------------------------------------------
// `git status --porcelain=v1 -z` and `git ls-files -v -z`

export interface StatusSummary {
  changes: number;
  untracked: number;
  ignored: number;
  examples: Partial<Record<'changes' | 'untracked' | 'ignored', string>>;
}

/** Count the entries of `git status --porcelain=v1 -z --ignored …`. A rename carries its old path as an extra field. */
export function parseStatus(out: string): StatusSummary {
  const fields = out.split('\0');
  const summary: StatusSummary = { changes: 0, untracked: 0, ignored: 0, examples: {} };
  for (let i = 0; i < fields.length; i++) {
    const entry = fields[i]!;
    if (entry.length < 4) continue;
    const xy = entry.slice(0, 2);
    const path = entry.slice(3);
    const key = xy === '??' ? 'untracked' : xy === '!!' ? 'ignored' : 'changes';
    summary[key] += 1;
    summary.examples[key] ??= path;
    if (xy[0] === 'R' || xy[0] === 'C') i += 1; // the rename's source path
  }
  return summary;
}

/**
 * Tracked files `git status` and `git worktree remove` do not look at: `git ls-files -v` tags assume-unchanged
 * files with a lowercase letter and skip-worktree ones with `S`. A skip-worktree file only counts when it is on
 * disk (sparse checkouts leave the others out), which the caller decides with `present`.
 */
export function parseHidden(out: string, present: (path: string) => boolean): { count: number; example?: string } {
  let count = 0;
  let example: string | undefined;
  for (const entry of out.split('\0')) {
    if (entry.length < 3) continue;
    const tag = entry[0]!;
    const path = entry.slice(2);
    const assumed = tag >= 'a' && tag <= 'z';
    if (assumed || (tag === 'S' && present(path))) {
      count += 1;
      example ??= path;
    }
  }
  return example === undefined ? { count } : { count, example };
}

// ---------------------------------------------------------------------------
// `git worktree list --porcelain -z`

export interface WorktreeEntry {
  path: string;
  head: string | null;
  /** `refs/heads/x` → `x`; null when detached or bare. */
  branch: string | null;
  bare: boolean;
  detached: boolean;
  /** null: not locked; otherwise the reason ('' when none). */
  locked: string | null;
  /** null: fine; otherwise why git thinks it can be pruned (its directory is gone). */
  prunable: string | null;
}

/** Parse `git worktree list --porcelain -z`: records of NUL-terminated `key value` lines, ended by an empty one. */
export function parseWorktreeList(out: string): WorktreeEntry[] {
  const entries: WorktreeEntry[] = [];
  let current: WorktreeEntry | null = null;
  for (const line of out.split('\0')) {
    if (line === '') {
      if (current) entries.push(current);
      current = null;
      continue;
    }
    const space = line.indexOf(' ');
    const key = space === -1 ? line : line.slice(0, space);
    const value = space === -1 ? '' : line.slice(space + 1);
    if (key === 'worktree') {
      if (current) entries.push(current);
      current = { path: value, head: null, branch: null, bare: false, detached: false, locked: null, prunable: null };
      continue;
    }
    if (!current) continue;
    if (key === 'HEAD') current.head = value;
    else if (key === 'branch') current.branch = value.startsWith('refs/heads/') ? value.slice(11) : value;
    else if (key === 'bare') current.bare = true;
    else if (key === 'detached') current.detached = true;
    else if (key === 'locked') current.locked = value;
    else if (key === 'prunable') current.prunable = value;
  }
  if (current) entries.push(current);
  return entries;
}

// ---------------------------------------------------------------------------
// What `svc worktree` and `svc worktree clean` print

export interface WorktreeReport {
  path: string;
  branch: string;
  /** null: free. */
  hold: { reason: string; reasons: string[] } | null;
}

export function listLine(r: WorktreeReport): string {
  return printable(`${r.path}  ${r.branch}  ${r.hold ? `held: ${r.hold.reason}` : 'free'}`);
}

export type CleanOutcome =
  | { kind: 'removed' }
  | { kind: 'would_remove' }
  | { kind: 'kept'; reason: string }
  | { kind: 'failed'; message: string };

export function cleanLine(path: string, outcome: CleanOutcome): string {
  return printable(cleanText(path, outcome));
}

function cleanText(path: string, outcome: CleanOutcome): string {
  switch (outcome.kind) {
    case 'removed':
      return `removed ${path}`;
    case 'would_remove':
      return `would remove ${path}`;
    case 'kept':
      return `kept ${path}: held: ${outcome.reason}`;
    case 'failed':
      return `kept ${path}: ${outcome.message}`;
  }
}
