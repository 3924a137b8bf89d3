/**
 * `svc worktree` and `svc worktree clean` as real processes (the compiled command), against real git in temp
 * repositories with a bare temp repository as the remote, and a private tmux server. Not one byte of work may be
 * lost: for each holding condition a worktree is put in that condition, cleaned, and the work is checked to be
 * there; the free ones are really removed (directory gone, git no longer lists it, branch still there).
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGit } from '../../actors/worktrees/git.js';
import { createWorktreeIndex, ensureWorktree } from '../../actors/worktrees/worktrees.js';
import { startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

const COMMAND = resolve(import.meta.dirname, '../../dist/cli/commands/worktree/index.js');
/** Runs the compiled `svc worktree` command the way cli/main.ts would. */
const CITTY = resolve(import.meta.dirname, '../../node_modules/citty/dist/index.mjs');
const RUNNER = `const [command, citty, ...rawArgs] = process.argv.slice(1);
const { runMain } = await import(citty);
await runMain((await import(command)).default, { rawArgs });`;

let root: string;
let home: string;
let env: NodeJS.ProcessEnv;
let app: string;
let tmux: TmuxServer;

const sh = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-C', cwd, ...args], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const worktreePaths = (repo = app): string[] =>
  sh(repo, 'worktree', 'list', '--porcelain')
    .split('\n')
    .filter((l) => l.startsWith('worktree '))
    .map((l) => l.slice(9));

function svcWorktree(args: string[], cwd = root): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', RUNNER, COMMAND, CITTY, ...args],
      { env, cwd, timeout: 30_000, encoding: 'utf8' },
      (err, stdout, stderr) => done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

function newRepo(name: string, opts: { remote?: boolean } = {}): string {
  const dir = join(root, 'src', name);
  execFileSync('git', ['init', '-q', '-b', 'main', dir], { env });
  writeFileSync(join(dir, 'README'), 'hello\n');
  writeFileSync(join(dir, '.gitignore'), 'node_modules/\n');
  sh(dir, 'add', '.');
  sh(dir, 'commit', '-q', '-m', 'init');
  if (opts.remote !== false) {
    const remote = join(root, `${name}-remote.git`);
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', remote], { env });
    sh(dir, 'remote', 'add', 'origin', remote);
    sh(dir, 'push', '-q', '-u', 'origin', 'main');
  }
  return dir;
}

async function wt(branch: string, repo = app) {
  const r = await ensureWorktree({
    git: createGit({ env }),
    cwd: repo,
    branch,
    index: createWorktreeIndex(join(home, '.svc', 'worktrees.json')),
  });
  if (!r.ok) throw new Error(r.message);
  return r;
}

const commit = (path: string, file: string, text = 'work\n') => {
  writeFileSync(join(path, file), text);
  sh(path, 'add', file);
  sh(path, 'commit', '-q', '-m', `add ${file}`);
};

beforeAll(async () => {
  tmux = await startTmuxServer();
});
afterAll(async () => {
  await tmux.cleanup();
});

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'svc-wtc-')));
  home = join(root, 'home');
  mkdirSync(home);
  mkdirSync(join(root, 'src'));
  env = {
    ...process.env,
    HOME: home,
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'svc test',
    GIT_AUTHOR_EMAIL: 'test@svc.invalid',
    GIT_COMMITTER_NAME: 'svc test',
    GIT_COMMITTER_EMAIL: 'test@svc.invalid',
    SVC_TMUX_SOCKET: tmux.socketPath, // never the user's tmux
  };
  delete env.TMUX;
  app = newRepo('app');
});

afterEach(async () => {
  for (const s of await tmux.listSessions()) await tmux.tmux.killSession(s.name).catch(() => {});
  rmSync(root, { recursive: true, force: true });
});

/** Clean, and check the worktree was kept for `reason` and that `stillThere` holds afterwards. */
async function expectKept(path: string, reason: RegExp, stillThere: () => void) {
  const dry = await svcWorktree(['clean', '--dry-run']);
  expect(dry.code).toBe(0);
  expect(dry.stdout).toMatch(new RegExp(`^kept ${path}: held: .*${reason.source}`, 'm'));
  const listed = await svcWorktree(['--json']);
  const row = JSON.parse(listed.stdout).worktrees.find((w: { path: string }) => w.path === path);
  expect(row.free).toBe(false);
  expect(row.reasons.join(', ')).toMatch(reason);

  const clean = await svcWorktree(['clean']);
  expect(clean.code).toBe(0);
  expect(clean.stdout).toMatch(new RegExp(`^kept ${path}: held: .*${reason.source}`, 'm'));
  expect(clean.stdout).not.toContain(`removed ${path}`);
  expect(existsSync(path)).toBe(true);
  expect(worktreePaths()).toContain(path);
  stillThere();
}

