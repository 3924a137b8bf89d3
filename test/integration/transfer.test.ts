/**
 * File transfer from the phone through the real relay and listener (spec 4.11.4): sealed chunks on the relay's
 * WebSocket, the file placed under `~/Downloads/Svc/` with its own name made safe, never overwriting (`name (2).ext`,
 * also for two transfers racing), a transfer cut by a dropped connection resumed from what arrived, the size limit,
 * a wrong checksum saving nothing, and the desktop notice (a fake `notify-send` on PATH records it).
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MAX_TRANSFER_BYTES, TRANSFER_CHUNK_BYTES } from '../../core/files/transfer.js';
import { FileResultBody } from '../../core/protocol/bodies.js';
import { type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { computerDevice, databaseHolds, registerTestDevice, type TestDevice } from '../helpers/devices.js';
import { startTestRelay, type TestRelay, TestSocket, waitFor } from '../helpers/relay.js';

const SESSION = 'svc-recv';

let relay: TestRelay;
let computer: TestComputer;
let me: { id: string; publicKey: string };
let app: TestDevice;
let listener: SpawnedSvc;
let downloads: string;
let notices: string;
let seq = 0;
const sockets: TestSocket[] = [];

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

async function phoneSocket(): Promise<TestSocket> {
  const sock = await TestSocket.open(relay.wsUrl, relay.apiKey);
  sockets.push(sock);
  sock.send({ type: 'subscribe', role: 'app', deviceId: app.deviceId });
  await sock.next('subscribed');
  return sock;
}

beforeEach(async () => {
  seq = 0;
  computer = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: `box-${Date.now()}` });
  me = await computerDevice(relay, computer.hookId);
  app = await registerTestDevice(relay, 'app', 'phone');
  downloads = join(computer.home.home, 'Downloads', 'Svc');
  // a desktop with notify-send: this one writes down what it was asked to show
  const bin = join(computer.home.home, 'bin');
  mkdirSync(bin);
  notices = join(computer.home.home, 'notices.txt');
  writeFileSync(join(bin, 'notify-send'), `#!/bin/sh\nprintf '%s|' "$@" >> '${notices}'\necho >> '${notices}'\n`);
  chmodSync(join(bin, 'notify-send'), 0o755);
  await computer.tmux.newSession(SESSION, ['cat']);
  listener = spawnSvc(['listener'], { ...computer.env, PATH: `${bin}:${process.env.PATH}` });
  await listener.waitForLine(/connected to ws:/);
});

afterEach(async () => {
  for (const s of sockets.splice(0)) await s.close();
  await listener?.stop();
  await computer.tmux.cleanup();
  computer.home.cleanup();
});

interface Sent {
  id: string;
  name: string;
  data: Buffer;
  sha256?: string;
  size?: number;
}

/** One chunk (or, without `bytes`, a status question) and its opened answer. */
async function chunk(sock: TestSocket, t: Sent, offset: number, bytes?: Buffer): Promise<FileResultBody> {
  const n = ++seq;
  const transfer = {
    id: t.id,
    name: t.name,
    size: t.size ?? t.data.length,
    sha256: t.sha256 ?? createHash('sha256').update(t.data).digest('hex'),
    offset,
    ...(bytes ? { data: bytes.toString('base64') } : {}),
  };
  const envelope = await app.seal('pane.keys', me, { session: SESSION, seq: n, transfer });
  sock.send({ type: 'pane.keys', computer: computer.hookId, session: SESSION, envelope });
  const result = await sock.next('keys.result', (f) => f.session === SESSION && f.seq === n, 20_000);
  return FileResultBody.parse(await app.open('file', result.envelope, me.publicKey));
}

/** Sends `t` from byte `from` to `to` (default: the end), chunk after chunk, each answered before the next. */
async function send(sock: TestSocket, t: Sent, from = 0, to = t.data.length): Promise<FileResultBody> {
  let last: FileResultBody | null = null;
  for (let at = from; at < to; at += TRANSFER_CHUNK_BYTES) {
    last = await chunk(sock, t, at, t.data.subarray(at, Math.min(at + TRANSFER_CHUNK_BYTES, to)));
    if (last.refused) return last;
  }
  return last!;
}

const file = (name: string, bytes: number): Sent => ({
  id: randomBytes(8).toString('hex'),
  name,
  data: randomBytes(bytes),
});

