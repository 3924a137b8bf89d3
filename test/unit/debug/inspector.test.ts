/**
 * actors/debug/inspector.ts: the live actor tree and the transitions, fed by XState's inspection API while the real
 * machines run on fakes. Nothing secret may come out of it: not the key, not a push body.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type AnyActorRef, createActor, fromCallback, fromPromise, SimulatedClock, setup, spawnChild } from 'xstate';
import { createInspector, genericSummary } from '../../../actors/debug/inspector.js';
import { actorRows, formatStateValue } from '../../../core/daemon/control.js';
import type { RelayFrame, SessionRecord } from '../../../core/protocol/index.js';
import { emptyLedger } from '../../../core/sessions/ledger.js';
import { inventoryMachine } from '../../../machines/inventory.js';
import { listenerMachine } from '../../../machines/listener.js';
import type { RelayLinkEvent, RelaySocketCommand, RelaySocketInput } from '../../../machines/relayLink.js';
import { relayLinkMachine } from '../../../machines/relayLink.js';
import type { InjectInput, InjectOutput } from '../../../machines/session.js';
import { sessionMachine } from '../../../machines/session.js';
import { sessionsMachine } from '../../../machines/sessions.js';

const KEY = 'svc_key_SECRET-KEY-123';
const BODY = 'TOP-SECRET-BODY please rm -rf';

const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

const record = (name: string): SessionRecord => ({
  name,
  attached: false,
  createdAt: 1,
  activityAt: 1,
  panes: [{ id: '%1', command: 'cat', path: `/work/${name}`, active: true }],
});

// Every listener a test starts runs on a simulated clock (no real timer fires behind the test's back) and is stopped
// after it.
const running: AnyActorRef[] = [];
afterEach(() => {
  for (const actor of running.splice(0)) actor.stop();
});

function harness(capacity?: number) {
  const inspector = createInspector({ capacity, now: () => 1_000 });
  let sendBack: ((e: RelayLinkEvent) => void) | null = null;
  let finishInject: (() => void) | null = null;
  const state = { sessions: [record('svc-proj'), record('svc-other')] };
  const machine = listenerMachine.provide({
    actors: {
      relayLink: relayLinkMachine.provide({
        actors: {
          relaySocket: fromCallback<RelaySocketCommand, RelaySocketInput>(({ sendBack: sb }) => {
            sendBack = sb as (e: RelayLinkEvent) => void;
            return () => {};
          }),
        },
      }),
      inventory: inventoryMachine.provide({
        actors: {
          listSessions: fromPromise(async () => ({ sessions: state.sessions, screens: {}, takenAt: 0 })),
        },
      }),
      sessions: sessionsMachine.provide({
        actors: {
          session: sessionMachine.provide({
            actors: {
              inject: fromPromise<InjectOutput, InjectInput>(
                () => new Promise((resolve) => (finishInject = () => resolve({ submitted: true }))),
              ),
            },
          }),
        },
      }),
    },
  });
  const actor = createActor(machine, {
    input: {
      hookId: 'c_me',
      wsUrl: 'ws://relay.example:8787/ws',
      apiKey: KEY,
      version: '0.1.0',
      ledger: emptyLedger(),
      replayWindowMs: 120_000,
    },
    inspect: inspector.inspect,
    clock: new SimulatedClock(),
  });
  running.push(actor);
  actor.start();
  const frame = (f: RelayFrame) => sendBack!({ type: 'SOCKET.FRAME', frame: f, receivedAt: Date.now() });
  return {
    actor,
    inspector,
    state,
    finishInject: () => finishInject?.(),
    online: async () => {
      sendBack!({ type: 'SOCKET.OPEN' });
      frame({
        type: 'subscribed',
        role: 'listener',
        computer: 'c_me',
        replayed: 0,
        expired: 0,
        replayWindowMs: 120_000,
      });
      await flush();
    },
    push: (id: number) =>
      frame({
        type: 'push.new',
        push: {
          id,
          type: 'agent.command',
          agentSessionName: 'svc-proj',
          body: BODY,
          targetComputer: null,
          createdAt: 0,
          ageMs: 10,
          replay: false,
        },
      }),
  };
}

describe('inspector', () => {
  it('does not show an actor that threw, nor one it made in the step it threw in (never started)', () => {
    const inspector = createInspector();
    const grand = setup({}).createMachine({ id: 'grand' });
    const child = setup({
      actors: { grand },
      actions: {
        boom: () => {
          throw new Error('a bug');
        },
      },
    }).createMachine({ id: 'kid', on: { BOOM: { actions: [spawnChild('grand', { id: 'g' }), 'boom'] } } });
    const parent = setup({ actors: { child } }).createMachine({
      id: 'boss',
      invoke: { id: 'kid', src: 'child' },
      on: { 'xstate.error.actor.kid': {} },
    });
    const actor = createActor(parent, { inspect: inspector.inspect }).start();
    expect(inspector.actors().map((a) => a.id)).toEqual(['boss', 'kid']);
    actor.getSnapshot().children.kid?.send({ type: 'BOOM' });
    expect(inspector.actors().map((a) => a.id)).toEqual(['boss']);
    actor.stop();
  });

  it('keeps the live tree: one actor per session, each with its machine, state and summary', async () => {
    const h = harness();
    await h.online();
    const actors = h.inspector.actors();
    const ids = actors.map((a) => a.id);
    expect(ids).toEqual(
      expect.arrayContaining(['listener', 'relay', 'inventory', 'session.svc-proj', 'session.svc-other']),
    );
    const session = actors.find((a) => a.id === 'session.svc-proj')!;
    expect(session.machine).toBe('session');
    expect(formatStateValue(session.value)).toBe(
      'attachment.detached, agent.unknown, remote.local, approval.none, turn.free, delivery.ready',
    );
    expect(session.summary).toMatchObject({ attached: false, foreground: 'cat', queued: 0, typing: null });
    const relay = actors.find((a) => a.id === 'relay')!;
    expect(formatStateValue(relay.value)).toBe('connection.online.watchdog.quiet, connection.online.results.waiting');
    expect(relay.summary).toMatchObject({ relay: 'relay.example:8787', attempt: 0 });
    const root = actors.find((a) => a.id === 'listener')!;
    expect(root.parent).toBeNull();
    // a session's actor is its supervisor's child, the supervisor the root's (machines/sessions.ts)
    const sessions = actors.find((a) => a.id === 'sessions')!;
    expect(sessions.parent).toBe(root.key);
    expect(session.parent).toBe(sessions.key);
    // the socket callback actor is there, without a machine
    expect(actors.find((a) => a.id === 'socket')).toMatchObject({ machine: null, value: null });
    const rows = actorRows(actors);
    expect(rows[0]!.actor.id).toBe('listener');
    expect(rows.find((r) => r.actor.id === 'socket')!.depth).toBe(2);
  });

  it('records transitions by event type: a push moves its session from ready to injecting and back', async () => {
    const h = harness();
    await h.online();
    h.push(7);
    await flush();
    const moved = h.inspector.recent().filter((t) => t.actor === 'session.svc-proj' && t.event === 'PUSH');
    expect(moved).toHaveLength(1);
    expect(formatStateValue(moved[0]!.from)).toContain('delivery.ready');
    expect(formatStateValue(moved[0]!.to)).toContain('delivery.injecting');
    expect(moved[0]!.summary).toMatchObject({ typing: 7 });
    const seen: string[] = [];
    const unsubscribe = h.inspector.subscribe((t) => seen.push(`${t.actor} ${t.event}`));
    h.finishInject();
    await flush();
    unsubscribe();
    expect(seen.some((s) => s.startsWith('session.svc-proj xstate.done.actor.'))).toBe(true);
    const seqs = h.inspector.recent().map((t) => t.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  it('never shows the key or a push body', async () => {
    const h = harness();
    await h.online();
    h.push(8);
    await flush();
    const everything = JSON.stringify([h.inspector.actors(), h.inspector.recent()]);
    expect(everything).not.toContain('SECRET');
    expect(everything).not.toContain('rm -rf');
  });

  it('drops an actor when it stops, and records the stop', async () => {
    const h = harness();
    await h.online();
    h.state.sessions = [record('svc-proj')];
    h.actor.getSnapshot().children.inventory?.send({ type: 'REFRESH' });
    await flush();
    expect(h.inspector.actors().map((a) => a.id)).not.toContain('session.svc-other');
    const stop = h.inspector.recent().find((t) => t.actor === 'session.svc-other' && t.status === 'stopped');
    expect(stop?.event).toBe('xstate.stop');
  });

  it('keeps only the newest transitions', async () => {
    const h = harness(5);
    await h.online();
    expect(h.inspector.recent()).toHaveLength(5);
    expect(h.inspector.recent(2)).toHaveLength(2);
    expect(h.inspector.recent(0)).toEqual([]);
  });

  it('summarises an unknown machine by its numbers, flags and list sizes only', () => {
    expect(genericSummary({ n: 1, ok: true, text: 'secret', list: [1, 2], nested: { a: 1 } })).toEqual({
      n: 1,
      ok: true,
      list: 2,
    });
  });
});
