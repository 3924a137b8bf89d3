import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRemoteBook } from '../../../actors/sessions/remoteBook.js';
import type { SessionRecord } from '../../../core/protocol/index.js';
import { isRemote, remoteAfterReading, withRemote } from '../../../core/sessions/remoteMode.js';

const rec = (name: string, createdAt: number) =>
  ({ name, createdAt, attached: false, activityAt: 0, panes: [] }) as SessionRecord;

describe('sticky REMOTE kept across a restart (core/sessions/remoteMode.ts)', () => {
  it.each([
    ['the session that went REMOTE', { a: 5 }, rec('a', 5), true],
    ['another session made since under its name', { a: 5 }, rec('a', 6), false],
    ['a session never in REMOTE', { a: 5 }, rec('b', 5), false],
  ])('isRemote: %s', (_, remote, record, expected) => {
    expect(isRemote(remote, record)).toBe(expected);
  });

  it.each([
    ['on', {}, rec('a', 5), true, { a: 5 }],
    ['on again, for a session made since', { a: 4 }, rec('a', 5), true, { a: 5 }],
    ['off', { a: 5, b: 1 }, rec('a', 5), false, { b: 1 }],
    ['off when it was not on', { b: 1 }, rec('a', 5), false, { b: 1 }],
  ])('withRemote: %s', (_, remote, record, on, expected) => {
    expect(withRemote(remote, record, on)).toEqual(expected);
  });

  it.each([
    ['all still there', { a: 5 }, { a: rec('a', 5) }, { a: 5 }],
    ['a session that ended', { a: 5, b: 2 }, { b: rec('b', 2) }, { b: 2 }],
    ['a session made again under its name', { a: 5 }, { a: rec('a', 9) }, {}],
    ['nothing in REMOTE', {}, { a: rec('a', 5) }, {}],
  ])('remoteAfterReading: %s', (_, remote, sessions, expected) => {
    expect(remoteAfterReading(remote, sessions)).toEqual(expected);
  });

  it('remoteAfterReading gives back the same object when nothing changed (nothing to write)', () => {
    const remote = { a: 5 };
    expect(remoteAfterReading(remote, { a: rec('a', 5), b: rec('b', 1) })).toBe(remote);
  });
});

describe('~/.svc/remote.json (actors/sessions/remoteBook.ts)', () => {
  const dir = () => mkdtempSync(join(tmpdir(), 'svc-remote-'));

  it('is written 0600 at each change and read back by the next listener', () => {
    const path = join(dir(), 'remote.json');
    const errors: string[] = [];
    const book = createRemoteBook(path, { onError: (m) => errors.push(m) });
    expect(book.sessions()).toEqual({});
    book.save({ 'svc-a': 17 });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(createRemoteBook(path, { onError: (m) => errors.push(m) }).sessions()).toEqual({ 'svc-a': 17 });
    expect(errors).toEqual([]);
  });

  it.each([
    ['not JSON', '{"version":1,"sess'],
    ['another shape', '{"version":2,"sessions":{}}'],
    ['a hostile session name', '{"version":1,"sessions":{"":1}}'],
  ])('a file that is %s: said in the log, every session local, replaced whole at the next change', (_, text) => {
    const path = join(dir(), 'remote.json');
    writeFileSync(path, text);
    const errors: string[] = [];
    const book = createRemoteBook(path, { onError: (m) => errors.push(m) });
    expect(book.sessions()).toEqual({});
    expect(errors).toEqual([expect.stringMatching(/remote\.json.*every session starts local/)]);
    book.save({ b: 1 });
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual({ version: 1, sessions: { b: 1 } });
  });
});
