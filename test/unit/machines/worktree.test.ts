/**
 * machines/worktree.ts with a simulated clock: the real check and remove logic (actors/worktrees/git.ts) on the fake git,
 * so the machine and the safety checks are exercised together.
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock } from 'xstate';
import { checkWorktreeActor, ensureWorktree, removeWorktreeActor } from '../../../actors/worktrees/worktrees.js';
import type { WorktreeFacts } from '../../../core/worktrees/worktree.js';
import type { LogParams } from '../../../machines/log.js';
import { type WorktreeInput, worktreeMachine } from '../../../machines/worktree.js';
import { FakeGit, memoryIndex } from '../../fakes/fakeGit.js';

const GRACE = 30_000;
const RECHECK = 300_000;

const flush = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

async function harness(opts: { checkThrows?: boolean } = {}) {
  const git = new FakeGit();
  const repo = git.addRepo('/src/app');
  const made = await ensureWorktree({ git, cwd: '/src/app', branch: 'feat/x', index: memoryIndex() });
  if (!made.ok) throw new Error(made.message);
  const input: WorktreeInput = {
    slug: made.branchSlug,
    path: made.path,
    repo: made.repo,
    branch: made.branch,
    sessionName: made.sessionName,
  };
  const logs: LogParams[] = [];
  const clock = new SimulatedClock();
  const machine = worktreeMachine.provide({
    actors: {
      checkWorktree: opts.checkThrows
        ? fromPromise<WorktreeFacts, WorktreeInput>(async () => {
            throw new Error('git exploded');
          })
        : checkWorktreeActor(git),
      removeWorktree: removeWorktreeActor(git),
    },
    actions: { log: (_, params) => void logs.push(params) },
  });
  const actor = createActor(machine, { clock, input });
  actor.start();
  const state = () => actor.getSnapshot().value;
  const advance = async (ms: number) => {
    clock.increment(ms);
    await flush();
  };
  return { git, repo, wt: git.worktree(made.path)!, input, actor, clock, logs, state, advance };
}

describe('worktree machine', () => {
  it('active → orphaned → checked → held → (recheck) → removed, keeping the branch', async () => {
    const h = await harness();
    expect(h.state()).toBe('active');
    h.wt.untracked = 1;

    h.actor.send({ type: 'SESSION.GONE' });
    expect(h.state()).toBe('orphaned');
    await h.advance(GRACE - 1);
    expect(h.state()).toBe('orphaned');
    await h.advance(1);
    expect(h.state()).toBe('held');
    expect(h.actor.getSnapshot().context.reason).toBe('untracked files');
    expect(h.actor.getSnapshot().context.facts?.untracked).toBe(1);
    expect(h.logs.at(-1)?.message).toContain('held: untracked files');

    h.wt.untracked = 0; // the person committed it
    await h.advance(RECHECK - 1);
    expect(h.state()).toBe('held');
    await h.advance(1);
    expect(h.state()).toBe('removed');
    expect(h.actor.getSnapshot().status).toBe('done');
    expect(h.actor.getSnapshot().output).toEqual({ slug: 'feat-x', path: h.input.path, outcome: 'removed' });
    expect(h.git.worktree(h.input.path)).toBeUndefined();
    expect(h.repo.branches.has('feat/x')).toBe(true);
    expect(h.git.calls.filter((c) => c.op === 'removeWorktree')).toHaveLength(1);
  });

  it('the session coming back returns it to active, from orphaned or held', async () => {
    const h = await harness();
    h.actor.send({ type: 'SESSION.GONE' });
    h.actor.send({ type: 'SESSION.ALIVE' });
    expect(h.state()).toBe('active');
    await h.advance(GRACE * 2);
    expect(h.state()).toBe('active');
    expect(h.git.calls.some((c) => c.op === 'status')).toBe(false);

    h.wt.changes = 1;
    h.actor.send({ type: 'SESSION.GONE' });
    await h.advance(GRACE);
    expect(h.state()).toBe('held');
    h.actor.send({ type: 'SESSION.ALIVE' });
    expect(h.state()).toBe('active');
    expect(h.actor.getSnapshot().context.reason).toBeNull();
    await h.advance(RECHECK * 2);
    expect(h.state()).toBe('active');
    expect(h.git.worktree(h.input.path)).toBeDefined();
  });

  it('repeated SESSION.GONE does not restart the grace period', async () => {
    const h = await harness();
    h.actor.send({ type: 'SESSION.GONE' });
    await h.advance(GRACE / 2);
    h.actor.send({ type: 'SESSION.GONE' });
    await h.advance(GRACE / 2);
    expect(h.state()).toBe('removed');
  });

  it('a git error while checking holds it, with the error as the reason', async () => {
    const h = await harness({ checkThrows: true });
    h.actor.send({ type: 'SESSION.GONE' });
    await h.advance(GRACE);
    expect(h.state()).toBe('held');
    expect(h.actor.getSnapshot().context.reason).toBe('check failed: git exploded');
    expect(h.git.worktree(h.input.path)).toBeDefined();
    expect(h.git.calls.some((c) => c.op === 'removeWorktree')).toBe(false);
  });

  it('a git error in the fake while checking holds it too (real check actor)', async () => {
    const h = await harness();
    h.git.failNext('listWorktrees');
    h.actor.send({ type: 'SESSION.GONE' });
    await h.advance(GRACE);
    expect(h.state()).toBe('held');
    expect(h.actor.getSnapshot().context.reason).toBe('check failed: fake listWorktrees failure');
  });

  it('the world changing between the check and the remove: the last look holds it', async () => {
    const h = await harness();
    h.actor.send({ type: 'SESSION.GONE' });
    // Dirty the worktree after the check has read the status, before the remove looks again.
    h.git.calls.length = 0;
    const status = h.git.status.bind(h.git);
    let reads = 0;
    h.git.status = async (p: string) => {
      const s = await status(p);
      reads += 1;
      if (reads === 1) h.wt.ignored = 1;
      return s;
    };
    await h.advance(GRACE);
    expect(h.state()).toBe('held');
    expect(h.actor.getSnapshot().context.reason).toBe('ignored files');
    expect(h.git.calls.some((c) => c.op === 'removeWorktree')).toBe(false);
  });

  it("git's refusal to remove (a file appeared under the last look) is a hold; a later recheck removes it", async () => {
    const h = await harness();
    h.git.failNext('removeWorktree', new Error('boom'));
    h.actor.send({ type: 'SESSION.GONE' });
    await h.advance(GRACE);
    expect(h.state()).toBe('held');
    expect(h.actor.getSnapshot().context.reason).toBe('remove failed: boom');
    await h.advance(RECHECK);
    expect(h.state()).toBe('removed');
  });

  it('a worktree removed by someone else ends as gone', async () => {
    const h = await harness();
    h.repo.worktrees.splice(1, 1);
    h.actor.send({ type: 'SESSION.GONE' });
    await h.advance(GRACE);
    expect(h.state()).toBe('gone');
    expect(h.actor.getSnapshot().output).toMatchObject({ outcome: 'gone' });
  });

  it('a session alive during the check cancels it', async () => {
    const h = await harness();
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const list = h.git.listWorktrees.bind(h.git);
    h.git.listWorktrees = async (d: string) => {
      await gate;
      return list(d);
    };
    h.actor.send({ type: 'SESSION.GONE' });
    await h.advance(GRACE);
    expect(h.state()).toBe('checking');
    h.actor.send({ type: 'SESSION.ALIVE' });
    release();
    await h.advance(0);
    expect(h.state()).toBe('active');
    expect(h.git.calls.some((c) => c.op === 'removeWorktree')).toBe(false);
  });
});
