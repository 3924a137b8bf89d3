/** core/daemon/control.ts: the control socket's requests, line framing and how state values print. */
import { describe, expect, it } from 'vitest';
import {
  actorRows,
  describeMove,
  formatStateValue,
  formatSummary,
  parseRequest,
  takeLines,
} from '../../../core/daemon/control.js';

describe('parseRequest', () => {
  it.each([
    ['{"type":"status"}', { request: { type: 'status' } }],
    ['{"type":"events","follow":true,"limit":10}', { request: { type: 'events', follow: true, limit: 10 } }],
    ['not json', { error: { ok: false, type: 'error', error: { code: 'bad_json' } } }],
    ['[]', { error: { type: 'error', error: { code: 'bad_request' } } }],
    ['{"type":"format-disk"}', { error: { type: 'error', error: { code: 'bad_request' } } }],
    ['{"type":"events","limit":-1}', { error: { type: 'error', error: { code: 'bad_request' } } }],
    ['null', { error: { type: 'error', error: { code: 'bad_request' } } }],
  ])('%s', (line, expected) => {
    expect(parseRequest(line)).toMatchObject(expected);
  });
});

describe('takeLines', () => {
  it.each([
    ['', 'a\nb\n', { lines: ['a', 'b'], rest: '', overflow: false }],
    ['{"ty', 'pe":1}\n{"x', { lines: ['{"type":1}'], rest: '{"x', overflow: false }],
    ['', '\n\r\n  \nx\r\n', { lines: ['x'], rest: '', overflow: false }],
    ['', 'x'.repeat(11), { lines: [], rest: '', overflow: true }],
    ['', `${'x'.repeat(11)}\nok\n`, { lines: [], rest: '', overflow: true }],
  ])('%j + %j', (pending, chunk, expected) => {
    expect(takeLines(pending, chunk, 10)).toEqual(expected);
  });
});

describe('formatting', () => {
  it.each([
    [null, '-'],
    ['halted', 'halted'],
    [{ running: 'waitingToScan' }, 'running.waitingToScan'],
    [{ attachment: 'detached', agent: 'idle' }, 'attachment.detached, agent.idle'],
    [{ connection: { online: 'quiet' } }, 'connection.online.quiet'],
  ])('%j → %s', (value, text) => {
    expect(formatStateValue(value)).toBe(text);
  });

  it.each([
    [null, 'idle', '(start) → idle'],
    ['idle', 'busy', 'idle → busy'],
    [{ running: 'a' }, { running: 'a' }, null],
    [
      { attachment: 'detached', delivery: 'ready' },
      { attachment: 'detached', delivery: 'injecting' },
      'delivery.ready → delivery.injecting',
    ],
    [{ a: 'x', b: 'y' }, { a: 'z', b: 'w' }, 'a.x, b.y → a.z, b.w'],
  ])('the move from %j to %j is %j', (from, to, text) => {
    expect(describeMove(from, to)).toBe(text);
  });

  it('prints a summary on one line', () => {
    expect(formatSummary({ a: 1, b: true, c: null, d: 'two words' })).toBe('a=1 b=true c=- d="two words"');
  });

  it('orders the tree parents first, children by id', () => {
    const a = (key: string, id: string, parent: string | null) => ({
      key,
      id,
      parent,
      machine: null,
      value: null,
      status: 'active' as const,
      summary: {},
    });
    const rows = actorRows([a('3', 'z', '1'), a('1', 'root', null), a('2', 'b', '1'), a('4', 'c', '2')]);
    expect(rows.map((r) => `${r.prefix}${r.actor.id}`)).toEqual(['root', '├── b', '│   └── c', '└── z']);
  });
});
