/**
 * machines/paneWatch.ts with a simulated clock: a fake pane (its rows set by the test) and a fake sealer that
 * keeps the frame body readable, so what the app would receive can be checked frame by frame.
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock, setup } from 'xstate';
import type { PaneScreen } from '../../../core/panes/frames.js';
import type { FrameBody } from '../../../core/protocol/bodies.js';
import type { Envelope } from '../../../core/seal/seal.js';
import type { LogParams } from '../../../machines/log.js';
import {
  type PaneWatchOutput,
  paneWatchMachine,
  type SealFrameInput,
  type WatchFrameEvent,
} from '../../../machines/paneWatch.js';

const flush = async () => {
  for (let i = 0; i < 6; i++) await new Promise((r) => setImmediate(r));
};

function harness(leaseMs = 30_000) {
  const clock = new SimulatedClock();
  const state = {
    screen: ['› ', 'line 1'] as string[],
    width: 80,
    leases: [] as string[],
    captureFails: false,
    sealFails: false,
    frames: [] as FrameBody[],
    done: null as PaneWatchOutput | null,
    logs: [] as LogParams[],
  };
  const watch = paneWatchMachine.provide({
    actors: {
      capturePane: fromPromise<PaneScreen, { paneId: string }>(async () => {
        if (state.captureFails) throw new Error('no pane');
        return { lines: [...state.screen], width: state.width };
      }),
      sealFrame: fromPromise<Envelope, SealFrameInput>(async ({ input }) => {
        if (state.sealFails) throw new Error('bad_key');
        return { sealedFor: input.deviceId, body: input.body } as unknown as Envelope;
      }),
    },
    actions: {
      log: (_, p) => void state.logs.push(p),
      recordLease: (_, p) => void state.leases.push(`keep ${p.deviceId}/${p.session} ${p.paneId} ${p.leaseMs}`),
      forgetLease: (_, p) => void state.leases.push(`forget ${p.deviceId}/${p.session}`),
    },
  });
  const parent = setup({ actors: { watch } }).createMachine({
    invoke: {
      id: 'watch.d_1/s',
      systemId: 'watch.d_1/s',
      src: 'watch',
      input: { session: 's', deviceId: 'd_1', publicKey: 'K', connection: 'c', paneId: '%1', leaseMs },
      onDone: {
        actions: ({ event }) => {
          state.done = event.output as PaneWatchOutput;
        },
      },
    },
    on: {
      'WATCH.FRAME': {
        actions: ({ event }) => {
          const frame = (event as unknown as WatchFrameEvent).frame;
          if (frame.type === 'pane.frame') state.frames.push((frame.envelope as unknown as { body: FrameBody }).body);
        },
      },
    },
  });
  const actor = createActor(parent, { clock });
  actor.start();
  const child = () => actor.getSnapshot().children['watch.d_1/s'];
  /** Move the clock in capture-interval steps, letting each capture and seal settle. */
  const advance = async (ms: number) => {
    await flush();
    for (let t = 0; t < ms; t += 100) {
      clock.increment(Math.min(100, ms - t));
      await flush();
    }
  };
  return { state, advance, child };
}

