/**
 * The acted-on ledger on disk (~/.svc/delivered-<hookId>.json), written before anything is typed.
 *
 * Two slots, written in turn in place: `<path>` and `<path>.2`. Each write goes to the slot the last write did not
 * use, whole, with a sequence number and a checksum, and is fsynced before the caller goes on; the other slot keeps
 * the previous ledger untouched. A crash in the middle of a write leaves that slot torn (its checksum fails) and the
 * other one whole: loading takes the newest slot whose checksum holds. As safe as a temp file and a rename, without
 * the rename, which costs ~0.5-0.9 ms on ext4 here on the path of every push (docs/benchmarks.md).
 *
 * A slot is `<ledger JSON>\n<seq> <sha256 of the JSON>\n`. A file of the older single-file form (the JSON alone) is
 * read as sequence 0.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Ledger } from '../../core/sessions/ledger.js';
import { emptyLedger } from '../../core/sessions/ledger.js';
import { writeFileInPlace } from '../files.js';

const slots = (path: string): [string, string] => [path, `${path}.2`];
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Where the next write goes, per ledger path: the slot not holding the newest ledger, and its sequence number. */
const next = new Map<string, { slot: 0 | 1; seq: number }>();

type Read = { ledger: Ledger; seq: number } | { error: string } | null;

function readSlot(path: string): Read {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  let json = text;
  let seq = 0;
  const m = /\n(\d+) ([0-9a-f]{64})\n$/.exec(text);
  if (m) {
    json = text.slice(0, m.index);
    if (sha256(json) !== m[2]) return { error: 'torn (its checksum does not match)' };
    seq = Number(m[1]);
  }
  try {
    const data = JSON.parse(json) as Ledger;
    if (typeof data.lastPushId !== 'number' || typeof data.entries !== 'object' || data.entries === null)
      throw new Error('bad shape');
    return { ledger: data, seq };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

export function loadLedger(path: string, warn: (msg: string) => void): Ledger {
  const [a, b] = slots(path).map(readSlot) as [Read, Read];
  const good = [a, b].map((r) => (r && 'ledger' in r ? r : null));
  for (const [i, r] of [a, b].entries())
    if (r && 'error' in r)
      warn(`ignoring unreadable ${slots(path)[i]} (${r.error})${good[1 - i] ? '; the other copy is used' : ''}`);
  const newest = good[0] && (!good[1] || good[0].seq >= good[1].seq) ? 0 : good[1] ? 1 : null;
  if (newest === null) {
    if (a || b) warn(`no readable ledger at ${path}; starting a new ledger`);
    next.set(path, { slot: 0, seq: 1 });
    return emptyLedger();
  }
  const chosen = good[newest]!;
  next.set(path, { slot: newest === 0 ? 1 : 0, seq: chosen.seq + 1 });
  return chosen.ledger;
}

export function saveLedger(path: string, ledger: Ledger): void {
  const at = next.get(path) ?? { slot: 0 as const, seq: 1 };
  const json = JSON.stringify(ledger);
  const data = `${json}\n${at.seq} ${sha256(json)}\n`;
  writeFileInPlace(slots(path)[at.slot], data, { durable: true });
  next.set(path, { slot: at.slot === 0 ? 1 : 0, seq: at.seq + 1 });
}
