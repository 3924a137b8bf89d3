import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { PaneInfo, SessionMeta, SessionRecord } from '../../../core/protocol/index.js';
import { applyScreens, describeInventory, missingAgent, panesToRead } from '../../../core/sessions/view.js';

let paneCounter = 0;
function pane(command: string, extra: Partial<PaneInfo> = {}): PaneInfo {
  paneCounter += 1;
  return { id: `%${paneCounter}`, command, active: true, index: '0.0', ...extra };
}
function rec(name: string, createdAt: number, panes: PaneInfo[], meta?: SessionMeta): SessionRecord {
  return { name, attached: false, createdAt, activityAt: createdAt, panes, ...(meta ? { meta } : {}) };
}
const cc = (project: string, label?: string): SessionMeta => ({
  kind: 'agent',
  agent: 'A1',
  project,
  ...(label ? { label } : {}),
});

describe('picker labels (spec 2.2)', () => {
  it.each([
    ['first session of a project', [rec('svc-app', 1, [pane('claude')], cc('app'))], ['app · Claude Code']],
    [
      'further sessions of the same agent are #2, #3 in creation order',
      [
        rec('svc-app-3', 3, [pane('claude')], cc('app')),
        rec('svc-app', 1, [pane('claude')], cc('app')),
        rec('svc-app-2', 2, [pane('claude')], cc('app')),
      ],
      ['app · Claude Code', 'app · Claude Code #2', 'app · Claude Code #3'],
    ],
    [
      'another agent in the same project starts its own count',
      [
        rec('svc-app', 1, [pane('claude')], cc('app')),
        rec('svc-app-2', 2, [pane('pi')], { kind: 'agent', agent: 'A4', project: 'app' }),
      ],
      ['app · Claude Code', 'app · pi'],
    ],
    ['a --label', [rec('svc-app-review', 1, [pane('claude')], cc('app', 'review'))], ['app · Claude Code (review)']],
    [
      'the agent named the session itself (its terminal title)',
      [rec('svc-app', 1, [pane('claude', { title: '✳ Fix flaky tests' })], cc('app'))],
      ['Fix flaky tests · Claude Code'],
    ],
    [
      'tmux’s default title (the host name) is not a name',
      [rec('svc-app', 1, [pane('claude', { title: 'myhost' })], cc('app'))],
      ['app · Claude Code'],
    ],
    [
      'a worktree session',
      [rec('svc-app-wt-feat-x', 1, [pane('claude')], { ...cc('app'), worktree: '/src/app-wt-feat-x' })],
      ['wt-feat-x · Claude Code'],
    ],
    ['a shell session', [rec('svc-app-sh', 1, [pane('bash')], { kind: 'shell', project: 'app' })], ['app · Shell']],
    ['a session svc did not make, running an agent', [rec('work', 1, [pane('claude')])], ['work · Claude Code']],
    ['a session running no agent', [rec('notes', 1, [pane('vim')])], ['notes']],
  ])('%s', (_name, sessions, labels) => {
    expect(describeInventory(sessions, 'myhost').map((s) => s.label)).toEqual(labels);
  });

  it('groups worktree sessions under their repository and marks shells', () => {
    const [wt, sh] = describeInventory(
      [
        rec('svc-app-wt-feat-x', 1, [pane('claude')], { ...cc('app'), worktree: '/src/app-wt-feat-x' }),
        rec('svc-app-sh', 2, [pane('bash')], { kind: 'shell', project: 'app' }),
      ],
      'h',
    );
    expect(wt).toMatchObject({ group: 'app', agent: 'Claude Code', shell: false });
    expect(sh).toMatchObject({ shell: true });
    expect(sh?.agent).toBeUndefined();
  });
});

describe('subagents (spec 4.14)', () => {
  it('lists further agent panes as <session>.<n>, view-only children of the card', () => {
    const main = pane('claude', { index: '0.0' });
    const sub1 = pane('claude', { index: '0.1', active: false });
    const editor = pane('vim', { index: '0.2', active: false });
    const sub2 = pane('codex', { index: '1.0', active: false });
    const out = describeInventory([rec('svc-app', 1, [sub2, editor, main, sub1], cc('app'))], 'h');
    expect(out.map((s) => [s.name, s.parent ?? null, s.label])).toEqual([
      ['svc-app', null, 'app · Claude Code'],
      ['svc-app.1', 'svc-app', 'app · Claude Code · subagent 1'],
      ['svc-app.2', 'svc-app', 'app · Claude Code · subagent 2'],
    ]);
    expect(out[1]?.panes.map((p) => p.id)).toEqual([sub2.id]);
    expect(out[2]?.panes.map((p) => p.id)).toEqual([sub1.id]);
  });
});

