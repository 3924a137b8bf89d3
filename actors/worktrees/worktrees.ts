import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fromPromise } from 'xstate';
import { z } from 'zod/v3';
import { svcPaths } from '../../core/daemon/paths.js';
import {
  branchSlug,
  countStashes,
  explainAddFailure,
  FREE_FACTS,
  planWorktree,
  type SessionView,
  sessionsHolding,
  type WorktreeEntry,
  type WorktreeFacts,
  type WorktreeMark,
  type WorktreePlanFacts,
  worktreeDirName,
  worktreeHold,
  worktreeSessionName,
} from '../../core/worktrees/worktree.js';
import type { RemoveOutcome, WorktreeInput } from '../../machines/worktree.js';
import { writeFileAtomic } from '../files.js';
import { type Git, GitError } from './git.js';

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

/** `~/.svc/worktrees.json`, checked with zod as the other files under ~/.svc are; a file of another shape is empty. */
const WorktreeIndexFile = z.object({ repos: z.array(z.string()) });

/** The index as a JSON file `{ "repos": [...] }`, replaced atomically (a lost race loses a hint, never a worktree). */
export function createWorktreeIndex(file = defaultIndexFile()): WorktreeIndex {
  const read = async (): Promise<string[]> => {
    try {
      const parsed = WorktreeIndexFile.safeParse(JSON.parse(await readFile(file, 'utf8')));
      return parsed.success ? parsed.data.repos : [];
    } catch {
      return [];
    }
  };
  return {
    repos: read,
    async add(repo) {
      const repos = await read();
      if (repos.includes(repo)) return;
      writeFileAtomic(file, `${JSON.stringify({ repos: [...repos, repo].sort() }, null, 2)}\n`);
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
  // counts start at nothing (FREE_FACTS) and are filled in below as git answers
  const facts: WorktreeFacts = {
    ...FREE_FACTS,
    registered: entry !== undefined,
    marked: false,
    sessions: 'sessions' in known ? sessionsHolding(known.sessions, wt.sessionName, wt.path) : [],
    locked: entry?.locked ?? null,
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
