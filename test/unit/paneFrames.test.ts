/** core/paneFrames.ts, core/keys.ts, core/agentSend.ts: frames, key input rules, and svc agent send's picks. */
import { describe, expect, it } from 'vitest';
import { pickComputer, pickSession } from '../../core/agentSend.js';
import { badKeyName, keysRefusal } from '../../core/keys.js';
import { applyFrame, frameRows, splitScreen } from '../../core/paneFrames.js';
import type { SessionRecord } from '../../core/protocol.js';

describe('frameRows and applyFrame', () => {
  it('sends the first frame whole, then only the rows that changed', () => {
    expect(frameRows(null, ['a', 'b'], false)).toEqual({ full: true, height: 2, rows: { 0: 'a', 1: 'b' } });
    expect(frameRows(['a', 'b'], ['a', 'c'], false)).toEqual({ full: false, height: 2, rows: { 1: 'c' } });
    expect(frameRows(['a', 'b'], ['a', 'b'], false)).toBeNull();
    expect(frameRows(['a', 'b'], ['a', 'b'], true)).toMatchObject({ full: true });
  });

  it('shrinking and growing screens rebuild exactly', () => {
    const screens = [['a', 'b', 'c'], ['a'], ['a', 'x', '', 'y'], [], ['z']];
    let app: string[] = [];
    let prev: string[] | null = null;
    for (const next of screens) {
      const frame = frameRows(prev, next, false);
      if (frame) app = applyFrame(app, frame);
      expect(app).toEqual(next);
      prev = next;
    }
  });

  it('splits a capture into rows', () => {
    expect(splitScreen('')).toEqual([]);
    expect(splitScreen('a\n\nb')).toEqual(['a', '', 'b']);
  });
});

describe('keysRefusal', () => {
  const pane = { id: '%1', command: 'claude', active: true };
  const base = {
    target: 'svc-proj',
    pane,
    shellSession: false,
    subagent: false,
    addressedToThisComputer: true,
    keys: [] as string[],
    text: '',
  };
  it.each([
    ['text into an agent', { text: 'hi' }, null],
    ['named keys into an agent', { keys: ['C-c', 'Enter'] }, null],
    ['an unknown key', { keys: ['F12'] }, 'bad_key_name'],
    ['anything to a subagent', { subagent: true, keys: ['Enter'] }, 'subagent_view_only'],
    ['keys with a shell in front', { pane: { ...pane, command: 'bash' }, keys: ['Up'] }, 'shell_in_front'],
    ['answering an approval prompt seen in the live pane', { approvalPending: true, keys: ['Down', 'Enter'] }, null],
    ['no session', { pane: undefined, keys: ['Enter'] }, 'session_not_found'],
    [
      'C-c into a shell session',
      { shellSession: true, pane: { ...pane, command: 'bash' }, keys: ['C-c'] },
      'shell_input_forbidden',
    ],
    ['Enter into a shell session', { shellSession: true, pane: { ...pane, command: 'bash' }, keys: ['Enter'] }, null],
    ['a newline in text for a shell', { shellSession: true, text: 'a\nb' }, 'shell_input_forbidden'],
  ] as const)('%s', (_, over, code) => {
    expect(keysRefusal({ ...base, ...over })).toBe(code);
  });

  it('names the first key outside the list', () => {
    expect(badKeyName(['Enter', 'x', 'y'])).toBe('x');
    expect(badKeyName(['Enter'])).toBeUndefined();
  });
});

describe('svc agent send picks', () => {
  const s = (name: string, activityAt: number, extra: Partial<SessionRecord> = {}): SessionRecord => ({
    name,
    attached: false,
    createdAt: 1,
    activityAt,
    panes: [],
    ...extra,
  });
  const box = {
    hookId: 'c_1',
    name: 'box',
    deviceId: 'd_1',
    sessions: [s('svc-a', 5), s('svc-b', 9), s('svc-a-sh', 20, { shell: true }), s('svc-b.1', 30, { parent: 'svc-b' })],
  };

  it('picks the only computer, or the one named; refuses when it cannot tell', () => {
    expect(pickComputer([box])).toEqual({ ok: true, value: box });
    const other = { ...box, hookId: 'c_2', name: 'desk' };
    expect(pickComputer([box, other])).toMatchObject({ ok: false, message: /2 computers; pick one with --computer/ });
    expect(pickComputer([box, other], 'desk')).toEqual({ ok: true, value: other });
    expect(pickComputer([box, other], 'c_1')).toEqual({ ok: true, value: box });
    expect(pickComputer([], undefined)).toMatchObject({ ok: false });
  });

  it('picks the most recently active agent session, skipping shells and subagents; refuses a shell by name', () => {
    expect(pickSession(box)).toEqual({ ok: true, value: 'svc-b' });
    expect(pickSession(box, 'svc-a')).toEqual({ ok: true, value: 'svc-a' });
    expect(pickSession(box, 'svc-a-sh')).toEqual({
      ok: false,
      message: 'svc-a-sh is a shell session: svc agent send skips shell sessions',
    });
    expect(pickSession({ ...box, sessions: [s('svc-x-sh', 1, { shell: true })] })).toMatchObject({ ok: false });
  });
});
