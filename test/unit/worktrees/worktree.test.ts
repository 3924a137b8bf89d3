/** core/worktrees/worktree.ts: the pure decisions about worktrees made by `--wt`, as tables. */
import { describe, expect, it } from 'vitest';
import {
  branchSlug,
  cleanLine,
  countStashes,
  explainAddFailure,
  FREE_FACTS,
  listLine,
  parseHidden,
  parseMark,
  parseStatus,
  parseWorktreeList,
  planWorktree,
  sessionsHolding,
  type WorktreeFacts,
  type WorktreePlanFacts,
  worktreeDirName,
  worktreeHold,
  worktreeSessionName,
} from '../../../core/worktrees/worktree.js';

describe('names', () => {
  it.each([
    ['feat/x', 'feat-x'],
    ['feat-x', 'feat-x'],
    ['a_b-C9', 'a_b-C9'],
    ['fix/ü-thing', 'fix--thing'],
    ['a//b', 'a-b'],
    ['a-/b', 'a--b'],
    ['v1.2', 'v1-2'],
    ['@', '-'],
  ])('branchSlug(%j) → %j', (branch, slug) => {
    expect(branchSlug(branch)).toBe(slug);
  });

  it('directory and session names', () => {
    expect(worktreeDirName('app', 'feat-x')).toBe('app-wt-feat-x');
    expect(worktreeSessionName('app', 'feat-x')).toBe('svc-app-wt-feat-x');
    expect(worktreeSessionName('my.app', 'x')).toBe('svc-my-app-wt-x');
  });
});

const base: WorktreePlanFacts = {
  branch: 'feat/x',
  normalizedBranch: 'feat/x',
  mainRoot: '/src/app',
  bare: false,
  head: 'a'.repeat(40),
  path: '/src/app-wt-feat-x',
  pathKind: 'nothing',
  atPath: null,
  checkedOutAt: null,
  branchExists: false,
};

