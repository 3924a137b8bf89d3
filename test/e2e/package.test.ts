/**
 * The package a person installs, the way they install it: `npm pack`, then `npm i -g` of the tarball into a prefix
 * of its own with an empty npm cache (every dependency from the registry, as on a new computer), then the installed
 * `svc` as the README says: `svc --version`, `svc up` into a pipe until it serves, and a push typed into a tmux
 * program. Prints what the install took and its size (docs/benchmarks.md has the measurement against `npm ci`).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SpawnedSvc, spawnSvc, svcEnv } from '../helpers/cli.js';
import { footprint, mib } from '../helpers/disk.js';
import { api, waitFor } from '../helpers/relay.js';
import { startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
/** npm beside the node running the tests (CI puts each Node's bin first on PATH). */
const NODE_BIN = dirname(process.execPath);
const NPM = existsSync(join(NODE_BIN, 'npm')) ? join(NODE_BIN, 'npm') : 'npm';

let root: string;
let tarball: string;
let files: string[];
let prefix: string;
let installedIn: number;
let installed: string;
const env = (): NodeJS.ProcessEnv => ({
  ...process.env,
  PATH: `${join(prefix, 'bin')}:${NODE_BIN}:${process.env.PATH}`,
});

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'svc-package-'));
  prefix = join(root, 'prefix');
  // --ignore-scripts: the tests' own build of dist/ is what is packed (`prepare` would build it again under the
  // other tests' feet); a person's `npm pack` runs `prepare`, which builds.
  const packed = await run(NPM, ['pack', '--ignore-scripts', '--json', '--pack-destination', root], {
    cwd: ROOT,
    env: env(),
    maxBuffer: 16 << 20,
  });
  const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = join(root, info!.filename);
  files = info!.files.map((f) => f.path);
  const started = Date.now();
  await run(
    NPM,
    ['install', '--global', '--prefix', prefix, '--cache', join(root, 'cache'), '--no-audit', '--no-fund', tarball],
    {
      cwd: root,
      env: env(),
      timeout: 240_000,
    },
  );
  installedIn = Date.now() - started;
  installed = join(prefix, 'lib', 'node_modules', PKG.name);
}, 300_000);

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
});

describe('the packed package (npm pack, then npm i -g of it into an empty prefix with an empty cache)', () => {
  it('holds what runs and nothing a test needs', () => {
    expect(files).toContain('bin/svc.js');
    expect(files).toContain('dist/cli/main.js');
    expect(files).toContain('dist/app/index.html');
    expect(files).toContain('plugins/claude/scripts/svc-remote.sh');
    expect(files.filter((f) => f.startsWith('dist/test/') || f.startsWith('dist/bench/'))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts'))).toEqual([]);
  });

  it('installs the runtime dependencies only, with nothing built at install', () => {
    const modules = readdirSync(join(installed, 'node_modules'));
    for (const name of Object.keys(PKG.dependencies)) expect(modules).toContain(name.split('/')[0]);
    // the tools that build and test svc (a runtime package may need a dev one too: web-push needs http_ece)
    const tools = ['typescript', 'vitest', '@biomejs/biome', 'esbuild', 'playwright-core', 'node-pty', 'axe-core'];
    for (const tool of tools) expect(Object.keys(PKG.devDependencies)).toContain(tool);
    expect(tools.filter((d) => existsSync(join(installed, 'node_modules', d)))).toEqual([]);
    // better-sqlite3's binary comes in its package: no compiler ran (node-gyp would leave build/)
    expect(existsSync(join(installed, 'node_modules', 'better-sqlite3', 'build'))).toBe(false);
    const size = footprint(installed);
    console.log(
      `${PKG.name}@${PKG.version}: npm i -g took ${(installedIn / 1000).toFixed(1)} s on Node ${process.versions.node}; ` +
        `installed ${mib(size.bytes)} MiB in ${size.packages} packages (tarball ${tarball.split('/').pop()})`,
    );
  });

  it('svc --version says the package version', async () => {
    const { stdout } = await run(join(prefix, 'bin', 'svc'), ['--version'], { env: env() });
    expect(stdout.trim()).toBe(PKG.version);
  });

  describe('svc up from the installed package', () => {
    let home: string;
    let tmux: TmuxServer | null = null;
    let up: SpawnedSvc | null = null;
    afterAll(async () => {
      await up?.stop('SIGINT');
      await tmux?.cleanup();
    });

    it('serves into a pipe, and a push is typed into a tmux program', { timeout: 120_000 }, async () => {
      home = join(root, 'home');
      mkdirSync(home);
      tmux = await startTmuxServer();
      const upEnv = svcEnv(home, { ...env(), HOME: home, SVC_TMUX_SOCKET: tmux.socketPath });
      up = spawnSvc(['up', '--port', '0'], upEnv, { bin: join(prefix, 'bin', 'svc') });
      const line = await up.waitForLine(/^\s+relay\s+http:\/\/127\.0\.0\.1:\d+/, 30_000);
      const url = /http:\/\/127\.0\.0\.1:\d+/.exec(line)![0];
      await up.waitForLine(/connected to ws:/, 30_000);
      // the web app is the package's own build
      const app = await fetch(`${url}/`);
      expect(app.status).toBe(200);
      expect(await app.text()).toContain('<html');

      await tmux.newSession('installed', 'cat');
      await waitFor(
        async () =>
          (await tmux!.run(['display-message', '-p', '-t', 'installed', '#{pane_current_command}'])).trim() === 'cat',
        { what: 'cat in front' },
      );
      const key = JSON.parse(readFileSync(join(home, '.svc', 'config.json'), 'utf8')).apiKey as string;
      const sent = await api(url, 'POST', '/pushes/send', {
        key,
        body: { type: 'agent.command', agentSessionName: 'installed', body: 'typed by the installed svc' },
      });
      expect(sent.status).toBe(200);
      await waitFor(async () => (await tmux!.capture('installed')).includes('typed by the installed svc'), {
        timeoutMs: 20_000,
        what: 'the push in the pane',
      });
    });
  });
});
