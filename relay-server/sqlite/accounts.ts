/** Accounts and their API keys (stored as hashes; a device token also names its device). */
import type Database from 'better-sqlite3';
import { SCOPES, type Scope } from '../../core/protocol/index.js';
import type { KeyRecord } from '../store.js';

export function createAccount(db: Database.Database, accountId: string, now: number): void {
  db.prepare('INSERT INTO accounts (id, created_at) VALUES (?, ?)').run(accountId, now);
}

export function accountExists(db: Database.Database, accountId: string): boolean {
  return db.prepare('SELECT 1 FROM accounts WHERE id = ?').get(accountId) !== undefined;
}

export function createKey(db: Database.Database, key: KeyRecord & { keyHash: string; now: number }): void {
  db.prepare('INSERT INTO api_keys (id, account_id, key_hash, scopes, created_at) VALUES (?, ?, ?, ?, ?)').run(
    key.keyId,
    key.accountId,
    key.keyHash,
    key.scopes.join(','),
    key.now,
  );
}

export function findKeyByHash(db: Database.Database, keyHash: string): KeyRecord | null {
  const row = db.prepare('SELECT id, account_id, scopes, device_id FROM api_keys WHERE key_hash = ?').get(keyHash) as
    | { id: string; account_id: string; scopes: string; device_id: string | null }
    | undefined;
  if (!row) return null;
  const key: KeyRecord = { keyId: row.id, accountId: row.account_id, scopes: parseScopes(row.scopes) };
  if (row.device_id) key.deviceId = row.device_id;
  return key;
}

function parseScopes(text: string): Scope[] {
  return text.split(',').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s));
}
