/**
 * The tmux adapter against real tmux on a private socket (never the user's server).
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { discoverTmuxSocket, readSocketDir, runLsof, tmuxProbe } from '../../actors/tmux/socket.js';
import { createTmux, TmuxError } from '../../actors/tmux/tmux.js';
import { SessionRecord } from '../../core/protocol/index.js';
import { parseLsofSockets } from '../../core/tmux/socket.js';
import { fakeAgentBin, fakeAgentCommand, runTmux, startTmuxServer, type TmuxServer, waitFor } from '../helpers/tmux.js';

describe('the adapter reads what the wrapper sets', () => {
  it('reads session options from a real server', async () => {
    const server = await startTmuxServer();
    try {
      await server.run([
        'new-session',
        '-d',
        '-s',
        'svc-meta',
        'cat',
        ';',
        'set-option',
        '-t',
        '=svc-meta:',
        '@svc-kind',
        'shell',
        ';',
        'set-option',
        '-t',
        '=svc-meta:',
        '@svc-agent',
        'A2',
      ]);
      const [s] = await server.tmux.listSessions();
      expect(s?.meta).toEqual({ kind: 'shell', agent: 'A2' });
    } finally {
      await server.cleanup();
    }
  });
});

// Every case twice: a process per call, and through the listener's persistent control-mode client
describe.each([
  { mode: 'a process per call', persistent: false },
  { mode: 'the persistent client', persistent: true },
])('tmux adapter on a private server, $mode', ({ persistent }) => {
  let server: TmuxServer;
  beforeEach(async () => {
    server = await startTmuxServer({ persistent });
  });
  afterEach(async () => {
    await server.cleanup();
  });

  const names = async () => (await server.tmux.listSessions()).map((s) => s.name);

  it('an empty server and an absent server both list as []', async () => {
    expect(await server.tmux.listSessions()).toEqual([]);
    const absent = createTmux({ socketPath: join(server.dir, 'nothing-here') });
    expect(await absent.listSessions()).toEqual([]);
    expect(await absent.hasSession('x')).toBe(false);
    await expect(absent.capture('x', 5)).rejects.toMatchObject({ code: 'no_server' });
    await absent.killServer(); // no server is not an error
  });

  it('listSessions reflects sessions coming and going, with pane details', async () => {
    const bin = await fakeAgentBin(server.dir, ['codex']);
    const a = await server.tmux.newSession({
      name: 'svc-a',
      cwd: server.dir,
      command: [join(bin, 'codex')],
      env: { FAKE_AGENT_TITLE: 'my task' },
    });
    await server.tmux.newSession({ name: 'svc-b', command: 'sleep 300' });
    expect(a.name).toBe('svc-a');
    expect(a.paneId).toMatch(/^%\d+$/);
    expect(await names()).toEqual(['svc-a', 'svc-b']);

    const a1 = await waitFor(async () => {
      const s = (await server.tmux.listSessions()).find((x) => x.name === 'svc-a');
      return s?.panes[0]?.command === 'codex' && s.panes[0].title === 'my task' ? s : undefined;
    });
    expect(a1).toMatchObject({ attached: false, panes: [{ id: a.paneId, path: server.dir, active: true }] });
    expect(a1.panes[0]?.startCommand).toContain('codex');
    expect(a1.createdAt).toBeGreaterThan(1_600_000_000);
    expect(a1.activityAt).toBeGreaterThanOrEqual(a1.createdAt);
    for (const s of await server.tmux.listSessions()) expect(SessionRecord.safeParse(s).success).toBe(true);

    await server.tmux.killSession('svc-a');
    expect(await names()).toEqual(['svc-b']);
    await server.tmux.newSession({ name: 'svc-c', command: 'sleep 300' });
    expect(await names()).toEqual(['svc-b', 'svc-c']);
  });

  it('one pane per session is active, across windows and splits', async () => {
    await server.tmux.newSession({ name: 'multi', command: 'sleep 300' });
    await server.run(['split-window', '-t', '=multi:', 'sleep 300']);
    await server.run(['new-window', '-t', '=multi:', 'sleep 300']);
    await server.run(['split-window', '-t', '=multi:', 'sleep 300']);
    const [multi] = await server.tmux.listSessions();
    expect(multi?.panes).toHaveLength(4);
    expect(multi?.panes.filter((p) => p.active)).toHaveLength(1);
    // the active one is the one `=multi:` addresses
    const addressed = (await server.run(['display-message', '-p', '-t', '=multi:', '#{pane_id}'])).trim();
    expect(multi?.panes.find((p) => p.active)?.id).toBe(addressed);
  });

  it('attached follows a client attaching and leaving', async () => {
    await server.tmux.newSession({ name: 'work', command: 'sleep 300' });
    // a real client, running in a pane of another session (TMUX unset so it may nest)
    await server.tmux.newSession({
      name: 'viewer',
      command: ['env', '-u', 'TMUX', 'tmux', '-S', server.socketPath, 'attach-session', '-t', '=work'],
    });
    await waitFor(async () => (await server.tmux.listSessions()).find((s) => s.name === 'work')?.attached, {
      what: 'work to be attached',
    });
    expect((await server.tmux.listSessions()).find((s) => s.name === 'viewer')?.attached).toBe(false);
    await server.tmux.killSession('viewer');
    await waitFor(async () => (await server.tmux.listSessions()).find((s) => s.name === 'work')?.attached === false, {
      what: 'work to be detached',
    });
  });

  it('hostile session names: made through argument arrays, listed intact, nothing executed', async () => {
    const marker = (n: number) => join(server.dir, `pwned-${n}`);
    const hostile = [
      `we;ird $(touch ${marker(1)}) "q" x`,
      `semi;`,
      `it's \`touch ${marker(2)}\``,
      `hash #{pane_id} #(touch ${marker(3)})`,
      `back\\slash\\;`,
      '-dash',
      '%1',
      '@1',
      '=eq',
      'ünï 👋',
    ];
    const made: string[] = [];
    for (const name of hostile) {
      const { name: actual } = await server.tmux.newSession({ name, command: 'cat', cwd: server.dir });
      // tmux stores a backslash escaped; every other name is kept as given
      expect(actual).toBe(name.replaceAll('\\', '\\\\'));
      made.push(actual);
    }
    const listed = await server.tmux.listSessions();
    expect(listed.map((s) => s.name).sort()).toEqual([...made].sort());
    for (const name of made) {
      expect(await server.tmux.hasSession(name), name).toBe(true);
      await server.tmux.sendLiteral(name, `to ${name};`);
      await waitFor(async () => (await server.tmux.capture(name, 5)).includes(`to ${name};`), { what: name });
    }
    for (const n of [1, 2, 3]) expect(existsSync(marker(n))).toBe(false);
    for (const name of made) await server.tmux.killSession(name);
    expect(await names()).toEqual([]);
  });

  it('a name starting with $ is refused for targeting (tmux reads =$1 as the session id $1)', async () => {
    await server.tmux.newSession({ name: 'first', command: 'cat' }); // whatever id it has, it must not be hit
    await server.tmux.newSession({ name: 'second', command: 'cat' });
    const made = await server.tmux.newSession({ name: '$1', command: 'cat' });
    expect(made.name).toBe('$1');
    expect(await names()).toContain('$1');
    await expect(server.tmux.sendLiteral('$1', 'wrong place', { enter: true })).rejects.toBeInstanceOf(TmuxError);
    await expect(server.tmux.hasSession('$1')).rejects.toBeInstanceOf(TmuxError);
    await expect(server.tmux.killSession('$1')).rejects.toBeInstanceOf(TmuxError);
    for (const other of ['first', 'second']) expect(await server.tmux.capture(other, 5)).not.toContain('wrong place');
  });

  it('tmux renames what it must (. and :) and newSession says so', async () => {
    const made = await server.tmux.newSession({ name: 'a.b:c', command: 'sleep 300' });
    expect(made.name).toBe('a_b_c');
    expect(await server.tmux.hasSession('a_b_c')).toBe(true);
  });

  it('targets are exact: proj never reaches proj-2', async () => {
    await server.tmux.newSession({ name: 'proj-2', command: 'cat' });
    expect(await server.tmux.hasSession('proj')).toBe(false);
    await expect(server.tmux.sendLiteral('proj', 'x')).rejects.toMatchObject({ code: 'no_session' });
    await expect(server.tmux.capture('proj', 5)).rejects.toBeInstanceOf(TmuxError);
    await expect(server.tmux.killSession('proj')).rejects.toMatchObject({ code: 'no_session' });
    await expect(server.tmux.paste('proj', 'x', { bracketed: true })).rejects.toMatchObject({ code: 'no_session' });
    await expect(server.tmux.sendKeys('proj', ['Enter'])).rejects.toMatchObject({ code: 'no_session' });

    await server.tmux.newSession({ name: 'proj', command: 'cat' });
    await server.tmux.sendLiteral('proj', 'only-for-proj', { enter: true });
    await waitFor(async () => (await server.tmux.capture('proj', 10)).includes('only-for-proj'));
    expect(await server.tmux.capture('proj-2', 10)).not.toContain('only-for-proj');
  });

  it('duplicate names are a typed error', async () => {
    await server.tmux.newSession({ name: 'dup', command: 'sleep 300' });
    await expect(server.tmux.newSession({ name: 'dup', command: 'sleep 300' })).rejects.toMatchObject({
      code: 'duplicate_session',
    });
  });

  it('paste leaves no buffer behind, also when the target is missing', async () => {
    await server.tmux.newSession({ name: 'p', command: 'cat' });
    await server.tmux.paste('p', 'pasted text', { bracketed: true });
    await waitFor(async () => (await server.tmux.capture('p', 5)).includes('pasted text'));
    await expect(server.tmux.paste('nope', 'secret', { bracketed: true })).rejects.toBeInstanceOf(TmuxError);
    expect(await server.run(['list-buffers'])).toBe('');
  });

  it('capture returns the last lines of the visible screen', async () => {
    await server.tmux.newSession({ name: 'lines', command: ['sh', '-c', 'seq 1 10; exec sleep 300'] });
    await waitFor(async () => (await server.tmux.capture('lines', 100)).includes('10'));
    expect(await server.tmux.capture('lines', 3)).toBe('8\n9\n10');
  });

  it('display-message runs its text through strftime; captureMany files every pane under its own id', async () => {
    const made: string[] = [];
    for (let i = 0; i < 12; i++) made.push((await server.tmux.newSession({ name: `p${i}`, command: ['cat'] })).paneId);
    // What once filed every screen from %3 up under " %4": a % written into display-message text.
    const raw = await server.run(['display-message', '-p', '-t', made[4]!, `<m>${made[4]}|`]);
    expect(raw.trimEnd()).not.toBe(`<m>${made[4]}|`);
    // -F formats, new-session -s and set-option values are not run through strftime
    const odd = await server.tmux.newSession({ name: 'a%5b', command: ['cat'], options: { '@svc-label': 'x%4y' } });
    const listed = (await server.tmux.listSessions()).find((s) => s.name === 'a%5b');
    expect(listed?.meta?.label).toBe('x%4y');
    const screens = await server.tmux.captureMany([...made, odd.paneId], 5);
    expect(Object.keys(screens).sort()).toEqual([...made, odd.paneId].sort());
  });

  it('newSession: argv without a shell, a one-word command with a space, env and PATH', async () => {
    const odd = join(server.dir, 'my prog');
    await writeFile(odd, '#!/bin/sh\necho "ran with $SVC_X"\nexec sleep 300\n');
    await chmod(odd, 0o755);
    await server.tmux.newSession({ name: 'odd', command: [odd], env: { SVC_X: 'x;y $z' } });
    await waitFor(async () => (await server.tmux.capture('odd', 5)).includes('ran with x;y $z'));

    // a PATH without tmux's own directory: the command is found on it, and tmux still runs
    const only = join(server.dir, 'onlybin');
    await mkdir(only);
    await writeFile(join(only, 'onlyhere'), '#!/bin/sh\necho "found on PATH=$PATH"\nexec /bin/sleep 300\n');
    await chmod(join(only, 'onlyhere'), 0o755);
    await server.tmux.newSession({ name: 'onlypath', command: 'onlyhere', env: { PATH: only } });
    await waitFor(async () => (await server.tmux.capture('onlypath', 5)).includes(`found on PATH=${only}`));

    const bin = await fakeAgentBin(server.dir, ['codex']);
    await server.tmux.newSession({ name: 'onpath', command: 'codex', env: { PATH: `${bin}:${process.env.PATH}` } });
    await waitFor(
      async () => (await server.tmux.listSessions()).find((s) => s.name === 'onpath')?.panes[0]?.command === 'codex',
      {
        what: 'codex found on the PATH given in env',
      },
    );
  });

  it('killServer ends everything and is idempotent', async () => {
    await server.tmux.newSession({ name: 'k', command: 'sleep 300' });
    await server.tmux.killServer();
    expect(await server.tmux.listSessions()).toEqual([]);
    await server.tmux.killServer();
  });
});

describe('#{pane_current_command} for a node program (what tmux 3.3a shows on Linux)', () => {
  let server: TmuxServer;
  beforeEach(async () => {
    server = await startTmuxServer();
  });
  afterEach(async () => {
    await server.cleanup();
  });

  const commandOf = async (name: string) =>
    (await server.tmux.listSessions()).find((s) => s.name === name)?.panes[0]?.command;

  it('a plain node script behind a symlink named codex shows "node"', async () => {
    const script = join(server.dir, 'plain.mjs');
    await writeFile(script, '#!/usr/bin/env node\nsetInterval(() => {}, 1000);\n');
    await chmod(script, 0o755);
    await mkdir(join(server.dir, 'plainbin'));
    const { symlink } = await import('node:fs/promises');
    await symlink(script, join(server.dir, 'plainbin', 'codex'));
    await server.tmux.newSession({ name: 'plain', command: [join(server.dir, 'plainbin', 'codex')] });
    // wait until node runs (its cmdline is `node <path>`), then it stays "node"
    await waitFor(async () => (await commandOf('plain')) === 'node', { what: 'node in front' });
  });

  it('the fake agent sets process.title, so the symlink name shows', async () => {
    const bin = await fakeAgentBin(server.dir, ['codex', 'claude']);
    await server.tmux.newSession({ name: 'viaLink', command: [join(bin, 'codex')] });
    await server.tmux.newSession({ name: 'viaCmd', command: fakeAgentCommand('gemini') });
    await waitFor(async () => (await commandOf('viaLink')) === 'codex', { what: 'codex' });
    await waitFor(async () => (await commandOf('viaCmd')) === 'gemini', { what: 'gemini' });
  });

  it('bash `exec -a name` also works (tmux reads argv[0], not /proc/<pid>/comm)', async () => {
    await server.tmux.newSession({
      name: 'execA',
      command: ['bash', '-c', 'exec -a claude sleep 300'],
    });
    await waitFor(async () => (await commandOf('execA')) === 'claude', { what: 'claude via exec -a' });
    const pid = (await server.run(['display-message', '-p', '-t', '=execA:', '#{pane_pid}'])).trim();
    expect((await readFile(`/proc/${pid}/comm`, 'utf8')).trim()).toBe('sleep');
  });
});

describe('socket discovery against a real private server', () => {
  let server: TmuxServer | undefined;
  afterEach(async () => {
    await server?.cleanup();
    server = undefined;
  });
  const uid = process.getuid?.() ?? 0;

  async function serverIn(socketName: string) {
    const { mkdtemp } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const base = await mkdtemp(join(tmpdir(), 'svc-disc-'));
    const dir = join(base, `tmux-${uid}`);
    await mkdir(dir, { mode: 0o700 });
    server = await startTmuxServer({ socketPath: join(dir, socketName) });
    await server.tmux.newSession({ name: 'here', command: 'sleep 300' });
    const { rm } = await import('node:fs/promises');
    const cleanup = server.cleanup;
    server.cleanup = async () => {
      await cleanup();
      await rm(base, { recursive: true, force: true });
    };
    return { base, dir, socketPath: join(dir, socketName) };
  }

  it('finds the default socket under TMUX_TMPDIR', async () => {
    const { base, socketPath } = await serverIn('default');
    expect(await discoverTmuxSocket({ env: { TMUX_TMPDIR: base }, uid })).toEqual({
      path: socketPath,
      source: 'default',
    });
  });

  it('finds a non-default socket by scanning tmux-<uid>/ (a stale file beside it is skipped)', async () => {
    const { base, dir, socketPath } = await serverIn('work');
    // a socket file nobody listens on any more (a server killed hard), sorted before "work"
    const stalePath = join(dir, 'aaa-stale');
    await runTmux(stalePath, ['start-server', ';', 'set-option', '-g', 'exit-empty', 'off']);
    const stalePid = Number((await runTmux(stalePath, ['display-message', '-p', '#{pid}'])).trim());
    process.kill(stalePid, 'SIGKILL');
    await waitFor(async () => !(await tmuxProbe()(stalePath)), { what: 'the stale server to die' });
    expect((await readSocketDir(dir))?.entries.filter((e) => e.socket).map((e) => e.name)).toEqual([
      'aaa-stale',
      'work',
    ]);

    const probed: string[] = [];
    const probe = tmuxProbe();
    const found = await discoverTmuxSocket({
      env: { TMUX_TMPDIR: base },
      uid,
      probe: async (p) => {
        probed.push(p);
        return probe(p);
      },
    });
    expect(found).toEqual({ path: socketPath, source: 'scan' });
    expect(probed).toEqual([join(dir, 'default'), stalePath, socketPath]);
  });

  it('SVC_TMUX_SOCKET is taken as given', async () => {
    const { socketPath } = await serverIn('custom');
    expect(await discoverTmuxSocket({ env: { SVC_TMUX_SOCKET: socketPath }, uid })).toEqual({
      path: socketPath,
      source: 'env',
    });
  });

  it('lsof sees the socket a running tmux holds', async () => {
    const { socketPath } = await serverIn('seen-by-lsof');
    // lsof is a listed requirement (.ci/run installs it): a machine without it fails here, never passes silently
    expect(existsSync('/usr/bin/lsof') || existsSync('/usr/sbin/lsof'), 'lsof is installed').toBe(true);
    const out = await runLsof()();
    expect(parseLsofSockets(out)).toContain(socketPath);
  });
});