describe('held worktrees keep every byte', () => {
  it('uncommitted change to a tracked file', async () => {
    const { path } = await wt('feat/x');
    writeFileSync(join(path, 'README'), 'edited\n');
    await expectKept(path, /uncommitted changes/, () => {
      expect(readFileSync(join(path, 'README'), 'utf8')).toBe('edited\n');
    });
  });

  it('staged new file', async () => {
    const { path } = await wt('staged');
    writeFileSync(join(path, 'new.txt'), 'staged\n');
    sh(path, 'add', 'new.txt');
    await expectKept(path, /uncommitted changes/, () => {
      expect(readFileSync(join(path, 'new.txt'), 'utf8')).toBe('staged\n');
    });
  });

  it('untracked file', async () => {
    const { path } = await wt('untracked');
    writeFileSync(join(path, 'notes.txt'), 'ideas\n');
    await expectKept(path, /untracked files \(notes\.txt\)/, () => {
      expect(readFileSync(join(path, 'notes.txt'), 'utf8')).toBe('ideas\n');
    });
  });

  it('ignored file (.gitignore), which plain `git worktree remove` would delete', async () => {
    const { path } = await wt('ignored');
    mkdirSync(join(path, 'node_modules'));
    writeFileSync(join(path, 'node_modules', 'dep.js'), 'dep\n');
    await expectKept(path, /ignored files \(node_modules\/\)/, () => {
      expect(readFileSync(join(path, 'node_modules', 'dep.js'), 'utf8')).toBe('dep\n');
    });
  });

  it('ignored file (info/exclude)', async () => {
    const { path } = await wt('excluded');
    writeFileSync(join(app, '.git', 'info', 'exclude'), '*.log\n');
    writeFileSync(join(path, 'build.log'), 'log\n');
    await expectKept(path, /ignored files \(build\.log\)/, () => {
      expect(readFileSync(join(path, 'build.log'), 'utf8')).toBe('log\n');
    });
  });

  it('an edit git is told not to see (assume-unchanged), which `git worktree remove` would delete', async () => {
    const { path } = await wt('assumed');
    sh(path, 'update-index', '--assume-unchanged', 'README');
    writeFileSync(join(path, 'README'), 'hidden edit\n');
    expect(sh(path, 'status', '--porcelain', '--ignored')).toBe('');
    await expectKept(path, /1 file marked assume-unchanged or skip-worktree \(README\)/, () => {
      expect(readFileSync(join(path, 'README'), 'utf8')).toBe('hidden edit\n');
    });
  });

  it('commits not on any remote-tracking branch', async () => {
    const { path } = await wt('commits');
    commit(path, 'a.txt');
    commit(path, 'b.txt');
    const head = sh(path, 'rev-parse', 'HEAD').trim();
    await expectKept(path, /2 commits not on a remote/, () => {
      expect(sh(path, 'rev-parse', 'HEAD').trim()).toBe(head);
    });
  });

  it('a commit beyond its base in a repository with no remote at all', async () => {
    const local = newRepo('local', { remote: false });
    const { path } = await wt('solo', local);
    commit(path, 'a.txt');
    const dry = await svcWorktree(['clean'], local);
    expect(dry.stdout).toMatch(new RegExp(`^kept ${path}: held: 1 commit not on a remote$`, 'm'));
    expect(existsSync(join(path, 'a.txt'))).toBe(true);
    expect(worktreePaths(local)).toContain(path);
  });

  it('a stash entry made on its branch', async () => {
    const { path } = await wt('stashed');
    writeFileSync(join(path, 'README'), 'stashed edit\n');
    sh(path, 'stash', '-q');
    expect(sh(path, 'status', '--porcelain')).toBe('');
    await expectKept(path, /1 stash entry made on its branch/, () => {
      expect(sh(app, 'stash', 'list')).toContain('WIP on stashed');
    });
  });

  it('locked', async () => {
    const { path } = await wt('locked');
    sh(app, 'worktree', 'lock', '--reason', 'on a usb disk', path);
    await expectKept(path, /locked \(on a usb disk\)/, () => {});
  });

  it('its session is running', async () => {
    const { path, sessionName } = await wt('feat/s');
    await tmux.newSession(sessionName, ['sleep', '600'], { cwd: root });
    await expectKept(path, /session svc-app-wt-feat-s is running/, () => {});
  });

  it('another session has a pane inside it', async () => {
    const { path } = await wt('paned');
    await tmux.newSession('someone-else', ['sleep', '600'], { cwd: join(path) });
    await expectKept(path, /session someone-else is running/, () => {});
  });

  it('several conditions at once are all reported', async () => {
    const { path } = await wt('many');
    writeFileSync(join(path, 'README'), 'edited\n');
    commit(path, 'c.txt');
    writeFileSync(join(path, 'u.txt'), 'u\n');
    const clean = await svcWorktree(['clean']);
    expect(clean.stdout).toContain(
      `kept ${path}: held: uncommitted changes, untracked files (u.txt), 1 commit not on a remote`,
    );
    expect(readFileSync(join(path, 'README'), 'utf8')).toBe('edited\n');
  });
});

