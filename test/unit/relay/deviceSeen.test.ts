/** relay-server/deviceSeen.ts: when each device was last seen, written to the store at most once a minute. */
import { describe, expect, it } from 'vitest';
import { DeviceSeen, SEEN_EVERY_MS } from '../../../relay-server/deviceSeen.js';

function tracker() {
  const writes: [string, number][] = [];
  const warnings: string[] = [];
  let now = 1_000_000;
  let fail = false;
  const seen = new DeviceSeen(
    {
      deviceSeen: async (id, at) => {
        if (fail) throw new Error('disk full');
        writes.push([id, at]);
      },
    },
    { warn: (m) => warnings.push(m) },
    () => now,
  );
  return {
    seen,
    writes,
    warnings,
    advance: (ms: number) => {
      now += ms;
    },
    failing: () => {
      fail = true;
    },
  };
}

describe('DeviceSeen', () => {
  it('writes a device once a minute however often its token comes; each device on its own', () => {
    const t = tracker();
    for (let i = 0; i < 50; i++) t.seen.seen({ deviceId: 'd_1' });
    t.seen.seen({ deviceId: 'd_2' });
    t.advance(SEEN_EVERY_MS - 1);
    t.seen.seen({ deviceId: 'd_1' });
    t.advance(1);
    t.seen.seen({ deviceId: 'd_1' });
    expect(t.writes).toEqual([
      ['d_1', 1_000_000],
      ['d_2', 1_000_000],
      ['d_1', 1_000_000 + SEEN_EVERY_MS],
    ]);
  });

  it('always writes a socket opening or closing; a key of no device (a computer’s API key) is never written', () => {
    const t = tracker();
    t.seen.seen({ deviceId: 'd_1' });
    t.advance(5);
    t.seen.seen({ deviceId: 'd_1' }, true);
    t.seen.seen({});
    t.seen.seen({ deviceId: null });
    expect(t.writes).toEqual([
      ['d_1', 1_000_000],
      ['d_1', 1_000_005],
    ]);
  });

  it('a failed write is a warning, never the request’s failure', async () => {
    const t = tracker();
    t.failing();
    expect(() => t.seen.seen({ deviceId: 'd_1' })).not.toThrow();
    await new Promise((r) => setImmediate(r));
    expect(t.warnings).toEqual(['device d_1: when it was last seen was not kept: disk full']);
  });
});
