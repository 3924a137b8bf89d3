/** The acted-on ledger on disk (~/.svc/delivered-<hookId>.json), written before anything is typed. */
import { readFileSync } from 'node:fs';
import type { Ledger } from '../../core/sessions/ledger.js';
import { emptyLedger } from '../../core/sessions/ledger.js';
import { writeFileAtomic } from '../files.js';

export function loadLedger(path: string, warn: (msg: string) => void): Ledger {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return emptyLedger();
  }
  try {
    const data = JSON.parse(text) as Ledger;
    if (typeof data.lastPushId !== 'number' || typeof data.entries !== 'object' || data.entries === null)
      throw new Error('bad shape');
    return data;
  } catch (err) {
    warn(`ignoring unreadable ${path} (${(err as Error).message}); starting a new ledger`);
    return emptyLedger();
  }
}

export function saveLedger(path: string, ledger: Ledger): void {
  writeFileAtomic(path, JSON.stringify(ledger));
}
