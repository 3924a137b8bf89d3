/**
 * `--wt` against real git in temp repositories (a bare temp repository as the remote; never the user's repos):
 * where the worktree goes, reuse, every refusal, the mark; what git itself does that the design relies on; and the
 * `worktree.<slug>` machine with the real git actors.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock, waitFor as waitForState } from 'xstate';
import { createFaults, parseFaults } from '../../actors/debug/faults.js';
import { createGit, type Git } from '../../actors/worktrees/git.js';
import {
  checkWorktreeActor,
  createWorktreeIndex,
  ensureWorktree,
  findSvcWorktrees,
  removeWorktreeActor,
} from '../../actors/worktrees/worktrees.js';
import { parseMark, WORKTREE_MARK_FILE } from '../../core/worktrees/worktree.js';
import type { LogParams } from '../../machines/log.js';
import { type WorktreeInput, worktreeMachine } from '../../machines/worktree.js';
import { worktreeId, worktreesMachine } from '../../machines/worktrees.js';
import { waitFor } from '../helpers/relay.js';

/** A private git environment: no user or system config, a fixed identity. */
function gitEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'svc test',
    GIT_AUTHOR_EMAIL: 'test@svc.invalid',
    GIT_COMMITTER_NAME: 'svc test',
    GIT_COMMITTER_EMAIL: 'test@svc.invalid',
  };
  for (const k of Object.keys(env)) if (k.startsWith('GIT_') && /DIR|WORK_TREE|INDEX/.test(k)) delete env[k];
  return env;
}

let root: string;
let env: NodeJS.ProcessEnv;
let git: Git;
let app: string;
let remote: string;
let indexFile: string;

