/**
 * `svc <agent>` and `svc sh` end to end: the compiled CLI, real tmux on a private socket, the fake agent on PATH
 * under the agents' names, a real PTY (node-pty) where a terminal is needed. HOME is a temp dir with no config,
 * so no listener is started here (test/integration/daemon.test.ts covers the daemon).
 */
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentForSubcommand } from '../../core/agents/registry.js';
import { SVC_BIN, svcEnv, tempHome } from '../helpers/cli.js';
import { fakeAgentBin, startTmuxServer, type TmuxServer, waitFor } from '../helpers/tmux.js';

let tmux: TmuxServer;
let home: ReturnType<typeof tempHome>;
let proj: string;
let env: NodeJS.ProcessEnv;
const terminals: pty.IPty[] = [];

/** `svc pi` once the registry has pi (A4); until then another agent that is not cc stands in. */
const OTHER = agentForSubcommand('pi') ?? agentForSubcommand('codex')!;

function svc(
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [SVC_BIN, ...args],
      { cwd: opts.cwd ?? proj, env: opts.env ?? env, timeout: 30_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** `svc …` in a real terminal; `output()` is everything it drew so far. */
function svcInPty(args: string[], cwd = proj) {
  const term = pty.spawn(process.execPath, [SVC_BIN, ...args], {
    name: 'xterm-256color',
    cols: 120,
    rows: 40,
    cwd,
    env: { ...env, TERM: 'xterm-256color' } as Record<string, string>,
  });
  terminals.push(term);
  let out = '';
  term.onData((d) => {
    out += d;
  });
  const exited = new Promise<number>((r) => term.onExit(({ exitCode }) => r(exitCode)));
  return { term, output: () => out, exited };
}

async function sessions() {
  const list = await tmux.listSessions();
  return Object.fromEntries(list.map((s) => [s.name, s]));
}

beforeEach(async () => {
  tmux = await startTmuxServer();
  home = tempHome();
  proj = join(home.home, 'work', 'proj');
  mkdirSync(proj, { recursive: true });
  const bin = await fakeAgentBin(tmux.dir, ['claude', OTHER.command]);
  env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath, PATH: `${bin}:${process.env.PATH}`, SHELL: '/bin/sh' });
});

afterEach(async () => {
  for (const t of terminals.splice(0)) {
    try {
      t.kill();
    } catch {
      // already gone
    }
  }
  await tmux.cleanup();
  home.cleanup();
});

