// Installs the pinned real agents (package.json beside this file) when they are missing or the lock changed,
// so `npm test` on a fresh clone has them. Runs before the tests (package.json "pretest") and in .ci/run.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const lock = readFileSync(join(here, 'package-lock.json'));
const want = createHash('sha256').update(lock).digest('hex');
const stamp = join(here, 'node_modules', '.svc-lock-sha256');
if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want) process.exit(0);
console.log('installing the pinned agents for the tests (test/agents/package.json)…');
execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: here, stdio: 'inherit' });
writeFileSync(stamp, want);
