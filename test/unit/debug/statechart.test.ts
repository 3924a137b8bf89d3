/** core/debug/statechart.ts: machine definitions → chart models, Mermaid, pages, the actor tree. */

import { describe, expect, it } from 'vitest';
import { and, assign, fromPromise, not, setup } from 'xstate';
import {
  actorChildren,
  actorTreeLines,
  allStates,
  chartMermaid,
  chartModel,
  type MachineEntry,
  renderCharts,
} from '../../../core/debug/statechart.js';
import { MACHINES } from '../../../machines/index.js';

const toy = setup({
  types: { context: {} as { n: number }, events: {} as { type: 'GO' } | { type: 'BACK' } | { type: 'TICK' } },
  actors: { work: fromPromise(async () => 1) },
  guards: { ready: () => true, calm: () => true },
  delays: { pause: 1000 },
}).createMachine({
  id: 'toy',
  context: { n: 0 },
  initial: 'idle',
  states: {
    idle: {
      description: 'Nothing to do.',
      on: {
        GO: [
          { guard: and(['ready', not('calm')]), target: 'busy' },
          { guard: 'ready', target: 'busy' },
        ],
        TICK: { actions: assign({ n: ({ context }) => context.n + 1 }) },
        BACK: { guard: ({ context }) => context.n > 1, target: 'idle', reenter: true },
      },
    },
    busy: {
      type: 'parallel',
      states: {
        left: {
          initial: 'a',
          states: {
            a: { invoke: { src: 'work', onDone: 'b', onError: '#toy.failed' } },
            b: { after: { pause: 'a', 250: 'c' } },
            c: { always: { guard: 'calm', target: '#toy.done' } },
          },
        },
        right: { initial: 'x', states: { x: {} } },
      },
    },
    failed: {},
    done: { type: 'final' },
  },
});