describe('pane watch machine', () => {
  it('sends the first frame whole, then only changed rows, and nothing while the screen is still', async () => {
    const h = harness();
    await h.advance(0);
    expect(h.state.frames).toEqual([
      { session: 's', frameSeq: 0, full: true, height: 2, width: 80, rows: { 0: '› ', 1: 'line 1' } },
    ]);
    await h.advance(1_000);
    expect(h.state.frames).toHaveLength(1);
    h.state.screen = ['› ', 'line 2'];
    await h.advance(300);
    expect(h.state.frames[1]).toEqual({
      session: 's',
      frameSeq: 1,
      full: false,
      height: 2,
      width: 80,
      rows: { 1: 'line 2' },
    });
    h.state.screen = ['› typed', 'line 2'];
    await h.advance(300);
    expect(h.state.frames[2]).toMatchObject({ frameSeq: 2, full: false, rows: { 0: '› typed' } });
  });

  it('sends a whole frame of the new size when the pane is resized', async () => {
    const h = harness();
    await h.advance(0);
    h.state.width = 132;
    await h.advance(300);
    expect(h.state.frames[1]).toEqual({
      session: 's',
      frameSeq: 1,
      full: true,
      height: 2,
      width: 132,
      rows: { 0: '› ', 1: 'line 1' },
    });
    h.state.screen = ['› ', 'line 1', ''];
    await h.advance(300);
    expect(h.state.frames[2]).toMatchObject({ frameSeq: 2, full: true, height: 3, width: 132 });
  });

  it('answers a renewal with a whole frame: an app that asks again may have missed some', async () => {
    const h = harness();
    await h.advance(1_000);
    expect(h.state.frames).toHaveLength(1);
    h.child()!.send({ type: 'RENEW', leaseMs: 30_000 });
    await h.advance(300);
    expect(h.state.frames).toHaveLength(2);
    expect(h.state.frames[1]).toMatchObject({ frameSeq: 1, full: true });
  });

  it('records its lease at the start and at each renewal, and forgets it when it stops', async () => {
    const h = harness();
    await h.advance(0);
    h.child()!.send({ type: 'RENEW', leaseMs: 20_000 });
    await h.advance(0);
    h.child()!.send({ type: 'STOP' });
    await h.advance(0);
    expect(h.state.leases).toEqual(['keep d_1/s %1 30000', 'keep d_1/s %1 20000', 'forget d_1/s']);
  });

  it('keeps its lease when the listener stops (resumed after a restart within it)', async () => {
    const h = harness();
    await h.advance(0);
    h.child()!.send({ type: 'LISTENER.STOPPING' });
    await h.advance(0);
    expect(h.state.leases).toEqual(['keep d_1/s %1 30000']);
  });

  it('sends a whole frame again every fullFrame, even when nothing changed', async () => {
    const h = harness();
    await h.advance(9_900);
    expect(h.state.frames).toHaveLength(1);
    await h.advance(400);
    expect(h.state.frames).toHaveLength(2);
    expect(h.state.frames[1]).toMatchObject({ full: true, frameSeq: 1, height: 2 });
  });

  it('stops when the lease lapses, and keeps streaming while it is renewed', async () => {
    const h = harness(2_000);
    await h.advance(1_500);
    h.child()!.send({ type: 'RENEW', leaseMs: 2_000 });
    await h.advance(1_500);
    expect(h.state.done).toBeNull();
    h.child()!.send({ type: 'RENEW', leaseMs: 2_000 });
    await h.advance(1_900);
    expect(h.state.done).toBeNull();
    await h.advance(200);
    expect(h.state.done).toEqual({ session: 's', deviceId: 'd_1', connection: 'c', reason: 'lease_expired' });
    // Stopped means stopped: the screen changes, no frame follows.
    const count = h.state.frames.length;
    h.state.screen = ['changed'];
    await h.advance(1_000);
    expect(h.state.frames).toHaveLength(count);
  });

  it('drops a frame it cannot seal (never sent in the clear); the next one brings the app up to date', async () => {
    const h = harness();
    await h.advance(0);
    h.state.sealFails = true;
    h.state.screen = ['› ', 'secret'];
    await h.advance(600);
    expect(h.state.frames).toHaveLength(1);
    expect(h.state.logs.some((l) => l.level === 'warn' && /dropped: could not seal/.test(l.message))).toBe(true);
    expect(h.state.logs.some((l) => l.message.includes('secret'))).toBe(false);
    h.state.sealFails = false;
    await h.advance(300);
    expect(h.state.frames[1]).toMatchObject({ frameSeq: 1, full: false, rows: { 1: 'secret' } });
  });

  it.each([
    ['STOP', 'requested'],
    ['SESSION.GONE', 'session_gone'],
    ['LISTENER.STOPPING', 'listener_stopping'],
  ] as const)('%s stops it (%s)', async (type, reason) => {
    const h = harness();
    await h.advance(0);
    h.child()!.send({ type });
    await h.advance(0);
    expect(h.state.done?.reason).toBe(reason);
  });

  it('stops when the pane cannot be captured three times in a row', async () => {
    const h = harness();
    await h.advance(0);
    h.state.captureFails = true;
    await h.advance(650); // two failures (every paneInterval)
    expect(h.state.done).toBeNull();
    await h.advance(300);
    expect(h.state.done?.reason).toBe('session_gone');
  });
});
