/**
 * core/sessions/launch.ts: every row of spec 3's lifecycle table the wrapper takes part in, every rule of spec 4.4, the
 * naming of spec 2.2, and `svc sh` (4.6). One table; each row is facts in, plan out.
 */
import { describe, expect, it } from 'vitest';
import {
  decideLaunch,
  type ExistingSession,
  familyIndex,
  firstFreeName,
  type LaunchFacts,
  type LaunchPlan,
  metaOptions,
  NO_TMUX_REFUSAL,
  NO_TTY_REFUSAL,
  parseWrapperArgs,
  unusedArgsLine,
  WINDOWS_REFUSAL,
  wrapperSocket,
} from '../../../core/sessions/launch.js';

const CC = { id: 'A1', name: 'Claude Code', command: 'claude' };
const PI = { id: 'A4', name: 'pi', command: 'pi' };
const NAMES: Record<string, string> = { A1: 'Claude Code', A4: 'pi' };

const agentSession = (name: string, attached: boolean, more: Partial<ExistingSession['meta']> = {}) => ({
  name,
  attached,
  meta: { kind: 'agent' as const, agent: 'A1', project: 'proj', ...more },
});
const shellSession = (name: string, attached: boolean) => ({
  name,
  attached,
  meta: { kind: 'shell' as const, project: 'proj' },
});

function facts(over: Partial<LaunchFacts> = {}): LaunchFacts {
  return {
    target: { kind: 'agent', agent: CC, args: [] },
    flags: { detach: false },
    project: { name: 'proj', slug: 'proj' },
    cwd: '/src/proj',
    insideTmux: false,
    platform: 'linux',
    tty: true,
    tmuxFound: true,
    commandFound: true,
    sessions: [],
    ...over,
  };
}

const decide = (f: LaunchFacts) => decideLaunch(f, (id) => NAMES[id] ?? id);
const created = (name: string, then: 'attach' | 'print-name' | 'switch-hint' = 'attach') => ({
  action: 'create',
  name,
  then,
});
const attached = (name: string, then: 'attach' | 'switch-hint' = 'attach') => ({ action: 'attach', name, then });
const refused = (message: string | RegExp) => ({
  action: 'refuse',
  message: typeof message === 'string' ? message : expect.stringMatching(message),
});
const readyWt = {
  status: 'ready' as const,
  branch: 'feat/x',
  path: '/src/proj-wt-feat-x',
  sessionName: 'svc-proj-wt-feat-x',
  repoName: 'proj',
};

type Row = [string, LaunchFacts, Record<string, unknown>];

