/** actors/worktrees/git.ts worktree operations against the fake git: `--wt`, finding svc worktrees, removing only free ones. */
import { describe, expect, it } from 'vitest';
import {
  ensureWorktree,
  findSvcWorktrees,
  gatherWorktreeFacts,
  removeIfFree,
} from '../../../actors/worktrees/worktrees.js';
import { worktreeHold } from '../../../core/worktrees/worktree.js';
import { FakeGit, memoryIndex } from '../../fakes/fakeGit.js';

function world() {
  const git = new FakeGit();
  const repo = git.addRepo('/src/app');
  const index = memoryIndex();
  const ensure = (branch: string, cwd = '/src/app') => ensureWorktree({ git, cwd, branch, index, now: () => 42 });
  return { git, repo, index, ensure };
}

describe('ensureWorktree (fake git)', () => {
  it('creates <repo>-wt-<slug> beside the main checkout on a new branch, marked, and indexes the repo', async () => {
    const { git, repo, index, ensure } = world();
    const r = await ensure('feat/x');
    expect(r).toEqual({
      ok: true,
      path: '/src/app-wt-feat-x',
      repo: '/src/app',
      repoName: 'app',
      branch: 'feat/x',
      branchSlug: 'feat-x',
      sessionName: 'svc-app-wt-feat-x',
      created: true,
      marked: true,
    });
    expect(git.calls.find((c) => c.op === 'addWorktree')?.args).toEqual([
      '/src/app',
      '/src/app-wt-feat-x',
      'feat/x',
      { newBranchFrom: repo.head },
    ]);
    expect(git.worktree('/src/app-wt-feat-x')?.mark).toMatchObject({
      branch: 'feat/x',
      base: repo.head,
      createdAt: 42,
    });
    expect(index.list).toEqual(['/src/app']);
  });

  it('reuses it on a second run, from a subdirectory or from inside another worktree', async () => {
    const { git, ensure } = world();
    await ensure('feat/x');
    for (const cwd of ['/src/app', '/src/app/sub/dir', '/src/app-wt-feat-x/deep']) {
      const again = await ensure('feat/x', cwd);
      expect(again).toMatchObject({ ok: true, path: '/src/app-wt-feat-x', created: false, marked: true });
    }
    expect(git.calls.filter((c) => c.op === 'addWorktree')).toHaveLength(1);
  });

  it('checks out an existing branch', async () => {
    const { git, repo, ensure } = world();
    repo.branches.set('old', repo.head!);
    expect(await ensure('old')).toMatchObject({ ok: true, created: true });
    expect(git.calls.find((c) => c.op === 'addWorktree')?.args).toEqual(['/src/app', '/src/app-wt-old', 'old', {}]);
  });

  it('reuses but never marks a worktree of the branch someone else made there', async () => {
    const { git, repo, ensure } = world();
    git.addWorktree_(repo, '/src/app-wt-mine', 'mine');
    expect(await ensure('mine')).toMatchObject({ ok: true, created: false, marked: false });
    expect(git.worktree('/src/app-wt-mine')?.mark).toBeNull();
  });

  it.each<[string, (w: ReturnType<typeof world>) => void, string, RegExp]>([
    ['outside git', () => {}, 'feat', /not inside one/],
    ['a bad name', () => {}, 'a..b', /branch name/],
    ['a name like an option', () => {}, '-x', /branch name/],
    ['a directory at the path', (w) => w.git.paths.set('/src/app-wt-feat', 'directory'), 'feat', /a directory/],
    ['a file at the path', (w) => w.git.paths.set('/src/app-wt-feat', 'file'), 'feat', /a file/],
    [
      'a worktree of another branch at the path',
      (w) => w.git.addWorktree_(w.repo, '/src/app-wt-feat', 'other'),
      'feat',
      /branch other, not of feat/,
    ],
    [
      'the branch checked out elsewhere',
      (w) => w.git.addWorktree_(w.repo, '/src/elsewhere', 'feat'),
      'feat',
      /already checked out at \/src\/elsewhere/,
    ],
  ])('refuses with one line: %s', async (what, arrange, branch, message) => {
    const w = world();
    arrange(w);
    const r = await w.ensure(branch, what === 'outside git' ? '/tmp/nowhere' : '/src/app');
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.message).toMatch(message);
      expect(r.message).not.toContain('\n');
    }
    expect(w.git.calls.some((c) => c.op === 'addWorktree')).toBe(false);
  });

  it('turns a failure of git into one line, never a throw', async () => {
    const { git, ensure } = world();
    git.failNext('listWorktrees');
    const r = await ensure('feat');
    expect(r).toEqual({ ok: false, message: '--wt: fake listWorktrees failure' });
  });
});

