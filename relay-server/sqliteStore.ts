/**
 * The embedded Store: one SQLite file `relay.db` in the data directory, WAL mode, owner-only permissions.
 * better-sqlite3 is synchronous, so every transaction here is atomic within the process; `immediate`
 * transactions keep it so when a CLI command writes to the same file while the relay runs.
 *
 * Writes are committed in groups: the writes asked for in one turn of the event loop run in one transaction, each
 * in its own savepoint but for one-statement ones, and each caller's promise settles only once it has committed
 * (`sqlite/writeQueue.ts`). The commit is the costly part of a small write; under load a push's insert and the state
 * changes of the pushes before it share one (docs/benchmarks.md, "bench/relay.ts").
 *
 * This file opens the database and answers the `Store` interface; the SQL is in `sqlite/`, one file per area:
 * `schema.ts` (tables, pragmas, added columns), `accounts.ts` (accounts and keys), `pushes.ts`, `computers.ts`
 * (computers and their inventories), `devices.ts` (devices and pairing codes); `db.ts` opens the file and hands out
 * one statement per SQL text.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import type { PushState, SessionRecord } from '../core/protocol/index.js';
import * as accounts from './sqlite/accounts.js';
import * as computers from './sqlite/computers.js';
import { openDatabase } from './sqlite/db.js';
import * as devices from './sqlite/devices.js';
import * as history from './sqlite/history.js';
import * as pushes from './sqlite/pushes.js';
import { setUpDatabase } from './sqlite/schema.js';
import * as webPush from './sqlite/webPush.js';
import { type WriteOptions, WriteQueue } from './sqlite/writeQueue.js';
import type {
  ComputerRecord,
  ComputerRegistration,
  DeviceRecord,
  HistoryChunkRecord,
  HistoryLimits,
  HistoryQuery,
  KeyRecord,
  NewPairing,
  NewPush,
  NotificationRecord,
  PairingClaim,
  PairingClaimResult,
  PushCondition,
  PushRecord,
  PushSubscriptionRecord,
  PushUpdate,
  ReplayQuery,
  Store,
} from './store.js';

export const DB_FILE = 'relay.db';
/**
 * How long a key found by its hash is answered from memory. Keys are removed only through this store (a device's
 * tokens, `deleteDevice`), which forgets them at once; the time bounds what another process sharing the file could
 * remove behind its back (none does today).
 */
const KEY_MEMORY_MS = 30_000;
const KEYS_REMEMBERED = 10_000;

/** Create the data directory (0700) if needed and open `relay.db` (0600) in it. */
export function openSqliteStore(dataDir: string): SqliteStore {
  if (!existsSync(dataDir)) mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  else if (!statSync(dataDir).isDirectory()) throw new Error(`data directory ${dataDir} is not a directory`);
  const file = join(dataDir, DB_FILE);
  // Create the file owner-only before SQLite does; SQLite gives -wal and -shm the database file's mode.
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
  return new SqliteStore(openDatabase(file));
}

/** Each method is `async` so that a failing statement rejects, as a Postgres store's would, and never throws. */
export class SqliteStore implements Store {
  private readonly db: Database.Database;
  private readonly writes: WriteQueue;
  /** Keys by hash, found within KEY_MEMORY_MS: every request and upgrade looks its key up. */
  private readonly keys = new Map<string, { key: KeyRecord; at: number }>();
  private closed = false;

  constructor(db: Database.Database) {
    this.db = db;
    setUpDatabase(db);
    this.writes = new WriteQueue(db);
  }

  /** A write, committed together with the others asked for in this turn of the event loop. */
  private write<T>(run: (db: Database.Database) => T, options?: WriteOptions): Promise<T> {
    return this.writes.add(() => run(this.db), options);
  }

  async createAccount(accountId: string, now: number): Promise<void> {
    return this.write((db) => accounts.createAccount(db, accountId, now));
  }

  async accountExists(accountId: string): Promise<boolean> {
    return accounts.accountExists(this.db, accountId);
  }

  async createKey(key: KeyRecord & { keyHash: string; now: number }): Promise<void> {
    return this.write((db) => accounts.createKey(db, key));
  }

  async findKeyByHash(keyHash: string): Promise<KeyRecord | null> {
    const now = performance.now();
    const known = this.keys.get(keyHash);
    if (known && now - known.at < KEY_MEMORY_MS) return { ...known.key, scopes: [...known.key.scopes] };
    const key = accounts.findKeyByHash(this.db, keyHash);
    if (!key) {
      this.keys.delete(keyHash);
      return null;
    }
    if (this.keys.size >= KEYS_REMEMBERED) this.keys.clear();
    this.keys.set(keyHash, { key: { ...key, scopes: [...key.scopes] }, at: now });
    return key;
  }

  async insertPush(p: NewPush): Promise<{ push: PushRecord; duplicate: boolean }> {
    return this.write((db) => pushes.insertPush(db, p));
  }