const rows: Row[] = [
  // --- spec 2.2 naming -----------------------------------------------------------------------------------------
  ['first session of a project: svc-<project>', facts(), created('svc-proj')],
  [
    'further sessions: -2, -3 (the others are attached, so nothing to reattach)',
    facts({ sessions: [agentSession('svc-proj', true), agentSession('svc-proj-2', true)] }),
    created('svc-proj-3'),
  ],
  [
    'the first free number fills a gap',
    facts({ sessions: [agentSession('svc-proj', true), agentSession('svc-proj-3', true)] }),
    created('svc-proj-2'),
  ],
  [
    'a name taken by a session svc did not make is skipped',
    facts({ sessions: [{ name: 'svc-proj', attached: false }] }),
    created('svc-proj-2'),
  ],
  ['--label x: svc-<project>-x', facts({ flags: { detach: false, label: 'review' } }), created('svc-proj-review')],
  [
    '--wt: the session ensureWorktree named, in the worktree',
    facts({ worktree: readyWt }),
    {
      ...created('svc-proj-wt-feat-x'),
      cwd: '/src/proj-wt-feat-x',
      meta: expect.objectContaining({ worktree: '/src/proj-wt-feat-x' }),
    },
  ],
  [
    'svc sh: svc-<project>-sh running the login shell',
    facts({ target: { kind: 'shell', shell: '/bin/zsh' } }),
    { ...created('svc-proj-sh'), command: '/bin/zsh', args: ['-l'], meta: { kind: 'shell', project: 'proj' } },
  ],
  [
    'svc sh --label x: svc-<project>-x',
    facts({ target: { kind: 'shell', shell: '/bin/sh' }, flags: { detach: false, label: 'ops' } }),
    created('svc-proj-ops'),
  ],

  // --- spec 3: attached or detached --------------------------------------------------------------------------
  [
    'a detached session of the project running the same agent is reattached',
    facts({ sessions: [agentSession('svc-proj', false)] }),
    attached('svc-proj'),
  ],
  [
    'the lowest-numbered detached one is reattached',
    facts({
      sessions: [agentSession('svc-proj', true), agentSession('svc-proj-3', false), agentSession('svc-proj-2', false)],
    }),
    attached('svc-proj-2'),
  ],
  [
    'an attached session is not reattached: a new one is made',
    facts({ sessions: [agentSession('svc-proj', true)] }),
    created('svc-proj-2'),
  ],
  [
    'a labeled detached session is not picked by the -2/-3 family',
    facts({ sessions: [agentSession('svc-proj-review', false, { label: 'review' })] }),
    created('svc-proj'),
  ],
  [
    'a detached worktree session is not picked by the family',
    facts({ sessions: [agentSession('svc-proj-wt-x', false, { worktree: '/w' })] }),
    created('svc-proj'),
  ],
  [
    'a detached session of another project with the same slug is not reattached',
    facts({ sessions: [agentSession('svc-proj', false, { project: 'proj.' })] }),
    created('svc-proj-2'),
  ],
  [
    '--detach never reattaches (and prints the name)',
    facts({ flags: { detach: true }, sessions: [agentSession('svc-proj', false)] }),
    created('svc-proj-2', 'print-name'),
  ],

  // --- spec 3: reattach across agents ------------------------------------------------------------------------
  [
    'svc pi does not reattach a detached svc cc session',
    facts({ target: { kind: 'agent', agent: PI, args: [] }, sessions: [agentSession('svc-proj', false)] }),
    created('svc-proj-2'),
  ],
  [
    'svc pi reattaches its own detached session, past a cc one',
    facts({
      target: { kind: 'agent', agent: PI, args: [] },
      sessions: [agentSession('svc-proj', false), agentSession('svc-proj-2', false, { agent: 'A4' })],
    }),
    attached('svc-proj-2'),
  ],
  [
    'svc cc does not reattach a detached shell session',
    facts({ sessions: [shellSession('svc-proj', false)] }),
    created('svc-proj-2'),
  ],

  // --- spec 3: worktree session ended (the wrapper's side: --wt again reuses the worktree, rule 2) ------------
  [
    '--wt after its session ended: a new session in the reused worktree',
    facts({ worktree: { ...readyWt } }),
    { ...created('svc-proj-wt-feat-x'), cwd: '/src/proj-wt-feat-x' },
  ],
  [
    '--wt whose session is detached: reattached',
    facts({ worktree: readyWt, sessions: [agentSession('svc-proj-wt-feat-x', false, { worktree: readyWt.path })] }),
    attached('svc-proj-wt-feat-x'),
  ],
  [
    '--wt whose session runs another agent: refused',
    facts({
      worktree: readyWt,
      sessions: [agentSession('svc-proj-wt-feat-x', false, { agent: 'A4', worktree: readyWt.path })],
    }),
    refused(/^svc-proj-wt-feat-x runs pi, not Claude Code/),
  ],

  // --- spec 3: reboot (no sessions, no daemon): a new session, and the listener is started ---------------------
  ['after a reboot: a new session, listener started', facts(), { ...created('svc-proj'), startListener: true }],

  // --- spec 4.4 rule 1: inside tmux ----------------------------------------------------------------------------
  [
    'inside tmux: runs in the current pane, with the note',
    facts({ insideTmux: true, target: { kind: 'agent', agent: CC, args: ['--model', 'a b'] } }),
    {
      action: 'run-here',
      command: 'claude',
      args: ['--model', 'a b'],
      cwd: '/src/proj',
      note: expect.stringMatching(/listener cannot reach it.*--detach/),
    },
  ],
  [
    'inside tmux, no tmux on PATH or no tty needed to run here',
    facts({ insideTmux: true, tmuxFound: false, tty: false }),
    { action: 'run-here' },
  ],
  [
    'inside tmux with --detach: a reachable session, name printed',
    facts({ insideTmux: true, flags: { detach: true } }),
    created('svc-proj', 'print-name'),
  ],
  [
    'inside tmux with --wt: the worktree first, then run here in it',
    facts({ insideTmux: true, worktree: { status: 'pending', branch: 'feat/x' } }),
    { action: 'prepare-worktree', branch: 'feat/x' },
  ],
  [
    'inside tmux with --wt ready: run here in it',
    facts({ insideTmux: true, worktree: readyWt }),
    { action: 'run-here', cwd: readyWt.path },
  ],

  // --- spec 4.4 rules 2-3: --wt ------------------------------------------------------------------------------
  [
    '--wt: the worktree is looked at first',
    facts({ worktree: { status: 'pending', branch: 'feat/x' } }),
    { action: 'prepare-worktree', branch: 'feat/x' },
  ],
  [
    '--wt refused (outside git, bad branch, path taken): its line',
    facts({
      worktree: { status: 'refused', message: '--wt needs a git repository: this directory is not inside one' },
    }),
    refused(/^--wt needs a git repository/),
  ],
  [
    '--wt: cheap refusals come before any git work',
    facts({ worktree: { status: 'pending', branch: 'x' }, tty: false }),
    refused(NO_TTY_REFUSAL),
  ],
  [
    '--wt with --label: refused',
    facts({ worktree: { status: 'pending', branch: 'x' }, flags: { detach: false, label: 'a' } }),
    refused(/do not go together/),
  ],

  // --- spec 4.4 rule 4: the singleton listener is started for every session the listener can reach -----------
  [
    'reattach starts the listener too',
    facts({ sessions: [agentSession('svc-proj', false)] }),
    { action: 'attach', startListener: true },
  ],

  // --- spec 4.4 rule 5: Windows ---------------------------------------------------------------------------------
  ['Windows without WSL: refused', facts({ platform: 'win32' }), refused(WINDOWS_REFUSAL)],
  ['Windows, even inside tmux', facts({ platform: 'win32', insideTmux: true }), refused(WINDOWS_REFUSAL)],

  // --- --label collisions ----------------------------------------------------------------------------------
  [
    '--label: a detached session of the same agent is reattached',
    facts({
      flags: { detach: false, label: 'review' },
      sessions: [agentSession('svc-proj-review', false, { label: 'review' })],
    }),
    attached('svc-proj-review'),
  ],
  [
    '--label colliding with a session running another agent: refused',
    facts({
      flags: { detach: false, label: 'review' },
      sessions: [agentSession('svc-proj-review', false, { agent: 'A4' })],
    }),
    refused(/^svc-proj-review runs pi, not Claude Code: pick another --label$/),
  ],
  [
    '--label colliding with a shell session: refused',
    facts({ flags: { detach: false, label: 'sh' }, sessions: [shellSession('svc-proj-sh', false)] }),
    refused(/^svc-proj-sh runs a shell/),
  ],
  [
    '--label colliding with a session svc did not make: refused',
    facts({ flags: { detach: false, label: 'x' }, sessions: [{ name: 'svc-proj-x', attached: false }] }),
    refused(/not started by svc/),
  ],
  [
    '--label whose session is attached elsewhere: refused with the share line',
    facts({ flags: { detach: false, label: 'x' }, sessions: [agentSession('svc-proj-x', true, { label: 'x' })] }),
    refused(/attached in another terminal: `tmux attach -t svc-proj-x` shares it/),
  ],
  [
    '--detach --label on an existing session: refused (never reattaches)',
    facts({ flags: { detach: true, label: 'x' }, sessions: [agentSession('svc-proj-x', false, { label: 'x' })] }),
    refused(/already exists/),
  ],
  [
    '--label with characters tmux would change: refused',
    facts({ flags: { detach: false, label: 'a.b' } }),
    refused(/^--label "a.b"/),
  ],

  // --- svc sh (spec 4.6) ---------------------------------------------------------------------------------------
  [
    'sh: a detached shell session is reattached',
    facts({ target: { kind: 'shell', shell: '/bin/sh' }, sessions: [shellSession('svc-proj-sh', false)] }),
    attached('svc-proj-sh'),
  ],
  [
    'sh inside tmux: created and the switch-client line printed',
    facts({ target: { kind: 'shell', shell: '/bin/sh' }, insideTmux: true, tty: false }),
    created('svc-proj-sh', 'switch-hint'),
  ],
  [
    'sh inside tmux, session exists (even attached): only the switch-client line',
    facts({
      target: { kind: 'shell', shell: '/bin/sh' },
      insideTmux: true,
      sessions: [shellSession('svc-proj-sh', true)],
    }),
    attached('svc-proj-sh', 'switch-hint'),
  ],
  [
    'sh whose name is taken by an agent: refused',
    facts({ target: { kind: 'shell', shell: '/bin/sh' }, sessions: [agentSession('svc-proj-sh', false)] }),
    refused(/^svc-proj-sh runs Claude Code, not a shell: pick a --label$/),
  ],
  [
    'sh --detach: name printed',
    facts({ target: { kind: 'shell', shell: '/bin/sh' }, flags: { detach: true } }),
    created('svc-proj-sh', 'print-name'),
  ],

  // --- what is missing -----------------------------------------------------------------------------------------
  ['the agent is not on PATH', facts({ commandFound: false }), refused(/^claude \(Claude Code\) is not on PATH/)],
  ['tmux is not on PATH', facts({ tmuxFound: false }), refused(NO_TMUX_REFUSAL)],
  ['no terminal to attach to', facts({ tty: false }), refused(NO_TTY_REFUSAL)],
  [
    'no terminal is fine with --detach',
    facts({ tty: false, flags: { detach: true } }),
    created('svc-proj', 'print-name'),
  ],
];