describe('finding and removing (fake git)', () => {
  async function made() {
    const w = world();
    const r = await w.ensure('feat/x');
    if (!r.ok) throw new Error(r.message);
    const wt = { slug: r.branchSlug, path: r.path, repo: r.repo, branch: r.branch, sessionName: r.sessionName };
    return { ...w, wt };
  }

  it('finds only marked worktrees of indexed repositories', async () => {
    const { git, repo, index, wt } = await made();
    git.addWorktree_(repo, '/src/app-wt-by-hand', 'by-hand');
    const found = await findSvcWorktrees({ git, index });
    expect(found.worktrees.map((w) => w.path)).toEqual([wt.path]);
    expect(found.problems).toEqual([]);
  });

  it('removes a free one; the branch stays', async () => {
    const { git, repo, wt } = await made();
    expect(await removeIfFree(git, wt, { sessions: [] })).toEqual({ removed: true });
    expect(git.worktree(wt.path)).toBeUndefined();
    expect(repo.branches.has('feat/x')).toBe(true);
  });

  it.each<[string, object, RegExp]>([
    ['changes', { changes: 1 }, /uncommitted changes/],
    ['untracked', { untracked: 1 }, /untracked files/],
    ['ignored', { ignored: 1 }, /ignored files/],
    ['hidden', { hidden: 1 }, /assume-unchanged/],
    ['unpushed', { unpushed: 3 }, /3 commits not on a remote/],
    ['locked', { locked: 'why' }, /locked \(why\)/],
    ['missing', { missing: true }, /missing/],
    ['unmarked', { mark: null }, /not made by svc/],
  ])('keeps one held by %s', async (_, state, reason) => {
    const { git, wt } = await made();
    Object.assign(git.worktree(wt.path)!, state);
    const outcome = await removeIfFree(git, wt, { sessions: [] });
    expect(outcome).toMatchObject({ removed: false, reason: expect.stringMatching(reason) });
    expect(git.calls.some((c) => c.op === 'removeWorktree')).toBe(false);
    expect(git.worktree(wt.path)).toBeDefined();
  });

  it('keeps one held by a stash made on its branch, or by its session', async () => {
    const { git, repo, wt } = await made();
    repo.stashes.push('WIP on feat/x: 0001 init');
    expect(await removeIfFree(git, wt, { sessions: [] })).toMatchObject({ removed: false, reason: /stash/ });
    repo.stashes.length = 0;
    const session = { name: 'svc-app-wt-feat-x', panes: [] };
    expect(await removeIfFree(git, wt, { sessions: [session] })).toMatchObject({ removed: false, reason: /session/ });
    expect(await removeIfFree(git, wt, { unknown: 'tmux hung' })).toMatchObject({ removed: false, reason: /tmux/ });
  });

  it("git's own refusal is a hold, not an error", async () => {
    const { git, wt } = await made();
    git.failNext('removeWorktree');
    expect(await removeIfFree(git, wt, { sessions: [] })).toEqual({
      removed: false,
      reason: 'git refused: fake removeWorktree failure',
    });
  });

  it('an error while looking propagates (a caller that cannot know must not remove)', async () => {
    const { git, wt } = await made();
    git.failNext('status');
    await expect(removeIfFree(git, wt, { sessions: [] })).rejects.toThrow('fake status failure');
    expect(git.worktree(wt.path)).toBeDefined();
  });

  it('a worktree git no longer lists is not registered', async () => {
    const { git, repo, wt } = await made();
    repo.worktrees.splice(1, 1);
    const facts = await gatherWorktreeFacts(git, wt, { sessions: [] });
    expect(facts.registered).toBe(false);
    expect(worktreeHold(facts)?.reason).toBe('no longer a worktree of its repository, not made by svc --wt');
  });
});
