import { describe, expect, it } from 'vitest';
import { ControlRequest } from '../../../core/daemon/control.js';
import { hookSession, TypedTexts } from '../../../core/hooks/control.js';
import { TURN_NOTICE_WINDOW_MS, turnNoticeDue } from '../../../core/notify/events.js';

const sessions = {
  'svc-a': { panes: [{ id: '%3' }, { id: '%12' }] },
  'svc-b': { panes: [{ id: '%4' }] },
};

describe('hookSession', () => {
  it.each([
    ['the marker names a live session', { session: 'svc-b', pane: '%3' }, 'svc-b'],
    ['the marker names a session that ended: the pane decides', { session: 'svc-gone', pane: '%12' }, 'svc-a'],
    ['only the pane', { pane: '%4' }, 'svc-b'],
    ['%1 is not %12', { pane: '%1' }, null],
    ['a pane no session holds', { pane: '%99' }, null],
    ['nothing to go by', {}, null],
    ['a name that is an Object property', { session: 'constructor' }, null],
  ])('%s', (_n, request, expected) => {
    expect(hookSession(sessions, request)).toBe(expected);
  });
});

describe('hook requests on the control socket', () => {
  const parse = (v: unknown) => ControlRequest.safeParse(v).success;
  it('takes the three events with a pane id as tmux writes it', () => {
    for (const event of ['remote', 'keyboard', 'finished']) {
      expect(parse({ type: 'hook', event, agent: 'claude', pane: '%7' })).toBe(true);
    }
    expect(parse({ type: 'hook', event: 'remote', agent: 'codex', session: 'svc-x' })).toBe(true);
  });

  it.each([
    ['an event that is not one', { type: 'hook', event: 'approve', agent: 'claude' }],
    ['a pane that is not a pane id', { type: 'hook', event: 'finished', agent: 'claude', pane: '%3; rm -rf' }],
    ['no agent', { type: 'hook', event: 'finished' }],
    ['a session name too long', { type: 'hook', event: 'remote', agent: 'claude', session: 'x'.repeat(300) }],
  ])('refuses %s', (_n, request) => {
    expect(parse(request)).toBe(false);
  });
});

describe('turnNoticeDue', () => {
  it.each([
    ['never told', undefined, 1000, true],
    ['told a moment ago (the hook, then the screen)', 1000, 1000 + 500, false],
    ['told a window ago: a new turn', 1000, 1000 + TURN_NOTICE_WINDOW_MS, true],
    ['the clock went back', 50_000, 10_000, true],
  ])('%s', (_n, last, now, expected) => {
    expect(turnNoticeDue(last, now)).toBe(expected);
  });
});

describe('TypedTexts: only what the listener typed may put a session in REMOTE', () => {
  it('takes a hash typed into that session within the window, once', () => {
    let now = 0;
    const typed = new TypedTexts(60_000, () => now);
    typed.add('svc-a', 'a'.repeat(64));
    expect(typed.take('svc-b', 'a'.repeat(64))).toBe(false); // another session
    expect(typed.take('svc-a', 'b'.repeat(64))).toBe(false); // another text
    expect(typed.take('svc-a', undefined)).toBe(false); // no hash at all
    expect(typed.take('svc-a', 'a'.repeat(64))).toBe(true);
    expect(typed.take('svc-a', 'a'.repeat(64))).toBe(false); // once
    typed.add('svc-a', 'c'.repeat(64));
    now = 60_001;
    expect(typed.take('svc-a', 'c'.repeat(64))).toBe(false); // too late
  });
});
