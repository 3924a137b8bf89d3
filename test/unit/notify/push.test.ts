/** core/notify/push.ts: which events push, and what a push carries. */
import { describe, expect, it } from 'vitest';
import { sessionEvents } from '../../../core/notify/events.js';
import {
  deliveredNote,
  MAX_PUSH_ENVELOPE_CHARS,
  PushPayload,
  pushPayload,
  sessionTag,
  wantsPush,
} from '../../../core/notify/push.js';

describe('wantsPush', () => {
  it.each([
    [undefined, 'ask', false, true],
    [undefined, 'turn', true, false],
    [['ask'], 'ask', false, true],
    [['ask'], 'notify', false, false],
    [[], 'approval', false, false],
    [['approval', 'turn'], 'turn', false, true],
  ] as const)('events %j, %s, watched %s → %s', (events, kind, watched, expected) => {
    expect(wantsPush(events, kind, watched)).toBe(expected);
  });
});

describe('pushPayload', () => {
  const event = { computer: 'c_1', session: 'svc-proj', kind: 'ask' as const, id: 'a_1', envelope: { ct: 'x' } };
  it('carries routing and the envelope, never the session name', () => {
    const p = pushPayload(event, 2);
    expect(PushPayload.parse(p)).toEqual({
      v: 1,
      computer: 'c_1',
      kind: 'ask',
      id: 'a_1',
      count: 2,
      envelope: { ct: 'x' },
    });
    expect(JSON.stringify(p)).not.toContain('svc-proj');
  });
  it('leaves out an envelope too large for a push', () => {
    const big = { ...event, envelope: { ct: 'x'.repeat(MAX_PUSH_ENVELOPE_CHARS) } };
    expect(pushPayload(big, 1)).not.toHaveProperty('envelope');
  });
  it('tags a session', () => expect(sessionTag('c_1', 'svc-proj')).toBe('svc:c_1:svc-proj'));
});

describe('sessionEvents', () => {
  it.each([
    ['working → idle is a finished turn', { s: 'working' }, { s: 'idle' }, [{ session: 's', kind: 'turn' }]],
    ['idle → awaiting_approval', { s: 'idle' }, { s: 'awaiting_approval' }, [{ session: 's', kind: 'approval' }]],
    ['working → awaiting_approval', { s: 'working' }, { s: 'awaiting_approval' }, [{ session: 's', kind: 'approval' }]],
    ['unknown → idle tells nothing', { s: 'unknown' }, { s: 'idle' }, []],
    ['awaiting_approval → idle tells nothing', { s: 'awaiting_approval' }, { s: 'idle' }, []],
    ['a session first seen tells nothing', {}, { s: 'awaiting_approval' }, []],
    ['unchanged tells nothing', { s: 'working' }, { s: 'working' }, []],
  ] as const)('%s', (_, before, after, expected) => {
    expect(sessionEvents(before, after).map(({ session, kind }) => ({ session, kind }))).toEqual(expected);
  });
});

describe('deliveredNote: whether a phone got a notification now', () => {
  const pushed = (subscribed: number, wanted: number, accepted: number) => ({ subscribed, wanted, accepted });
  const cases: [string, number, ReturnType<typeof pushed> | null, ReturnType<typeof deliveredNote>][] = [
    ['an app open: it got the frame', 1, pushed(0, 0, 0), { delivered: true }],
    ['the push service took a push', 0, pushed(2, 2, 1), { delivered: true }],
    [
      'no app open, no subscription',
      0,
      pushed(0, 0, 0),
      { delivered: false, reason: 'no phone has the app open, and none has notifications on' },
    ],
    [
      'no app open, subscribed devices turned this kind off',
      0,
      pushed(1, 0, 0),
      { delivered: false, reason: 'no phone has the app open, and none wants this kind of notification' },
    ],
    [
      'no app open, the push service refused',
      0,
      pushed(1, 1, 0),
      { delivered: false, reason: 'no phone has the app open, and the push service did not take it' },
    ],
    [
      'no app open, the push service not answered in time',
      0,
      null,
      { delivered: false, reason: 'no phone has the app open, and the push service has not answered yet' },
    ],
  ];
  it.each(cases)('%s', (_, apps, outcome, expected) => {
    expect(deliveredNote(apps, outcome)).toEqual(expected);
  });
});
