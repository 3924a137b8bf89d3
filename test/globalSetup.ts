/**
 * Integration tests run the compiled CLI, browser tests the built app: build both once before any test file runs. Type errors do not stop the
 * emit (`npm run typecheck` reports them); a build that emits nothing would show up as failing tests.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

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
  // The phone app the relay serves (dist/app), for the browser tests.
  const app = spawnSync(process.execPath, [resolve(root, 'relay-server/app/build.mjs')], {
    cwd: root,
    encoding: 'utf8',
  });
  if (app.status !== 0) process.stderr.write(`the app build failed:\n${app.stdout}${app.stderr}`);
  // One compile cache for every `svc` the tests start (bin/svc.js keeps one in the HOME, and each test has its own
  // HOME: each run would compile everything again, and write it all out at exit). Workers inherit it.
  const cache = mkdtempSync(join(tmpdir(), 'svc-compile-cache-'));
  process.env.NODE_COMPILE_CACHE = cache;
  return () => rmSync(cache, { recursive: true, force: true });
}
