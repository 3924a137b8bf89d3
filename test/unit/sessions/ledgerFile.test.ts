/**
 * The delivery ledger on disk (actors/sessions/ledgerFile.ts): two slots written in turn, each whole with a sequence
 * number and a checksum, so a write cut short by a crash leaves the previous ledger readable — nothing claimed is
 * forgotten, nothing is typed twice after a restart.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadLedger, saveLedger } from '../../../actors/sessions/ledgerFile.js';
import { emptyLedger, type Ledger, recordOutcome } from '../../../core/sessions/ledger.js';

let dir: string;
let path: string;
let warnings: string[];
const warn = (m: string) => warnings.push(m);
const claimed = (ledger: Ledger, id: number) => recordOutcome(ledger, id, { state: 'claimed' });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-ledger-'));
  path = join(dir, '.svc', 'delivered-h.json');
  warnings = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('the ledger file', () => {
  it('reads back the newest of many writes, from either slot, owner-only', () => {
    let ledger = loadLedger(path, warn);
    expect(ledger).toEqual(emptyLedger());
    for (let id = 1; id <= 5; id++) {
      ledger = claimed(ledger, id);
      saveLedger(path, ledger);
      expect(loadLedger(path, warn)).toEqual(ledger); // a restart after any write
    }
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(`${path}.2`).mode & 0o777).toBe(0o600);
    expect(warnings).toEqual([]);
  });

  it('a write torn by a crash leaves the previous ledger: the claim before it stands', () => {
    let ledger = claimed(loadLedger(path, warn), 1);
    saveLedger(path, ledger);
    ledger = claimed(ledger, 2);
    saveLedger(path, ledger); // into the other slot
    ledger = claimed(ledger, 3);
    saveLedger(path, ledger); // back into the first
    // the write of claim 3 was cut short: the first slot holds half of it
    const whole = readFileSync(path, 'utf8');
    truncateSync(path, Math.floor(whole.length / 2));
    const back = loadLedger(path, warn);
    expect(back.lastPushId).toBe(2);
    expect(Object.keys(back.entries)).toEqual(['1', '2']);
    expect(warnings.join('\n')).toMatch(/ignoring unreadable .*delivered-h\.json .*; the other copy is used/);
    // the next write goes to the torn slot, not over the good one
    saveLedger(path, claimed(back, 4));
    expect(loadLedger(path, warn).lastPushId).toBe(4);
    expect(JSON.parse(readFileSync(`${path}.2`, 'utf8').split('\n')[0]!).lastPushId).toBe(2);
  });

  it('a slot whose bytes were changed is not believed, even when it still parses', () => {
    let ledger = claimed(loadLedger(path, warn), 1);
    saveLedger(path, ledger);
    ledger = claimed(ledger, 2);
    saveLedger(path, ledger);
    const text = readFileSync(`${path}.2`, 'utf8').replace('"lastPushId":2', '"lastPushId":9');
    writeFileSync(`${path}.2`, text);
    expect(loadLedger(path, warn).lastPushId).toBe(1);
    expect(warnings.join('\n')).toMatch(/checksum/);
  });

  it('reads the older single-file ledger, and an unreadable one starts afresh with a warning', () => {
    const old = claimed(emptyLedger(), 7);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, JSON.stringify(old));
    expect(loadLedger(path, warn)).toEqual(old);
    writeFileSync(path, '{not json');
    expect(loadLedger(path, warn)).toEqual(emptyLedger());
    expect(warnings.join('\n')).toMatch(/starting a new ledger/);
  });
});
