import { describe, expect, it } from 'vitest';
import { discoverTmuxSocket } from '../../../actors/tmux/socket.js';
import {
  type DirListing,
  decideSocketDir,
  defaultSocketDir,
  defaultSocketPath,
  dirTrusted,
  explicitSocket,
  parseLsofSockets,
  scanCandidates,
  userSocketDirs,
} from '../../../core/tmux/socket.js';

const UID = 501;

describe('core/tmux/socket', () => {
  it.each([
    [{}, '/tmp/tmux-501/default'],
    [{ TMUX_TMPDIR: '/run/user/501' }, '/run/user/501/tmux-501/default'],
    [{ TMUX_TMPDIR: '/var/tmp/' }, '/var/tmp/tmux-501/default'],
    [{ TMUX_TMPDIR: '' }, '/tmp/tmux-501/default'],
    [{ TMPDIR: '/private/var/folders/x' }, '/tmp/tmux-501/default'], // tmux ignores TMPDIR
  ])('defaultSocketPath(%j)', (env, path) => {
    expect(defaultSocketPath(env, UID)).toBe(path);
  });

  it.each([
    [{}, null],
    [{ SVC_TMUX_SOCKET: '' }, null],
    [{ SVC_TMUX_SOCKET: '/srv/tmux/sock' }, '/srv/tmux/sock'],
    [{ SVC_TMUX_SOCKET: 'work' }, '/tmp/tmux-501/work'], // a -L label
    [{ SVC_TMUX_SOCKET: 'work', TMUX_TMPDIR: '/x' }, '/x/tmux-501/work'],
  ])('explicitSocket(%j)', (env, path) => {
    expect(explicitSocket(env, UID)).toBe(path);
  });

  it.each([
    [{}, ['/tmp/tmux-501']],
    [{ TMUX_TMPDIR: '/tmp' }, ['/tmp/tmux-501']],
    [
      { TMUX_TMPDIR: '/a', TMPDIR: '/b/', XDG_RUNTIME_DIR: '/run/user/501' },
      ['/a/tmux-501', '/tmp/tmux-501', '/b/tmux-501', '/run/user/501/tmux-501'],
    ],
  ])('userSocketDirs(%j)', (env, dirs) => {
    expect(userSocketDirs(env, UID)).toEqual(dirs);
  });

  it('defaultSocketDir is the first scanned directory', () => {
    const env = { TMUX_TMPDIR: '/a' };
    expect(userSocketDirs(env, UID)[0]).toBe(defaultSocketDir(env, UID));
  });

  it.each([
    [{ owner: 501, mode: 0o700 }, true],
    [{ owner: 501, mode: 0o750 }, true],
    [{ owner: 501, mode: 0o707 }, false],
    [{ owner: 0, mode: 0o700 }, false],
  ])('dirTrusted(%j)', (listing, ok) => {
    expect(dirTrusted(listing, UID)).toBe(ok);
  });

  it.each([
    ['/tmp/tmux-501/default', null, { action: 'create' }],
    ['/tmp/tmux-501/work', { directory: true, owner: 501, mode: 0o40700 }, { action: 'use' }],
    ['/tmp/tmux-501/default', { directory: true, owner: 501, mode: 0o40750 }, { action: 'use' }], // tmux allows group
    ['/srv/sock', null, { action: 'use' }], // an explicit path: left to tmux
    ['/tmp/tmux-502/default', null, { action: 'use' }], // another uid's directory is not ours to make
  ] as const)('decideSocketDir(%s, %j)', (path, facts, decision) => {
    expect(decideSocketDir(path, facts, UID)).toEqual(decision);
  });

  it.each([
    [
      { directory: true, owner: 0, mode: 0o40700 },
      'tmux socket directory /tmp/tmux-501 belongs to uid 0, not you (uid 501): remove it or set TMUX_TMPDIR to a directory of yours',
    ],
    [
      { directory: true, owner: 501, mode: 0o40777 },
      'tmux socket directory /tmp/tmux-501 is open to others (mode 0777; tmux refuses it too): chmod 700 /tmp/tmux-501',
    ],
    [
      { directory: false, owner: 501, mode: 0o100600 },
      'tmux socket directory /tmp/tmux-501 is not a directory: remove it or set TMUX_TMPDIR to a directory of yours',
    ],
  ])('decideSocketDir refuses %j in one line', (facts, message) => {
    expect(decideSocketDir('/tmp/tmux-501/default', facts, UID)).toEqual({ action: 'refuse', message });
  });

  it('scanCandidates: sockets only, default first then by name, trusted dirs, no repeats', () => {
    const mine = (names: [string, boolean][]): DirListing => ({
      owner: UID,
      mode: 0o700,
      entries: names.map(([name, socket]) => ({ name, socket })),
    });
    const out = scanCandidates(
      UID,
      [
        {
          dir: '/a/tmux-501',
          listing: mine([
            ['work', true],
            ['default', true],
            ['notes.txt', false],
            ['alpha', true],
          ]),
        },
        { dir: '/tmp/tmux-501', listing: null },
        { dir: '/evil/tmux-501', listing: { owner: 0, mode: 0o777, entries: [{ name: 'default', socket: true }] } },
        { dir: '/b/tmux-501', listing: mine([['default', true]]) },
      ],
      ['/b/tmux-501/default'],
    );
    expect(out).toEqual(['/a/tmux-501/default', '/a/tmux-501/alpha', '/a/tmux-501/work']);
  });

  it('parseLsofSockets reads -F n output and the table, drops type/state suffixes and repeats', () => {
    const fOutput = [
      'p4944',
      'n/tmp/tmux-501/default type=STREAM',
      'n/tmp/tmux-501/default type=STREAM',
      'n/tmp/with space/sock type=STREAM (LISTEN)',
      'ntype=STREAM',
      'p5000',
      'n/run/user/501/tmux-501/work',
    ].join('\n');
    expect(parseLsofSockets(fOutput)).toEqual([
      '/tmp/tmux-501/default',
      '/tmp/with space/sock',
      '/run/user/501/tmux-501/work',
    ]);
    const table = [
      'COMMAND    PID USER   FD   TYPE             DEVICE SIZE/OFF  NODE NAME',
      'tmux:\\x20 4944 root    6u  unix 0x00000000a467ef63      0t0 10210 /tmp/exp/sock type=STREAM (LISTEN)',
    ].join('\n');
    expect(parseLsofSockets(table)).toEqual(['/tmp/exp/sock']);
    expect(parseLsofSockets(fOutput, ['/tmp/tmux-501/default'])).not.toContain('/tmp/tmux-501/default');
    expect(parseLsofSockets('')).toEqual([]);
  });
});

