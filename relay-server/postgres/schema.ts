/**
 * The Postgres store's tables and bringing a database up to them (`svc_schema` holds the version; a database made by
 * a newer relay is refused). The same tables as the SQLite file (relay-server/sqlite/schema.ts) in Postgres's types.
 */
import type pg from 'pg';

const SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS svc_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS accounts (
  id TEXT PRIMARY KEY,
  created_at BIGINT NOT NULL,
  next_push_id BIGINT NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS api_keys (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  key_hash TEXT NOT NULL UNIQUE,
  scopes TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  device_id TEXT
);
CREATE TABLE IF NOT EXISTS pushes (
  account_id TEXT NOT NULL REFERENCES accounts(id),
  id BIGINT NOT NULL,
  type TEXT NOT NULL,
  agent_session_name TEXT NOT NULL,
  body TEXT NOT NULL,
  target_computer TEXT,
  client_id TEXT,
  sealed TEXT,
  state TEXT NOT NULL,
  code TEXT,
  result_computer TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (account_id, id)
);
CREATE UNIQUE INDEX IF NOT EXISTS pushes_client_id ON pushes(account_id, client_id) WHERE client_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS pushes_state_created ON pushes(state, created_at);
-- an account's open pushes, for the storage cap on every insert (without it: a scan of all its kept pushes)
CREATE INDEX IF NOT EXISTS pushes_open ON pushes(account_id) WHERE state IN ('pending', 'delivered');
CREATE TABLE IF NOT EXISTS computers (
  hook_id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  name TEXT NOT NULL,
  platform TEXT,
  created_at BIGINT NOT NULL,
  last_seen_at BIGINT,
  sessions JSONB NOT NULL DEFAULT '[]',
  sessions_at BIGINT,
  schedules JSONB,
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
  created_at BIGINT NOT NULL,
  UNIQUE (account_id, public_key)
);
CREATE TABLE IF NOT EXISTS pairings (
  code_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT,
  device_id TEXT
);
CREATE TABLE IF NOT EXISTS history (
  id BIGSERIAL PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  computer TEXT NOT NULL,
  session TEXT NOT NULL,
  envelope TEXT NOT NULL,
  size INTEGER NOT NULL,
  created_at BIGINT NOT NULL
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
  events JSONB NOT NULL
);
CREATE INDEX IF NOT EXISTS push_subscriptions_account ON push_subscriptions(account_id);
CREATE TABLE IF NOT EXISTS notifications (
  seq BIGSERIAL,
  account_id TEXT NOT NULL REFERENCES accounts(id),
  computer TEXT NOT NULL,
  id TEXT NOT NULL,
  session TEXT NOT NULL,
  kind TEXT NOT NULL,
  envelope JSONB NOT NULL,
  at BIGINT NOT NULL,
  PRIMARY KEY (account_id, computer, id)
);
CREATE INDEX IF NOT EXISTS notifications_account_at ON notifications(account_id, at, seq);
ALTER TABLE devices ADD COLUMN IF NOT EXISTS pairing_proof TEXT;
ALTER TABLE devices ADD COLUMN IF NOT EXISTS last_seen_at BIGINT;
ALTER TABLE devices ADD COLUMN IF NOT EXISTS origin TEXT;
`;

/** The tables, under an advisory lock so two relays starting at once do not race; a newer schema is refused. */
export async function setUpSchema(q: Pick<pg.PoolClient, 'query'>): Promise<void> {
  await q.query('SELECT pg_advisory_xact_lock(7274623)');
  await q.query(SCHEMA);
  const { rows } = await q.query('SELECT version FROM svc_schema');
  const version = rows[0] ? Number(rows[0].version) : 0;
  if (version > SCHEMA_VERSION)
    throw new Error(`the database was made by a newer relay (schema ${version}); upgrade this relay`);
  if (rows.length === 0) await q.query('INSERT INTO svc_schema (version) VALUES ($1)', [SCHEMA_VERSION]);
}
