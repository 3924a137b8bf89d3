/**
 * The relay's pure pieces: keys and scopes, the result rule, wire pushes, buckets, the in-process bus, frame parsing.
 */
import { describe, expect, it } from 'vitest';
import { ClientFrame, computerAway, MAX_ISSUE_CHARS, parseFrame } from '../../../core/protocol/index.js';
import { bearerKey, generateApiKey, hashApiKey, parseScopeList } from '../../../relay-server/auth.js';
import { type BusEvent, InProcessBus } from '../../../relay-server/bus.js';
import { Connection, MAX_WATCHING, type MinimalSocket } from '../../../relay-server/connection.js';
import { resultConditions, toWirePush } from '../../../relay-server/pushes.js';
import { KeyedBuckets, RefusalLimiter } from '../../../relay-server/rateLimit.js';
import type { PushRecord } from '../../../relay-server/store.js';

describe('keys', () => {
  it('generates svc_ keys of 32 random bytes and hashes them as sha256 hex', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a).toMatch(/^svc_[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(hashApiKey(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(a)).toBe(hashApiKey(a));
  });

  it.each([
    [undefined, false],
    ['', false],
    ['Bearer', false],
    ['Basic dXNlcjpwYXNz', false],
    ['Bearer svc_short', false],
    [`Bearer ${'svc_'}${'a'.repeat(43)}`, true],
    [`bearer  svc_${'a'.repeat(43)}`, true],
    [`Bearer svc_${'a'.repeat(43)} extra`, false],
  ])('reads the key from %j: %s', (header, ok) => {
    expect(bearerKey(header) !== null).toBe(ok);
  });

  it('parses scope lists and refuses unknown ones', () => {
    expect(parseScopeList('push:read')).toEqual(['push:read']);
    expect(parseScopeList(' push:write , push:read,push:write ')).toEqual(['push:write', 'push:read']);
    expect(() => parseScopeList('push:read,admin')).toThrow('unknown scope "admin"');
    expect(() => parseScopeList(' , ')).toThrow('no scopes');
  });
});

describe('which results may overwrite a state', () => {
  const open = { states: ['pending', 'delivered'] };
  // A push swept final because nobody answered in time takes the answer that comes later.
  const unanswered = { states: ['expired'], code: 'no_result' };
  const elsewhere = { states: ['refused'], code: 'session_not_found', notResultComputer: 'c_me' };
  it.each([
    ['injected', undefined, [open, unanswered, elsewhere]],
    ['refused', 'session_not_found', [open, unanswered]],
    ['refused', 'shell_in_front', [open, unanswered]],
    ['expired', undefined, [open, unanswered]],
  ] as const)('%s %s', (state, code, expected) => {
    expect(resultConditions({ state, code }, 'c_me')).toEqual(expected);
  });
});

describe('wire pushes', () => {
  it('carries the push with its age on the relay clock', () => {
    const record: PushRecord = {
      accountId: 'a',
      id: 3,
      type: 'agent.command',
      agentSessionName: 'svc-proj',
      body: 'hi',
      targetComputer: null,
      clientId: 'k',
      state: 'pending',
      code: null,
      resultComputer: null,
      createdAt: 1_000,
      updatedAt: 1_000,
    };
    expect(toWirePush(record, 1_250, true)).toEqual({
      id: 3,
      type: 'agent.command',
      agentSessionName: 'svc-proj',
      body: 'hi',
      targetComputer: null,
      createdAt: 1_000,
      ageMs: 250,
      replay: true,
    });
    expect(toWirePush(record, 900, false).ageMs).toBe(0);
  });
});

describe('keyed buckets', () => {
  it('keeps one bucket per name and refills with time', () => {
    let now = 0;
    const buckets = new KeyedBuckets({ capacity: 2, refillPerSecond: 1 }, () => now);
    expect([buckets.take('a').allowed, buckets.take('a').allowed, buckets.take('a').allowed]).toEqual([
      true,
      true,
      false,
    ]);
    expect(buckets.take('b').allowed).toBe(true);
    expect(buckets.take('a').retryAfterMs).toBe(1_000);
    now += 1_000;
    expect(buckets.take('a').allowed).toBe(true);
  });
});

describe('in-process bus', () => {
  it('delivers per account, survives a throwing handler, and unsubscribes', async () => {
    const errors: unknown[] = [];
    const bus = new InProcessBus((e) => errors.push(e));
    const got: string[] = [];
    const event: BusEvent = { kind: 'computers.changed', computer: 'c_1' };
    bus.subscribe('a', () => {
      throw new Error('boom');
    });
    const off = bus.subscribe('a', (e) => got.push(`a:${e.kind}`));
    bus.subscribe('b', (e) => got.push(`b:${e.kind}`));
    await bus.publish('a', event);
    expect(got).toEqual(['a:computers.changed']);
    expect(errors).toHaveLength(1);
    off();
    await bus.publish('a', event);
    await bus.publish('nobody', event);
    expect(got).toEqual(['a:computers.changed']);
  });
});

describe('connection', () => {
  it('sends only on an open socket and cuts off a client that reads nothing', () => {
    const sent: string[] = [];
    const socket = { readyState: 1, bufferedAmount: 0, terminated: false } as MinimalSocket & {
      readyState: number;
      bufferedAmount: number;
      terminated: boolean;
    };
    socket.send = (data) => void sent.push(data);
    socket.close = () => {};
    socket.terminate = () => {
      socket.terminated = true;
    };
    const conn = new Connection(
      socket,
      { keyId: 'k', accountId: 'a', scopes: ['push:read'] },
      {
        capacity: 1,
        refillPerSecond: 1,
      },
      0,
    );
    expect(conn.send({ type: 'computers.changed', computer: 'c' })).toBe(true);
    expect(JSON.parse(sent[0] as string)).toEqual({ type: 'computers.changed', computer: 'c' });
    socket.bufferedAmount = 64 * 1024 * 1024;
    expect(conn.send({ type: 'computers.changed', computer: 'c' })).toBe(false);
    expect(socket.terminated).toBe(true);
    socket.readyState = 3;
    expect(conn.send({ type: 'computers.changed', computer: 'c' })).toBe(false);
    expect(sent).toHaveLength(1);
  });

  it('counts at most MAX_WATCHING panes as watched per connection, forgetting the oldest first', () => {
    const socket = { readyState: 1, bufferedAmount: 0, send() {}, close() {}, terminate() {} };
    const conn = new Connection(
      socket,
      { keyId: 'k', accountId: 'a', scopes: [] },
      { capacity: 1, refillPerSecond: 1 },
      0,
    );
    for (let i = 0; i < MAX_WATCHING; i++) conn.watch('c_1', `s${i}`);
    conn.watch('c_1', 's0'); // asked again: the newest now
    conn.watch('c_1', 'one more');
    expect(conn.watching.size).toBe(MAX_WATCHING);
    expect([...conn.watching.values()].map((w) => w.session).slice(0, 2)).toEqual(['s2', 's3']);
    expect([...conn.watching.values()].map((w) => w.session).slice(-2)).toEqual(['s0', 'one more']);
  });
});

describe('client frames', () => {
  it.each([
    [{ type: 'subscribe', role: 'listener', hookId: 'c_1', lastPushId: 0, version: '1.0.0' }, true],
    [{ type: 'subscribe', role: 'app' }, true],
    [{ type: 'subscribe', role: 'admin' }, false],
    [{ type: 'subscribe', role: 'listener', hookId: 'c_1', lastPushId: 1.5, version: '1' }, false],
    [{ type: 'push.result', id: 1, state: 'refused', code: 'shell_in_front' }, true],
    [{ type: 'push.result', id: 1, state: 'delivered' }, false],
    [{ type: 'listener.sessions', seq: 0, sessions: [] }, true],
    [{ type: 'hello' }, false],
    [{ type: 'subscribe', hookId: 'c_1' }, false],
    // Integers beyond 2^53 are not ids, sequence numbers or counts: Postgres's bigint would refuse them later.
    [{ type: 'push.result', id: 1e300, state: 'injected' }, false],
    [{ type: 'listener.sessions', seq: 2 ** 53, sessions: [] }, false],
    [{ type: 'listener.sessions', seq: 2 ** 53 - 1, sessions: [] }, true],
  ])('%j parses: %s', (frame, ok) => {
    expect(parseFrame(ClientFrame, JSON.stringify(frame)).ok).toBe(ok);
  });

  it.each([
    // JSON has no Infinity, but 1e999 parses to it; stored as JSON it would come back null and break every list.
    '{"type":"ping","t":1e999}',
    '{"type":"listener.sessions","seq":1,"sessions":[{"name":"a","attached":false,"createdAt":1e999,"activityAt":1,"panes":[]}]}',
  ])('refuses an infinite number: %s', (raw) => {
    const parsed = parseFrame(ClientFrame, raw);
    expect(parsed.ok ? 'parsed' : parsed.message).toMatch(/^(t|sessions\.0\.createdAt): Number must be finite$/);
  });

  it('says what was refused in one short printable line, whatever was sent', () => {
    const state = `x\n2026-11-30T00:00:00.000Z info  forged line${'y'.repeat(900_000)}`;
    const parsed = parseFrame(ClientFrame, JSON.stringify({ type: 'push.result', id: 1, state }));
    if (parsed.ok) throw new Error('parsed');
    expect(parsed.message).toMatch(
      /^state: Invalid enum value\. Expected 'injected' \| 'refused' \| 'expired', received 'x\?2026/,
    );
    expect(parsed.message.length).toBeLessThanOrEqual(MAX_ISSUE_CHARS);
    expect(parsed.message).not.toMatch(/[\n\r]/);
  });

  it.each([
    [
      { type: 'subscribe', role: 'listener', hookId: '', lastPushId: 0, version: '1' },
      'hookId: String must contain at least 1',
    ],
    [{ type: 'ping', t: 'soon' }, 't: Expected number, received string'],
    [{ type: 'listener.sessions', seq: 1, sessions: [{ name: 'x'.repeat(300) }] }, 'sessions.0.name: String must'],
    [{ type: 'hello' }, "type: Invalid discriminator value. Expected 'ping'"],
    [[1], 'frame: Expected object, received array'],
  ])('%j is refused naming where: %s', (frame, message) => {
    const parsed = parseFrame(ClientFrame, JSON.stringify(frame));
    expect(parsed.ok ? 'parsed' : parsed.message).toContain(message);
  });
});

describe('computerAway', () => {
  it.each([
    ['stopped', 'computer_offline', true],
    ['stopped', 'listener_stopping', true],
    ['stopped', 'requested', false],
    ['stopped', 'lease_expired', false],
    ['stopped', 'session_gone', false],
    ['refused', 'computer_offline', false],
    ['streaming', undefined, false],
  ] as const)('a pane.status %s (%s): the computer went away, the watch goes on: %s', (state, code, away) => {
    expect(computerAway(state, code)).toBe(away);
  });
});

describe('refusals without a key, per address', () => {
  it('spends per address, and logs a run of 429s once at its start and once per 10 s, not per request', () => {
    let t = 0;
    const lines: string[] = [];
    const log = { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), error: () => {} };
    const limiter = new RefusalLimiter({ capacity: 2, refillPerSecond: 1 }, log, () => t);
    const take = (address = 'a') => limiter.charge(address, 'http GET /x').allowed;
    expect([take(), take(), take(), take()]).toEqual([true, true, false, false]);
    expect(take('b')).toBe(true); // another address has its own bucket
    expect(lines).toEqual(['http GET /x 429 rate_limited from a: dropping requests without a valid key']);
    for (let i = 0; i < 100; i++) take();
    expect(lines).toHaveLength(1);
    t = 10_000;
    expect(take()).toBe(true);
    expect(lines[1]).toBe('102 request(s) without a valid key from a refused 429 in 10s');
    expect(lines).toHaveLength(2);
  });
});