describe('svc <agent> --detach', () => {
  it('names the first session svc-<project>, the next svc-<project>-2, and records what runs there', async () => {
    const first = await svc(['cc', '--detach']);
    expect(first).toMatchObject({ code: 0, stdout: 'svc-proj\n' });
    // not logged in: the session is made, and one line says the listener was not started
    expect(first.stderr).toMatch(/^svc: the listener was not started: not logged in .*svc login.*svc up/m);
    const second = await svc(['cc', '--detach']);
    expect(second).toMatchObject({ code: 0, stdout: 'svc-proj-2\n' });

    const all = await sessions();
    expect(Object.keys(all).sort()).toEqual(['svc-proj', 'svc-proj-2']);
    expect(all['svc-proj']?.meta).toEqual({ kind: 'agent', agent: 'A1', project: 'proj' });
    expect(all['svc-proj']?.attached).toBe(false);
    await waitFor(async () => (await sessions())['svc-proj']?.panes[0]?.command === 'claude', {
      what: 'the fake claude in front',
    });
    expect(realpathSync((await sessions())['svc-proj']!.panes[0]!.path!)).toBe(realpathSync(proj));
  });

  it('--label names the session svc-<project>-<x>', async () => {
    expect(await svc(['cc', '--detach', '--label', 'review'])).toMatchObject({ code: 0, stdout: 'svc-proj-review\n' });
    expect((await sessions())['svc-proj-review']?.meta).toEqual({
      kind: 'agent',
      agent: 'A1',
      project: 'proj',
      label: 'review',
    });
    // the label is taken by a session of another agent: refused with one line
    const clash = await svc([OTHER.subcommand, '--detach', '--label', 'review']);
    expect(clash.code).toBe(1);
    expect(clash.stderr).toBe(`svc: svc-proj-review runs Claude Code, not ${OTHER.name}: pick another --label\n`);
  });

  it('--wt runs in the worktree beside the checkout, in svc-<repo>-wt-<branch-slug>', async () => {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: proj, env, encoding: 'utf8' });
    git('init', '-q', '-b', 'main');
    git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'init');
    const run = await svc(['cc', '--detach', '--wt', 'feat/x']);
    expect(run).toMatchObject({ code: 0, stdout: 'svc-proj-wt-feat-x\n' });
    const wtPath = realpathSync(join(proj, '..', 'proj-wt-feat-x'));
    const s = (await sessions())['svc-proj-wt-feat-x']!;
    expect(s.meta).toEqual({ kind: 'agent', agent: 'A1', project: 'proj', worktree: wtPath });
    expect(realpathSync(s.panes[0]!.path!)).toBe(wtPath);
    expect(git('-C', wtPath, 'branch', '--show-current').trim()).toBe('feat/x');
    // outside git: one line, non-zero, nothing made
    const outside = join(home.home, 'plain');
    mkdirSync(outside);
    const refused = await svc(['cc', '--detach', '--wt', 'feat/y'], { cwd: outside });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^svc: --wt needs a git repository.*\n$/);
    expect(Object.keys(await sessions())).toEqual(['svc-proj-wt-feat-x']);
  });

  it('passes the agent arguments verbatim: quotes, spaces and ; intact, no shell re-parsing', async () => {
    const bin = join(home.home, 'argv-bin');
    const out = join(home.home, 'argv.out');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'claude'),
      `#!/bin/sh\n: > '${out}.tmp'\nfor a in "$@"; do printf '%s\\0' "$a" >> '${out}.tmp'; done\nmv '${out}.tmp' '${out}'\nexec sleep 600\n`,
    );
    chmodSync(join(bin, 'claude'), 0o755);
    const args = ['--model', 'a b', 'x;y', "it's", '$HOME', '*', '"q"', 'end;'];
    const run = await svc(['cc', '--detach', '--', ...args], { env: { ...env, PATH: `${bin}:${env.PATH}` } });
    expect(run).toMatchObject({ code: 0, stdout: 'svc-proj\n' });
    const got = await waitFor(() => readFileSync(out, 'utf8'), { what: 'the argv file' });
    expect(got.split('\0').slice(0, -1)).toEqual(args);
  });

  it('refuses an agent that is not on PATH, with one line', async () => {
    const run = await svc(['cc', '--detach'], { env: { ...env, PATH: '/usr/bin:/bin' } });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('svc: claude (Claude Code) is not on PATH: install it, then run again\n');
  });

  it('without --detach and without a terminal: refused, nothing made', async () => {
    const run = await svc(['cc']);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('svc: no terminal to attach to: add --detach to start the session in the background\n');
    expect(await tmux.listSessions()).toEqual([]);
  });

  it('inside tmux without --detach: runs the agent here with the note, makes no session', async () => {
    const bin = join(home.home, 'echo-bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'claude'), '#!/bin/sh\necho "ran with: $*"\nexit 3\n');
    chmodSync(join(bin, 'claude'), 0o755);
    const run = await svc(['cc', '--', 'a b'], {
      env: { ...env, TMUX: `${tmux.socketPath},1,0`, PATH: `${bin}:${env.PATH}` },
    });
    expect(run).toMatchObject({ code: 3, stdout: 'ran with: a b\n' });
    expect(run.stderr).toMatch(/^svc: running claude in this pane; the listener cannot reach it here \(use --detach/);
    expect(await tmux.listSessions()).toEqual([]);
  });

  it('svc cc --help is the wrapper help; svc --help lists the agents', async () => {
    const help = await svc(['cc', '--help']);
    expect(help.stdout).toMatch(/Usage: svc cc \[--detach\] \[--label <x>\] \[--wt <branch>\]/);
    const top = await svc(['--help']);
    for (const sub of ['cc', 'codex', 'gemini', 'sh', 'verify']) expect(top.stdout).toMatch(new RegExp(`\\b${sub}\\b`));
  });
});

