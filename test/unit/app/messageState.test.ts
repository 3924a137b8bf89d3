/** Which news of a sent message the phone takes (relay-server/app/src/messageState.ts). */
import { describe, expect, it } from 'vitest';
import type { Message } from '../../../relay-server/app/src/db.js';
import { takesStatus } from '../../../relay-server/app/src/messageState.js';

type State = Message['state'];

describe('takesStatus', () => {
  it.each<[State, string | null, State, boolean]>([
    ['pending', null, 'delivered', true],
    ['pending', null, 'injected', true],
    ['delivered', null, 'injected', true],
    ['sending', null, 'pending', true],
    ['delivered', null, 'refused', true],
    // a poll's answer read before the result, landing after the injected frame: stale
    ['injected', null, 'delivered', false],
    ['injected', null, 'pending', false],
    ['delivered', null, 'pending', false],
    ['delivered', null, 'delivered', false],
    // final stays final…
    ['refused', 'rate_limited', 'injected', false],
    ['expired', 'never_sent', 'pending', false],
    ['injected', null, 'refused', false],
    // …but session_not_found may be overturned by a later reading
    ['refused', 'session_not_found', 'injected', true],
  ])('%s (%s) takes %s: %s', (state, code, next, taken) => {
    expect(takesStatus({ state, code }, next)).toBe(taken);
  });
});
