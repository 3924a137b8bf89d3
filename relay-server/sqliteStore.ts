/**
 * The embedded Store: one SQLite file `relay.db` in the data directory, WAL mode, owner-only permissions.
 * better-sqlite3 is synchronous, so every transaction here is atomic within the process; `immediate`
 * transactions keep it so when a CLI command writes to the same file while the relay runs.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { type DeviceKind, type PushState, SCOPES, type Scope, SessionRecord } from '../core/protocol.js';
import type {
  ComputerRecord,
  DeviceRecord,
  KeyRecord,
  NewPush,
  PushCondition,
  PushRecord,
  PushUpdate,
  ReplayQuery,
  Store,
} from './store.js';

export const DB_FILE = 'relay.db';
const SCHEMA_VERSION = 2;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS accounts (
  id TEXT PRIMARY KEY,
  created_at INTEGER NOT NULL,
  next_push_id INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS api_keys (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  key_hash TEXT NOT NULL UNIQUE,
  scopes TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS pushes (
  account_id TEXT NOT NULL REFERENCES accounts(id),
  id INTEGER NOT NULL,
  type TEXT NOT NULL,
  agent_session_name TEXT NOT NULL,
  body TEXT NOT NULL,
  target_computer TEXT,
  client_id TEXT,
  sealed TEXT,
  state TEXT NOT NULL,
  code TEXT,
  result_computer TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (account_id, id)
);
CREATE UNIQUE INDEX IF NOT EXISTS pushes_client_id ON pushes(account_id, client_id) WHERE client_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS pushes_state_created ON pushes(state, created_at);
CREATE TABLE IF NOT EXISTS computers (
  hook_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  name TEXT NOT NULL,
  platform TEXT,
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER,
  sessions TEXT NOT NULL DEFAULT '[]',
  sessions_at INTEGER,
  device_id TEXT,
  UNIQUE (account_id, name)
);
CREATE TABLE IF NOT EXISTS devices (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  public_key TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (account_id, public_key)
);
CREATE TABLE IF NOT EXISTS pairings (
  code_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER,
  device_id TEXT
);
`;

/** Columns added after version 1: a database made by an older relay gets them on open. */
const ADDED_COLUMNS: { table: string; column: string; decl: string }[] = [
  { table: 'pushes', column: 'sealed', decl: 'TEXT' },
  { table: 'computers', column: 'device_id', decl: 'TEXT' },
  { table: 'api_keys', column: 'device_id', decl: 'TEXT' },
];

/** Used or expired pairing codes are kept this long (so a second click can say "already used"), then dropped. */
const PAIRING_KEEP_MS = 24 * 60 * 60_000;

interface PushRow {
  account_id: string;
  id: number;
  type: string;
  agent_session_name: string;
  body: string;
  target_computer: string | null;
  client_id: string | null;
  sealed: string | null;
  state: string;
  code: string | null;
  result_computer: string | null;
  created_at: number;
  updated_at: number;
}

interface ComputerRow {
  hook_id: string;
  account_id: string;
  name: string;
  platform: string | null;
  created_at: number;
  last_seen_at: number | null;
  sessions: string;
  sessions_at: number | null;
  device_id: string | null;
}

interface DeviceRow {
  id: string;
  account_id: string;
  name: string;
  kind: string;
  public_key: string;
  created_at: number;
}

function toDevice(row: DeviceRow): DeviceRecord {
  return {
    deviceId: row.id,
    accountId: row.account_id,
    name: row.name,
    kind: row.kind as DeviceKind,
    publicKey: row.public_key,
    createdAt: row.created_at,
  };
}

const FINAL_STATES: ReadonlySet<PushState> = new Set(['injected', 'refused', 'expired']);
const StoredSessions = SessionRecord.array();

function toPush(row: PushRow): PushRecord {
  return {
    accountId: row.account_id,
    id: row.id,
    type: row.type,
    agentSessionName: row.agent_session_name,
    body: row.body,
    targetComputer: row.target_computer,
    clientId: row.client_id,
    sealed: row.sealed,
    state: row.state as PushState,
    code: row.code,
    resultComputer: row.result_computer,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

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
    ...(row.device_id ? { deviceId: row.device_id } : {}),
  };
}

function parseScopes(text: string): Scope[] {
  return text.split(',').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s));
}

