/** Computers (one per listener name in an account) and the last session inventory each reported. */
import type Database from 'better-sqlite3';
import { SessionRecord } from '../../core/protocol/index.js';
import type { ComputerRecord, ComputerRegistration } from '../store.js';

interface ComputerRow {
  hook_id: string;
  account_id: string;
  name: string;
  platform: string | null;
  created_at: number;
  last_seen_at: number | null;
  sessions: string;
  sessions_at: number | null;
  schedules: string | null;
  device_id: string | null;
  owner_key_id: string | null;
}

const StoredSessions = SessionRecord.array();

function toComputer(row: ComputerRow): ComputerRecord {
  let sessions: SessionRecord[] = [];
  try {
    const parsed = StoredSessions.safeParse(JSON.parse(row.sessions));
    if (parsed.success) sessions = parsed.data;
  } catch {
    // A row we wrote ourselves; an unreadable one reads as "no inventory yet".
  }
  return {
    hookId: row.hook_id,
    accountId: row.account_id,
    name: row.name,
    platform: row.platform,
    createdAt: row.created_at,
    lastSeenAt: row.last_seen_at,
    sessions,
    sessionsAt: row.sessions_at,
    ...(row.schedules ? { schedules: sealedOrNothing(row.schedules) } : {}),
    ...(row.device_id ? { deviceId: row.device_id } : {}),
    ownerKeyId: row.owner_key_id,
  };
}

/** A stored envelope, read back as the object it was (the relay never looks inside). */
function sealedOrNothing(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export function registerComputer(db: Database.Database, c: ComputerRegistration): ComputerRecord {
  const register = db.transaction((): ComputerRow => {
    const existing = db.prepare('SELECT * FROM computers WHERE account_id = ? AND name = ?').get(c.accountId, c.name) as
      | ComputerRow
      | undefined;
    if (existing) {
      // Only its owner (or the first key, for a computer that has none) may change it; the caller tells the rest.
      if (existing.owner_key_id !== null && existing.owner_key_id !== c.ownerKeyId) return existing;
      const platform = c.platform ?? existing.platform;
      const deviceId = c.deviceId ?? existing.device_id;
      const owner = existing.owner_key_id ?? c.ownerKeyId;
      if (platform === existing.platform && deviceId === existing.device_id && owner === existing.owner_key_id) {
        return existing;
      }
      return db
        .prepare('UPDATE computers SET platform = ?, device_id = ?, owner_key_id = ? WHERE hook_id = ? RETURNING *')
        .get(platform, deviceId, owner, existing.hook_id) as ComputerRow;
    }
    return db
      .prepare(
        `INSERT INTO computers (hook_id, account_id, name, platform, created_at, device_id, owner_key_id)
         VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *`,
      )
      .get(c.hookId, c.accountId, c.name, c.platform, c.now, c.deviceId ?? null, c.ownerKeyId) as ComputerRow;
  });
  return toComputer(register.immediate());
}

export function getComputer(db: Database.Database, hookId: string): ComputerRecord | null {
  const row = db.prepare('SELECT * FROM computers WHERE hook_id = ?').get(hookId) as ComputerRow | undefined;
  return row ? toComputer(row) : null;
}

export function claimComputer(db: Database.Database, hookId: string, keyId: string): boolean {
  return (
    db.prepare('UPDATE computers SET owner_key_id = ? WHERE hook_id = ? AND owner_key_id IS NULL').run(keyId, hookId)
      .changes > 0
  );
}

export function listComputers(db: Database.Database, accountId: string): ComputerRecord[] {
  const rows = db
    .prepare('SELECT * FROM computers WHERE account_id = ? ORDER BY created_at, hook_id')
    .all(accountId) as ComputerRow[];
  return rows.map(toComputer);
}

export function saveSessions(
  db: Database.Database,
  hookId: string,
  sessions: SessionRecord[],
  now: number,
  schedules: Record<string, unknown> | null,
): void {
  db.prepare(
    'UPDATE computers SET sessions = ?, sessions_at = ?, last_seen_at = ?, schedules = ? WHERE hook_id = ?',
  ).run(JSON.stringify(sessions), now, now, schedules ? JSON.stringify(schedules) : null, hookId);
}

export function touchComputer(db: Database.Database, hookId: string, now: number): void {
  db.prepare('UPDATE computers SET last_seen_at = ? WHERE hook_id = ?').run(now, hookId);
}

export function computersWithSession(db: Database.Database, accountId: string, sessionName: string): string[] {
  const rows = db
    .prepare(
      `SELECT DISTINCT c.hook_id AS hookId FROM computers c, json_each(c.sessions) s
       WHERE c.account_id = ? AND json_extract(s.value, '$.name') = ? ORDER BY c.hook_id`,
    )
    .all(accountId, sessionName) as { hookId: string }[];
  return rows.map((r) => r.hookId);
}
