/**
 * What installing svc costs a person: `npm i -g` of the packed package against a contributor's `npm ci` from a
 * clone (the baseline), in the same run, each with an empty npm cache (every package from the registry, as on a new
 * computer): the time, the size on disk and the number of packages. The clone is of this checkout's HEAD; its
 * `npm ci` includes what a contributor's does (node-pty compiled, `prepare` building dist/). The tarball is what
 * `npm pack` makes in that clone (its `prepare` builds dist/ again, timed apart: the person installing never runs
 * it).
 *
 *   npm run bench:install                    # build, then node dist/bench/install.js
 *   node dist/bench/install.js --json
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { footprint, mib } from '../test/helpers/disk.js';
import { benchArgs, loadAverage, now, onCleanup, output, progress, ROOT, runBench } from './inject.js';

const run = promisify(execFile);
const NPM = existsSync(join(dirname(process.execPath), 'npm')) ? join(dirname(process.execPath), 'npm') : 'npm';

const USAGE = `usage: node dist/bench/install.js [--json]

  npm i -g of the packed package against npm ci from a clone, same run, empty npm caches.
  --json   print the result as JSON on stdout (progress stays on stderr)`;

async function timed(what: string, file: string, args: string[], cwd: string): Promise<number> {
  progress(what);
  const start = now();
  await run(file, args, { cwd, maxBuffer: 64 << 20, env: { ...process.env, npm_config_update_notifier: 'false' } });
  const s = Math.round(now() - start) / 1000;
  progress(`${what}: ${s.toFixed(1)} s`);
  return s;
}

runBench(async () => {
  const opts = benchArgs({ json: { type: 'boolean', default: false } }, USAGE);
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-install-'));
  onCleanup('the bench folder', () => rm(root, { recursive: true, force: true }));
  const clone = join(root, 'clone');
  await run('git', ['clone', '-q', ROOT, clone]);
  const quiet = ['--no-audit', '--no-fund', '--loglevel=error'];

  const ciSeconds = await timed('npm ci in a clone', NPM, ['ci', ...quiet, '--cache', join(root, 'cache-ci')], clone);
  const ciDisk = footprint(join(clone, 'node_modules'));
  const ci = { mib: mib(ciDisk.bytes), packages: ciDisk.packages };
  const packSeconds = await timed(
    'npm pack (builds dist/)',
    NPM,
    ['pack', '--silent', '--pack-destination', root],
    clone,
  );
  const tarball = readdirSync(root).find((f) => f.endsWith('.tgz'));
  if (!tarball) throw new Error('npm pack made no tarball');
  const tgz = statSync(join(root, tarball)).size;
  const prefix = join(root, 'prefix');
  const globalSeconds = await timed(
    'npm i -g of the package',
    NPM,
    ['install', '--global', '--prefix', prefix, ...quiet, '--cache', join(root, 'cache-g'), join(root, tarball)],
    root,
  );
  const globalDisk = footprint(join(prefix, 'lib', 'node_modules'));
  const installed = { mib: mib(globalDisk.bytes), packages: globalDisk.packages };

  const result = {
    node: process.versions.node,
    cores: availableParallelism(),
    load: loadAverage(),
    tarball: { name: tarball, kib: Math.round(tgz / 1024) },
    npmCi: { seconds: ciSeconds, ...ci },
    npmPack: { seconds: packSeconds },
    npmInstallGlobal: { seconds: globalSeconds, ...installed },
    ratio: {
      time: Math.round((globalSeconds / ciSeconds) * 100) / 100,
      size: Math.round((installed.mib / ci.mib) * 100) / 100,
    },
  };
  if (opts.json) {
    output(`${JSON.stringify(result, null, 2)}\n`);
    return;
  }
  const row = (name: string, s: number, mib: number, n: number) =>
    `${name.padEnd(34)} ${`${s.toFixed(1)} s`.padStart(9)} ${`${mib} MiB`.padStart(11)} ${String(n).padStart(9)}`;
  output(
    [
      `Node ${result.node}, ${result.cores} cores, load ${result.load.join(' ')}; tarball ${tarball} ${result.tarball.kib} KiB`,
      `${''.padEnd(34)} ${'time'.padStart(9)} ${'on disk'.padStart(11)} ${'packages'.padStart(9)}`,
      row('npm ci in a clone (baseline)', ciSeconds, ci.mib, ci.packages),
      row('npm i -g of the packed package', globalSeconds, installed.mib, installed.packages),
      `ratio (npm i -g / npm ci): time ${result.ratio.time}, size ${result.ratio.size}`,
      `(npm pack in the clone, which builds dist/: ${packSeconds.toFixed(1)} s)`,
      '',
    ].join('\n'),
  );
});
