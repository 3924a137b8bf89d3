/**
 * The embedded Store: one SQLite file `relay.db` in the data directory, WAL mode, owner-only permissions.
 * better-sqlite3 is synchronous, so every transaction here is atomic within the process; `immediate`
 * transactions keep it so when a CLI command writes to the same file while the relay runs.
 *
 * This file opens the database and answers the `Store` interface; the SQL is in `sqlite/`, one file per area:
 * `schema.ts` (tables, pragmas, added columns), `accounts.ts` (accounts and keys), `pushes.ts`, `computers.ts`
 * (computers and their inventories), `devices.ts` (devices and pairing codes); `db.ts` opens the file and keeps every
 * better-sqlite3 object referenced (Node 24 aborts when the collector frees one outside a context).
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
  private closed = false;

  constructor(db: Database.Database) {
    this.db = db;
    setUpDatabase(db);
  }

  async createAccount(accountId: string, now: number): Promise<void> {
    accounts.createAccount(this.db, accountId, now);
  }

  async accountExists(accountId: string): Promise<boolean> {
    return accounts.accountExists(this.db, accountId);
  }

  async createKey(key: KeyRecord & { keyHash: string; now: number }): Promise<void> {
    accounts.createKey(this.db, key);
  }

  async findKeyByHash(keyHash: string): Promise<KeyRecord | null> {
    return accounts.findKeyByHash(this.db, keyHash);
  }

  async insertPush(p: NewPush): Promise<{ push: PushRecord; duplicate: boolean }> {
    return pushes.insertPush(this.db, p);
  }

  async getPush(accountId: string, id: number): Promise<PushRecord | null> {
    return pushes.getPush(this.db, accountId, id);
  }

  async updatePush(accountId: string, id: number, when: PushCondition, to: PushUpdate): Promise<PushRecord | null> {
    return pushes.updatePush(this.db, accountId, id, when, to);
  }

  async listReplayable(q: ReplayQuery): Promise<PushRecord[]> {
    return pushes.listReplayable(this.db, q);
  }

  async listOlderThan(states: readonly PushState[], createdBefore: number, limit: number): Promise<PushRecord[]> {
    return pushes.listOlderThan(this.db, states, createdBefore, limit);
  }

  async pruneFinalPushes(keep: number): Promise<number> {
    return pushes.pruneFinalPushes(this.db, keep);
  }

  async forgetErased(): Promise<void> {
    this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  }

  async registerComputer(c: ComputerRegistration): Promise<ComputerRecord> {
    return computers.registerComputer(this.db, c);
  }

  async getComputer(hookId: string): Promise<ComputerRecord | null> {
    return computers.getComputer(this.db, hookId);
  }

  async claimComputer(hookId: string, keyId: string): Promise<boolean> {
    return computers.claimComputer(this.db, hookId, keyId);
  }

  async listComputers(accountId: string): Promise<ComputerRecord[]> {
    return computers.listComputers(this.db, accountId);
  }

  async addHistoryChunk(
    chunk: { accountId: string; computer: string; session: string; envelope: Record<string, unknown> },
    now: number,
    limits: HistoryLimits,
  ): Promise<HistoryChunkRecord> {
    return history.addHistoryChunk(this.db, chunk, now, limits);
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
    computers.saveSessions(this.db, hookId, sessions, now, schedules);
  }

  async touchComputer(hookId: string, now: number): Promise<void> {
    computers.touchComputer(this.db, hookId, now);
  }

  async computersWithSession(accountId: string, sessionName: string): Promise<string[]> {
    return computers.computersWithSession(this.db, accountId, sessionName);
  }

  async relaySetting(name: string, value: string): Promise<string> {
    return webPush.relaySetting(this.db, name, value);
  }

  async putPushSubscription(sub: PushSubscriptionRecord): Promise<void> {
    webPush.putPushSubscription(this.db, sub);
  }

  async deletePushSubscription(deviceId: string): Promise<boolean> {
    return webPush.deletePushSubscription(this.db, deviceId);
  }

  async getPushSubscription(deviceId: string): Promise<PushSubscriptionRecord | null> {
    return webPush.getPushSubscription(this.db, deviceId);
  }

  async listPushSubscriptions(accountId: string): Promise<PushSubscriptionRecord[]> {
    return webPush.listPushSubscriptions(this.db, accountId);
  }

  async registerDevice(d: Omit<DeviceRecord, 'createdAt'> & { now: number }): Promise<DeviceRecord> {
    return devices.registerDevice(this.db, d);
  }

  async listDevices(accountId: string): Promise<DeviceRecord[]> {
    return devices.listDevices(this.db, accountId);
  }

  async getDevice(deviceId: string): Promise<DeviceRecord | null> {
    return devices.getDevice(this.db, deviceId);
  }

  async deleteDevice(accountId: string, deviceId: string): Promise<boolean> {
    return devices.deleteDevice(this.db, accountId, deviceId);
  }

  async createPairing(p: NewPairing): Promise<void> {
    devices.createPairing(this.db, p);
  }

  async pairingState(codeHash: string, now: number): Promise<'open' | 'unknown' | 'used' | 'expired'> {
    return devices.pairingState(this.db, codeHash, now);
  }

  async claimPairing(c: PairingClaim): Promise<PairingClaimResult> {
    return devices.claimPairing(this.db, c);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}
