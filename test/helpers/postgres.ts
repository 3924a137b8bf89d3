/**
 * A real Postgres for tests (Debian's `postgresql` package, installed by .ci/run): a new cluster in a temp folder,
 * started on a free loopback port with trust auth and no fsync, stopped and removed at the end. Run as the
 * `postgres` system user when the tests run as root (the server refuses root).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './ports.js';

/** The newest installed server's bin folder, or null. */
export function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

export interface TestPostgres {
  /** A new, empty database on the server: its URL. */
  database(): Promise<string>;
  stop(): Promise<void>;
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBin();
  if (!bin) throw new Error('no Postgres server installed (apt-get install postgresql)');
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  const asRoot = process.getuid?.() === 0;
  const uid = asRoot ? Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()) : null;
  const gid = asRoot ? Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()) : null;
  if (uid !== null && gid !== null) chownSync(dir, uid, gid);
  const run = (cmd: string, args: string[]) =>
    (asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args]) as [string, string[]];
  const data = join(dir, 'data');
  const [initCmd, initArgs] = run(join(bin, 'initdb'), [
    '-D',
    data,
    '-A',
    'trust',
    '-U',
    'svc',
    '-E',
    'UTF8',
    '--no-sync',
  ]);
  execFileSync(initCmd, initArgs, { stdio: 'pipe', cwd: '/' });
  const port = await freePort();
  const [cmd, args] = run(join(bin, 'postgres'), [
    '-D',
    data,
    '-k',
    dir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
  ]);
  const server: ChildProcess = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], cwd: '/' });
  let log = '';
  server.stderr?.on('data', (d: Buffer) => {
    log += d.toString();
  });
  const admin = `postgres://svc@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const client = new pg.Client({ connectionString: admin });
    try {
      await client.connect();
      await client.end();
      break;
    } catch {
      await client.end().catch(() => {});
      if (Date.now() > deadline || server.exitCode !== null) throw new Error(`Postgres did not start:\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let n = 0;
  return {
    async database() {
      const name = `svc_test_${++n}`;
      const client = new pg.Client({ connectionString: admin });
      await client.connect();
      await client.query(`CREATE DATABASE ${name}`);
      await client.end();
      return `postgres://svc@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      // the postmaster itself (runuser does not pass signals on): a fast shutdown
      try {
        process.kill(Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]), 'SIGINT');
      } catch {
        server.kill('SIGINT');
      }
      await new Promise((r) => (server.exitCode !== null ? r(null) : server.once('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
