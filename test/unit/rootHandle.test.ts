/** The one way IO code reaches the listener's root (actors/rootHandle.ts): nothing before it runs, then its events. */
import { describe, expect, it } from 'vitest';
import { createRootHandle } from '../../actors/rootHandle.js';

describe('root handle', () => {
  it('drops events and refuses frames before the root runs; then sends both, and says when no relay link is up', () => {
    const handle = createRootHandle();
    expect(handle.context()).toBeNull();
    expect(handle.toRelay({ type: 'ask.closed', id: 'a1', state: 'expired' })).toBe(false);
    handle.send({ type: 'STOP' }); // nothing to tell yet: no throw

    const told: unknown[] = [];
    const toRelay: unknown[] = [];
    let relayUp = true;
    const root = {
      send: (e: unknown) => told.push(e),
      getSnapshot: () => ({ context: { online: true } }),
      system: {
        get: (id: string) => (id === 'relay' && relayUp ? { send: (e: unknown) => toRelay.push(e) } : undefined),
      },
    };
    handle.attach(root as never);
    handle.send({ type: 'STOP' });
    expect(told).toEqual([{ type: 'STOP' }]);
    expect(handle.context()).toEqual({ online: true });
    const frame = { type: 'ask.closed', id: 'a1', state: 'expired' } as const;
    expect(handle.toRelay(frame)).toBe(true);
    expect(toRelay).toEqual([{ type: 'SEND', frame }]);
    relayUp = false;
    expect(handle.toRelay(frame)).toBe(false);
  });

  it("merges the root's records with each supervisor's; one that is off shows the records it kept last", () => {
    const handle = createRootHandle();
    const record = (givenUp: boolean) => ({ family: 'session', at: [1], error: 'Error: x', retryAt: null, givenUp });
    const live: Record<string, { getSnapshot(): { context: unknown } }> = {
      devices: { getSnapshot: () => ({ context: { failures: { 'device.d_1': record(false) } } }) },
    };
    const root = {
      getSnapshot: () => ({
        context: {
          supervision: { sessions: record(true) },
          inherited: { sessions: { 'session.a': record(true) }, devices: { 'device.old': record(false) } },
        },
      }),
      system: { get: (id: string) => live[id] },
    };
    handle.attach(root as never);
    expect(Object.keys(handle.failures()).sort()).toEqual(['device.d_1', 'session.a', 'sessions']);
  });
});
