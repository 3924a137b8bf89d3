/**
 * `svc debug charts --out docs/statecharts` (`npm run charts`): one Mermaid chart per machine and an index with the
 * actor tree, from the definitions (core/debug/statechart.ts). Generated pages no longer produced are removed; other
 * files in the folder are left alone.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defineCommand } from 'citty';
import { GENERATED_MARK, renderCharts } from '../../../core/debug/statechart.js';
import { MACHINES } from '../../../machines/index.js';
import { fail } from '../../output.js';

export default defineCommand({
  meta: { name: 'charts', description: 'Write one statechart per machine (Mermaid) into a folder', hidden: true },
  args: {
    out: { type: 'string', default: 'docs/statecharts', description: 'The folder to write' },
  },
  run({ args }) {
    try {
      const dir = resolve(args.out);
      mkdirSync(dir, { recursive: true });
      const files = renderCharts(MACHINES);
      for (const name of readdirSync(dir)) {
        if (!name.endsWith('.md') || files.has(name)) continue;
        const text = readFileSync(join(dir, name), 'utf8');
        if (text.startsWith(GENERATED_MARK)) rmSync(join(dir, name));
      }
      for (const [name, text] of files) writeFileSync(join(dir, name), text);
      process.stdout.write(`wrote ${files.size} files to ${args.out}\n`);
    } catch (err) {
      fail(err);
    }
  },
});