describe('discoverTmuxSocket (injected probe, listDir, lsof)', () => {
  function world(opts: { answering?: string[]; dirs?: Record<string, string[]>; lsof?: string }) {
    const probed: string[] = [];
    let lsofCalls = 0;
    return {
      probed,
      lsofCalls: () => lsofCalls,
      deps: {
        probe: async (p: string) => {
          probed.push(p);
          return (opts.answering ?? []).includes(p);
        },
        listDir: async (dir: string): Promise<DirListing | null> => {
          const names = opts.dirs?.[dir];
          return names ? { owner: UID, mode: 0o700, entries: names.map((name) => ({ name, socket: true })) } : null;
        },
        lsof: async () => {
          lsofCalls += 1;
          return opts.lsof ?? '';
        },
      },
    };
  }

  it('SVC_TMUX_SOCKET wins and nothing is probed', async () => {
    const w = world({ answering: ['/tmp/tmux-501/default'] });
    const r = await discoverTmuxSocket({ env: { SVC_TMUX_SOCKET: '/x/sock' }, uid: UID, ...w.deps });
    expect(r).toEqual({ path: '/x/sock', source: 'env' });
    expect(w.probed).toEqual([]);
  });

  it('the default socket answers: stop there', async () => {
    const w = world({
      answering: ['/tmp/tmux-501/default', '/tmp/tmux-501/other'],
      dirs: { '/tmp/tmux-501': ['other'] },
    });
    const r = await discoverTmuxSocket({ env: {}, uid: UID, ...w.deps });
    expect(r).toEqual({ path: '/tmp/tmux-501/default', source: 'default' });
    expect(w.probed).toEqual(['/tmp/tmux-501/default']);
    expect(w.lsofCalls()).toBe(0);
  });

  it('default silent: scan the per-user directories in order, first that answers', async () => {
    const w = world({
      answering: ['/tmp/tmux-501/work', '/b/tmux-501/z'],
      dirs: { '/tmp/tmux-501': ['default', 'work', 'alpha'], '/b/tmux-501': ['z'] },
    });
    const r = await discoverTmuxSocket({ env: { TMPDIR: '/b' }, uid: UID, ...w.deps });
    expect(r).toEqual({ path: '/tmp/tmux-501/work', source: 'scan' });
    // the default is not probed twice
    expect(w.probed).toEqual(['/tmp/tmux-501/default', '/tmp/tmux-501/alpha', '/tmp/tmux-501/work']);
    expect(w.lsofCalls()).toBe(0);
  });

  it('nothing answers in the scan: ask lsof, skip what was tried', async () => {
    const w = world({
      answering: ['/srv/odd/sock'],
      dirs: { '/tmp/tmux-501': ['stale'] },
      lsof: 'p1\nn/tmp/tmux-501/stale type=STREAM\nn/srv/odd/sock type=STREAM\n',
    });
    const r = await discoverTmuxSocket({ env: {}, uid: UID, ...w.deps });
    expect(r).toEqual({ path: '/srv/odd/sock', source: 'lsof' });
    expect(w.probed).toEqual(['/tmp/tmux-501/default', '/tmp/tmux-501/stale', '/srv/odd/sock']);
    expect(w.lsofCalls()).toBe(1);
  });

  it('nothing anywhere: null', async () => {
    const w = world({});
    expect(await discoverTmuxSocket({ env: {}, uid: UID, ...w.deps })).toBeNull();
  });

  it('lsof failing counts as nothing found', async () => {
    const w = world({});
    const r = await discoverTmuxSocket({
      env: {},
      uid: UID,
      ...w.deps,
      lsof: async () => {
        throw new Error('lsof: not found');
      },
    });
    expect(r).toBeNull();
  });
});
