/**
 * The receiving side of file transfer (actors/transfer/receive.ts) on real files in a temp dir: a device that
 * announces transfers and abandons them cannot make the computer hold more than MAX_PENDING_TRANSFERS of them or
 * MAX_PENDING_BYTES, and what it abandoned is deleted once idle for TRANSFER_IDLE_MS (issue 28: 40 × 100 MiB
 * announced in 5 s were all kept).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createReceiver } from '../../../actors/transfer/receive.js';
import {
  MAX_PENDING_BYTES,
  MAX_PENDING_TRANSFERS,
  MAX_TRANSFER_BYTES,
  TRANSFER_IDLE_MS,
} from '../../../core/files/transfer.js';

let root: string;
let now: number;
const lines: string[] = [];
const receiver = () =>
  createReceiver({
    incoming: join(root, 'incoming'),
    downloads: join(root, 'Downloads'),
    notice: () => {},
    log: (l) => lines.push(l),
    now: () => now,
  });
/** The first chunk of a transfer announcing `size` bytes. */
const start = (id: string, size: number) => ({
  id,
  name: `${id}.bin`,
  size,
  sha256: 'a'.repeat(64),
  offset: 0,
  data: Buffer.from('first bytes').toString('base64'),
});

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-receive-'));
  now = Date.now();
  lines.length = 0;
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('abandoned transfers', () => {
  it(`at most ${MAX_PENDING_TRANSFERS} unfinished transfers per device; others may still send`, () => {
    const r = receiver();
    for (let i = 0; i < MAX_PENDING_TRANSFERS; i++)
      expect(r.take('d_phone', start(`t${i}`, MAX_TRANSFER_BYTES / 4))).toMatchObject({ ok: true });
    expect(r.take('d_phone', start('t-more', 1000))).toMatchObject({ ok: false, code: 'transfer_limit' });
    expect(r.take('d_tablet', start('t-other', 1000))).toMatchObject({ ok: true });
    // a transfer already started goes on
    const { data: _data, ...question } = start('t0', MAX_TRANSFER_BYTES / 4);
    expect(r.take('d_phone', question)).toMatchObject({ ok: true, received: 11 });
  });

  it(`the sizes announced together at most ${MAX_PENDING_BYTES} bytes`, () => {
    const r = receiver();
    expect(r.take('d_phone', start('big1', MAX_TRANSFER_BYTES))).toMatchObject({ ok: true });
    expect(r.take('d_phone', start('big2', MAX_TRANSFER_BYTES))).toMatchObject({ ok: true });
    expect(r.take('d_phone', start('big3', 100))).toMatchObject({ ok: false, code: 'transfer_limit' });
  });

  it('an unfinished transfer idle for 30 min is deleted, and frees its place', () => {
    const r = receiver();
    for (let i = 0; i < MAX_PENDING_TRANSFERS; i++) r.take('d_phone', start(`t${i}`, 1000));
    expect(readdirSync(join(root, 'incoming')).filter((n) => n.endsWith('.part'))).toHaveLength(MAX_PENDING_TRANSFERS);
    // two of them went quiet long ago
    const old = (now - TRANSFER_IDLE_MS - 60_000) / 1000;
    for (const id of ['t0', 't1'])
      for (const ext of ['part', 'json']) utimesSync(join(root, 'incoming', `d_phone-${id}.${ext}`), old, old);
    expect(r.take('d_phone', start('t-new', 1000))).toMatchObject({ ok: true });
    expect(existsSync(join(root, 'incoming', 'd_phone-t0.part'))).toBe(false);
    expect(existsSync(join(root, 'incoming', 'd_phone-t1.json'))).toBe(false);
    expect(existsSync(join(root, 'incoming', 'd_phone-t2.part'))).toBe(true);
    expect(lines.filter((l) => /abandoned .*deleted/.test(l))).toHaveLength(2);
  });

  it('a listener that starts again sweeps what was abandoned before it stopped', () => {
    receiver().take('d_phone', start('left', 1000));
    const old = (now - TRANSFER_IDLE_MS - 1) / 1000;
    for (const ext of ['part', 'json']) utimesSync(join(root, 'incoming', `d_phone-left.${ext}`), old, old);
    receiver();
    expect(readdirSync(join(root, 'incoming'))).toEqual([]);
  });

  it('a whole small file still arrives in one chunk', () => {
    const data = Buffer.from('hello');
    const sha256 = createHash('sha256').update(data).digest('hex');
    const got = receiver().take('d_phone', {
      id: 'one',
      name: 'hello.txt',
      size: 5,
      sha256,
      offset: 0,
      data: data.toString('base64'),
    });
    expect(got).toMatchObject({ ok: true, received: 5 });
  });
});
