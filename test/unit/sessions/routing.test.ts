/** core/sessions/routing.ts: what the listener's root does with each push, pane request and opened contact, table by table. */
import { describe, expect, it } from 'vitest';
import {
  type ContactOutcome,
  type DevicePin,
  MAX_DEVICE_ACTORS,
  type PinsFile,
} from '../../../core/devices/devices.js';
import type { KeysBody, PhoneInput, PhoneRequest } from '../../../core/protocol/bodies.js';
import type { PaneRequestFrame, SessionRecord, WirePush } from '../../../core/protocol/index.js';
import { emptyLedger, LEDGER_KEEP, type Ledger } from '../../../core/sessions/ledger.js';
import {
  decideOpenedKeys,
  decideOpenedPush,
  decideOpenedWatch,
  decidePaneRequest,
  decidePush,
  keysResultFrame,
  MAX_WATCHES,
  paneStatusFrame,
  pushResultFrame,
  type RouteFacts,
  releaseHeld,
  routeToDevice,
  watchId,
} from '../../../core/sessions/routing.js';

const KEY = 'K'.repeat(87);
const pin: DevicePin = {
  deviceId: 'd_phone',
  publicKey: KEY,
  fingerprint: 'k',
  pinnedAt: 1,
  verified: true,
  lastSeq: {},
};
const pinned: PinsFile = { version: 1, devices: { d_phone: pin } };
/** As many device actors as the listener keeps, none of them `d_new`. */
const full = Array.from({ length: MAX_DEVICE_ACTORS }, (_, i) => `d_${i}`);

const record = (name: string, panes: SessionRecord['panes'] = [{ id: '%3', command: 'claude', active: true }]) => ({
  name,
  attached: false,
  createdAt: 1,
  activityAt: 1,
  panes,
});

function facts(over: Partial<RouteFacts> = {}): RouteFacts {
  return {
    ledger: emptyLedger(),
    replayWindowMs: 120_000,
    pins: { version: 1, devices: {} },
    pinsUnreadable: false,
    devices: [],
    sessions: { 'svc-proj': record('svc-proj') },
    watches: {},
    ...over,
  };
}

function push(over: Partial<WirePush> = {}): WirePush {
  return {
    id: 5,
    type: 'agent.command',
    agentSessionName: 'svc-proj',
    body: 'run the tests',
    targetComputer: null,
    createdAt: 0,
    ageMs: 10,
    replay: false,
    ...over,
  };
}
const sealedFrom = (from: unknown) => push({ body: '', sealed: { from, ct: 'x' } });

describe('routeToDevice', () => {
  it.each([
    ['a malformed device id', 'bad/id', [], { kind: 'refuse', code: 'bad_seal' }],
    ['a device with an actor', 'd_phone', ['d_phone'], { kind: 'contact', deviceId: 'd_phone', spawn: false }],
    ['a new device while there is room', 'd_new', ['d_phone'], { kind: 'contact', deviceId: 'd_new', spawn: true }],
    ['a new device when the actors are all taken', 'd_new', full, { kind: 'refuse', code: 'subscriber_unverified' }],
    ['a device with an actor when all are taken', 'd_0', full, { kind: 'contact', deviceId: 'd_0', spawn: false }],
  ] as const)('%s', (_, deviceId, devices, expected) => {
    expect(routeToDevice(deviceId, devices)).toEqual(expected);
  });
});

