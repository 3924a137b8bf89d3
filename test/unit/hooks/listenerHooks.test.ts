import { describe, expect, it } from 'vitest';
import type { HookRequest } from '../../../actors/daemon/controlSocket.js';
import { createListenerHooks, EARLY_PIN_MS } from '../../../actors/hooks/listenerHooks.js';
import { TypedTexts } from '../../../core/hooks/control.js';
import type { SessionRecord } from '../../../core/protocol/index.js';

const record = (name: string, pane: string): SessionRecord => ({
  name,
  attached: false,
  createdAt: 1,
  activityAt: 1,
  panes: [{ id: pane, command: 'claude', active: true }],
});

function hooks(sessions: Record<string, SessionRecord>) {
  let clock = 1_000;
  const pins: [string, string | undefined][] = [];
  const h = createListenerHooks({
    sessions: () => sessions,
    typed: new TypedTexts(60_000),
    setRemote: () => {},
    tell: () => {},
    pin: (session, request) => pins.push([session, request.agentSession]),
    log: { info: () => {} },
    now: () => clock,
  });
  return { h, pins, pass: (ms: number) => (clock += ms) };
}

const started = (pane: string, agentSession: string) =>
  ({ type: 'hook', event: 'started', agent: 'claude', pane, agentSession }) as HookRequest;

describe('actors/hooks/listenerHooks: a session-start pin', () => {
  it('pins at once when a reading shows the pane', () => {
    const { h, pins } = hooks({ 'svc-site': record('svc-site', '%1') });
    h.handle(started('%1', 'aaa'));
    expect(pins).toEqual([['svc-site', 'aaa']]);
  });

  it('from a pane no reading showed yet: waits for the reading that does, then pins once', () => {
    const { h, pins, pass } = hooks({});
    expect(h.handle(started('%7', 'bbb'))).toMatchObject({ outcome: 'ignored' });
    expect(pins).toEqual([]);
    h.seen({});
    pass(3_000);
    h.seen({ 'svc-site-2': record('svc-site-2', '%7') });
    h.seen({ 'svc-site-2': record('svc-site-2', '%7') });
    expect(pins).toEqual([['svc-site-2', 'bbb']]);
  });

  it('is forgotten after EARLY_PIN_MS: a pane reused later is not pinned to an old conversation', () => {
    const { h, pins, pass } = hooks({});
    h.handle(started('%9', 'ccc'));
    pass(EARLY_PIN_MS + 1);
    h.seen({ 'svc-late': record('svc-late', '%9') });
    expect(pins).toEqual([]);
  });
});