describe('chartModel', () => {
  const model = chartModel(toy);
  const byId = new Map(allStates(model).map((s) => [s.id, s]));

  it('names guards, delays, invokes and eventless transitions as the definition does', () => {
    const idle = byId.get('toy.idle')!;
    expect(idle.description).toBe('Nothing to do.');
    expect(idle.transitions.map((t) => [t.event, t.guard, t.targets])).toEqual([
      ['GO', 'ready && !calm', ['toy.busy']],
      ['GO', 'ready', ['toy.busy']],
      ['TICK', null, []],
      ['BACK', 'inline', ['toy.idle']],
    ]);
    expect(byId.get('toy.busy.left.a')!.transitions.map((t) => t.event)).toEqual(['done: work', 'error: work']);
    expect(byId.get('toy.busy.left.a')!.invokes).toEqual(['work']);
    expect(byId.get('toy.busy.left.b')!.transitions.map((t) => [t.event, t.kind])).toEqual([
      // JavaScript puts integer keys first in an object, whatever the order they were written in
      ['after 250 ms', 'after'],
      ['after pause', 'after'],
    ]);
    expect(byId.get('toy.busy.left.c')!.transitions[0]).toMatchObject({ event: 'always', guard: 'calm' });
    expect(byId.get('toy.busy')!.type).toBe('parallel');
    expect(model.root.initial).toBe('idle');
  });

  it('writes Mermaid: regions split with --, initial and final markers, edges in the block holding both ends', () => {
    const text = chartMermaid(model);
    expect(text.startsWith('stateDiagram-v2\n')).toBe(true);
    expect(text).toContain('state "busy" as toy_busy {');
    expect(text).toMatch(/as toy_busy_left \{[\s\S]*\n\s+--\n\s+state "right" as toy_busy_right/);
    expect(text).toContain('[*] --> toy_idle');
    expect(text).toContain('toy_done --> [*]');
    expect(text).toContain('toy_idle --> toy_busy : GO [ready && !calm]');
    expect(text).toContain('toy_busy_left_b --> toy_busy_left_a : after pause');
    expect(text).toContain('toy_busy_left_a --> toy_busy_left_b : done: work');
    expect(text).toContain('state "a (invokes work)" as toy_busy_left_a');
    // a transition without a target (actions only) is not drawn
    expect(text).not.toContain('TICK');
    // an edge leaving the parallel state is declared at the top level, after every state it names
    const lines = text.split('\n');
    const edge = lines.findIndex((l) => l.includes('toy_busy_left_c --> toy_done'));
    expect(edge).toBeGreaterThan(lines.findIndex((l) => l.includes('as toy_done')));
  });
});

describe('the machines of machines/index.ts', () => {
  it('are listed once each, by their own id', () => {
    const names = MACHINES.map((e) => e.name);
    expect(new Set(names).size).toBe(names.length);
    for (const e of MACHINES) expect(e.machine.id).toBe(e.name);
  });

  it.each(MACHINES.map((e) => [e.name, e] as const))(
    '%s: every state, named guard and delay is on its chart',
    (_, e) => {
      const model = chartModel(e.machine);
      const text = chartMermaid(model);
      for (const s of allStates(model)) expect(text).toContain(`as ${s.id.replace(/[^A-Za-z0-9_]/g, '_')}`);
      const drawn = allStates(model).flatMap((s) => s.transitions.filter((t) => t.targets.length > 0));
      for (const t of drawn) if (t.guard) expect(text).toContain(`[${t.guard}]`);
      for (const t of drawn) if (t.kind === 'after') expect(text).toContain(t.event);
      // braces balance, and every edge names declared states
      expect(text.split('{').length).toBe(text.split('}').length);
      const declared = new Set([...text.matchAll(/ as (\w+)/g)].map((m) => m[1]));
      for (const m of text.matchAll(/^\s*(\w+) --> (\w+) :/gm)) {
        expect(declared.has(m[1]!)).toBe(true);
        expect(declared.has(m[2]!)).toBe(true);
      }
    },
  );

  it('shows named delays as `after <name>` and parallel regions', () => {
    const inventory = chartMermaid(chartModel(MACHINES.find((e) => e.name === 'inventory')!.machine));
    expect(inventory).toContain(': after heartbeat');
    expect(inventory).toContain(': after inventoryPoll');
    expect(inventory).toMatch(/\n\s+--\n/);
    const session = chartMermaid(chartModel(MACHINES.find((e) => e.name === 'session')!.machine));
    expect(session).toContain('UPDATE [readsApproval]');
    expect(session.match(/\n\s+--\n/g)?.length).toBe(5);
    expect(session).toContain(': after turnWait');
  });

  it('derives the actor tree from the definitions: the root invokes the link, the inventory and the supervisors, spawns the rest', () => {
    const listener = MACHINES.find((e) => e.name === 'listener')!;
    const children = actorChildren(listener, MACHINES);
    const of = (machine: string) => children.find((c) => c.machine === machine);
    expect(of('relayLink')).toMatchObject({ relation: 'invokes', actorId: 'relay' });
    expect(of('inventory')).toMatchObject({ relation: 'invokes', actorId: 'inventory' });
    expect(of('sessions')).toMatchObject({ relation: 'invokes', actorId: 'sessions' });
    expect(of('devices')).toMatchObject({ relation: 'invokes', actorId: 'devices' });
    expect(of('worktrees')).toMatchObject({ relation: 'invokes', actorId: 'worktrees' });
    expect(of('asks')).toMatchObject({ relation: 'invokes', actorId: 'asks' });
    // a supervisor's children are its own
    const sessions = MACHINES.find((e) => e.name === 'sessions')!;
    expect(actorChildren(sessions, MACHINES).find((c) => c.machine === 'session')).toMatchObject({
      relation: 'spawns',
      actorId: 'session.<name>',
    });
    const worktrees = MACHINES.find((e) => e.name === 'worktrees')!;
    expect(actorChildren(worktrees, MACHINES).find((c) => c.machine === 'worktree')).toMatchObject({
      relation: 'spawns',
      actorId: 'worktree.<repo>-wt-<slug>',
    });
    const lines = actorTreeLines(MACHINES);
    expect(lines[0]).toMatch(/^listener\s+listener \(root\)$/);
    expect(lines.some((l) => /^│ {3}└── socket\s+invoked relaySocket/.test(l))).toBe(true);
  });

  it('renders the same bytes every time, whatever implementations are provided', () => {
    const first = renderCharts(MACHINES);
    const provided: MachineEntry[] = MACHINES.map((e) => ({ ...e, machine: e.machine.provide({}) }));
    expect([...renderCharts(MACHINES)]).toEqual([...first]);
    expect([...renderCharts(provided)]).toEqual([...first]);
    expect([...first.keys()]).toEqual(['index.md', ...MACHINES.map((e) => `${e.name}.md`)]);
  });
});