const sh = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-C', cwd, ...args], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const worktreePaths = (): string[] =>
  sh(app, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((l) => l.startsWith('worktree '))
    .map((l) => l.slice(9));
const ensure = (branch: string, cwd = app) =>
  ensureWorktree({ git, cwd, branch, index: createWorktreeIndex(indexFile) });

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'svc-wt-')));
  env = gitEnv(join(root, 'home'));
  mkdirSync(join(root, 'home'));
  git = createGit({ env });
  indexFile = join(root, 'home', '.svc', 'worktrees.json');
  remote = join(root, 'remote.git');
  app = join(root, 'src', 'app');
  mkdirSync(join(root, 'src'));
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', remote], { env });
  execFileSync('git', ['init', '-q', '-b', 'main', app], { env });
  writeFileSync(join(app, 'README'), 'hello\n');
  writeFileSync(join(app, '.gitignore'), 'node_modules/\n');
  mkdirSync(join(app, 'sub', 'dir'), { recursive: true });
  writeFileSync(join(app, 'sub', 'dir', 'f'), 'f\n');
  sh(app, 'add', '.');
  sh(app, 'commit', '-q', '-m', 'init');
  sh(app, 'remote', 'add', 'origin', remote);
  sh(app, 'push', '-q', '-u', 'origin', 'main');
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('--wt creates and reuses', () => {
  it('makes <repo>-wt-<slug> beside the main checkout on a new branch from HEAD, marked and indexed', async () => {
    const head = sh(app, 'rev-parse', 'HEAD').trim();
    const r = await ensure('feat/x');
    const path = join(root, 'src', 'app-wt-feat-x');
    expect(r).toEqual({
      ok: true,
      path,
      repo: app,
      repoName: 'app',
      branch: 'feat/x',
      branchSlug: 'feat-x',
      sessionName: 'svc-app-wt-feat-x',
      created: true,
      marked: true,
    });
    expect(sh(path, 'symbolic-ref', '--short', 'HEAD').trim()).toBe('feat/x');
    expect(sh(path, 'rev-parse', 'HEAD').trim()).toBe(head);
    expect(worktreePaths()).toEqual([app, path]);
    // The mark lives in the worktree's private git dir, not in its files.
    const gitDir = sh(path, 'rev-parse', '--path-format=absolute', '--git-dir').trim();
    expect(gitDir).toBe(join(app, '.git', 'worktrees', 'app-wt-feat-x'));
    const mark = parseMark(readFileSync(join(gitDir, WORKTREE_MARK_FILE), 'utf8'));
    expect(mark).toMatchObject({ branch: 'feat/x', slug: 'feat-x', base: head, sessionName: 'svc-app-wt-feat-x' });
    expect(sh(path, 'status', '--porcelain', '--ignored')).toBe('');
    expect(JSON.parse(readFileSync(indexFile, 'utf8'))).toEqual({ repos: [app] });
    expect(await git.readMark(app, path)).toEqual(mark);
  });

  it('reuses it on a second run: same path, same branch, created: false', async () => {
    const first = await ensure('feat/x');
    writeFileSync(join(root, 'src', 'app-wt-feat-x', 'work'), 'in progress\n');
    const second = await ensure('feat/x');
    expect(second).toEqual({ ...first, created: false });
    expect(readFileSync(join(root, 'src', 'app-wt-feat-x', 'work'), 'utf8')).toBe('in progress\n');
    expect(worktreePaths()).toHaveLength(2);
  });

  it('from a subdirectory, from inside another worktree or .git, it still goes beside the main checkout', async () => {
    const fromSub = await ensure('a', join(app, 'sub', 'dir'));
    expect(fromSub).toMatchObject({ ok: true, path: join(root, 'src', 'app-wt-a') });
    const fromWorktree = await ensure('b', join(root, 'src', 'app-wt-a', 'sub'));
    expect(fromWorktree).toMatchObject({ ok: true, path: join(root, 'src', 'app-wt-b'), repo: app });
    const again = await ensure('a', join(root, 'src', 'app-wt-b', 'sub', 'dir'));
    expect(again).toMatchObject({ ok: true, path: join(root, 'src', 'app-wt-a'), created: false });
    const fromGitDir = await ensure('c', join(app, '.git'));
    expect(fromGitDir).toMatchObject({ ok: true, path: join(root, 'src', 'app-wt-c'), created: true });
  });

  it('checks out an existing branch, counting its own work from where it meets HEAD', async () => {
    const base = sh(app, 'rev-parse', 'HEAD').trim();
    sh(app, 'branch', 'old');
    const r = await ensure('old');
    expect(r).toMatchObject({ ok: true, created: true, branch: 'old' });
    if (r.ok) expect((await git.readMark(app, r.path))?.base).toBe(base);
  });

  it('reuses a worktree of the branch made by hand at that path, and never marks it', async () => {
    sh(app, 'worktree', 'add', '-q', '-b', 'hand', join(root, 'src', 'app-wt-hand'));
    const r = await ensure('hand');
    expect(r).toMatchObject({ ok: true, created: false, marked: false });
    expect(await git.readMark(app, join(root, 'src', 'app-wt-hand'))).toBeNull();
  });
});