describe('svc <agent> in a terminal', () => {
  it('reattaches to the detached session of the project running the same agent', async () => {
    expect((await svc(['cc', '--detach'])).stdout).toBe('svc-proj\n');
    await waitFor(async () => (await tmux.capture('svc-proj')).includes('fake agent'), { what: 'the banner' });

    const run = svcInPty(['cc']);
    await waitFor(() => run.output().includes('claude (fake agent)'), {
      timeoutMs: 15_000,
      what: 'the session on the terminal',
    });
    await waitFor(async () => (await sessions())['svc-proj']?.attached, { what: 'svc-proj attached' });
    expect(Object.keys(await sessions())).toEqual(['svc-proj']); // no new session

    run.term.write('\x02d'); // C-b d: detach
    expect(await run.exited).toBe(0);
    expect((await sessions())['svc-proj']?.attached).toBe(false); // detached, never killed
  });

  it('on reattach says which arguments were not passed (the agent runs already) and how to start another', async () => {
    expect((await svc(['cc', '--detach'])).stdout).toBe('svc-proj\n');
    await waitFor(async () => (await tmux.capture('svc-proj')).includes('fake agent'), { what: 'the banner' });
    const run = svcInPty(['cc', '--detatch', '--model', 'x']);
    await waitFor(() => run.output().includes('claude (fake agent)'), { timeoutMs: 15_000, what: 'reattached' });
    expect(Object.keys(await sessions())).toEqual(['svc-proj']);
    // said once the person is back on their screen (tmux discards what is written just before it attaches)
    run.term.write('\x02d');
    expect(await run.exited).toBe(0);
    const after = run.output().slice(run.output().lastIndexOf('[detached'));
    expect(after).toContain('svc: reattached to svc-proj, which runs already: not passed to it: --detatch --model x');
    expect(after).toContain('(did you mean --detach for --detatch?)');
  });

  it('creates and attaches when there is nothing to reattach', async () => {
    const run = svcInPty(['cc']);
    await waitFor(() => run.output().includes('claude (fake agent)'), { timeoutMs: 15_000, what: 'the new session' });
    expect((await sessions())['svc-proj']).toMatchObject({ attached: true, meta: { kind: 'agent', agent: 'A1' } });
    run.term.write('\x02d');
    expect(await run.exited).toBe(0);
  });

  it(`svc ${OTHER.subcommand} does not reattach a detached svc cc session`, async () => {
    expect((await svc(['cc', '--detach'])).stdout).toBe('svc-proj\n');
    const run = svcInPty([OTHER.subcommand]);
    await waitFor(() => run.output().includes(`${OTHER.command} (fake agent)`), {
      timeoutMs: 15_000,
      what: `${OTHER.command} on the terminal`,
    });
    const all = await sessions();
    expect(Object.keys(all).sort()).toEqual(['svc-proj', 'svc-proj-2']);
    expect(all['svc-proj']).toMatchObject({ attached: false, meta: { agent: 'A1' } });
    expect(all['svc-proj-2']).toMatchObject({ attached: true, meta: { agent: OTHER.id } });
    run.term.write('\x02d');
    expect(await run.exited).toBe(0);
  });
});

describe('svc sh', () => {
  it('opens the login shell in svc-<project>-sh, marked as a shell session', async () => {
    expect(await svc(['sh', '--detach'])).toMatchObject({ code: 0, stdout: 'svc-proj-sh\n' });
    const s = (await sessions())['svc-proj-sh']!;
    expect(s.meta).toEqual({ kind: 'shell', project: 'proj' });
    expect(s.panes[0]?.startCommand).toMatch(/\/bin\/sh.*-l/);
    await waitFor(async () => (await sessions())['svc-proj-sh']?.panes[0]?.command === 'sh', { what: 'sh in front' });
    // cd persists: it is one long-lived shell
    await tmux.tmux.sendLiteral('svc-proj-sh', 'cd / && echo "at $(pwd)"', { enter: true });
    await waitFor(async () => (await tmux.capture('svc-proj-sh')).includes('at /'), { what: 'the cd' });

    expect(await svc(['sh', '--detach', '--label', 'ops'])).toMatchObject({ code: 0, stdout: 'svc-proj-ops\n' });
    expect((await sessions())['svc-proj-ops']?.meta).toEqual({ kind: 'shell', project: 'proj', label: 'ops' });
  });

  it('inside tmux it does not attach: it prints the switch-client line', async () => {
    const inside = { ...env, TMUX: `${tmux.socketPath},1,0` };
    const first = await svc(['sh'], { env: inside });
    expect(first).toMatchObject({ code: 0, stdout: 'tmux switch-client -t svc-proj-sh\n' });
    const again = await svc(['sh'], { env: inside });
    expect(again).toMatchObject({ code: 0, stdout: 'tmux switch-client -t svc-proj-sh\n' });
    expect(Object.keys(await sessions())).toEqual(['svc-proj-sh']);
  });
});
