/**
 * The inventory machine (machines/inventory.ts) with a simulated clock: the screen watch between the 5 s ticks
 * reports a real change within about a second, never a redraw's flicker, and the poll still catches what no look
 * announced. Screens are captured from the real Claude Code (test/fixtures/screens/A1).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock, sendTo, setup } from 'xstate';
import type { SessionRecord } from '../../../core/protocol/index.js';
import { type InventoryOutEvent, type InventoryReading, inventoryMachine } from '../../../machines/inventory.js';

const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/screens/A1/${name}.txt`, import.meta.url), 'utf8');
const WORKING = fixture('working-1');
const WORKING_2 = fixture('working-2');
const IDLE = fixture('idle-1');
const APPROVAL = fixture('awaiting_approval-1');

const claude: SessionRecord = {
  name: 'svc-proj',
  attached: false,
  createdAt: 1,
  activityAt: 1,
  panes: [{ id: '%1', command: 'claude', path: '/work/proj', active: true }],
  meta: { kind: 'agent', agent: 'A1', project: 'proj' },
};

const flush = async () => {
  for (let i = 0; i < 6; i++) await new Promise((r) => setImmediate(r));
};

function harness(opts: { watch: boolean }) {
  const clock = new SimulatedClock();
  const world = { screen: IDLE, title: 'Claude Code', readings: 0, looks: 0 };
  const reports: { at: number; state: string | undefined; reason: string }[] = [];
  const snapshots: { at: number; looked: boolean }[] = [];
  const inventory = inventoryMachine.provide({
    actors: {
      listSessions: fromPromise<InventoryReading>(async () => {
        world.readings += 1;
        const record = { ...claude, panes: [{ ...claude.panes[0]!, title: world.title }] };
        return { sessions: [record], screens: { '%1': world.screen }, takenAt: clock.now() };
      }),
      watchScreens: fromPromise<Record<string, string> | null, { panes: string[] }>(async ({ input }) => {
        if (!opts.watch) return null;
        world.looks += 1;
        return Object.fromEntries(input.panes.map((p) => [p, world.screen]));
      }),
    },
  });
  const parent = setup({
    types: { events: {} as InventoryOutEvent | { type: 'REFRESH' | 'REJECTED' | 'PERSISTED' } },
    actors: { inventory },
  }).createMachine({
    invoke: { id: 'inventory', src: 'inventory', input: { hostname: 'box' } },
    on: {
      'INVENTORY.SNAPSHOT': {
        actions: ({ event }) => snapshots.push({ at: clock.now(), looked: event.cause === 'look' }),
      },
      'INVENTORY.REPORT': {
        actions: ({ event }) =>
          reports.push({ at: clock.now(), state: event.sessions[0]?.state, reason: event.reason }),
      },
      REFRESH: { actions: sendTo('inventory', { type: 'REFRESH' }) },
      REJECTED: { actions: sendTo('inventory', { type: 'REJECTED' }) },
      PERSISTED: { actions: sendTo('inventory', { type: 'PERSISTED' }) },
    },
  });
  const actor = createActor(parent, { clock }).start();
  /** Moves the clock in 50 ms steps, letting every reading finish. */
  const advance = async (ms: number) => {
    for (let t = 0; t < ms; t += 50) {
      clock.increment(50);
      await flush();
    }
  };
  const stateAt = () => reports.at(-1)?.state;
  return { clock, world, reports, snapshots, actor, advance, stateAt };
}

/** From a settled idle Claude Code (two ticks, quiet). */
async function settledIdle(opts: { watch: boolean }) {
  const h = harness(opts);
  await flush();
  await h.advance(10_000);
  expect(h.stateAt()).toBe('idle');
  return h;
}

