/**
 * The tables of `relay.db`, and bringing an opened database up to them: WAL and the other pragmas, the schema,
 * and the columns an older relay's database lacks. `user_version` holds the schema version.
 */
import type Database from 'better-sqlite3';

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
-- open pushes by age, for the sweeper and the stranded-push check; a push leaves it at its final state, so the
-- index stays as small as what is waiting (it was every push's, state and all: a write more per state change)
DROP INDEX IF EXISTS pushes_state_created;
CREATE INDEX IF NOT EXISTS pushes_open_created ON pushes(state, created_at) WHERE state IN ('pending', 'delivered');
-- an account's open pushes, for the storage cap on every insert (without it: a scan of all its kept pushes)
CREATE INDEX IF NOT EXISTS pushes_open ON pushes(account_id) WHERE state IN ('pending', 'delivered');
CREATE TABLE IF NOT EXISTS computers (
  hook_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  name TEXT NOT NULL,
  platform TEXT,
  created_at INTEGER NOT NULL,
  last_seen_at INTEGER,
  sessions TEXT NOT NULL DEFAULT '[]',
  sessions_at INTEGER,
  schedules TEXT,
  device_id TEXT,
  owner_key_id TEXT,
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
CREATE TABLE IF NOT EXISTS history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  computer TEXT NOT NULL,
  session TEXT NOT NULL,
  envelope TEXT NOT NULL,
  size INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS history_session ON history(account_id, computer, session, id);
CREATE INDEX IF NOT EXISTS history_account ON history(account_id, id);
CREATE TABLE IF NOT EXISTS relay_settings (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS push_subscriptions (
  device_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  endpoint TEXT NOT NULL,
  p256dh TEXT NOT NULL,
  auth TEXT NOT NULL,
  events TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS push_subscriptions_account ON push_subscriptions(account_id);
CREATE TABLE IF NOT EXISTS notifications (
  account_id TEXT NOT NULL REFERENCES accounts(id),
  computer TEXT NOT NULL,
  id TEXT NOT NULL,
  session TEXT NOT NULL,
  kind TEXT NOT NULL,
  envelope TEXT NOT NULL,
  at INTEGER NOT NULL,
  PRIMARY KEY (account_id, computer, id)
);
CREATE INDEX IF NOT EXISTS notifications_account_at ON notifications(account_id, at);
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
  { table: 'computers', column: 'owner_key_id', decl: 'TEXT' },
  { table: 'computers', column: 'schedules', decl: 'TEXT' },
  { table: 'devices', column: 'pairing_proof', decl: 'TEXT' },
  { table: 'devices', column: 'last_seen_at', decl: 'INTEGER' },
  { table: 'devices', column: 'origin', decl: 'TEXT' },
];

/** WAL and the other pragmas, then the schema; refuses a database made by a newer relay. */
export function setUpDatabase(db: Database.Database): void {
  // exec and prepare, not db.pragma(), which makes a statement of its own each call (see db.ts).
  db.exec(
    'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;' +
      // Erased bodies and deleted rows are overwritten with zeros, not left in free space of the file.
      ' PRAGMA secure_delete = ON',
  );
  const version = (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
  if (version > SCHEMA_VERSION) {
    throw new Error(`relay.db has schema version ${version}; this relay knows up to ${SCHEMA_VERSION}`);
  }
  db.exec(SCHEMA);
  for (const { table, column, decl } of ADDED_COLUMNS) {
    const columns = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
    if (!columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${decl}`);
  }
  db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
}