/** Create the data directory (0700) if needed and open `relay.db` (0600) in it. */
export function openSqliteStore(dataDir: string): SqliteStore {
  if (!existsSync(dataDir)) mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  else if (!statSync(dataDir).isDirectory()) throw new Error(`data directory ${dataDir} is not a directory`);
  const file = join(dataDir, DB_FILE);
  // Create the file owner-only before SQLite does; SQLite gives -wal and -shm the database file's mode.
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
  return new SqliteStore(new Database(file));
}

export class SqliteStore implements Store {
  private readonly db: Database.Database;
  private closed = false;

  constructor(db: Database.Database) {
    this.db = db;
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > SCHEMA_VERSION) {
      throw new Error(`relay.db has schema version ${version}; this relay knows up to ${SCHEMA_VERSION}`);
    }
    db.exec(SCHEMA);
    for (const { table, column, decl } of ADDED_COLUMNS) {
      const columns = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
      if (!columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${decl}`);
    }
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }

  async createAccount(accountId: string, now: number): Promise<void> {
    this.db.prepare('INSERT INTO accounts (id, created_at) VALUES (?, ?)').run(accountId, now);
  }

  async accountExists(accountId: string): Promise<boolean> {
    return this.db.prepare('SELECT 1 FROM accounts WHERE id = ?').get(accountId) !== undefined;
  }

  async createKey(key: KeyRecord & { keyHash: string; now: number }): Promise<void> {
    this.db
      .prepare('INSERT INTO api_keys (id, account_id, key_hash, scopes, created_at) VALUES (?, ?, ?, ?, ?)')
      .run(key.keyId, key.accountId, key.keyHash, key.scopes.join(','), key.now);
  }

  async findKeyByHash(keyHash: string): Promise<KeyRecord | null> {
    const row = this.db
      .prepare('SELECT id, account_id, scopes, device_id FROM api_keys WHERE key_hash = ?')
      .get(keyHash) as { id: string; account_id: string; scopes: string; device_id: string | null } | undefined;
    if (!row) return null;
    const key: KeyRecord = { keyId: row.id, accountId: row.account_id, scopes: parseScopes(row.scopes) };
    if (row.device_id) key.deviceId = row.device_id;
    return key;
  }

  async insertPush(p: NewPush): Promise<{ push: PushRecord; duplicate: boolean }> {
    const insert = this.db.transaction((): { push: PushRecord; duplicate: boolean } => {
      if (p.clientId !== null) {
        const existing = this.db
          .prepare('SELECT * FROM pushes WHERE account_id = ? AND client_id = ?')
          .get(p.accountId, p.clientId) as PushRow | undefined;
        if (existing) return { push: toPush(existing), duplicate: true };
      }
      const account = this.db
        .prepare('UPDATE accounts SET next_push_id = next_push_id + 1 WHERE id = ? RETURNING next_push_id - 1 AS id')
        .get(p.accountId) as { id: number } | undefined;
      if (!account) throw new Error(`no account ${p.accountId}`);
      const row = this.db
        .prepare(
          `INSERT INTO pushes (account_id, id, type, agent_session_name, body, target_computer, client_id, sealed,
             state, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?) RETURNING *`,
        )
        .get(
          p.accountId,
          account.id,
          p.type,
          p.agentSessionName,
          p.body,
          p.targetComputer,
          p.clientId,
          p.sealed ?? null,
          p.now,
          p.now,
        ) as PushRow;
      return { push: toPush(row), duplicate: false };
    });
    return insert.immediate();
  }

  async getPush(accountId: string, id: number): Promise<PushRecord | null> {
    const row = this.db.prepare('SELECT * FROM pushes WHERE account_id = ? AND id = ?').get(accountId, id) as
      | PushRow
      | undefined;
    return row ? toPush(row) : null;
  }

  async updatePush(accountId: string, id: number, when: PushCondition, to: PushUpdate): Promise<PushRecord | null> {
    if (when.states.length === 0) return null;
    const clauses = [`state IN (${when.states.map(() => '?').join(', ')})`];
    const params: (string | number | null)[] = [...when.states];
    if (when.code !== undefined) {
      clauses.push('code = ?');
      params.push(when.code);
    }
    if (when.notResultComputer !== undefined) {
      clauses.push('(result_computer IS NULL OR result_computer != ?)');
      params.push(when.notResultComputer);
    }
    const final = FINAL_STATES.has(to.state);
    const row = this.db
      .prepare(
        `UPDATE pushes SET state = ?, code = ?, updated_at = ?,
           result_computer = CASE WHEN ? THEN ? ELSE result_computer END,
           body = CASE WHEN ? THEN '' ELSE body END,
           sealed = CASE WHEN ? THEN NULL ELSE sealed END
         WHERE account_id = ? AND id = ? AND ${clauses.join(' AND ')} RETURNING *`,
      )
      .get(
        to.state,
        to.code,
        to.now,
        to.resultComputer !== undefined ? 1 : 0,
        to.resultComputer ?? null,
        final ? 1 : 0,
        final ? 1 : 0,
        accountId,
        id,
        ...params,
      ) as PushRow | undefined;
    return row ? toPush(row) : null;
  }

  async listReplayable(q: ReplayQuery): Promise<PushRecord[]> {
    if (q.states.length === 0) return [];
    const rows = this.db
      .prepare(
        `SELECT * FROM pushes
         WHERE account_id = ? AND id > ? AND type = ? AND state IN (${q.states.map(() => '?').join(', ')})
           AND (target_computer IS NULL OR target_computer = ?)
         ORDER BY id`,
      )
      .all(q.accountId, q.afterId, q.type, ...q.states, q.hookId) as PushRow[];
    return rows.map(toPush);
  }

  async listOlderThan(states: readonly PushState[], createdBefore: number, limit: number): Promise<PushRecord[]> {
    if (states.length === 0) return [];
    const rows = this.db
      .prepare(
        `SELECT * FROM pushes WHERE state IN (${states.map(() => '?').join(', ')}) AND created_at < ?
         ORDER BY created_at LIMIT ?`,
      )
      .all(...states, createdBefore, limit) as PushRow[];
    return rows.map(toPush);
  }

  async registerComputer(c: {
    accountId: string;
    name: string;
    platform: string | null;
    hookId: string;
    deviceId?: string | null;
    now: number;
  }): Promise<ComputerRecord> {
    const register = this.db.transaction((): ComputerRow => {
      const existing = this.db
        .prepare('SELECT * FROM computers WHERE account_id = ? AND name = ?')
        .get(c.accountId, c.name) as ComputerRow | undefined;
      if (existing) {
        const platform = c.platform ?? existing.platform;
        const deviceId = c.deviceId ?? existing.device_id;
        if (platform === existing.platform && deviceId === existing.device_id) return existing;
        return this.db
          .prepare('UPDATE computers SET platform = ?, device_id = ? WHERE hook_id = ? RETURNING *')
          .get(platform, deviceId, existing.hook_id) as ComputerRow;
      }
      return this.db
        .prepare(
          `INSERT INTO computers (hook_id, account_id, name, platform, created_at, device_id)
           VALUES (?, ?, ?, ?, ?, ?) RETURNING *`,
        )
        .get(c.hookId, c.accountId, c.name, c.platform, c.now, c.deviceId ?? null) as ComputerRow;
    });
    return toComputer(register.immediate());
  }

  async getComputer(hookId: string): Promise<ComputerRecord | null> {
    const row = this.db.prepare('SELECT * FROM computers WHERE hook_id = ?').get(hookId) as ComputerRow | undefined;
    return row ? toComputer(row) : null;
  }

  async listComputers(accountId: string): Promise<ComputerRecord[]> {
    const rows = this.db
      .prepare('SELECT * FROM computers WHERE account_id = ? ORDER BY created_at, hook_id')
      .all(accountId) as ComputerRow[];
    return rows.map(toComputer);
  }

  async saveSessions(hookId: string, sessions: SessionRecord[], now: number): Promise<void> {
    this.db
      .prepare('UPDATE computers SET sessions = ?, sessions_at = ?, last_seen_at = ? WHERE hook_id = ?')
      .run(JSON.stringify(sessions), now, now, hookId);
  }

  async touchComputer(hookId: string, now: number): Promise<void> {
    this.db.prepare('UPDATE computers SET last_seen_at = ? WHERE hook_id = ?').run(now, hookId);
  }

  async computersWithSession(accountId: string, sessionName: string): Promise<string[]> {
    const rows = this.db
      .prepare(
        `SELECT DISTINCT c.hook_id AS hookId FROM computers c, json_each(c.sessions) s
         WHERE c.account_id = ? AND json_extract(s.value, '$.name') = ? ORDER BY c.hook_id`,
      )
      .all(accountId, sessionName) as { hookId: string }[];
    return rows.map((r) => r.hookId);
  }

  async registerDevice(d: Omit<DeviceRecord, 'createdAt'> & { now: number }): Promise<DeviceRecord> {
    const register = this.db.transaction((): DeviceRow => {
      const existing = this.db
        .prepare('SELECT * FROM devices WHERE account_id = ? AND public_key = ?')
        .get(d.accountId, d.publicKey) as DeviceRow | undefined;
      if (existing) return existing;
      return this.db
        .prepare(
          `INSERT INTO devices (id, account_id, name, kind, public_key, created_at) VALUES (?, ?, ?, ?, ?, ?)
           RETURNING *`,
        )
        .get(d.deviceId, d.accountId, d.name, d.kind, d.publicKey, d.now) as DeviceRow;
    });
    return toDevice(register.immediate());
  }

  async listDevices(accountId: string): Promise<DeviceRecord[]> {
    const rows = this.db
      .prepare('SELECT * FROM devices WHERE account_id = ? ORDER BY created_at, id')
      .all(accountId) as DeviceRow[];
    return rows.map(toDevice);
  }

  async getDevice(deviceId: string): Promise<DeviceRecord | null> {
    const row = this.db.prepare('SELECT * FROM devices WHERE id = ?').get(deviceId) as DeviceRow | undefined;
    return row ? toDevice(row) : null;
  }

  async deleteDevice(accountId: string, deviceId: string): Promise<boolean> {
    const remove = this.db.transaction((): boolean => {
      const gone = this.db.prepare('DELETE FROM devices WHERE account_id = ? AND id = ?').run(accountId, deviceId);
      if (gone.changes === 0) return false;
      this.db.prepare('DELETE FROM api_keys WHERE account_id = ? AND device_id = ?').run(accountId, deviceId);
      this.db
        .prepare('UPDATE computers SET device_id = NULL WHERE account_id = ? AND device_id = ?')
        .run(accountId, deviceId);
      return true;
    });
    return remove.immediate();
  }

  async createPairing(p: { codeHash: string; accountId: string; now: number; expiresAt: number }): Promise<void> {
    this.db.prepare('DELETE FROM pairings WHERE expires_at < ?').run(p.now - PAIRING_KEEP_MS);
    this.db
      .prepare('INSERT INTO pairings (code_hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)')
      .run(p.codeHash, p.accountId, p.now, p.expiresAt);
  }

  async claimPairing(c: {
    codeHash: string;
    now: number;
    device: { deviceId: string; name: string; publicKey: string };
    key: { keyId: string; keyHash: string; scopes: Scope[] };
  }): Promise<
    { ok: true; accountId: string; device: DeviceRecord } | { ok: false; reason: 'unknown' | 'used' | 'expired' }
  > {
    const claim = this.db.transaction(() => {
      const pairing = this.db.prepare('SELECT * FROM pairings WHERE code_hash = ?').get(c.codeHash) as
        | { account_id: string; expires_at: number; used_at: number | null }
        | undefined;
      if (!pairing) return { ok: false as const, reason: 'unknown' as const };
      if (pairing.used_at !== null) return { ok: false as const, reason: 'used' as const };
      if (pairing.expires_at <= c.now) return { ok: false as const, reason: 'expired' as const };
      const accountId = pairing.account_id;
      const existing = this.db
        .prepare('SELECT * FROM devices WHERE account_id = ? AND public_key = ?')
        .get(accountId, c.device.publicKey) as DeviceRow | undefined;
      const row =
        existing ??
        (this.db
          .prepare(
            `INSERT INTO devices (id, account_id, name, kind, public_key, created_at) VALUES (?, ?, ?, 'app', ?, ?)
             RETURNING *`,
          )
          .get(c.device.deviceId, accountId, c.device.name, c.device.publicKey, c.now) as DeviceRow);
      this.db
        .prepare(
          'INSERT INTO api_keys (id, account_id, key_hash, scopes, created_at, device_id) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(c.key.keyId, accountId, c.key.keyHash, c.key.scopes.join(','), c.now, row.id);
      this.db
        .prepare('UPDATE pairings SET used_at = ?, device_id = ? WHERE code_hash = ?')
        .run(c.now, row.id, c.codeHash);
      return { ok: true as const, accountId, device: toDevice(row) };
    });
    return claim.immediate();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}