describe('inventory: the screen watch between ticks', () => {
  it('working reaches the report within about a second of the screen showing it, then approval, then idle', async () => {
    const h = await settledIdle({ watch: true });
    const at = (state: string) => h.reports.find((r) => r.state === state && r.at >= start)?.at;
    let start = h.clock.now();
    h.world.screen = WORKING;
    await h.advance(2_000);
    expect(at('working')! - start).toBeLessThanOrEqual(750); // 250 ms look + 250 ms to confirm, in simulated time
    start = h.clock.now();
    h.world.screen = APPROVAL;
    await h.advance(2_000);
    expect(at('awaiting_approval')! - start).toBeLessThanOrEqual(750);
    start = h.clock.now();
    h.world.screen = IDLE;
    await h.advance(3_000);
    expect(at('idle')! - start).toBeLessThanOrEqual(1_000); // idle waits for a quiet screen (500 ms)
    // readings between ticks were for looks: the scheduler is not ticked by them
    expect(h.snapshots.some((s) => s.looked)).toBe(true);
  });

  it('a redraw that shows idle for a moment never flips working', async () => {
    const h = await settledIdle({ watch: true });
    h.world.screen = WORKING;
    await h.advance(1_000);
    expect(h.stateAt()).toBe('working');
    const before = h.reports.length;
    for (let i = 0; i < 10; i++) {
      h.world.screen = IDLE; // one look and one reading see it
      await h.advance(250);
      h.world.screen = i % 2 ? WORKING : WORKING_2;
      await h.advance(250);
    }
    expect(h.reports.slice(before).map((r) => r.state)).not.toContain('idle');
    expect(h.stateAt()).toBe('working');
  });

  it('a flash of another state read twice in a row (a look, then a push’s reading) is not reported', async () => {
    const h = await settledIdle({ watch: true });
    const before = h.reports.length;
    h.world.screen = WORKING;
    await h.advance(250); // a look saw it, and its reading
    h.actor.send({ type: 'REFRESH' }); // a push arrives: a second reading at once
    await flush();
    h.world.screen = IDLE; // the redraw is over
    await h.advance(3_000);
    expect(h.reports.slice(before).map((r) => r.state)).not.toContain('working');
  });

  it('a screen that changes without pause costs at most one reading per look, and the title spinner is not reported', async () => {
    const h = await settledIdle({ watch: true });
    const readings = h.world.readings;
    const looks = h.world.looks;
    const reports = h.reports.length;
    for (let i = 0; i < 40; i++) {
      h.world.screen = i % 2 ? WORKING : WORKING_2; // a busy pane: different at every look
      h.world.title = `${'⠋⠙⠹⠸'[i % 4]} Claude Code`; // and its title animates
      await h.advance(250);
    }
    const newLooks = h.world.looks - looks;
    expect(newLooks).toBeGreaterThan(30);
    expect(h.world.readings - readings).toBeLessThanOrEqual(newLooks + 3); // + the 5 s ticks
    // working once, then nothing until a tick (the titles) or a heartbeat
    expect(h.reports.slice(reports).filter((r) => r.reason === 'change').length).toBeLessThanOrEqual(3);
  });

  it('without a cheap look (no persistent tmux client) the 5 s poll still catches the change', async () => {
    const h = await settledIdle({ watch: false });
    const start = h.clock.now();
    h.world.screen = WORKING;
    await h.advance(1_500);
    expect(h.stateAt()).toBe('idle'); // nothing announced it
    await h.advance(10_000);
    expect(h.stateAt()).toBe('working');
    expect(h.reports.find((r) => r.state === 'working')!.at - start).toBeGreaterThan(4_000);
    expect(h.world.looks).toBe(0);
  });

  it('a look never answers a push: REFRESH still counts its own readings', async () => {
    const h = await settledIdle({ watch: true });
    h.world.screen = WORKING;
    h.actor.send({ type: 'REFRESH' });
    await flush();
    const inv = h.actor.getSnapshot().children.inventory!.getSnapshot() as { context: { asked: number } };
    expect(inv.context.asked).toBe(1);
    await h.advance(2_000); // looks and readings for them
    const after = h.actor.getSnapshot().children.inventory!.getSnapshot() as { context: { asked: number } };
    expect(after.context.asked).toBe(1);
  });
});

describe('inventory: the relay rejects a report (spec 6, 7)', () => {
  it('sends the same inventory again at the next poll, once; after a kept one, a rejection is retried again', async () => {
    const h = await settledIdle({ watch: false });
    const since = (t: number) => h.reports.filter((r) => r.at > t);
    let start = h.clock.now();
    await h.advance(20_000);
    expect(since(start), 'nothing changed: nothing reported before the heartbeat').toEqual([]);

    start = h.clock.now();
    h.actor.send({ type: 'REJECTED' });
    await h.advance(5_000);
    expect(since(start).map((r) => [r.reason, r.state])).toEqual([['retry', 'idle']]);

    // rejected again: not sent every poll; the next change still goes
    start = h.clock.now();
    h.actor.send({ type: 'REJECTED' });
    await h.advance(20_000);
    expect(since(start)).toEqual([]);
    h.world.screen = APPROVAL; // confirmed by a second reading: two polls
    await h.advance(10_000);
    expect(since(start).map((r) => [r.reason, r.state])).toEqual([['change', 'awaiting_approval']]);

    // once one is kept, the next rejection is retried again
    h.actor.send({ type: 'PERSISTED' });
    start = h.clock.now();
    h.actor.send({ type: 'REJECTED' });
    await h.advance(5_000);
    expect(since(start).map((r) => r.reason)).toEqual(['retry']);
  });
});
