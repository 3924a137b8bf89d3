/**
 * One session actor (machines/session.ts) under a parent that collects its answers, on a simulated clock: the order
 * of pushes and key input when pushes wait for the agent's turn to end (`midTurn`, AgentSpec.typeAfterTurn).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type AnyActorRef, assign, createActor, fromPromise, SimulatedClock, setup, spawnChild } from 'xstate';
import type { SessionRecord } from '../../../core/protocol/index.js';
import {
  type InjectInput,
  type InjectOutput,
  type SessionEvent,
  type SessionInput,
  sessionMachine,
  type TypeKeysInput,
} from '../../../machines/session.js';

const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

const record: SessionRecord = {
  name: 'svc-proj',
  attached: false,
  createdAt: 1,
  activityAt: 1,
  state: 'working',
  agent: 'Claude Code',
  panes: [{ id: '%1', command: 'claude', path: '/work/proj', active: true }],
};

const running: AnyActorRef[] = [];
afterEach(() => {
  for (const a of running.splice(0)) a.stop();
});

function start(input: Partial<SessionInput>) {
  const typed: string[] = [];
  const session = sessionMachine.provide({
    actors: {
      inject: fromPromise<InjectOutput, InjectInput>(async ({ input }) => {
        typed.push(`push:${input.text}`);
        return { submitted: true };
      }),
      typeKeys: fromPromise<void, TypeKeysInput>(async ({ input }) => {
        typed.push(`keys:${input.keys.join('+')}`);
      }),
    },
  });
  const parent = setup({
    types: { context: {} as { answers: { type: string; state?: string; code?: string }[] } },
    actors: { session },
  }).createMachine({
    context: { answers: [] },
    entry: spawnChild('session', { id: 'session', input: { name: 'svc-proj', record, ...input } }),
    on: {
      '*': { actions: assign({ answers: ({ context, event }) => [...context.answers, event] }) },
    },
  });
  const actor = createActor(parent, { clock: new SimulatedClock() });
  running.push(actor);
  actor.start();
  const child = () => (actor.getSnapshot().children as Record<string, AnyActorRef>).session!;
  const send = (e: SessionEvent) => child().send(e);
  const answers = () => actor.getSnapshot().context.answers;
  return { typed, send, answers, child };
}

const push = (id: number, body: string): SessionEvent => ({
  type: 'PUSH',
  push: { id, body, addressedToThisComputer: true, receivedAt: 1_000 },
});
const escapeKey = (seq: number): SessionEvent => ({
  type: 'KEYS',
  keys: {
    kind: 'keys',
    ref: { deviceId: 'd_1', connection: 'c_1', seq },
    receivedAt: 1_000,
    input: { kind: 'type', keys: ['Escape'], text: '' },
  },
});

describe('pushes wait for the turn to end; key input does not', () => {
  it('Escape sent after a waiting push is typed at once; the push after the turn', async () => {
    const s = start({ midTurn: true });
    s.send(push(1, 'and then the docs'));
    s.send(escapeKey(1));
    await flush();
    expect(s.typed).toEqual(['keys:Escape']);
    expect(s.answers()).toMatchObject([{ type: 'SESSION.KEYS_RESULT', state: 'typed' }]);
    expect(s.child().getSnapshot().value).toMatchObject({ turn: 'waiting' });

    s.send({ type: 'UPDATE', record: { ...record, state: 'idle' }, midTurn: false });
    await flush();
    expect(s.typed).toEqual(['keys:Escape', 'push:and then the docs']);
    expect(s.answers().at(-1)).toMatchObject({ type: 'SESSION.RESULT', id: 1, state: 'injected' });
    expect(s.child().getSnapshot().value).toMatchObject({ turn: 'free' });
  });

  it('pushes keep their order when the turn ends as another comes', async () => {
    const s = start({ midTurn: true });
    s.send(push(1, 'one'));
    await flush();
    // the reading that ends the turn comes with the next push (each push is judged on a fresh reading)
    s.send({ type: 'UPDATE', record: { ...record, state: 'idle' }, midTurn: false });
    s.send(push(2, 'two'));
    await flush();
    expect(s.typed).toEqual(['push:one', 'push:two']);
  });

  it('no turn on screen: typed at once', async () => {
    const s = start({ midTurn: false });
    s.send(push(1, 'now'));
    await flush();
    expect(s.typed).toEqual(['push:now']);
  });
});
