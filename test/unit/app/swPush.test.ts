/** What the service worker reads of a push and of the body it opens, checked by hand (it carries no zod). */
import { describe, expect, it } from 'vitest';
import { readPushBody, readPushPayload } from '../../../relay-server/app/src/push/swPush.js';

const envelope = { v: 1, purpose: 'notify' };

describe('readPushPayload', () => {
  it.each([
    [
      { v: 1, computer: 'c_1', kind: 'ask', id: 'a', count: 2, envelope },
      { computer: 'c_1', kind: 'ask', count: 2, envelope },
    ],
    [
      { v: 1, computer: 'c_1', kind: 'turn', id: 't', count: 1 },
      { computer: 'c_1', kind: 'turn', count: 1 },
    ],
    [
      { v: 1, computer: 'c_1', kind: 'schedule', id: 's', count: 0 },
      { computer: 'c_1', kind: 'schedule', count: 1 },
    ],
    [
      { v: 1, computer: 'c_1', kind: 'notify', id: 'n', count: 1, envelope: 'x' },
      { computer: 'c_1', kind: 'notify', count: 1 },
    ],
    [{ v: 2, computer: 'c_1', kind: 'ask', id: 'a', count: 1 }, null],
    [{ v: 1, computer: 7, kind: 'ask', id: 'a', count: 1 }, null],
    [{ v: 1, computer: 'c_1', kind: 'toString', id: 'a', count: 1 }, null],
    [{ v: 1, computer: 'c_1', kind: 'shell', id: 'a', count: 1 }, null],
    [[], null],
    [null, null],
    ['push', null],
  ])('%j → %j', (data, read) => expect(readPushPayload(data)).toEqual(read));
});

describe('readPushBody', () => {
  it.each([
    ['{"id":"a","session":"svc-proj","question":"Ship it?","choices":[]}', { session: 'svc-proj', words: 'Ship it?' }],
    ['{"session":"svc-proj","message":"Done","title":"Tests"}', { session: 'svc-proj', words: 'Done', title: 'Tests' }],
    ['{"session":"svc-proj","message":"Done","title":""}', { session: 'svc-proj', words: 'Done' }],
    ['{"session":"","message":"Done"}', null],
    ['{"session":"svc-proj"}', null],
    ['{"session":"svc-proj","message":5}', null],
    ['not json', null],
    ['[1]', null],
  ])('%s → %j', (text, read) => expect(readPushBody(text)).toEqual(read));
});