describe('decidePush', () => {
  const ledger = (entries: Ledger['entries'], lastPushId = 5): Ledger => ({ lastPushId, entries });
  it.each([
    ['not an agent.command', push({ type: 'note' }), facts(), { kind: 'ignore' }],
    [
      'typed before',
      push(),
      facts({ ledger: ledger({ '5': { state: 'injected' } }) }),
      { kind: 'resend', state: 'injected' },
    ],
    [
      'refused before',
      push(),
      facts({ ledger: ledger({ '5': { state: 'refused', code: 'shell_in_front' } }) }),
      { kind: 'resend', state: 'refused', code: 'shell_in_front' },
    ],
    [
      // a start settles the claims of the listener before it: a claim is this one's, in hand (waiting for its turn)
      'claimed and not answered yet: a copy sent again is dropped',
      push(),
      facts({ ledger: ledger({ '5': { state: 'claimed' } }) }),
      { kind: 'inHand' },
    ],
    [
      'older than the ledger keeps',
      push(),
      facts({ ledger: ledger({}, 5 + LEDGER_KEEP) }),
      { kind: 'resend', state: 'expired' },
    ],
    ['older than the replay window', push({ ageMs: 120_001 }), facts(), { kind: 'expire' }],
    [
      'for a session name tmux cannot have',
      push({ agentSessionName: 'svc proj;rm' }),
      facts(),
      { kind: 'refuse', code: 'invalid_target' },
    ],
    ['plaintext, nothing pinned', push(), facts(), { kind: 'hold' }],
    ['plaintext once a device is pinned', push(), facts({ pins: pinned }), { kind: 'refuse', code: 'e2ee_required' }],
    [
      'plaintext while devices.json cannot be read',
      push(),
      facts({ pinsUnreadable: true }),
      { kind: 'refuse', code: 'e2ee_required' },
    ],
    ['sealed with no sender', sealedFrom(undefined), facts(), { kind: 'refuse', code: 'bad_seal' }],
    ['sealed by a malformed sender id', sealedFrom('bad/id'), facts(), { kind: 'refuse', code: 'bad_seal' }],
    [
      'sealed by a new device when the device actors are all taken',
      sealedFrom('d_new'),
      facts({ devices: full }),
      { kind: 'claimThenRefuse', code: 'subscriber_unverified' },
    ],
  ] as const)('%s', (_, p, f, expected) => {
    expect(decidePush(p, 1_000, f)).toEqual(expected);
  });

  it.each([
    ['a device with an actor', ['d_phone'], false],
    ['a new device', [], true],
  ] as const)('sends a sealed push from %s to its device actor, even once pinned', (_, devices, spawn) => {
    const p = sealedFrom('d_phone');
    expect(decidePush(p, 1_000, facts({ devices, pins: pinned }))).toEqual({
      kind: 'contact',
      deviceId: 'd_phone',
      spawn,
      contact: { ref: { kind: 'push', push: p, receivedAt: 1_000 }, purpose: 'agent.command', envelope: p.sealed },
    });
  });
});

describe('decidePaneRequest', () => {
  const asker = { session: 'svc-proj', deviceId: 'd_phone', connection: 'c1' };
  const envelope = (from: string) => ({ from, ct: 'x' });
  const watch = (over: Partial<PaneRequestFrame> = {}) =>
    ({ type: 'pane.watch', ...asker, envelope: envelope('d_phone'), ...over }) as PaneRequestFrame;
  const keys = (over: Partial<PaneRequestFrame> = {}) =>
    ({ type: 'pane.keys', ...asker, envelope: envelope('d_phone'), ...over }) as PaneRequestFrame;
  const stop = (over: Partial<PaneRequestFrame> = {}) => ({ type: 'pane.stop', ...asker, ...over }) as PaneRequestFrame;
  const live = { [watchId('d_phone', 'svc-proj')]: asker };

  it.each([
    ['pane.stop from a connection without a device', stop({ deviceId: null }), facts({ watches: live }), 'ignore'],
    ['pane.stop for no live pane', stop(), facts(), 'ignore'],
    ['pane.watch from a connection without a device', watch({ deviceId: null }), facts(), 'e2ee_required'],
    ['pane.keys from a connection without a device', keys({ deviceId: null }), facts(), 'e2ee_required'],
    ['pane.watch sealed by another device', watch({ envelope: envelope('d_other') }), facts(), 'bad_seal'],
    ['pane.keys sealed by another device', keys({ envelope: envelope('d_other') }), facts(), 'bad_seal'],
    ['a malformed device id', watch({ deviceId: 'bad/id', envelope: envelope('bad/id') }), facts(), 'bad_seal'],
    ['a new device when the actors are all taken', keys(), facts({ devices: full }), 'subscriber_unverified'],
  ] as const)('%s', (_, frame, f, expected) => {
    const d = decidePaneRequest(frame, 1_000, f);
    expect(d).toEqual(expected === 'ignore' ? { kind: 'ignore' } : { kind: 'refuse', code: expected });
  });

  it('stops the live pane that pane.stop names', () => {
    expect(decidePaneRequest(stop(), 1_000, facts({ watches: live }))).toEqual({
      kind: 'stop',
      watchId: 'watch.d_phone/svc-proj',
    });
  });

  it('sends pane.watch and pane.keys to the device actor, keys with their arrival time', () => {
    expect(decidePaneRequest(watch(), 1_000, facts({ devices: ['d_phone'] }))).toEqual({
      kind: 'contact',
      deviceId: 'd_phone',
      spawn: false,
      contact: {
        ref: { kind: 'watch', session: 'svc-proj', connection: 'c1' },
        purpose: 'pane.watch',
        envelope: envelope('d_phone'),
      },
    });
    expect(decidePaneRequest(keys(), 1_000, facts())).toEqual({
      kind: 'contact',
      deviceId: 'd_phone',
      spawn: true,
      contact: {
        ref: { kind: 'keys', session: 'svc-proj', connection: 'c1', receivedAt: 1_000 },
        purpose: 'pane.keys',
        envelope: envelope('d_phone'),
      },
    });
  });
});

const refused = (code: 'bad_seal' | 'replayed' | 'subscriber_unverified', message = 'why') =>
  ({ accepted: false, code, message }) as const;

