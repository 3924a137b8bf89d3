/**
 * The phone's "Active Agents" list (relay-server/app/src/inventory.ts) and the words it shows (core/protocol/refusalText.ts).
 */
import { describe, expect, it } from 'vitest';
import { REFUSAL_CODES, type SessionRecord } from '../../../core/protocol/index.js';
import { ago, paneStatusText, pushStateText, REFUSAL_TEXT, refusalText } from '../../../core/protocol/refusalText.js';
import { type ComputerInfo, computerViews, sessionItems, stateText } from '../../../relay-server/app/src/inventory.js';

const s = (name: string, extra: Partial<SessionRecord> = {}): SessionRecord => ({
  name,
  attached: false,
  createdAt: 1,
  activityAt: 1,
  panes: [],
  label: name,
  state: 'idle',
  ...extra,
});

const labels = (items: ReturnType<typeof sessionItems>) =>
  items.map((i) => (i.kind === 'group' ? `[${i.name}: ${i.sessions.map((x) => x.label).join(', ')}]` : i.label));

describe('the agents list', () => {
  it('puts what needs a person first: awaiting approval, then working, idle, unknown', () => {
    const items = sessionItems([
      s('a', { label: 'a', state: 'unknown' }),
      s('b', { label: 'b', state: 'idle' }),
      s('c', { label: 'c', state: 'awaiting_approval' }),
      s('d', { label: 'd', state: 'working' }),
    ]);
    expect(labels(items)).toEqual(['c', 'd', 'b', 'a']);
  });

  it('sorts labels naturally (#2 before #10) and shells after agents of the same state', () => {
    const items = sessionItems([
      s('x10', { label: 'app · Claude Code #10' }),
      s('sh', { label: 'app · Shell', shell: true }),
      s('x2', { label: 'app · Claude Code #2' }),
      s('x', { label: 'app · Claude Code' }),
    ]);
    expect(labels(items)).toEqual([
      'app · Claude Code',
      'app · Claude Code #2',
      'app · Claude Code #10',
      'app · Shell',
    ]);
  });

  it('groups worktree sessions under their repository; a group ranks by its most urgent member', () => {
    const items = sessionItems([
      s('svc-app', { label: 'app · Codex', state: 'working' }),
      s('svc-app-wt-a', { label: 'wt-a · Codex', group: 'app', state: 'idle' }),
      s('svc-app-wt-b', { label: 'wt-b · Codex', group: 'app', state: 'awaiting_approval' }),
    ]);
    expect(labels(items)).toEqual(['[app: wt-b · Codex, wt-a · Codex]', 'app · Codex']);
  });

  it('nests subagents under their parent, view-only; the parent ranks by its children too', () => {
    const items = sessionItems([
      s('p', { label: 'p', state: 'idle' }),
      s('q', { label: 'q', state: 'working' }),
      s('p.1', { label: 'p sub', parent: 'p', state: 'awaiting_approval' }),
    ]);
    expect(labels(items)).toEqual(['p', 'q']);
    const parent = items[0]!;
    expect(parent.kind === 'session' && parent.children.map((c) => [c.label, c.viewOnly])).toEqual([['p sub', true]]);
  });

  it('lists online computers first and counts approvals waiting', () => {
    const c = (hookId: string, name: string, online: boolean, sessions: SessionRecord[] = []): ComputerInfo => ({
      hookId,
      name,
      platform: 'linux',
      online,
      lastSeenAt: 1,
      sessions,
      sessionsAt: 1,
    });
    const views = computerViews([
      c('c1', 'alpha', false),
      c('c2', 'beta', true, [s('x', { state: 'awaiting_approval' }), s('y', { state: 'awaiting_approval' })]),
    ]);
    expect(views.map((v) => [v.name, v.attention])).toEqual([
      ['beta', 2],
      ['alpha', 0],
    ]);
  });
});

describe('a session’s state in words', () => {
  const pane = (command: string) => ({ id: '%1', command, active: true });
  it.each([
    ['an agent: what the listener read', s('a', { state: 'working' }), 'working'],
    ['an agent not read yet', s('a', { state: 'unknown', panes: [pane('node')] }), 'state unknown'],
    ['a shell at its prompt', s('sh', { shell: true, state: 'unknown', panes: [pane('bash')] }), 'at the prompt'],
    ['a login shell', s('sh', { shell: true, state: 'unknown', panes: [pane('-zsh')] }), 'at the prompt'],
    ['a shell running a program', s('sh', { shell: true, state: 'unknown', panes: [pane('npm')] }), 'running npm'],
    ['a shell with no pane known', s('sh', { shell: true, state: 'unknown' }), 'state unknown'],
  ])('%s', (_what, record, text) => expect(stateText(record)).toBe(text));
});

describe('the words', () => {
  it('has a sentence for every refusal code', () => {
    for (const code of REFUSAL_CODES) expect(REFUSAL_TEXT[code]).toMatch(/^Not (typed|scheduled|removed): .+\.$/);
    expect(refusalText('shell_in_front')).toContain('a shell is in front');
    expect(refusalText('something_new')).toBe('Not typed (something_new).');
  });

  it('says what became of a push in plain words', () => {
    expect(pushStateText('injected', null)).toBe('typed');
    expect(pushStateText('refused', 'rate_limited')).toContain('too many messages');
    expect(pushStateText('expired', null)).toContain('never typed late');
    expect(paneStatusText('refused', 'subscriber_unverified')).toMatch(/^Refused: /);
    expect(paneStatusText('stopped', 'session_gone')).toContain('gone');
  });

  it('says how long ago', () => {
    expect(ago(10_000)).toBe('just now');
    expect(ago(3 * 60_000)).toBe('3 min ago');
    expect(ago(2 * 3_600_000)).toBe('2 h ago');
    expect(ago(3 * 86_400_000)).toBe('3 days ago');
  });
});
