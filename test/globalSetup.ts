/** Integration tests run the compiled CLI: build it once before any test file runs. */
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

export default function setup() {
  const root = resolve(import.meta.dirname, '..');
  execFileSync(process.execPath, [resolve(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
    cwd: root,
    stdio: 'inherit',
  });
}