describe('decideOpenedPush', () => {
  const accepted = (session: string): ContactOutcome<'agent.command'> => ({
    accepted: true,
    body: { text: 'sealed text', seq: 1, sentAt: 0, session },
    publicKey: KEY,
  });
  const p = sealedFrom('d_phone');

  it.each([
    ['its device refused', refused('replayed', 'stamp 1 again'), { code: 'replayed', message: 'stamp 1 again' }],
    [
      'its device refused, at length',
      refused('bad_seal', 'x'.repeat(300)),
      { code: 'bad_seal', message: 'x'.repeat(200) },
    ],
    ['sealed for another session', accepted('svc-other'), { code: 'bad_seal', message: 'sealed for another session' }],
  ] as const)('refuses a push %s', (_, outcome, expected) => {
    expect(decideOpenedPush(p, outcome)).toEqual({ kind: 'refuse', ...expected });
  });

  it('holds the push with its opened text as the body', () => {
    expect(decideOpenedPush(p, accepted('svc-proj'))).toEqual({
      kind: 'hold',
      push: { ...p, body: 'sealed text', sealed: undefined },
    });
  });
});

describe('decideOpenedWatch', () => {
  const ref = { kind: 'watch', session: 'svc-proj', connection: 'c1' } as const;
  const accepted = (session = 'svc-proj'): ContactOutcome<'pane.watch'> => ({
    accepted: true,
    body: { session, seq: 1, leaseMs: 30_000 },
    publicKey: KEY,
  });
  const others = Object.fromEntries(Array.from({ length: MAX_WATCHES }, (_, i) => [watchId('d_x', `s${i}`), {}]));
  const noPanes = { 'svc-proj': record('svc-proj', []) };

  it.each([
    ['its device refused', refused('subscriber_unverified'), facts(), 'subscriber_unverified', 'why'],
    ['sealed for another session', accepted('svc-other'), facts(), 'bad_seal', 'sealed for another session'],
    ['for a session tmux does not show', accepted(), facts({ sessions: {} }), 'session_not_found', undefined],
    ['for a session without a pane', accepted(), facts({ sessions: noPanes }), 'session_not_found', undefined],
    ['beyond the most live panes', accepted(), facts({ watches: others }), 'rate_limited', 'too many live panes'],
  ] as const)('refuses a watch %s', (_, outcome, f, code, message) => {
    expect(decideOpenedWatch(ref, 'd_phone', outcome, f)).toEqual({ kind: 'refuse', code, message });
  });

  it('renews the live pane this device already has, even when the most are live', () => {
    const watches = { ...others, [watchId('d_phone', 'svc-proj')]: {} };
    expect(decideOpenedWatch(ref, 'd_phone', accepted(), facts({ watches }))).toEqual({
      kind: 'renew',
      watchId: 'watch.d_phone/svc-proj',
      leaseMs: 30_000,
    });
  });

  it('starts a live pane on the active pane, sealed for the key the device actor accepted', () => {
    const sessions = {
      'svc-proj': record('svc-proj', [
        { id: '%1', command: 'bash', active: false },
        { id: '%2', command: 'claude', active: true },
      ]),
    };
    expect(decideOpenedWatch(ref, 'd_phone', accepted(), facts({ sessions }))).toEqual({
      kind: 'watch',
      watchId: 'watch.d_phone/svc-proj',
      paneId: '%2',
      publicKey: KEY,
      leaseMs: 30_000,
    });
  });
});

const CHUNK = { id: '0123456789abcdef', name: 'a.txt', size: 1, sha256: 'a'.repeat(64), offset: 0, data: 'YQ' };

