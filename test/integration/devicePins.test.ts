/**
 * `~/.svc/devices.json` is changed by the listener and by `svc devices` at once. Real processes run the compiled
 * `updatePins` (dist/, built by test/globalSetup.ts) against one file: none loses another's update, and a lock left
 * by a process that died (or hung) is taken over.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/tmux.js';

const DIST_PINS = pathToFileURL(resolve(import.meta.dirname, '../../dist/actors/devices/pins.js')).href;

/**
 * A process that waits for a line on stdin, then pins `count` devices named `<prefix>-<i>`, one update each, and
 * prints `done at <ms>`. It prints `ready` once loaded, so several can be started together, and `pinning` as it
 * starts.
 */
const WRITER = `
import { updatePins } from ${JSON.stringify(DIST_PINS)};
const [path, prefix, count] = process.argv.slice(1);
process.stdout.write('ready\\n');
process.stdin.once('data', () => {
  process.stdout.write('pinning\\n');
  for (let i = 0; i < Number(count); i++) {
    const deviceId = prefix + '-' + i;
    updatePins(path, [{ op: 'pin', deviceId, publicKey: 'k-' + deviceId, fingerprint: 'f', at: i, lastSeq: {} }]);
  }
  process.stdout.write('done at ' + Date.now() + '\\n');
  process.exit(0);
});
`;

interface Writer {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function startWriter(path: string, prefix: string, count: number): Writer {
  const child = spawn(process.execPath, ['--input-type=module', '-e', WRITER, path, prefix, String(count)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return { child, output: () => out, exited };
}

async function run(writers: Writer[]): Promise<void> {
  await waitFor(() => writers.every((w) => w.output().includes('ready')), { timeoutMs: 20_000, what: 'writers' });
  for (const w of writers) w.child.stdin?.write('go\n');
  for (const w of writers) expect(await w.exited, w.output()).toBe(0);
}

const pinned = (path: string): string[] => Object.keys(JSON.parse(readFileSync(path, 'utf8')).devices).sort();

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-pins-'));
  path = join(dir, 'devices.json');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('devices.json across processes', () => {
  it('two processes updating at once lose none of each other’s updates; the file stays 0600, the lock is gone', async () => {
    const count = 150;
    await run([startWriter(path, 'a', count), startWriter(path, 'b', count)]);
    const expected = ['a', 'b'].flatMap((p) => Array.from({ length: count }, (_, i) => `${p}-${i}`)).sort();
    expect(pinned(path)).toEqual(expected);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('takes over a lock left by a process that died', async () => {
    const dead = Number(execFileSync(process.execPath, ['-p', 'process.pid'], { encoding: 'utf8' }).trim());
    writeFileSync(`${path}.lock`, `${dead}\n`, { mode: 0o600 });
    await run([startWriter(path, 'after-death', 1)]);
    expect(pinned(path)).toEqual(['after-death-0']);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('waits for a live holder, and takes over a lock held far longer than an update takes', async () => {
    // This test process holds the lock, and lets go once the writer is waiting for it: the writer then pins.
    writeFileSync(`${path}.lock`, `${process.pid}\n`, { mode: 0o600 });
    const waiting = startWriter(path, 'waited', 1);
    await waitFor(() => waiting.output().includes('ready'), { timeoutMs: 20_000, what: 'the writer' });
    waiting.child.stdin?.write('go\n');
    await waitFor(() => waiting.output().includes('pinning'), { timeoutMs: 20_000, what: 'the writer pinning' });
    rmSync(`${path}.lock`);
    expect(await waiting.exited, waiting.output()).toBe(0);
    expect(pinned(path)).toEqual(['waited-0']);

    // A holder that never lets go: the writer waits until the lock is older than the 5 s an update may hold it
    // (never sooner, however slow the machine), then takes it over.
    writeFileSync(`${path}.lock`, `${process.pid}\n`, { mode: 0o600 });
    const heldSince = statSync(`${path}.lock`).mtimeMs;
    const patient = startWriter(path, 'patient', 1);
    await run([patient]);
    const doneAt = Number(/done at (\d+)/.exec(patient.output())?.[1]);
    expect(doneAt - heldSince).toBeGreaterThanOrEqual(5_000);
    expect(pinned(path)).toEqual(['patient-0', 'waited-0']);
    expect(existsSync(`${path}.lock`)).toBe(false);

    // A live holder that kept it for a minute hangs: its lock is taken over at once.
    writeFileSync(`${path}.lock`, `${process.pid}\n`, { mode: 0o600 });
    const minuteAgo = new Date(Date.now() - 60_000);
    utimesSync(`${path}.lock`, minuteAgo, minuteAgo);
    await run([startWriter(path, 'hung', 1)]);
    expect(pinned(path)).toEqual(['hung-0', 'patient-0', 'waited-0']);
  });
});
