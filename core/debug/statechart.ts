/**
 * Statecharts you can see (DESIGN.md): a machine definition → a chart model (plain JSON, also what `svc debug ui`
 * draws) → Mermaid `stateDiagram-v2` text and the Markdown pages of `docs/statecharts/`.
 *
 * Everything is read from the definition itself (`machine.root`: state nodes, their `transitions`, `always`,
 * `invoke`), in definition order, so the same code always gives the same bytes. Only types come from xstate.
 */
import type { AnyStateMachine, AnyStateNode } from 'xstate';

export type ChartStateType = 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
export type ChartTransitionKind = 'event' | 'after' | 'always' | 'done' | 'error';

export interface ChartTransition {
  /** What the chart shows: `PUSH`, `after heartbeat`, `done: inject`, `always`. */
  event: string;
  kind: ChartTransitionKind;
  /** State ids (`session.delivery.ready`); empty: handled without leaving the state (actions only). */
  targets: string[];
  /** By name: `isAttached`, `!readsApproval`, `inline` for an unnamed function. */
  guard: string | null;
  reenter: boolean;
}

export interface ChartState {
  /** xstate's id: the machine id and the path, dotted (`session.delivery.ready`). */
  id: string;
  key: string;
  type: ChartStateType;
  /** The key of the initial child (compound states). */
  initial: string | null;
  description: string | null;
  /** The actors invoked while in this state, by source name. */
  invokes: string[];
  transitions: ChartTransition[];
  children: ChartState[];
}

export interface ChartModel {
  machine: string;
  root: ChartState;
}

/** What machines/index.ts says of each machine. */
export interface MachineEntry {
  /** The machine's id; its chart is `<name>.md`. */
  name: string;
  /** Where it is defined, relative to the repository (`machines/session.ts`). */
  file: string;
  machine: AnyStateMachine;
  /** How its actors are named in a running listener (`session.<name>`). */
  actorId: string;
  /** One line: what it is. */
  summary: string;
}

// ---------------------------------------------------------------------------
// Definition → model

function guardName(guard: unknown): string | null {
  if (guard === undefined || guard === null) return null;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const inner = (guard as { guards?: unknown[] }).guards;
    const name = (guard as { name?: string }).name;
    if (Array.isArray(inner)) {
      const parts = inner.map((g) => guardName(g) ?? 'inline');
      if (name === 'not') return `!${parts[0]}`;
      if (name === 'and') return parts.join(' && ');
      if (name === 'or') return parts.join(' || ');
    }
    return 'inline';
  }
  if (typeof guard === 'object' && 'type' in guard) return String((guard as { type: unknown }).type);
  return 'inline';
}

function srcName(src: unknown): string {
  return typeof src === 'string' ? src : 'inline';
}

interface RawTransition {
  eventType: string;
  target?: readonly AnyStateNode[] | undefined;
  guard?: unknown;
  reenter: boolean;
  delay?: unknown;
}

function toTransition(node: AnyStateNode, t: RawTransition, always = false): ChartTransition {
  const targets = (t.target ?? []).map((s) => s.id);
  const guard = guardName(t.guard);
  const base = { targets, guard, reenter: t.reenter };
  if (always) return { event: 'always', kind: 'always', ...base };
  const type = t.eventType;
  if (type.startsWith('xstate.after.')) {
    const delay = typeof t.delay === 'number' ? `${t.delay} ms` : String(t.delay ?? type.split('.')[2]);
    return { event: `after ${delay}`, kind: 'after', ...base };
  }
  for (const [prefix, kind] of [
    ['xstate.done.actor.', 'done'],
    ['xstate.error.actor.', 'error'],
  ] as const) {
    if (!type.startsWith(prefix)) continue;
    const invokeId = type.slice(prefix.length);
    const invoke = node.invoke.find((i) => i.id === invokeId);
    return { event: `${kind}: ${invoke ? srcName(invoke.src) : invokeId}`, kind, ...base };
  }
  if (type.startsWith('xstate.done.state.')) return { event: 'done', kind: 'done', ...base };
  return { event: type, kind: 'event', ...base };
}

