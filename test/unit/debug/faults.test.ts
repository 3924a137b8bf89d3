/**
 * The test-only switch SVC_FAULT (actors/debug/faults.ts): what it accepts, where it is honoured, and that the
 * children it names really fail (in an action, an invoked promise, a callback actor) while others do not.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type AnyActorRef, createActor, fromCallback, fromPromise, setup } from 'xstate';
import {
  createFaults,
  type FaultRule,
  faultsAllowed,
  faultsFromEnv,
  InjectedFault,
  parseFaults,
} from '../../../actors/debug/faults.js';

const rules = (text: string) => (parseFaults(text) as { rules: FaultRule[] }).rules;

describe('SVC_FAULT', () => {
  it.each([
    ['action:session.svc-a', [{ kind: 'action', id: 'session.svc-a', prefix: false, always: false }]],
    ['promise:watch.*!', [{ kind: 'promise', id: 'watch.', prefix: true, always: true }]],
    [
      'callback:pinsWatch, action:device.d_1',
      [
        { kind: 'callback', id: 'pinsWatch', prefix: false, always: false },
        { kind: 'action', id: 'device.d_1', prefix: false, always: false },
      ],
    ],
  ])('reads %s', (text, expected) => {
    expect(parseFaults(text)).toEqual({ rules: expected });
  });

  it.each(['throw:session.a', 'action:', 'action:a*b', 'action:session a', 'action'])('refuses %s', (text) => {
    expect(parseFaults(text)).toHaveProperty('error');
  });

  it('is honoured only where the package has its tests (a source checkout), and says so', () => {
    const root = mkdtempSync(join(tmpdir(), 'svc-faults-'));
    expect(faultsAllowed(root)).toBe(false);
    mkdirSync(join(root, 'test', 'fakes'), { recursive: true });
    writeFileSync(join(root, 'test', 'fakes', 'fakeModel.ts'), '');
    expect(faultsAllowed(root)).toBe(true);
    expect(faultsAllowed()).toBe(true); // this checkout

    const said: string[] = [];
    const say = (_: string, m: string) => said.push(m);
    expect(faultsFromEnv({ SVC_FAULT: 'action:session.a' }, say, false).rules).toEqual([]);
    expect(faultsFromEnv({ SVC_FAULT: 'nonsense' }, say, true).rules).toEqual([]);
    expect(faultsFromEnv({}, say, true).rules).toEqual([]);
    expect(faultsFromEnv({ SVC_FAULT: 'action:session.a' }, say, true).rules).toHaveLength(1);
    expect(said).toEqual([
      'SVC_FAULT ignored: it is a test switch, honoured only in a source checkout of svc',
      'SVC_FAULT ignored: "nonsense" is not <action|promise|callback>:<actor id>[!]',
      'SVC_FAULT: injecting failures (action:session.a); a test switch, never for real use',
    ]);
  });

  // a parent spawning two children of one machine, which log on PING and invoke a promise and a callback on WORK
  const child = setup({
    actions: { note: (_, _p: { what: string }) => {} },
    actors: { job: fromPromise(async () => 'done'), tick: fromCallback(() => () => {}) },
  }).createMachine({
    initial: 'idle',
    states: {
      idle: {
        on: { PING: { actions: { type: 'note', params: { what: 'ping' } } }, WORK: 'working', LISTEN: 'listening' },
      },
      working: { invoke: { src: 'job', onDone: 'idle', onError: 'failed' } },
      listening: { invoke: { src: 'tick' } },
      failed: {},
    },
  });
  const family = (text: string) => {
    const faults = createFaults(rules(text));
    const noted: string[] = [];
    const kid = child.provide({
      actions: { note: ({ self }) => noted.push(self.id) },
      actors: {
        job: faults.promise(fromPromise(async () => 'done')),
        tick: faults.callback(fromCallback(() => () => {})),
      },
    });
    const errors: string[] = [];
    const parent = setup({ actors: faults.children({ kid }) }).createMachine({
      invoke: [
        { id: 'kid.a', systemId: 'kid.a', src: 'kid' },
        { id: 'kid.b', systemId: 'kid.b', src: 'kid' },
      ],
      on: {
        'xstate.error.actor.*': {
          actions: ({ event }) => errors.push((event as unknown as { error: Error }).error.message),
        },
      },
    });
    const actor = createActor(parent).start();
    const kids = () => actor.getSnapshot().children as Record<string, AnyActorRef | undefined>;
    const send = (id: string, type: string) => kids()[id]!.send({ type });
    const status = (id: string) => kids()[id]?.getSnapshot().status;
    const value = (id: string) => kids()[id]?.getSnapshot().value;
    return { send, status, value, noted, errors };
  };
  const settle = () => new Promise((r) => setTimeout(r, 10));

  it('action: the named child throws in its own action once; the other child and later runs are untouched', () => {
    const f = family('action:kid.a');
    f.send('kid.b', 'PING');
    f.send('kid.a', 'PING');
    expect(f.status('kid.a')).toBe('error');
    expect(f.errors).toEqual(['SVC_FAULT: injected action failure in kid.a']);
    expect(f.noted).toEqual(['kid.b']);
    f.send('kid.b', 'PING');
    expect(f.noted).toEqual(['kid.b', 'kid.b']);
  });

  it('action with !: every run throws, for every child the prefix names', () => {
    const f = family('action:kid.*!');
    f.send('kid.a', 'PING');
    f.send('kid.b', 'PING');
    expect([f.status('kid.a'), f.status('kid.b')]).toEqual(['error', 'error']);
    expect(f.noted).toEqual([]);
  });

  it('promise: the promise the named child invokes rejects (its machine handles that), the other resolves', async () => {
    const f = family('promise:kid.b');
    f.send('kid.a', 'WORK');
    f.send('kid.b', 'WORK');
    await settle();
    expect(f.value('kid.a')).toBe('idle');
    expect(f.value('kid.b')).toBe('failed');
  });

  it('callback: the callback actor the named child runs throws as it starts', async () => {
    const f = family('callback:kid.a');
    f.send('kid.a', 'LISTEN');
    f.send('kid.b', 'LISTEN');
    await settle();
    expect(f.status('kid.a')).toBe('error');
    expect(f.status('kid.b')).toBe('active');
    expect(f.errors).toEqual(['SVC_FAULT: injected callback failure in kid.a']);
    expect(new InjectedFault('callback', 'x')).toBeInstanceOf(Error);
  });
});
