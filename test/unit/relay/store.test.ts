/**
 * The SQLite store on a real file in a temp dir.
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionRecord } from '../../../core/protocol/index.js';
import { createAccount, createApiKey } from '../../../relay-server/accounts.js';
import { hashApiKey } from '../../../relay-server/auth.js';
import { keptCounts, openDatabase } from '../../../relay-server/sqlite/db.js';
import { openSqliteStore, type SqliteStore } from '../../../relay-server/sqliteStore.js';
import { type NewPush, StorageFullError } from '../../../relay-server/store.js';

let root: string;
let dataDir: string;
let store: SqliteStore;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-store-'));
  dataDir = join(root, 'data');
  store = openSqliteStore(dataDir);
});

afterEach(async () => {
  await store.close();
  await rm(root, { recursive: true, force: true });
});

const push = (accountId: string, extra: Partial<NewPush> = {}): NewPush => ({
  accountId,
  type: 'agent.command',
  agentSessionName: 'svc-proj',
  body: 'secret text',
  targetComputer: null,
  clientId: null,
  now: 1_000,
  ...extra,
});

const session = (name: string): SessionRecord => ({ name, attached: false, createdAt: 1, activityAt: 2, panes: [] });

describe('accounts and keys', () => {
  it('stores a key only as its hash and finds it by the hash', async () => {
    const account = await createAccount(store);
    expect(account.scopes).toEqual(['push:read', 'push:write']);
    expect(await store.findKeyByHash(hashApiKey(account.apiKey))).toEqual({
      keyId: account.keyId,
      accountId: account.accountId,
      scopes: ['push:read', 'push:write'],
    });
    expect(await store.findKeyByHash(hashApiKey(`${account.apiKey}x`))).toBeNull();
    const reader = await createApiKey(store, account.accountId, ['push:read', 'push:read']);
    expect(reader.scopes).toEqual(['push:read']);
    await expect(createApiKey(store, 'acc_missing', ['push:read'])).rejects.toThrow('no account acc_missing');
    await expect(createApiKey(store, account.accountId, [])).rejects.toThrow('at least one scope');

    await store.close();
    const raw = openDatabase(join(dataDir, 'relay.db'), { readonly: true });
    const dump = JSON.stringify(raw.prepare('SELECT * FROM api_keys').all());
    raw.close();
    expect(dump).not.toContain(account.apiKey);
    expect(dump).toContain(hashApiKey(account.apiKey));
    store = openSqliteStore(dataDir);
  });
});

describe('pushes', () => {
  it('prunes each account to its newest final pushes, never an open one', async () => {
    await store.createAccount('a', 0);
    await store.createAccount('b', 0);
    for (let i = 0; i < 6; i++) await store.insertPush(push('a'));
    await store.insertPush(push('b'));
    const final = { state: 'injected' as const, code: null, now: 2_000 };
    for (const id of [1, 2, 3, 4, 6]) await store.updatePush('a', id, { states: ['pending'] }, final);
    await store.updatePush('b', 1, { states: ['pending'] }, final);
    expect(await store.pruneFinalPushes(2)).toBe(3);
    const left = await Promise.all([1, 2, 3, 4, 5, 6].map(async (id) => (await store.getPush('a', id))?.state ?? null));
    // 5 is open: kept whatever its age; of the final ones only the newest two (4, 6).
    expect(left).toEqual([null, null, null, 'injected', 'pending', 'injected']);
    expect(await store.getPush('b', 1)).toMatchObject({ state: 'injected' });
    // Ids are never reused after a prune.
    expect((await store.insertPush(push('a'))).push.id).toBe(7);
  });

  it('refuses a push that would take an account past maxOpenBytes; final pushes do not count, duplicates pass', async () => {
    await store.createAccount('a', 0);
    const big = (clientId: string) => push('a', { body: 'x'.repeat(1_000), clientId, maxOpenBytes: 3_000 });
    await store.insertPush(big('1'));
    await store.insertPush(big('2'));
    await expect(store.insertPush(big('3'))).rejects.toBeInstanceOf(StorageFullError);
    // A retry of a push already stored is answered, full or not.
    expect((await store.insertPush(big('2'))).duplicate).toBe(true);
    await store.updatePush('a', 1, { states: ['pending'] }, { state: 'expired', code: null, now: 2_000 });
    expect((await store.insertPush(big('3'))).duplicate).toBe(false);
  });

  it('numbers pushes per account and deduplicates by clientId', async () => {
    await store.createAccount('a', 0);
    await store.createAccount('b', 0);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await store.insertPush(push('a'))).push.id);
    expect(ids).toEqual([1, 2, 3]);
    expect((await store.insertPush(push('b'))).push.id).toBe(1);
    const first = await store.insertPush(push('a', { clientId: 'x' }));
    const again = await store.insertPush(push('a', { clientId: 'x', body: 'other' }));
    expect(first).toMatchObject({ duplicate: false, push: { id: 4 } });
    expect(again).toMatchObject({ duplicate: true, push: { id: 4, body: 'secret text' } });
    expect((await store.insertPush(push('a'))).push.id).toBe(5);
    await expect(store.insertPush(push('nobody'))).rejects.toThrow();
  });

  it('updates state only when the condition holds, and forgets the body once final', async () => {
    await store.createAccount('a', 0);
    const { push: p } = await store.insertPush(push('a'));
    expect(
      await store.updatePush('a', p.id, { states: ['delivered'] }, { state: 'injected', code: null, now: 2 }),
    ).toBe(null);
    const delivered = await store.updatePush(
      'a',
      p.id,
      { states: ['pending'] },
      { state: 'delivered', code: null, now: 2 },
    );
    expect(delivered).toMatchObject({ state: 'delivered', body: 'secret text', updatedAt: 2 });
    const refused = await store.updatePush(
      'a',
      p.id,
      { states: ['pending', 'delivered'] },
      { state: 'refused', code: 'session_not_found', resultComputer: 'c_a', now: 3 },
    );
    expect(refused).toMatchObject({ state: 'refused', code: 'session_not_found', resultComputer: 'c_a', body: '' });
    const sameComputer = { states: ['refused'] as const, code: 'session_not_found', notResultComputer: 'c_a' };
    expect(await store.updatePush('a', p.id, sameComputer, { state: 'injected', code: null, now: 4 })).toBeNull();
    const otherComputer = { ...sameComputer, notResultComputer: 'c_b' };
    expect(
      await store.updatePush('a', p.id, otherComputer, {
        state: 'injected',
        code: null,
        resultComputer: 'c_b',
        now: 4,
      }),
    ).toMatchObject({ state: 'injected', code: null, resultComputer: 'c_b' });
    expect(await store.updatePush('b', p.id, { states: ['injected'] }, { state: 'expired', code: null, now: 5 })).toBe(
      null,
    );
  });

  it('lists what a listener may replay and what the sweeper may expire', async () => {
    await store.createAccount('a', 0);
    await store.insertPush(push('a')); // 1
    await store.insertPush(push('a', { targetComputer: 'c_other' })); // 2
    await store.insertPush(push('a', { type: 'note' })); // 3
    await store.insertPush(push('a', { targetComputer: 'c_me', now: 5_000 })); // 4
    const { push: done } = await store.insertPush(push('a')); // 5
    await store.updatePush('a', done.id, { states: ['pending'] }, { state: 'injected', code: null, now: 6 });
    const replayable = await store.listReplayable({
      accountId: 'a',
      afterId: 0,
      hookId: 'c_me',
      type: 'agent.command',
      states: ['pending', 'delivered'],
    });
    expect(replayable.map((p) => p.id)).toEqual([1, 4]);
    const after1 = await store.listReplayable({
      accountId: 'a',
      afterId: 1,
      hookId: 'c_me',
      type: 'agent.command',
      states: ['pending'],
    });
    expect(after1.map((p) => p.id)).toEqual([4]);
    expect((await store.listOlderThan(['pending'], 2_000, 10)).map((p) => p.id)).toEqual([1, 2, 3]);
  });
});

describe('computers', () => {
  it('registers once per name, keeps the inventory, and finds computers by session', async () => {
    await store.createAccount('a', 0);
    await store.createAccount('b', 0);
    const laptop = await store.registerComputer({
      accountId: 'a',
      name: 'laptop',
      platform: null,
      hookId: 'c_1',
      ownerKeyId: 'key_a',
      now: 1,
    });
    const again = await store.registerComputer({
      accountId: 'a',
      name: 'laptop',
      platform: 'darwin',
      hookId: 'c_2',
      ownerKeyId: 'key_a',
      now: 2,
    });
    expect(again).toMatchObject({ hookId: laptop.hookId, platform: 'darwin' });
    const c3 = { accountId: 'a', name: 'desk', platform: null, hookId: 'c_3', ownerKeyId: 'key_a', now: 3 };
    await store.registerComputer(c3);
    await store.registerComputer({
      accountId: 'b',
      name: 'laptop',
      platform: null,
      hookId: 'c_4',
      ownerKeyId: 'key_b',
      now: 4,
    });
    await store.saveSessions('c_1', [session('svc-a'), session('svc-b')], 10);
    await store.saveSessions('c_3', [session('svc-b')], 11);
    await store.saveSessions('c_4', [session('svc-a')], 12);
    expect(await store.computersWithSession('a', 'svc-a')).toEqual(['c_1']);
    expect(await store.computersWithSession('a', 'svc-b')).toEqual(['c_1', 'c_3']);
    expect(await store.computersWithSession('a', 'svc-c')).toEqual([]);
    await store.touchComputer('c_1', 20);
    expect(await store.getComputer('c_1')).toMatchObject({
      lastSeenAt: 20,
      sessionsAt: 10,
      sessions: [session('svc-a'), session('svc-b')],
    });
    expect((await store.listComputers('a')).map((c) => c.hookId)).toEqual(['c_1', 'c_3']);
    expect(await store.getComputer('c_9')).toBeNull();
  });

  it('belongs to the key that registered it: another key changes nothing, an ownerless one is claimed once', async () => {
    await store.createAccount('a', 0);
    const laptop = { accountId: 'a', name: 'laptop', platform: 'linux', hookId: 'c_1', now: 1 };
    expect(await store.registerComputer({ ...laptop, deviceId: 'd_1', ownerKeyId: 'key_1' })).toMatchObject({
      ownerKeyId: 'key_1',
      deviceId: 'd_1',
    });
    const other = await store.registerComputer({ ...laptop, deviceId: 'd_evil', ownerKeyId: 'key_2' });
    expect(other).toMatchObject({ ownerKeyId: 'key_1', deviceId: 'd_1' });
    expect(await store.registerComputer({ ...laptop, deviceId: 'd_2', ownerKeyId: 'key_1' })).toMatchObject({
      deviceId: 'd_2',
    });
    expect(await store.claimComputer('c_1', 'key_2')).toBe(false);

    // A computer of a database made before owners were recorded.
    const raw = openDatabase(join(dataDir, 'relay.db'));
    raw.prepare("UPDATE computers SET owner_key_id = NULL WHERE hook_id = 'c_1'").run();
    raw.close();
    expect(await store.claimComputer('c_1', 'key_3')).toBe(true);
    expect(await store.claimComputer('c_1', 'key_1')).toBe(false);
    expect((await store.getComputer('c_1'))?.ownerKeyId).toBe('key_3');
  });
});

describe('the file', () => {
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
  // Node 24 aborts the process when the collector frees a better-sqlite3 wrapper outside a JavaScript context, so
  // none may become garbage: one statement per SQL text, and every database kept.
  it('hands out one statement per SQL text, and keeps every database it opened', () => {
    const before = keptCounts();
    const db = openDatabase(':memory:');
    expect(db.prepare('SELECT 1 AS one')).toBe(db.prepare('SELECT 1 AS one'));
    expect(db.prepare('SELECT 1 AS one').get()).toEqual({ one: 1 });
    db.close();
    expect(keptCounts()).toEqual({ databases: before.databases + 1, statements: before.statements + 1 });
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
    const after = keptCounts();
    for (let i = 0; i < 20; i++) await round();
    expect(keptCounts()).toEqual(after);
  });
});