function toState(node: AnyStateNode): ChartState {
  const transitions: ChartTransition[] = [];
  for (const list of node.transitions.values()) {
    for (const t of list) transitions.push(toTransition(node, t as unknown as RawTransition));
  }
  for (const t of node.always ?? []) transitions.push(toTransition(node, t as unknown as RawTransition, true));
  const initial = node.type === 'compound' ? (node.initial?.target?.[0]?.key ?? null) : null;
  return {
    id: node.id,
    key: node.key,
    type: node.type,
    initial,
    description: node.description ?? null,
    invokes: node.invoke.map((i) => srcName(i.src)),
    transitions,
    children: Object.values(node.states as Record<string, AnyStateNode>).map(toState),
  };
}

export function chartModel(machine: AnyStateMachine): ChartModel {
  return { machine: machine.id, root: toState(machine.root) };
}

/** Every state of the model, depth first in definition order. */
export function allStates(model: ChartModel): ChartState[] {
  const out: ChartState[] = [];
  const walk = (s: ChartState) => {
    out.push(s);
    for (const c of s.children) walk(c);
  };
  walk(model.root);
  return out;
}

// ---------------------------------------------------------------------------
// Model → Mermaid

/** `[guard]` after the event; Mermaid reads `;` and `#` specially in labels, so they are replaced. */
export function transitionLabel(t: ChartTransition): string {
  const label = t.guard ? `${t.event} [${t.guard}]` : t.event;
  return label.replace(/[;#]/g, ' ').replace(/"/g, "'");
}

function mermaidIds(model: ChartModel): Map<string, string> {
  const ids = new Map<string, string>();
  const used = new Set<string>();
  for (const s of allStates(model)) {
    const base = s.id.replace(/[^A-Za-z0-9_]/g, '_');
    let id = base;
    for (let n = 2; used.has(id); n++) id = `${base}_${n}`;
    used.add(id);
    ids.set(s.id, id);
  }
  return ids;
}

function stateLabel(s: ChartState): string {
  const label = s.invokes.length > 0 ? `${s.key} (invokes ${s.invokes.join(', ')})` : s.key;
  return label.replace(/"/g, "'");
}

/** Strict ancestors of a state, nearest first. */
function ancestors(id: string, parents: Map<string, ChartState | null>): string[] {
  const out: string[] = [];
  for (let p = parents.get(id) ?? null; p; p = parents.get(p.id) ?? null) out.push(p.id);
  return out;
}

/** The id of the block that holds a transition: the deepest state strictly containing its source and targets. */
function blockOf(source: string, targets: string[], parents: Map<string, ChartState | null>): string {
  const targetAncestors = targets.map((t) => ancestors(t, parents));
  return ancestors(source, parents).find((a) => targetAncestors.every((list) => list.includes(a))) ?? '';
}

/**
 * Mermaid `stateDiagram-v2`. The machine is one outer composite state; regions of a parallel state are split with
 * `--`; each transition is written in the block of the deepest state that holds both its ends, after the states
 * of that block are declared (Mermaid would otherwise create a state where it is first named). Transitions
 * without a target (actions only) are listed on the chart's page instead, not drawn.
 */
export function chartMermaid(model: ChartModel): string {
  const ids = mermaidIds(model);
  const parents = new Map<string, ChartState | null>();
  const byId = new Map<string, ChartState>();
  const walk = (s: ChartState, parent: ChartState | null) => {
    parents.set(s.id, parent);
    byId.set(s.id, s);
    for (const c of s.children) walk(c, s);
  };
  walk(model.root, null);

  // transitions by the block that holds them ('' is the diagram's top level)
  const edges = new Map<string, string[]>();
  for (const s of byId.values()) {
    for (const t of s.transitions) {
      if (t.targets.length === 0) continue;
      const key = blockOf(s.id, t.targets, parents);
      const list = edges.get(key) ?? [];
      for (const target of t.targets) list.push(`${ids.get(s.id)} --> ${ids.get(target)} : ${transitionLabel(t)}`);
      edges.set(key, list);
    }
  }

  const lines: string[] = ['stateDiagram-v2'];
  const emit = (s: ChartState, depth: number) => {
    const pad = '  '.repeat(depth);
    const id = ids.get(s.id)!;
    if (s.children.length === 0) {
      lines.push(`${pad}state "${stateLabel(s)}" as ${id}`);
      return;
    }
    lines.push(`${pad}state "${stateLabel(s)}" as ${id} {`);
    const inner = '  '.repeat(depth + 1);
    if (s.type === 'parallel') {
      s.children.forEach((c, i) => {
        if (i > 0) lines.push(`${inner}--`);
        emit(c, depth + 1);
      });
    } else {
      const initial = s.children.find((c) => c.key === s.initial);
      if (initial) lines.push(`${inner}[*] --> ${ids.get(initial.id)}`);
      for (const c of s.children) emit(c, depth + 1);
      for (const c of s.children) if (c.type === 'final') lines.push(`${inner}${ids.get(c.id)} --> [*]`);
    }
    // A parallel state's own block would put these lines into its last region: they go one level up instead.
    if (s.type !== 'parallel') for (const e of edges.get(s.id) ?? []) lines.push(`${inner}${e}`);
    lines.push(`${pad}}`);
    if (s.type === 'parallel') for (const e of edges.get(s.id) ?? []) lines.push(`${pad}${e}`);
  };
  emit(model.root, 1);
  for (const e of edges.get('') ?? []) lines.push(`  ${e}`);
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------------------
// The actor tree, from the definitions

export interface TreeChild {
  /** The name the parent's `setup({ actors })` gives it. */
  name: string;
  relation: 'invokes' | 'spawns';
  /** The invoke ids (`relay`), or the spawned actors' id pattern from its entry (`session.<name>`). */
  actorId: string;
  /** The machine's name when it is one of the listed machines; null for promise/callback logic. */
  machine: string | null;
}

/** The invoke ids of each source, read from the definition (ids xstate made up, `0.inventory.poll…`, are left out). */
function invokeIds(machine: AnyStateMachine): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const walk = (node: AnyStateNode) => {
    for (const i of node.invoke) {
      const src = srcName(i.src);
      const list = out.get(src) ?? [];
      const id = String(i.id);
      if (!/^\d+\./.test(id) && !list.includes(id)) list.push(id);
      out.set(src, list);
    }
    for (const c of Object.values(node.states as Record<string, AnyStateNode>)) walk(c);
  };
  walk(machine.root);
  return out;
}

/**
 * What each machine starts: the actors its `setup({ actors })` names, `invokes` when a state invokes that name,
 * `spawns` otherwise (spawned from actions: `spawnChild('session', …)`).
 */
export function actorChildren(entry: MachineEntry, entries: readonly MachineEntry[]): TreeChild[] {
  const actors = (entry.machine.implementations.actors ?? {}) as Record<string, unknown>;
  const ids = invokeIds(entry.machine);
  return Object.entries(actors).map(([name, logic]) => {
    const child = entries.find(
      (e) => e.machine === logic || (isMachine(logic) && (logic as AnyStateMachine).id === e.machine.id),
    );
    const relation = ids.has(name) ? 'invokes' : 'spawns';
    const invokeId = (ids.get(name) ?? []).join(', ');
    const actorId = relation === 'invokes' ? invokeId || name : (child?.actorId ?? name);
    return { name, relation, actorId, machine: child?.name ?? null };
  });
}

export function isMachine(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    'root' in value &&
    'config' in value &&
    typeof (value as { provide?: unknown }).provide === 'function' &&
    typeof (value as { transition?: unknown }).transition === 'function'
  );
}

/** The tree as text lines, from the root (the first entry no other entry starts). */
export function actorTreeLines(entries: readonly MachineEntry[]): string[] {
  const started = new Set<string>();
  for (const e of entries) for (const c of actorChildren(e, entries)) if (c.machine) started.add(c.machine);
  const roots = entries.filter((e) => !started.has(e.name));
  const rows: [string, string][] = [];
  const visit = (entry: MachineEntry, label: string, prefix: string, seen: Set<string>) => {
    rows.push([label, `${entry.name}${roots.includes(entry) ? ' (root)' : ''}`]);
    const children = actorChildren(entry, entries);
    children.forEach((c, i) => {
      const last = i === children.length - 1;
      const branch = `${prefix}${last ? '└── ' : '├── '}`;
      const next = `${prefix}${last ? '    ' : '│   '}`;
      const childEntry = c.machine ? entries.find((e) => e.name === c.machine) : undefined;
      if (childEntry && !seen.has(childEntry.name)) {
        visit(childEntry, `${branch}${c.actorId}`, next, new Set([...seen, childEntry.name]));
      } else {
        rows.push([`${branch}${c.actorId}`, `${c.relation === 'invokes' ? 'invoked' : 'spawned'} ${c.name} (logic)`]);
      }
    });
  };
  for (const r of roots) visit(r, r.actorId, '', new Set([r.name]));
  const width = Math.max(...rows.map(([l]) => [...l].length)) + 2;
  return rows.map(([l, r]) => `${l}${' '.repeat(width - [...l].length)}${r}`);
}

// ---------------------------------------------------------------------------
// Pages

export const GENERATED_MARK = '<!-- Generated by `npm run charts` from the machine definitions: do not edit. -->';

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const rel = (id: string, machine: string) => (id === machine ? '(machine)' : id.slice(machine.length + 1));

export function chartPage(entry: MachineEntry, model: ChartModel): string {
  const out: string[] = [GENERATED_MARK, '', `# ${entry.name}`, '', `${entry.summary}`, ''];
  out.push(`Defined in [\`${entry.file}\`](../../${entry.file}); running actors are named \`${entry.actorId}\`.`);
  out.push('', '```mermaid', chartMermaid(model).trimEnd(), '```', '');
  const states = allStates(model);
  const described = states.filter((s) => s.description);
  if (described.length > 0) {
    out.push('## States', '', '| state | what it means |', '| --- | --- |');
    for (const s of described) out.push(`| \`${rel(s.id, model.machine)}\` | ${cell(s.description!)} |`);
    out.push('');
  }
  const internal = states.flatMap((s) =>
    s.transitions.filter((t) => t.targets.length === 0).map((t) => [s, t] as const),
  );
  if (internal.length > 0) {
    out.push('## Handled without a change of state', '', '| in | event | guard |', '| --- | --- | --- |');
    for (const [s, t] of internal)
      out.push(`| \`${rel(s.id, model.machine)}\` | \`${cell(t.event)}\` | ${t.guard ? `\`${cell(t.guard)}\`` : ''} |`);
    out.push('');
  }
  const impl = entry.machine.implementations;
  const names = (o: Record<string, unknown> | undefined) => Object.keys(o ?? {});
  out.push('## Named implementations', '', '| kind | names |', '| --- | --- |');
  out.push(`| actors | ${names(impl.actors).join(', ') || '-'} |`);
  out.push(`| guards | ${names(impl.guards).join(', ') || '-'} |`);
  out.push(`| delays | ${names(impl.delays).join(', ') || '-'} |`);
  out.push(`| actions | ${names(impl.actions).join(', ') || '-'} |`);
  out.push('');
  return out.join('\n');
}

export function indexPage(entries: readonly MachineEntry[]): string {
  const out: string[] = [GENERATED_MARK, '', '# Statecharts', ''];
  out.push('One chart per machine in `machines/`, generated from the definitions by `npm run charts`; `npm test`');
  out.push('fails when a chart here no longer matches its machine. A running listener shows the same charts live:');
  out.push('`svc debug ui` (and `svc debug state`, `svc debug events`).', '');
  out.push('## The actor tree', '', '```', ...actorTreeLines(entries), '```', '');
  out.push('```mermaid', 'flowchart TD');
  for (const e of entries) out.push(`  ${e.name}["${e.actorId}<br/>${e.name}"]`);
  for (const e of entries) {
    for (const c of actorChildren(e, entries)) {
      if (c.machine) out.push(`  ${e.name} -->|${c.relation}| ${c.machine}`);
    }
  }
  out.push('```', '', '## Machines', '', '| chart | actors | what it is |', '| --- | --- | --- |');
  for (const e of entries) out.push(`| [${e.name}](${e.name}.md) | \`${e.actorId}\` | ${cell(e.summary)} |`);
  out.push('');
  return out.join('\n');
}

/** Every file of `docs/statecharts/`, by file name, in a fixed order. */
export function renderCharts(entries: readonly MachineEntry[]): Map<string, string> {
  const files = new Map<string, string>();
  files.set('index.md', indexPage(entries));
  for (const e of entries) files.set(`${e.name}.md`, chartPage(e, chartModel(e.machine)));
  return files;
}
