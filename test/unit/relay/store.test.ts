/**
 * The SQLite store on a real file in a temp dir: the Store contract (test/helpers/storeContract.ts), and what only a
 * file has (modes, WAL, older and newer schemas, the keys on disk, better-sqlite3's objects).
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PushState } from '../../../core/protocol/index.js';
import { createAccount } from '../../../relay-server/accounts.js';
import { hashApiKey } from '../../../relay-server/auth.js';
import { openDatabase, preparedCount } from '../../../relay-server/sqlite/db.js';
import { OPEN_BYTES_SQL, olderThanSql } from '../../../relay-server/sqlite/pushes.js';
import { openSqliteStore, type SqliteStore } from '../../../relay-server/sqliteStore.js';
import { push, storeContract } from '../../helpers/storeContract.js';

let root: string;
let dataDir: string;
let store: SqliteStore;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-store-'));
  dataDir = join(root, 'data');
});

afterEach(async () => {
  await store?.close().catch(() => {});
  await rm(root, { recursive: true, force: true });
});

storeContract({
  open: async () => {
    store = openSqliteStore(dataDir);
    return store;
  },
  clearOwner: async (hookId) => {
    const raw = openDatabase(join(dataDir, 'relay.db'));
    raw.prepare('UPDATE computers SET owner_key_id = NULL WHERE hook_id = ?').run(hookId);
    raw.close();
  },
});

describe('keys on disk', () => {
  it('holds only the hash of a key', async () => {
    store = openSqliteStore(dataDir);
    const account = await createAccount(store);
    await store.close();
    const raw = openDatabase(join(dataDir, 'relay.db'), { readonly: true });
    const dump = JSON.stringify(raw.prepare('SELECT * FROM api_keys').all());
    raw.close();
    expect(dump).not.toContain(account.apiKey);
    expect(dump).toContain(hashApiKey(account.apiKey));
  });
});

describe('the file', () => {
  beforeEach(() => {
    store = openSqliteStore(dataDir);
  });
  it('is owner-only, WAL, and survives close and reopen', async () => {
    const account = await createAccount(store);
    await store.insertPush(push(account.accountId));
    await store.close();
    expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(dataDir, 'relay.db'))).mode & 0o777).toBe(0o600);
    store = openSqliteStore(dataDir);
    expect(await store.findKeyByHash(hashApiKey(account.apiKey))).not.toBeNull();
    expect((await store.insertPush(push(account.accountId))).push.id).toBe(2);
    const raw = openDatabase(join(dataDir, 'relay.db'), { readonly: true });
    expect(raw.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    raw.close();
  });

  it('gives a version 1 database the columns added since', async () => {
    const account = await createAccount(store);
    await store.close();
    const raw = openDatabase(join(dataDir, 'relay.db'));
    raw.exec('ALTER TABLE pushes DROP COLUMN sealed');
    raw.exec('ALTER TABLE computers DROP COLUMN device_id');
    raw.exec('ALTER TABLE api_keys DROP COLUMN device_id');
    raw.exec('ALTER TABLE computers DROP COLUMN owner_key_id');
    raw.exec('PRAGMA user_version = 1');
    raw.close();
    store = openSqliteStore(dataDir);
    expect(await store.findKeyByHash(hashApiKey(account.apiKey))).toMatchObject({ keyId: account.keyId });
    const { push: sealed } = await store.insertPush(push(account.accountId, { sealed: '{"v":1}' }));
    expect((await store.getPush(account.accountId, sealed.id))?.sealed).toBe('{"v":1}');
    const device = { deviceId: 'dev_1', accountId: account.accountId, name: 'mac', kind: 'computer' as const };
    await store.registerDevice({ ...device, publicKey: 'pk', now: 1 });
    const computer = {
      accountId: account.accountId,
      name: 'mac',
      platform: null,
      hookId: 'hook_1',
      ownerKeyId: 'k',
      now: 1,
    };
    expect((await store.registerComputer({ ...computer, deviceId: 'dev_1' })).deviceId).toBe('dev_1');
    const check = openDatabase(join(dataDir, 'relay.db'), { readonly: true });
    expect(check.prepare('PRAGMA user_version').get()).toEqual({ user_version: 2 });
    check.close();
  });

  it("counts an account's open pushes through an index, not by reading every push it keeps", async () => {
    await store.close();
    const raw = openDatabase(join(dataDir, 'relay.db'));
    const plan = raw.prepare(`EXPLAIN QUERY PLAN ${OPEN_BYTES_SQL}`).all(256, 'acct') as { detail: string }[];
    raw.close();
    expect(plan.map((p) => p.detail).join('; ')).toMatch(/USING INDEX pushes_open/);
  });

  it('finds old open pushes for the sweeper through an index that final pushes leave', async () => {
    await store.close();
    // a database from before: its index held every push, final ones too
    let raw = openDatabase(join(dataDir, 'relay.db'));
    raw.exec('CREATE INDEX pushes_state_created ON pushes(state, created_at)');
    raw.close();
    store = openSqliteStore(dataDir);
    const account = await createAccount(store);
    const { push: open } = await store.insertPush(push(account.accountId, { clientId: null, now: 10 }));
    const { push: done } = await store.insertPush(push(account.accountId, { clientId: null, now: 10 }));
    await store.updatePush(
      account.accountId,
      done.id,
      { states: ['pending'] },
      { state: 'injected', code: null, now: 11 },
    );
    expect((await store.listOlderThan(['pending'], 20, 10)).map((p) => p.id)).toEqual([open.id]);
    expect((await store.listOlderThan(['injected'], 20, 10)).map((p) => p.id)).toEqual([done.id]);
    await store.close();
    raw = openDatabase(join(dataDir, 'relay.db'));
    const indexes = raw
      .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'pushes'")
      .all() as {
      name: string;
      sql: string | null;
    }[];
    const plan = (states: PushState[]) =>
      (raw.prepare(`EXPLAIN QUERY PLAN ${olderThanSql(states)}`).all(...states, 1, 1) as { detail: string }[])
        .map((p) => p.detail)
        .join('; ');
    const openPlans = [plan(['pending']), plan(['delivered']), plan(['pending', 'delivered'])];
    raw.close();
    expect(indexes.map((i) => i.name)).not.toContain('pushes_state_created');
    // partial: a push at a final state is not in it
    expect(indexes.find((i) => i.name === 'pushes_open_created')?.sql).toMatch(
      /WHERE state IN \('pending', 'delivered'\)/,
    );
    for (const p of openPlans) expect(p).toMatch(/USING INDEX pushes_open_created/);
    store = openSqliteStore(dataDir);
  });

  it('refuses a database from a newer relay', async () => {
    await store.close();
    const raw = openDatabase(join(dataDir, 'relay.db'));
    raw.exec('PRAGMA user_version = 99');
    raw.close();
    expect(() => openSqliteStore(dataDir)).toThrow(/schema version 99/);
    store = openSqliteStore(join(root, 'fresh'));
  });
});

describe('better-sqlite3 objects (relay-server/sqlite/db.ts)', () => {
  beforeEach(() => {
    store = openSqliteStore(dataDir);
  });
  it('hands out one statement per SQL text', () => {
    const before = preparedCount();
    const db = openDatabase(':memory:');
    expect(db.prepare('SELECT 1 AS one')).toBe(db.prepare('SELECT 1 AS one'));
    expect(db.prepare('SELECT 1 AS one').get()).toEqual({ one: 1 });
    db.close();
    expect(preparedCount()).toBe(before + 1);
  });

  it('a store makes no new statement for calls it has made before', async () => {
    const account = await createAccount(store);
    const round = async () => {
      const { push: p } = await store.insertPush(push(account.accountId, { clientId: null }));
      await store.getPush(account.accountId, p.id);
      await store.updatePush(
        account.accountId,
        p.id,
        { states: ['pending'] },
        { state: 'delivered', code: null, now: 2 },
      );
      await store.findKeyByHash(hashApiKey(account.apiKey));
    };
    await round();
    const after = preparedCount();
    for (let i = 0; i < 20; i++) await round();
    expect(preparedCount()).toBe(after);
  });
});
