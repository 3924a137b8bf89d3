import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import type { ApprovalPrompt } from '../../../core/agents/approvals.js';
import type { SessionRecord } from '../../../core/protocol/index.js';
import { readingIsNews, readingKey, type SessionReading } from '../../../core/sessions/readings.js';
import { sessionsMachine } from '../../../machines/sessions.js';

const record = (extra: Partial<SessionRecord> = {}): SessionRecord => ({
  name: 'proj',
  attached: false,
  createdAt: 1,
  activityAt: 1,
  panes: [{ id: '%1', command: 'cat', path: '/work/proj', active: true }],
  ...extra,
});
const prompt = { fingerprint: 'f1' } as unknown as ApprovalPrompt;
const quiet: SessionReading = {
  record: record(),
  approvalOnScreen: false,
  approval: null,
  screenUnreadable: false,
  midTurn: false,
};

describe('readingIsNews', () => {
  it.each([
    ['the same reading, no prompt, region none: not news', quiet, readingKey(quiet), 'none', false],
    ['never told', quiet, undefined, 'none', true],
    ['the record changed', { ...quiet, record: record({ attached: true }) }, readingKey(quiet), 'none', true],
    ['the screen became unreadable', { ...quiet, screenUnreadable: true }, readingKey(quiet), 'none', true],
    ['the agent is in a turn now', { ...quiet, midTurn: true }, readingKey(quiet), 'none', true],
    ['its turn is over', quiet, readingKey({ ...quiet, midTurn: true }), 'none', true],
    [
      'a prompt on screen, told before',
      { ...quiet, approvalOnScreen: true, approval: prompt },
      undefined,
      'shown',
      true,
    ],
    [
      'a prompt on screen, the same as told',
      { ...quiet, approvalOnScreen: true, approval: prompt },
      readingKey({ ...quiet, approvalOnScreen: true, approval: prompt }),
      'shown',
      true,
    ],
    ['no prompt now, the actor refused prompt_changed', quiet, readingKey(quiet), 'changed', true],
    ['no prompt now, the actor typed an answer', quiet, readingKey(quiet), 'answered', true],
  ])('%s', (_, reading, told, region, news) => {
    expect(readingIsNews(reading as SessionReading, told, region)).toBe(news);
  });
});

describe('the sessions supervisor tells a session actor only the readings it does not hold', () => {
  it('the same reading twice: one UPDATE; a change: another; a prompt: every time', () => {
    const updates: unknown[] = [];
    const actor = createActor(sessionsMachine, {
      input: {},
      inspect: (e) => {
        if (
          e.type === '@xstate.event' &&
          e.event.type === 'UPDATE' &&
          (e.actorRef as { id?: string }).id === 'session.proj'
        )
          updates.push(e.event);
      },
    }).start();
    const read = (r: SessionRecord, approvals: Record<string, ApprovalPrompt> = {}) =>
      actor.send({
        type: 'READING',
        sessions: { proj: r },
        approvalOnScreen: Object.keys(approvals),
        approvals,
      });
    read(record()); // spawns the actor with the reading: no UPDATE
    read(record());
    read(record());
    expect(updates).toHaveLength(0);
    read(record({ attached: true }));
    expect(updates).toHaveLength(1);
    read(record({ attached: true }));
    expect(updates).toHaveLength(1);
    read(record({ attached: true }), { proj: prompt });
    read(record({ attached: true }), { proj: prompt });
    expect(updates).toHaveLength(3);
    // the prompt gone: told, and told again while the actor's approval region has not settled at none
    read(record({ attached: true }));
    expect(updates).toHaveLength(4);
    const snapshot = actor.getSnapshot().children['session.proj']?.getSnapshot() as { value: { approval: string } };
    expect(snapshot.value.approval).toBe('none');
    read(record({ attached: true }));
    expect(updates).toHaveLength(4);
    actor.stop();
  });
});