describe('--wt refuses with one line', () => {
  const refused = async (branch: string, cwd: string, message: RegExp) => {
    const before = existsSync(app) ? worktreePaths() : [];
    const r = await ensure(branch, cwd);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.message).toMatch(message);
      expect(r.message).not.toContain('\n');
    }
    if (existsSync(app)) expect(worktreePaths()).toEqual(before);
  };

  it('outside git', async () => {
    const outside = join(root, 'plain');
    mkdirSync(outside);
    await refused('feat', outside, /not inside one/);
  });

  it.each([['a..b'], ['-x'], ['HEAD'], ['x.lock'], ['with space'], ['@{-1}']])(
    'a name git rejects: %s',
    async (name) => {
      await refused(name, app, /as a branch name/);
      expect(sh(app, 'branch', '--list').trim()).toBe('* main');
    },
  );

  it('a directory already at the path (its files untouched)', async () => {
    const path = join(root, 'src', 'app-wt-feat');
    mkdirSync(path);
    writeFileSync(join(path, 'precious'), 'mine\n');
    await refused('feat', app, /already exists \(a directory/);
    expect(readFileSync(join(path, 'precious'), 'utf8')).toBe('mine\n');
    expect(sh(app, 'branch', '--list', 'feat')).toBe('');
  });

  it('an empty directory already at the path', async () => {
    mkdirSync(join(root, 'src', 'app-wt-feat'));
    await refused('feat', app, /already exists \(a directory/);
  });

  it('a file already at the path', async () => {
    const path = join(root, 'src', 'app-wt-feat');
    writeFileSync(path, 'a file\n');
    await refused('feat', app, /already exists \(a file/);
    expect(readFileSync(path, 'utf8')).toBe('a file\n');
  });

  it('a worktree of another branch at the path (feat/x and feat-x share a slug)', async () => {
    await ensure('feat/x');
    await refused('feat-x', app, /is the worktree of branch feat\/x, not of feat-x/);
  });

  it("another repository's worktree at the path", async () => {
    const other = join(root, 'src', 'other');
    execFileSync('git', ['init', '-q', '-b', 'main', other], { env });
    sh(other, 'commit', '-q', '--allow-empty', '-m', 'x');
    sh(other, 'worktree', 'add', '-q', '-b', 'feat', join(root, 'src', 'app-wt-feat'));
    await refused('feat', app, /already exists \(a directory/);
    expect(sh(join(root, 'src', 'app-wt-feat'), 'symbolic-ref', '--short', 'HEAD').trim()).toBe('feat');
  });

  it('a branch already checked out in another worktree', async () => {
    await refused('main', app, /branch main is already checked out at .*\/src\/app$/);
  });

  it('a repository with no commit yet', async () => {
    const empty = join(root, 'src', 'empty');
    execFileSync('git', ['init', '-q', '-b', 'main', empty], { env });
    const r = await ensure('feat', empty);
    expect(r).toEqual({ ok: false, message: '--wt: the repository has no commit yet to branch from' });
  });
});

describe('what git 2.39 does (the design relies on it)', () => {
  it('plain `git worktree remove` refuses untracked and modified files but deletes ignored ones', async () => {
    const path = join(root, 'src', 'app-wt-probe');
    sh(app, 'worktree', 'add', '-q', '-b', 'probe', path);
    writeFileSync(join(path, 'untracked'), 'u\n');
    expect(() => sh(app, 'worktree', 'remove', path)).toThrow(/contains modified or untracked files/);
    rmSync(join(path, 'untracked'));
    mkdirSync(join(path, 'node_modules'));
    writeFileSync(join(path, 'node_modules', 'ignored'), 'i\n');
    sh(app, 'worktree', 'remove', path); // no refusal: ignored files are deleted with it
    expect(existsSync(path)).toBe(false);
  });

  it('the `gitdir` file in the private git dir names the worktree (how a mark is found when its directory is gone)', async () => {
    const r = await ensure('feat');
    if (!r.ok) throw new Error(r.message);
    const pointer = readFileSync(join(app, '.git', 'worktrees', 'app-wt-feat', 'gitdir'), 'utf8').trim();
    expect(pointer).toBe(join(r.path, '.git'));
  });
});

describe('worktree machine with real git', () => {
  async function run(prepare: (path: string) => void) {
    const r = await ensure('feat/m');
    if (!r.ok) throw new Error(r.message);
    prepare(r.path);
    const clock = new SimulatedClock();
    const actor = createActor(
      worktreeMachine.provide({
        actors: { checkWorktree: checkWorktreeActor(git), removeWorktree: removeWorktreeActor(git) },
      }),
      {
        clock,
        input: { slug: r.branchSlug, path: r.path, repo: r.repo, branch: r.branch, sessionName: r.sessionName },
      },
    );
    actor.start();
    actor.send({ type: 'SESSION.GONE' });
    clock.increment(30_000);
    await waitForState(actor, (snap) => ['held', 'removed'].includes(String(snap.value)), { timeout: 10_000 });
    return { actor, path: r.path };
  }

  it('removes a free worktree, keeps the branch', async () => {
    const { actor, path } = await run(() => {});
    expect(actor.getSnapshot().value).toBe('removed');
    expect(existsSync(path)).toBe(false);
    expect(worktreePaths()).toEqual([app]);
    expect(sh(app, 'branch', '--list', 'feat/m').trim()).toBe('feat/m');
  });

  it('a check that fails (SVC_FAULT: its promise rejects) holds it with the error as the reason, removes nothing, and the next look removes it', async () => {
    const r = await ensure('feat/m');
    if (!r.ok) throw new Error(r.message);
    const parsed = parseFaults('promise:worktree.*');
    if ('error' in parsed) throw new Error(parsed.error);
    const faults = createFaults(parsed.rules);
    const clock = new SimulatedClock();
    const actor = createActor(
      worktreeMachine.provide({
        actors: {
          checkWorktree: faults.promise(checkWorktreeActor(git)),
          removeWorktree: faults.promise(removeWorktreeActor(git)),
        },
      }),
      {
        id: `worktree.${r.branchSlug}`,
        clock,
        input: { slug: r.branchSlug, path: r.path, repo: r.repo, branch: r.branch, sessionName: r.sessionName },
      },
    );
    actor.start();
    actor.send({ type: 'SESSION.GONE' });
    clock.increment(30_000);
    await waitForState(actor, (snap) => snap.value === 'held', { timeout: 10_000 });
    expect(actor.getSnapshot().context.reason).toMatch(/SVC_FAULT: injected promise failure in worktree\.feat-m/);
    expect(existsSync(r.path)).toBe(true);
    clock.increment(300_000); // the next look (the fault fired once)
    await waitForState(actor, (snap) => snap.value === 'removed', { timeout: 10_000 });
    expect(existsSync(r.path)).toBe(false);
  });

  it('holds one with an ignored file, and the file is still there', async () => {
    const { actor, path } = await run((p) => {
      mkdirSync(join(p, 'node_modules'));
      writeFileSync(join(p, 'node_modules', 'dep.js'), 'x\n');
    });
    expect(actor.getSnapshot().value).toBe('held');
    expect(actor.getSnapshot().context.reason).toBe('ignored files (node_modules/)');
    expect(readFileSync(join(path, 'node_modules', 'dep.js'), 'utf8')).toBe('x\n');
  });
});

describe('the worktrees supervisor with real git', () => {
  it('a worktree actor that fails (SVC_FAULT: its action throws as it says what holds it) is spawned again at the next scan; the work stays', async () => {
    const r = await ensure('feat/m');
    if (!r.ok) throw new Error(r.message);
    mkdirSync(join(r.path, 'node_modules'));
    writeFileSync(join(r.path, 'node_modules', 'dep.js'), 'x\n');
    const parsed = parseFaults('action:worktree.*');
    if ('error' in parsed) throw new Error(parsed.error);
    const lines: string[] = [];
    const failures: { id: string; what: string }[] = [];
    const log = (_: unknown, p: LogParams) => void lines.push(p.message);
    // wrapped as the listener wraps its children (actors/listener.ts)
    const { worktrees } = createFaults(parsed.rules).children({
      worktrees: worktreesMachine.provide({
        actors: {
          worktree: worktreeMachine.provide({
            actors: { checkWorktree: checkWorktreeActor(git), removeWorktree: removeWorktreeActor(git) },
            actions: { log },
          }),
          findWorktrees: fromPromise<(WorktreeInput & { repoName: string })[]>(
            async () => (await findSvcWorktrees({ git, index: createWorktreeIndex(indexFile) })).worktrees,
          ),
        },
        actions: { log, reportFailure: (_, { id, what }) => void failures.push({ id, what }) },
      }),
    });
    const clock = new SimulatedClock();
    const actor = createActor(worktrees, { clock, input: { now: () => clock.now() } });
    actor.start();
    const id = worktreeId('app', r.branchSlug);
    const child = () => actor.getSnapshot().children[id];
    await waitFor(() => child(), { what: 'its worktree actor' });
    actor.send({ type: 'SESSIONS', sessions: {} }); // its session is gone
    clock.increment(30_000); // the grace: then git is asked, and it is held, which it logs: the fault
    await waitFor(() => failures.length > 0, { what: 'the failure' });
    expect(failures).toEqual([{ id, what: 'rebuilt at the next scan of git worktrees' }]);
    expect(child()).toBeUndefined();
    expect(actor.getSnapshot().status).toBe('active');
    clock.increment(60_000); // the next scan
    await waitFor(() => child(), { what: 'its worktree actor spawned again' });
    clock.increment(30_000); // its session is still gone: looked at again, held (the fault fired once)
    const held = `worktree ${r.path} held: ignored files (node_modules/)`;
    await waitFor(() => lines.includes(held), { what: 'the held line' });
    expect(readFileSync(join(r.path, 'node_modules', 'dep.js'), 'utf8')).toBe('x\n');
    expect(worktreePaths()).toContain(r.path);
    actor.stop();
  });
});