describe('decideLaunch', () => {
  it.each(rows)('%s', (_, f, expected) => {
    expect(decide(f)).toMatchObject(expected);
  });

  it('never kills anything: every plan is refuse, prepare-worktree, run-here, attach or create', () => {
    for (const [, f] of rows) {
      expect(['refuse', 'prepare-worktree', 'run-here', 'attach', 'create']).toContain(decide(f).action);
    }
  });

  it('passes agent arguments through verbatim', () => {
    const args = ['--model', 'a b', 'x;y', '--', '"quoted"', "it's", ''];
    const plan = decide(facts({ target: { kind: 'agent', agent: CC, args }, flags: { detach: true } }));
    expect(plan).toMatchObject({ action: 'create', command: 'claude', args });
  });

  it('on reattach, names the agent arguments that were not passed, and the wrapper flag a typo meant', () => {
    const existing = { sessions: [agentSession('svc-proj', false)] };
    const plan = decide(facts({ ...existing, target: { kind: 'agent', agent: CC, args: ['--model', 'x'] } }));
    expect(plan).toMatchObject({ action: 'attach', name: 'svc-proj', unused: ['--model', 'x'] });
    expect(decide(facts(existing))).not.toHaveProperty('unused');
    expect(unusedArgsLine('svc-proj', 'cc', ['--model', 'x'])).toBe(
      'svc: reattached to svc-proj, which runs already: not passed to it: --model x; `svc cc --label <name> --model x` starts another session with them',
    );
    const typo = unusedArgsLine('svc-proj', 'cc', ['--detatch', '-p', 'fix the bug']);
    expect(typo).toContain("not passed to it: --detatch -p 'fix the bug'");
    expect(typo).toContain('(did you mean --detach for --detatch?)');
    // the suggested command has the flag it meant, and the words quoted
    expect(typo).toContain("`svc cc --label <name> --detach -p 'fix the bug'`");
    // a wrapper flag after the agent's arguments: said so, not a typo of itself
    const late = unusedArgsLine('svc-proj', 'cc', ['--model', 'x', '--detach']);
    expect(late).toContain("(--detach is svc's only before the agent's arguments)");
    expect(late).not.toContain('did you mean');
    // a worktree session: no --label hint (it would start in the main checkout)
    expect(unusedArgsLine('svc-proj-wt-x', 'cc', ['--model', 'x'], true)).not.toContain('--label');
  });

  it('records the svc metadata of a new session', () => {
    const plan = decide(facts({ flags: { detach: false, label: 'rev' } })) as Extract<LaunchPlan, { action: 'create' }>;
    expect(plan.meta).toEqual({ kind: 'agent', agent: 'A1', project: 'proj', label: 'rev' });
    expect(metaOptions(plan.meta)).toEqual({
      '@svc-kind': 'agent',
      '@svc-agent': 'A1',
      '@svc-project': 'proj',
      '@svc-label': 'rev',
    });
  });

  it('a worktree session belongs to the repo', () => {
    const plan = decide(facts({ project: { name: 'elsewhere', slug: 'elsewhere' }, worktree: readyWt }));
    expect(plan).toMatchObject({ action: 'create', meta: { project: 'proj', worktree: readyWt.path } });
  });
});