describe('decideOpenedKeys', () => {
  const ref = { kind: 'keys', session: 'svc-proj', connection: 'c1', receivedAt: 1_000 } as const;
  const accepted = (body: { session?: string; keys?: string[]; text?: string }): ContactOutcome<'pane.keys'> => ({
    accepted: true,
    body: { session: 'svc-proj', seq: 4, ...body },
    publicKey: KEY,
  });

  it.each([
    ['its device refused (no stamp known)', refused('replayed'), { code: 'replayed', seq: null, message: 'why' }],
    [
      'sealed for another session',
      accepted({ session: 'svc-other', text: 'x' }),
      { code: 'bad_seal', seq: 4, message: 'sealed for another session' },
    ],
    ['naming a key outside the list', accepted({ keys: ['Enter', 'F13'] }), { code: 'bad_key_name', seq: 4 }],
  ] as const)('refuses key input %s', (_, outcome, expected) => {
    expect(decideOpenedKeys(ref, 'd_phone', outcome)).toEqual({ kind: 'refuse', ...expected });
  });

  it.each<[string, { keys?: string[]; text?: string }, string, string[]]>([
    ['text and keys', { text: 'abc', keys: ['Enter'] }, 'abc', ['Enter']],
    ['keys only', { keys: ['C-c'] }, '', ['C-c']],
    ['text only', { text: 'y' }, 'y', []],
  ])('holds %s for the session, stamped for the answer', (_, body, text, keys) => {
    expect(decideOpenedKeys(ref, 'd_phone', accepted(body))).toEqual({
      kind: 'hold',
      keys: {
        kind: 'keys',
        ref: { deviceId: 'd_phone', connection: 'c1', seq: 4 },
        receivedAt: 1_000,
        input: { kind: 'type', keys, text },
      },
    });
  });
  const request = (r: PhoneRequest): PhoneInput => ({ kind: 'request', request: r });
  it.each<[string, Partial<KeysBody>, PhoneInput]>([
    ['End', { control: 'end' }, { kind: 'control', action: 'end' }],
    ['Force end', { control: 'kill' }, { kind: 'control', action: 'kill' }],
    [
      'an answer',
      { answer: { fingerprint: 'f'.repeat(16), choice: 1 } },
      { kind: 'answer', fingerprint: 'f'.repeat(16), choice: 1 },
    ],
    [
      'keys seen over a prompt',
      { keys: ['Down'], fingerprint: 'f'.repeat(16) },
      { kind: 'type', keys: ['Down'], text: '', fingerprint: 'f'.repeat(16) },
    ],
    ['resume', { control: 'resume' }, request({ kind: 'past', action: 'resume' })],
    ['forget', { control: 'forget' }, request({ kind: 'past', action: 'forget' })],
    [
      'a schedule',
      { schedule: { action: 'rm', id: 'a1b2c3' } },
      request({ kind: 'schedule', request: { action: 'rm', id: 'a1b2c3' } }),
    ],
    ['a file view', { file: { op: 'list' } }, request({ kind: 'file', request: { op: 'list' } })],
    ['a chunk of a file', { transfer: CHUNK }, request({ kind: 'transfer', chunk: CHUNK })],
    ['a new session', { launch: { op: 'options' } }, request({ kind: 'launch', request: { op: 'options' } })],
  ])('decodes %s once into what it asks: typed through the session, or a request for the IO side', (_, body, input) => {
    const d = decideOpenedKeys(ref, 'd_phone', {
      accepted: true,
      body: { session: 'svc-proj', seq: 4, ...body } as KeysBody,
      publicKey: KEY,
    });
    expect(d.kind).toBe('hold');
    expect(d.kind === 'hold' ? d.keys.input : null).toEqual(input);
  });
});

describe('releaseHeld', () => {
  const held = [
    { session: 'svc-a', ask: 1 },
    { session: 'svc-gone', ask: 2 },
    { session: 'svc-a', ask: 3 },
    { session: 'svc-b', ask: 2 },
  ];
  const sessions = { 'svc-a': {}, 'svc-b': {} };

  it.each([
    ['a reading older than all of it', 0, [], [0, 1, 2, 3]],
    ['a reading that answers the first', 1, [[0, true]], [1, 2, 3]],
    [
      'a reading that answers the first two',
      2,
      [
        [0, true],
        [1, false],
        [3, true],
      ],
      [2],
    ],
    [
      'a reading newer than all of it',
      9,
      [
        [0, true],
        [1, false],
        [2, true],
        [3, true],
      ],
      [],
    ],
  ] as const)('%s: releases in order, found or not, and keeps the rest', (_, answers, released, waiting) => {
    expect(releaseHeld(held, answers, sessions)).toEqual({
      waiting: waiting.map((i) => held[i]),
      released: released.map(([i, found]) => ({ held: held[i], found })),
    });
  });
});

describe('answers to the relay', () => {
  const to = { session: 'svc-proj', deviceId: null, connection: 'c0' };
  it.each([
    [paneStatusFrame(to, 'streaming'), { type: 'pane.status', ...to, state: 'streaming' }],
    [
      paneStatusFrame(to, 'refused', 'e2ee_required'),
      { type: 'pane.status', ...to, state: 'refused', code: 'e2ee_required' },
    ],
    [
      keysResultFrame(to, 'refused', 'bad_seal'),
      { type: 'keys.result', ...to, seq: null, state: 'refused', code: 'bad_seal' },
    ],
    [keysResultFrame(to, 'typed', undefined, 3), { type: 'keys.result', ...to, seq: 3, state: 'typed' }],
    [pushResultFrame(4, 'expired'), { type: 'push.result', id: 4, state: 'expired' }],
    [
      pushResultFrame(4, 'refused', 'inject_failed', 'why'),
      { type: 'push.result', id: 4, state: 'refused', code: 'inject_failed', message: 'why' },
    ],
  ])('%j', (frame, expected) => {
    expect(frame).toEqual(expected);
  });
});
