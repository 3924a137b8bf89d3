/**
 * Integration tests run the compiled CLI: build it once before any test file runs. Type errors do not stop the
 * emit (`npm run typecheck` reports them); a build that emits nothing would show up as failing tests.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

export default function setup() {
  const root = resolve(import.meta.dirname, '..');
  const result = spawnSync(
    process.execPath,
    [resolve(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: root,
      encoding: 'utf8',
    },
  );
  if (result.status !== 0)
    process.stderr.write(`tsc reported problems (tests run on what it emitted):\n${result.stdout}`);
}
