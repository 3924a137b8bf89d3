/**
 * The house's layers, read from the code (docs/architecture.md "Where the code lives"): no import circle anywhere,
 * type imports included, and no import from a lower layer into a higher one. `core/protocol/` is the bottom of the
 * wire: it imports only itself and the sealing primitives below it. A new circle or an upward import fails here,
 * naming the files.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const LAYERS = ['core', 'machines', 'actors', 'cli', 'relay-server'] as const;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'static' || name === 'dist') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** What a file imports, as written (type imports and re-exports too). */
const specifiers = (file: string): string[] =>
  ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);

/** Every file's imports within the repository (type imports and re-exports too), as paths from its root. */
function importGraph(): Map<string, string[]> {
  const files = LAYERS.flatMap((l) => sources(join(ROOT, l)));
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = specifiers(file)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => resolve(dirname(file), spec.replace(/\.js$/, '.ts')))
      .filter((target) => known.has(target))
      .map((target) => relative(ROOT, target));
    graph.set(relative(ROOT, file), [...new Set(targets)]);
  }
  return graph;
}

/** Every import of a package whose name matches `pattern` (type imports and re-exports too), as `file: spec`. */
function importersOf(pattern: RegExp): string[] {
  return LAYERS.flatMap((l) => sources(join(ROOT, l))).flatMap((file) =>
    specifiers(file)
      .filter((spec) => pattern.test(spec))
      .map((spec) => `${relative(ROOT, file)}: ${spec}`),
  );
}

/** Every import of one of `specs` that brings a value (`import type` and type-only names left out), as `file: spec`. */
function valueImportersOf(specs: readonly string[]): string[] {
  return LAYERS.flatMap((l) => sources(join(ROOT, l))).flatMap((file) => {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
    return source.statements.flatMap((s) => {
      if (!ts.isImportDeclaration(s)) return [];
      const spec = (s.moduleSpecifier as ts.StringLiteral).text;
      if (!specs.includes(spec)) return [];
      const clause = s.importClause;
      const names = clause?.namedBindings;
      const value =
        !clause || // `import 'node:http'` runs it
        (!clause.isTypeOnly &&
          (!!clause.name || !names || ts.isNamespaceImport(names) || names.elements.some((e) => !e.isTypeOnly)));
      return value ? [`${relative(ROOT, file)}: ${spec}`] : [];
    });
  });
}

/** The strongly connected groups of more than one file (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1) found.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

/** What each layer may import besides itself (a file in `core/` may import only `core/`, …). */
const MAY_IMPORT: Record<(typeof LAYERS)[number], readonly string[]> = {
  core: [],
  machines: ['core'],
  actors: ['core', 'machines'],
  cli: ['core', 'machines', 'actors', 'relay-server'],
  'relay-server': ['core', 'actors'],
};
const layerOf = (file: string) => file.split('/')[0] as (typeof LAYERS)[number];

describe('the import graph', () => {
  const graph = importGraph();

  it('reads the whole repository', () => {
    expect(graph.size).toBeGreaterThan(250);
    expect(graph.get('core/protocol/frames.ts')).toContain('core/protocol/askFrames.ts');
  });

  it('has no circle, type imports included', () => {
    expect(circles(graph)).toEqual([]);
  });

  it('finds a circle when there is one (the check itself)', () => {
    const withCircle = new Map(graph);
    withCircle.set('core/protocol/codes.ts', [...(graph.get('core/protocol/codes.ts') ?? []), 'core/mcp/ask.ts']);
    expect(circles(withCircle).flat()).toContain('core/protocol/codes.ts');
  });

  it('never imports upward: core from nothing above it, machines from core only, …', () => {
    const upward = [...graph].flatMap(([file, targets]) =>
      targets
        .filter((t) => layerOf(t) !== layerOf(file) && !MAY_IMPORT[layerOf(file)].includes(layerOf(t)))
        .map((t) => `${file} → ${t}`),
    );
    expect(upward).toEqual([]);
  });

  it('keeps core/protocol/ at the bottom: it imports only itself and the sealing primitives', () => {
    const allowed = (t: string) =>
      t.startsWith('core/protocol/') || t === 'core/seal/envelopeSchema.ts' || t === 'core/seal/seal.ts';
    const above = [...graph]
      .filter(([file]) => file.startsWith('core/protocol/'))
      .flatMap(([file, targets]) => targets.filter((t) => !allowed(t)).map((t) => `${file} → ${t}`));
    expect(above).toEqual([]);
  });
});

describe('what the listener carries (docs/benchmarks.md, "Idle memory")', () => {
  it('imports zod as zod/v3 only: zod 4 costs a process 12 MiB before a schema is made', () => {
    const zod = importersOf(/^zod(\/|$)/);
    expect(zod.length).toBeGreaterThan(20);
    expect(zod.filter((i) => !i.endsWith(': zod/v3'))).toEqual([]);
  });

  it('imports luxon only in core/schedules/luxon.ts, which loads it when a schedule needs a date', () => {
    expect(importersOf(/^luxon$/)).toEqual(['core/schedules/luxon.ts: luxon']);
  });

  it('never imports node:http as a value (its namespace loads undici, 12-16 MiB): actors/nodeHttp.ts requires it', () => {
    expect(importersOf(/^node:http$/).length).toBeGreaterThan(3); // the type imports are still there to see
    expect(valueImportersOf(['node:http', 'node:https', 'http', 'https', 'undici'])).toEqual([]);
  });
});