describe('screens to read', () => {
  it('reads only panes of agents with trusted rules', () => {
    const a = pane('claude');
    const b = pane('cursor-agent');
    const c = pane('cat');
    const sessions = describeInventory(
      [rec('s1', 1, [a], cc('x')), rec('s2', 2, [b], { kind: 'agent', agent: 'A6' }), rec('s3', 3, [c])],
      'h',
    );
    expect(panesToRead(sessions)).toEqual([a.id]);
  });

  it('names the sessions whose screen should have been read and was not, and those showing a prompt', () => {
    const approval = readFileSync(
      new URL('../../fixtures/screens/A1/awaiting_approval-1.txt', import.meta.url),
      'utf8',
    );
    const [a, b, c, d] = [pane('claude'), pane('claude'), pane('cursor-agent'), pane('claude')];
    const sessions = describeInventory(
      [
        rec('read', 1, [a], cc('x')),
        rec('missing', 2, [b], cc('x')),
        rec('untrusted', 3, [c], { kind: 'agent', agent: 'A6' }),
        rec('asking', 4, [d], cc('x')),
      ],
      'h',
    );
    const read = applyScreens(sessions, { [a.id]: '', [d.id]: approval }, {}, 0);
    expect(read.unreadable).toEqual(['missing']);
    expect(read.approvalOnScreen).toEqual(['asking']);
    // an agent without trusted rules is never read: unknown, and not unreadable (its messages are typed)
    expect(read.sessions.find((s) => s.name === 'untrusted')?.state).toBe('unknown');
    expect(read.midTurn).toEqual([]);
  });

  it('names the sessions in a turn whose agent types a message only after it (Claude Code), not Codex', () => {
    const screen = (agent: string, name: string) =>
      readFileSync(new URL(`../../fixtures/screens/${agent}/${name}.txt`, import.meta.url), 'utf8');
    const [a, b, c] = [pane('claude'), pane('claude'), pane('codex')];
    const sessions = describeInventory(
      [
        rec('cc-working', 1, [a], cc('x')),
        rec('cc-idle', 2, [b], cc('x')),
        rec('codex-working', 3, [c], { kind: 'agent', agent: 'A2' }),
      ],
      'h',
    );
    const read = applyScreens(
      sessions,
      { [a.id]: screen('A1', 'working-2'), [b.id]: screen('A1', 'idle-1'), [c.id]: screen('A2', 'working-1') },
      {},
      0,
    );
    expect(read.midTurn).toEqual(['cc-working']);
  });

  it('a turn that has just ended is still mid-turn until the screen has been quiet a moment', () => {
    const screen = (name: string) =>
      readFileSync(new URL(`../../fixtures/screens/A1/${name}.txt`, import.meta.url), 'utf8');
    const a = pane('claude');
    const sessions = describeInventory([rec('cc', 1, [a], cc('x'))], 'h');
    let read = applyScreens(sessions, { [a.id]: screen('working-1') }, {}, 0);
    read = applyScreens(sessions, { [a.id]: screen('working-1') }, read.debounce, 500);
    expect(read.sessions[0]?.state).toBe('working');
    // the first reading after the turn: the picker still says working, and so does midTurn
    read = applyScreens(sessions, { [a.id]: screen('idle-1') }, read.debounce, 1_000);
    expect(read.midTurn).toEqual(['cc']);
    read = applyScreens(sessions, { [a.id]: screen('idle-1') }, read.debounce, 1_600);
    expect(read.sessions[0]?.state).toBe('idle');
    expect(read.midTurn).toEqual([]);
  });
});

describe('no agent in pane (spec 7)', () => {
  it.each([
    ['the recorded agent is in front', pane('claude'), 'A1', null],
    [
      'only an interpreter left, no start command',
      pane('python3'),
      'A7',
      'no agent in pane (start=?, current=python3)',
    ],
    [
      'something else in front',
      pane('vim', { startCommand: 'claude' }),
      'A1',
      'no agent in pane (start=claude, current=vim)',
    ],
  ])('%s', (_name, p, agent, line) => {
    expect(missingAgent(rec('s', 1, [p], { kind: 'agent', agent }))).toBe(line);
  });
});