describe('file transfer', () => {
  it('arrives under ~/Downloads/Svc with its name, never overwriting, with a desktop notice', async () => {
    const sock = await phoneSocket();
    const report = file('report.pdf', 2 * TRANSFER_CHUNK_BYTES + 1234);
    const done = await send(sock, report);
    expect(done).toMatchObject({
      op: 'transfer',
      received: report.data.length,
      savedAs: join(downloads, 'report.pdf'),
    });
    expect(readFileSync(join(downloads, 'report.pdf')).equals(report.data)).toBe(true);
    expect(statSync(join(downloads, 'report.pdf')).mode & 0o777).toBe(0o600);
    expect(statSync(downloads).mode & 0o777).toBe(0o700);
    // the notice is shown by another process: waited for, as a person glances at it
    await waitFor(
      () =>
        existsSync(notices) &&
        readFileSync(notices, 'utf8').includes(`File received|report.pdf is in ${join(downloads, 'report.pdf')}|`),
      {
        what: 'the desktop notice',
      },
    );

    // the same name again: a new name, the first file untouched
    const again = file('report.pdf', 10);
    expect((await send(sock, again)).savedAs).toBe(join(downloads, 'report (2).pdf'));
    expect(readFileSync(join(downloads, 'report.pdf')).equals(report.data)).toBe(true);

    // two transfers of one name at once: two files
    const [a, b] = [file('same.txt', 3000), file('same.txt', 4000)];
    const [ra, rb] = await Promise.all([send(sock, a), send(await phoneSocket(), b)]);
    expect(new Set([ra.savedAs, rb.savedAs])).toEqual(
      new Set([join(downloads, 'same.txt'), join(downloads, 'same (2).txt')]),
    );
    // the relay held only ciphertext
    expect(databaseHolds(relay.dataDir, 'report.pdf')).toBe(false);
  }, 90_000);

  it('a transfer cut by a dropped connection resumes from what arrived', async () => {
    const big = file('video.mp4', 5 * TRANSFER_CHUNK_BYTES + 77);
    const first = await phoneSocket();
    const part = await send(first, big, 0, 2 * TRANSFER_CHUNK_BYTES);
    expect(part.received).toBe(2 * TRANSFER_CHUNK_BYTES);
    await first.close(); // the phone lost its connection
    expect(existsSync(join(downloads, 'video.mp4'))).toBe(false);

    const second = await phoneSocket();
    const status = await chunk(second, big, 0);
    expect(status).toMatchObject({ received: 2 * TRANSFER_CHUNK_BYTES });
    // a chunk sent twice is not written twice
    expect(
      (
        await chunk(
          second,
          big,
          TRANSFER_CHUNK_BYTES,
          big.data.subarray(TRANSFER_CHUNK_BYTES, 2 * TRANSFER_CHUNK_BYTES),
        )
      ).received,
    ).toBe(2 * TRANSFER_CHUNK_BYTES);
    const done = await send(second, big, status.received!);
    expect(done.savedAs).toBe(join(downloads, 'video.mp4'));
    expect(readFileSync(join(downloads, 'video.mp4')).equals(big.data)).toBe(true);
    expect(readdirSync(join(computer.home.home, '.svc', 'incoming'))).toEqual([]);
  }, 90_000);

  it('refuses what it must: hostile names made safe, too large, a gap, a wrong checksum saves nothing', async () => {
    const sock = await phoneSocket();
    for (const [sent, saved] of [
      ['../../escape.txt', 'escape.txt'],
      ['a/b/inner.txt', 'inner.txt'],
      ['ev\u0007il\u202ename.txt', 'evilname.txt'],
      ['..', 'file'],
    ] as const) {
      expect((await send(sock, file(sent, 5))).savedAs).toBe(join(downloads, saved));
    }
    expect(existsSync(join(computer.home.home, 'Downloads', 'escape.txt'))).toBe(false);
    expect(existsSync(join(computer.home.home, 'escape.txt'))).toBe(false);

    const huge = { ...file('huge.bin', 10), size: MAX_TRANSFER_BYTES + 1 };
    expect(await chunk(sock, huge, 0, huge.data)).toMatchObject({ refused: 'too_large', received: 0 });
    const gap = file('gap.bin', 3 * TRANSFER_CHUNK_BYTES);
    expect(await chunk(sock, gap, TRANSFER_CHUNK_BYTES, gap.data.subarray(0, 100))).toMatchObject({
      refused: 'bad_transfer',
    });
    const lie = { ...file('lie.bin', 1000), sha256: '0'.repeat(64) };
    expect(await send(sock, lie)).toMatchObject({ refused: 'bad_transfer' });
    expect(existsSync(join(downloads, 'lie.bin'))).toBe(false);
    expect(existsSync(join(downloads, 'gap.bin'))).toBe(false);
    expect(listener.output()).toMatch(/file transfer [0-9a-f]{16} from .*: refused bad_transfer/);
  }, 90_000);
});