  async getPush(accountId: string, id: number): Promise<PushRecord | null> {
    return pushes.getPush(this.db, accountId, id);
  }

  async updatePush(accountId: string, id: number, when: PushCondition, to: PushUpdate): Promise<boolean> {
    return this.write((db) => pushes.updatePush(db, accountId, id, when, to), { oneStatement: true });
  }

  async listReplayable(q: ReplayQuery): Promise<PushRecord[]> {
    return pushes.listReplayable(this.db, q);
  }

  async listOlderThan(states: readonly PushState[], createdBefore: number, limit: number): Promise<PushRecord[]> {
    return pushes.listOlderThan(this.db, states, createdBefore, limit);
  }

  async pruneFinalPushes(keep: number): Promise<number> {
    return this.write((db) => pushes.pruneFinalPushes(db, keep));
  }

  async forgetErased(): Promise<void> {
    this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  }

  async registerComputer(c: ComputerRegistration): Promise<ComputerRecord> {
    return this.write((db) => computers.registerComputer(db, c));
  }

  async getComputer(hookId: string): Promise<ComputerRecord | null> {
    return computers.getComputer(this.db, hookId);
  }

  async claimComputer(hookId: string, keyId: string): Promise<boolean> {
    return this.write((db) => computers.claimComputer(db, hookId, keyId));
  }

  async listComputers(accountId: string): Promise<ComputerRecord[]> {
    return computers.listComputers(this.db, accountId);
  }

  async addHistoryChunk(
    chunk: { accountId: string; computer: string; session: string; envelope: Record<string, unknown> },
    now: number,
    limits: HistoryLimits,
  ): Promise<HistoryChunkRecord> {
    return this.write((db) => history.addHistoryChunk(db, chunk, now, limits));
  }

  async listHistory(q: HistoryQuery): Promise<HistoryChunkRecord[]> {
    return history.listHistory(this.db, q);
  }

  async saveSessions(
    hookId: string,
    sessions: SessionRecord[],
    now: number,
    schedules: Record<string, unknown> | null = null,
  ): Promise<void> {
    return this.write((db) => computers.saveSessions(db, hookId, sessions, now, schedules));
  }

  async touchComputer(hookId: string, now: number): Promise<void> {
    return this.write((db) => computers.touchComputer(db, hookId, now));
  }

  async computersWithSession(accountId: string, sessionName: string): Promise<string[]> {
    return computers.computersWithSession(this.db, accountId, sessionName);
  }

  async relaySetting(name: string, value: string): Promise<string> {
    return this.write((db) => webPush.relaySetting(db, name, value));
  }

  async putPushSubscription(sub: PushSubscriptionRecord): Promise<void> {
    return this.write((db) => webPush.putPushSubscription(db, sub));
  }

  async deletePushSubscription(deviceId: string): Promise<boolean> {
    return this.write((db) => webPush.deletePushSubscription(db, deviceId));
  }

  async getPushSubscription(deviceId: string): Promise<PushSubscriptionRecord | null> {
    return webPush.getPushSubscription(this.db, deviceId);
  }

  async listPushSubscriptions(accountId: string): Promise<PushSubscriptionRecord[]> {
    return webPush.listPushSubscriptions(this.db, accountId);
  }

  async saveNotification(n: NotificationRecord): Promise<void> {
    return this.write((db) => webPush.saveNotification(db, n));
  }

  async listNotifications(accountId: string, limit: number): Promise<NotificationRecord[]> {
    return webPush.listNotifications(this.db, accountId, limit);
  }

  async registerDevice(d: Omit<DeviceRecord, 'createdAt'> & { now: number }): Promise<DeviceRecord> {
    return this.write((db) => devices.registerDevice(db, d));
  }

  async listDevices(accountId: string): Promise<DeviceRecord[]> {
    return devices.listDevices(this.db, accountId);
  }

  async getDevice(deviceId: string): Promise<DeviceRecord | null> {
    return devices.getDevice(this.db, deviceId);
  }

  async deviceSeen(deviceId: string, at: number): Promise<void> {
    return this.write((db) => devices.deviceSeen(db, deviceId, at));
  }

  async deleteDevice(accountId: string, deviceId: string): Promise<boolean> {
    return this.write((db) => {
      this.keys.clear(); // the device's tokens go with it
      return devices.deleteDevice(db, accountId, deviceId);
    });
  }

  async createPairing(p: NewPairing): Promise<void> {
    return this.write((db) => devices.createPairing(db, p));
  }

  async pairingState(codeHash: string, now: number): Promise<'open' | 'unknown' | 'used' | 'expired'> {
    return devices.pairingState(this.db, codeHash, now);
  }

  async claimPairing(c: PairingClaim): Promise<PairingClaimResult> {
    return this.write((db) => devices.claimPairing(db, c));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.writes.flush();
    this.db.close();
  }
}