describe('planWorktree', () => {
  it.each<[string, Partial<WorktreePlanFacts>, ReturnType<typeof planWorktree>]>([
    ['new branch from HEAD', {}, { action: 'create', newBranch: true }],
    ['existing branch', { branchExists: true }, { action: 'create', newBranch: false }],
    [
      'same worktree again',
      { pathKind: 'directory', atPath: { branch: 'feat/x', missing: false } },
      { action: 'reuse' },
    ],
  ])('%s', (_, more, plan) => {
    expect(planWorktree({ ...base, ...more })).toEqual(plan);
  });

  it.each<[string, Partial<WorktreePlanFacts>, RegExp]>([
    ['outside git', { mainRoot: null }, /not inside one/],
    ['bare repository', { bare: true }, /bare/],
    ['git rejects the name', { branch: 'a..b', normalizedBranch: null }, /"a\.\.b" as a branch name/],
    ['a name starting with -', { branch: '-x', normalizedBranch: '-x' }, /"-x" as a branch name/],
    ['@{-1} expands to another name', { branch: '@{-1}', normalizedBranch: 'main' }, /branch name/],
    ['a plain directory', { pathKind: 'directory' }, /already exists \(a directory/],
    ['a file', { pathKind: 'file' }, /already exists \(a file/],
    ['a symlink', { pathKind: 'other' }, /already exists \(something/],
    [
      'a worktree of another branch',
      { pathKind: 'directory', atPath: { branch: 'other', missing: false } },
      /is the worktree of branch other, not of feat\/x/,
    ],
    ['a detached worktree', { pathKind: 'directory', atPath: { branch: null, missing: false } }, /detached HEAD/],
    ['a registered worktree with its directory gone', { atPath: { branch: 'feat/x', missing: true } }, /prune/],
    [
      'branch checked out elsewhere',
      { branchExists: true, checkedOutAt: '/src/app' },
      /already checked out at \/src\/app/,
    ],
    ['no commit to branch from', { head: null }, /no commit/],
  ])('refuses: %s', (_, more, message) => {
    const plan = planWorktree({ ...base, ...more });
    expect(plan.action).toBe('refuse');
    if (plan.action === 'refuse') {
      expect(plan.message).toMatch(message);
      expect(plan.message).not.toContain('\n');
    }
  });

  it('explainAddFailure turns git refusals into one line', () => {
    expect(
      explainAddFailure(
        "Preparing worktree (checking out 'b')\nfatal: 'b' is already checked out at '/src/app'\n",
        'b',
      ),
    ).toBe('--wt: branch b is already checked out at /src/app');
    expect(explainAddFailure('fatal: something odd\nmore\n', 'b')).toBe('--wt: git worktree add failed: something odd');
  });
});

describe('worktreeHold', () => {
  it('free when nothing holds', () => {
    expect(worktreeHold(FREE_FACTS)).toBeNull();
  });

  it.each<[string, Partial<WorktreeFacts>, string]>([
    ['session', { sessions: ['svc-app-wt-feat-x'] }, 'session svc-app-wt-feat-x is running'],
    ['tmux unknown', { sessionsUnknown: 'timed out' }, 'tmux could not be asked (timed out)'],
    ['uncommitted changes', { changes: 2 }, 'uncommitted changes'],
    ['untracked files', { untracked: 1, examples: { untracked: 'notes.txt' } }, 'untracked files (notes.txt)'],
    ['ignored files', { ignored: 1, examples: { ignored: 'node_modules/' } }, 'ignored files (node_modules/)'],
    ['hidden files', { hidden: 1 }, '1 file marked assume-unchanged or skip-worktree'],
    ['one commit', { unpushed: 1 }, '1 commit not on a remote'],
    ['commits', { unpushed: 2 }, '2 commits not on a remote'],
    ['stash', { stashes: 1 }, '1 stash entry made on its branch'],
    ['locked', { locked: '' }, 'locked'],
    ['locked with reason', { locked: 'on usb' }, 'locked (on usb)'],
    ['missing', { missing: true }, 'its directory is missing (`git worktree prune` forgets it)'],
    ['unmarked', { marked: false }, 'not made by svc --wt'],
    ['unregistered', { registered: false }, 'no longer a worktree of its repository'],
  ])('%s holds', (_, more, reason) => {
    expect(worktreeHold({ ...FREE_FACTS, ...more })).toEqual({ reason, reasons: [reason] });
  });

  it('a file name with a newline stays on one line', () => {
    expect(worktreeHold({ ...FREE_FACTS, untracked: 1, examples: { untracked: 'a\nb' } })?.reason).toBe(
      'untracked files (a?b)',
    );
    expect(cleanLine('/p\nq', { kind: 'removed' })).toBe('removed /p?q');
  });

  it('every reason, in order', () => {
    expect(worktreeHold({ ...FREE_FACTS, changes: 1, unpushed: 2, sessions: ['s'] })?.reason).toBe(
      'session s is running, uncommitted changes, 2 commits not on a remote',
    );
  });
});

describe('sessionsHolding', () => {
  const sessions = [
    { name: 'svc-app-wt-feat-x', panes: [{ path: '/elsewhere' }] },
    { name: 'other', panes: [{ path: '/src/app-wt-feat-x/deep' }] },
    { name: 'meta', panes: [], meta: { worktree: '/src/app-wt-feat-x' } },
    { name: 'prefix', panes: [{ path: '/src/app-wt-feat-xy' }] },
    { name: 'none', panes: [{}] },
  ];
  it('by name, by a pane inside, by @svc-worktree; not by a path that only starts the same', () => {
    expect(sessionsHolding(sessions, 'svc-app-wt-feat-x', '/src/app-wt-feat-x')).toEqual([
      'svc-app-wt-feat-x',
      'other',
      'meta',
    ]);
  });
});

describe('parsers', () => {
  it('parseStatus counts changes, untracked and ignored; a rename has two paths', () => {
    const out = [' M a', 'A  n', 'R  new', 'old', '?? u/', '!! node_modules/', '!! x.log', ''].join('\0');
    expect(parseStatus(out)).toEqual({
      changes: 3,
      untracked: 1,
      ignored: 2,
      examples: { changes: 'a', untracked: 'u/', ignored: 'node_modules/' },
    });
    expect(parseStatus('')).toEqual({ changes: 0, untracked: 0, ignored: 0, examples: {} });
  });

  it('parseHidden: assume-unchanged always, skip-worktree only when present', () => {
    const out = ['H a', 'h b', 'S c', 'S d', ''].join('\0');
    expect(parseHidden(out, (p) => p === 'd')).toEqual({ count: 2, example: 'b' });
    expect(parseHidden(['H a', ''].join('\0'), () => true)).toEqual({ count: 0 });
  });

  it('parseWorktreeList reads the porcelain -z records', () => {
    const out = [
      'worktree /src/app',
      'HEAD abc',
      'branch refs/heads/main',
      '',
      'worktree /src/app-wt-x',
      'HEAD def',
      'detached',
      'locked',
      '',
      'worktree /src/app-wt-y',
      'HEAD 123',
      'branch refs/heads/feat/y',
      'locked on usb',
      'prunable gitdir file points to non-existent location',
      '',
      '',
    ].join('\0');
    expect(parseWorktreeList(out)).toEqual([
      { path: '/src/app', head: 'abc', branch: 'main', bare: false, detached: false, locked: null, prunable: null },
      { path: '/src/app-wt-x', head: 'def', branch: null, bare: false, detached: true, locked: '', prunable: null },
      {
        path: '/src/app-wt-y',
        head: '123',
        branch: 'feat/y',
        bare: false,
        detached: false,
        locked: 'on usb',
        prunable: 'gitdir file points to non-existent location',
      },
    ]);
    expect(parseWorktreeList(['worktree /r.git', 'bare', '', ''].join('\0'))[0]?.bare).toBe(true);
  });

  it('countStashes matches the branch exactly', () => {
    const subjects = ['WIP on feat/x: abc init', 'On feat/x: my msg', 'WIP on feat/xy: abc', 'WIP on (no branch): abc'];
    expect(countStashes(subjects, 'feat/x')).toBe(2);
    expect(countStashes(subjects, 'main')).toBe(0);
  });

  it('parseMark accepts only a well-formed mark', () => {
    const mark = {
      version: 1,
      branch: 'b',
      slug: 'b',
      repoName: 'app',
      sessionName: 'svc-app-wt-b',
      base: 'a'.repeat(40),
      createdAt: 1,
    };
    expect(parseMark(JSON.stringify(mark))).toEqual(mark);
    expect(parseMark(JSON.stringify({ ...mark, base: null }))?.base).toBeNull();
    expect(parseMark('{"version":2}')).toBeNull();
    expect(parseMark('not json')).toBeNull();
  });
});

describe('lines', () => {
  it('list and clean lines', () => {
    expect(listLine({ path: '/p', branch: 'b', hold: null })).toBe('/p  b  free');
    expect(listLine({ path: '/p', branch: 'b', hold: { reason: 'locked', reasons: ['locked'] } })).toBe(
      '/p  b  held: locked',
    );
    expect(cleanLine('/p', { kind: 'removed' })).toBe('removed /p');
    expect(cleanLine('/p', { kind: 'would_remove' })).toBe('would remove /p');
    expect(cleanLine('/p', { kind: 'kept', reason: 'locked' })).toBe('kept /p: held: locked');
    expect(cleanLine('/p', { kind: 'failed', message: 'check failed: x' })).toBe('kept /p: check failed: x');
  });
});