describe('session names', () => {
  it.each([
    ['svc-proj', 'proj', 1],
    ['svc-proj-2', 'proj', 2],
    ['svc-proj-17', 'proj', 17],
    ['svc-proj-1', 'proj', null],
    ['svc-proj-02', 'proj', null],
    ['svc-proj-x', 'proj', null],
    ['svc-proj-2-3', 'proj', null],
    ['svc-projx', 'proj', null],
    ['svc-my-app-2', 'my-app', 2],
  ])('familyIndex(%s, %s) = %s', (name, slug, n) => {
    expect(familyIndex(name, slug)).toBe(n);
  });

  it('firstFreeName', () => {
    expect(firstFreeName('p', new Set())).toBe('svc-p');
    expect(firstFreeName('p', new Set(['svc-p']))).toBe('svc-p-2');
    expect(firstFreeName('p', new Set(['svc-p', 'svc-p-2', 'svc-p-4']))).toBe('svc-p-3');
  });
});

describe('parseWrapperArgs', () => {
  it.each([
    [[], { flags: { detach: false }, help: false, agentArgs: [] }],
    [['--detach'], { flags: { detach: true }, agentArgs: [] }],
    [['--label', 'x', '--detach'], { flags: { detach: true, label: 'x' }, agentArgs: [] }],
    [['--label=x'], { flags: { label: 'x' } }],
    [['--wt', 'feat/x'], { wt: 'feat/x', agentArgs: [] }],
    [['--wt=feat/x', '--resume'], { wt: 'feat/x', agentArgs: ['--resume'] }],
    [['--detach', '--', '--model', 'a b', 'x;y'], { flags: { detach: true }, agentArgs: ['--model', 'a b', 'x;y'] }],
    [['--model', 'x', '--detach'], { flags: { detach: false }, agentArgs: ['--model', 'x', '--detach'] }],
    [['--', '--detach'], { flags: { detach: false }, agentArgs: ['--detach'] }],
    [['--', '--help'], { help: false, agentArgs: ['--help'] }],
    [['--help'], { help: true }],
    [['-h'], { help: true }],
    [['resume', '--label', 'x'], { flags: { detach: false }, agentArgs: ['resume', '--label', 'x'] }],
    [['--detach', '--', '--'], { agentArgs: ['--'] }],
  ])('%j', (raw, expected) => {
    expect(parseWrapperArgs(raw)).toMatchObject(expected);
  });

  it.each([
    [['--label'], '--label needs a value'],
    [['--label='], '--label needs a value'],
    [['--wt'], '--wt needs a value'],
    [['--detach', '--detach'], '--detach given twice'],
    [['--detach=yes'], '--detach takes no value'],
  ])('%j is an error', (raw, error) => {
    expect(parseWrapperArgs(raw)).toEqual({ error });
  });
});

describe('wrapperSocket', () => {
  it('SVC_TMUX_SOCKET, then $TMUX, then the default', () => {
    expect(wrapperSocket({ SVC_TMUX_SOCKET: '/s/x', TMUX: '/t/y,1,0' }, 1000)).toEqual({
      path: '/s/x',
      source: 'SVC_TMUX_SOCKET',
    });
    expect(wrapperSocket({ SVC_TMUX_SOCKET: 'lab' }, 1000)).toEqual({
      path: '/tmp/tmux-1000/lab',
      source: 'SVC_TMUX_SOCKET',
    });
    expect(wrapperSocket({ TMUX: '/t/y,1,0' }, 1000)).toEqual({ path: '/t/y', source: 'TMUX' });
    expect(wrapperSocket({ TMUX_TMPDIR: '/r' }, 1000)).toEqual({ path: '/r/tmux-1000/default', source: 'default' });
  });
});
