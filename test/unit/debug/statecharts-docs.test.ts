/**
 * The pictures in docs/statecharts/ are the machines: a chart that no longer matches its definition, or a machine
 * that machines/index.ts does not list, fails here. Fix: list the machine, then `npm run charts` and commit.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isMachine, renderCharts } from '../../../core/debug/statechart.js';
import { MACHINES } from '../../../machines/index.js';

const root = resolve(import.meta.dirname, '../../..');
const docs = resolve(root, 'docs/statecharts');
const FIX = 'run `npm run charts` and commit docs/statecharts/';

describe('docs/statecharts', () => {
  it('lists every machine that a file in machines/ exports', async () => {
    const files = readdirSync(resolve(root, 'machines')).filter(
      (f) => f.endsWith('.ts') && f !== 'index.ts' && !f.endsWith('.test.ts'),
    );
    const missing: string[] = [];
    for (const file of files) {
      const mod = (await import(resolve(root, 'machines', file))) as Record<string, unknown>;
      for (const [name, value] of Object.entries(mod)) {
        if (isMachine(value) && !MACHINES.some((e) => e.machine === value))
          missing.push(`machines/${file} exports ${name}`);
      }
    }
    expect(missing, `add these to machines/index.ts, then ${FIX}`).toEqual([]);
  });

  it('holds exactly the generated charts, byte for byte', () => {
    const files = renderCharts(MACHINES);
    const onDisk = readdirSync(docs).filter((f) => f.endsWith('.md'));
    expect(onDisk.sort(), `stale or missing charts: ${FIX}`).toEqual([...files.keys()].sort());
    for (const [name, text] of files) {
      const disk = readFileSync(resolve(docs, name), 'utf8');
      expect(disk === text, `docs/statecharts/${name} is stale: ${FIX}`).toBe(true);
    }
  });
});
