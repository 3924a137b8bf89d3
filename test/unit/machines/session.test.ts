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
  const clock = new SimulatedClock();
  /** While set, typing waits for it (what comes while something is typed). */
  let typing: Promise<void> | null = null;
  const session = sessionMachine.provide({
    actors: {
      inject: fromPromise<InjectOutput, InjectInput>(async ({ input }) => {
        if (typing) await typing;
        typed.push(`push:${input.text}`);
        return { submitted: true };
      }),
      typeKeys: fromPromise<void, TypeKeysInput>(async ({ input }) => {
        if (typing) await typing;
        typed.push(`keys:${input.keys.join('+')}`);
      }),
    },
  });
  const parent = setup({
    types: { context: {} as { answers: { type: string; state?: string; code?: string }[] } },
    actors: { session },
  }).createMachine({
    context: { answers: [] },
    entry: spawnChild('session', {
      id: 'session',
      input: { name: 'svc-proj', record, now: () => clock.now(), ...input },
    }),
    on: {
      '*': { actions: assign({ answers: ({ context, event }) => [...context.answers, event] }) },
    },
  });
  const actor = createActor(parent, { clock });
  running.push(actor);
  actor.start();
  const child = () => (actor.getSnapshot().children as Record<string, AnyActorRef>).session!;
  const send = (e: SessionEvent) => child().send(e);
  const answers = () => actor.getSnapshot().context.answers;
  const hold = () => {
    let release = () => {};
    typing = new Promise<void>((r) => {
      release = () => {
        typing = null;
        r();
      };
    });
    return release;
  };
  return { typed, send, answers, child, clock, hold };
}

const push = (id: number, body: string, typeBy?: number): SessionEvent => ({
  type: 'PUSH',
  push: { id, body, addressedToThisComputer: true, receivedAt: 0, ...(typeBy === undefined ? {} : { typeBy }) },
});
const reading = (midTurn: boolean, more: Partial<Extract<SessionEvent, { type: 'UPDATE' }>> = {}): SessionEvent => ({
  type: 'UPDATE',
  record: { ...record, state: midTurn ? 'working' : 'idle' },
  midTurn,
  ...more,
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

    s.send(reading(false));
    await flush();
    expect(s.typed).toEqual(['keys:Escape', 'push:and then the docs']);
    expect(s.answers().at(-1)).toMatchObject({ type: 'SESSION.RESULT', id: 1, state: 'injected' });
    expect(s.child().getSnapshot().value).toMatchObject({ turn: 'free' });
  });

  it('pushes keep their order when the turn ends while key input is typed and another push comes', async () => {
    const s = start({ midTurn: true });
    s.send(push(1, 'one'));
    await flush();
    expect(s.typed).toEqual([]);
    // Escape is being typed when the second push comes (queued behind it) and the turn ends
    const release = s.hold();
    s.send(escapeKey(1));
    await flush();
    s.send(push(2, 'two'));
    s.send(reading(false));
    release();
    await flush();
    expect(s.typed).toEqual(['keys:Escape', 'push:one', 'push:two']);
  });

  it('each parked push keeps its own time through a turn after a turn (the relay gives up at a fixed time)', async () => {
    const s = start({ midTurn: true });
    s.send(push(1, 'one', 100_000));
    s.send(push(2, 'two', 100_000));
    await flush();
    s.clock.increment(50_000);
    // the turn is over: the first is typed and starts a turn of its own, read while it is typed
    const release = s.hold();
    s.send(reading(false));
    await flush();
    s.send(reading(true));
    release();
    await flush();
    expect(s.typed).toEqual(['push:one']);
    expect(s.child().getSnapshot().value).toMatchObject({ turn: 'waiting' });
    s.clock.increment(49_000);
    await flush();
    expect(s.typed).toEqual(['push:one']);
    s.clock.increment(1_000);
    await flush();
    expect(s.typed).toEqual(['push:one', 'push:two']);
  });

  it('an approval prompt in the turn keeps them waiting; its answer passes; typed when the turn is over', async () => {
    const s = start({ midTurn: true });
    s.send(push(1, 'after the command'));
    await flush();
    s.send(reading(false, { approvalOnScreen: true }));
    s.send(escapeKey(1));
    await flush();
    expect(s.typed).toEqual(['keys:Escape']);
    expect(s.answers()).toMatchObject([{ type: 'SESSION.KEYS_RESULT', state: 'typed' }]);
    s.send(reading(true));
    await flush();
    expect(s.typed).toEqual(['keys:Escape']);
    s.send(reading(false));
    await flush();
    expect(s.typed).toEqual(['keys:Escape', 'push:after the command']);
  });

  it('the first time to be over counts, from a push parked later too (one the relay sent late)', async () => {
    const s = start({ midTurn: true });
    s.send(push(10, 'new', 120_000));
    await flush();
    // an older one, sent late: what was left of its window is 5 s
    s.send(push(9, 'old', 5_000));
    await flush();
    s.clock.increment(4_000);
    await flush();
    expect(s.typed).toEqual([]);
    s.clock.increment(1_000);
    await flush();
    expect(s.typed).toEqual(['push:new', 'push:old']);
  });

  it('a screen that cannot be read keeps them waiting (a prompt could be up unseen)', async () => {
    const s = start({ midTurn: true });
    s.send(push(1, 'later'));
    await flush();
    s.send(reading(false, { screenUnreadable: true }));
    await flush();
    expect(s.typed).toEqual([]);
    s.send(reading(false));
    await flush();
    expect(s.typed).toEqual(['push:later']);
  });

  it('a push that would be refused is refused at once, not after the turn', async () => {
    const s = start({ midTurn: true });
    s.send(push(1, ''));
    await flush();
    expect(s.answers()).toMatchObject([{ type: 'SESSION.RESULT', id: 1, state: 'refused', code: 'empty_body' }]);
  });

  it('no turn on screen: typed at once', async () => {
    const s = start({ midTurn: false });
    s.send(push(1, 'now'));
    await flush();
    expect(s.typed).toEqual(['push:now']);
  });
});