describe('free worktrees are removed, branches kept', () => {
  it('a worktree with nothing in it: removed, git no longer lists it, the branch stays', async () => {
    const { path } = await wt('feat/free');
    const listed = await svcWorktree([]);
    expect(listed.stdout).toBe(`${path}  feat/free  free\n`);

    const dry = await svcWorktree(['clean', '--dry-run']);
    expect(dry.stdout).toBe(`would remove ${path}\n`);
    expect(existsSync(path)).toBe(true);

    const clean = await svcWorktree(['clean']);
    expect(clean).toMatchObject({ code: 0, stdout: `removed ${path}\n` });
    expect(existsSync(path)).toBe(false);
    expect(worktreePaths()).toEqual([app]);
    expect(sh(app, 'branch', '--list', 'feat/free').trim()).toBe('feat/free');
    expect((await svcWorktree([])).stdout).toBe('no worktrees made by --wt\n');
  });

  it('commits that are on the remote do not hold it', async () => {
    const { path } = await wt('pushed');
    commit(path, 'a.txt');
    sh(path, 'push', '-q', 'origin', 'pushed');
    const head = sh(path, 'rev-parse', 'HEAD').trim();
    expect((await svcWorktree(['clean'])).stdout).toBe(`removed ${path}\n`);
    expect(sh(app, 'rev-parse', 'pushed').trim()).toBe(head);
  });

  it('a branch with no commits of its own is free, even with no remote and an unpushed base', async () => {
    const local = newRepo('solo', { remote: false });
    commit(local, 'base-work.txt');
    const { path } = await wt('nothing-yet', local);
    expect((await svcWorktree(['clean'], local)).stdout).toBe(`removed ${path}\n`);
    expect(sh(local, 'branch', '--list', 'nothing-yet').trim()).toBe('nothing-yet');
  });

  it('a worktree made by hand is never listed nor touched, even when free', async () => {
    const byHand = join(root, 'src', 'app-by-hand');
    sh(app, 'worktree', 'add', '-q', '-b', 'by-hand', byHand);
    const { path } = await wt('mine');
    const clean = await svcWorktree(['clean'], app);
    expect(clean.stdout).toBe(`removed ${path}\n`);
    expect(existsSync(byHand)).toBe(true);
    expect(worktreePaths()).toEqual([app, byHand]);
  });

  it('found from anywhere through ~/.svc/worktrees.json; --json for scripts', async () => {
    const { path } = await wt('json');
    writeFileSync(join(path, 'x'), 'x\n');
    const out = await svcWorktree(['--json'], tmpdir());
    expect(JSON.parse(out.stdout)).toEqual({
      worktrees: [
        {
          path,
          repo: app,
          branch: 'json',
          slug: 'json',
          sessionName: 'svc-app-wt-json',
          free: false,
          reasons: ['untracked files (x)'],
        },
      ],
      problems: [],
    });
    const clean = await svcWorktree(['clean', '--json'], tmpdir());
    expect(JSON.parse(clean.stdout).results).toEqual([
      { path, branch: 'json', outcome: { kind: 'kept', reason: 'untracked files (x)' } },
    ]);
  });

  it('a repository in the index that is gone is reported, exit 1, others still cleaned', async () => {
    const { path } = await wt('ok');
    const gone = newRepo('gone');
    await wt('x', gone);
    rmSync(gone, { recursive: true, force: true });
    const clean = await svcWorktree(['clean'], root);
    expect(clean.code).toBe(1);
    expect(clean.stdout).toBe(`removed ${path}\n`);
    expect(clean.stderr).toBe(`svc: ${gone}: repository not found\n`);
  });
});
