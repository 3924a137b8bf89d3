/**
 * What the relay keeps, behind an interface so routes and the hub never know which database holds it.
 * Every method returns a Promise: the embedded SQLite store answers synchronously underneath, a Postgres store
 * would not, and callers must not be able to tell the difference.
 */

import { INBOX_PAGE } from '../core/notify/push.js';
import type { DeviceKind, PushState, Scope, SessionRecord } from '../core/protocol/index.js';
import type { HistoryLimits } from '../core/relay/history.js';

export interface KeyRecord {
  keyId: string;
  /** Set for a device token (`POST /pairings/claim`): the device it belongs to, removed with it. */
  deviceId?: string | null;
  accountId: string;
  scopes: Scope[];
}

export interface PushRecord {
  accountId: string;
  /** Increases by one per account, starting at 1. */
  id: number;
  type: string;
  agentSessionName: string;
  /** Emptied once the push reaches a final state: nobody reads it after that. */
  body: string;
  targetComputer: string | null;
  clientId: string | null;
  /** The envelope JSON of a sealed push (ciphertext only); emptied with the body at a final state. */
  sealed?: string | null;
  state: PushState;
  code: string | null;
  /** hookId of the computer whose push.result set the current state. */
  resultComputer: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface NewPush {
  accountId: string;
  type: string;
  agentSessionName: string;
  body: string;
  targetComputer: string | null;
  clientId: string | null;
  sealed?: string | null;
  now: number;
  /**
   * Most bytes the account's open pushes (pending, delivered) may hold, this one included, each counted as
   * OPEN_PUSH_OVERHEAD plus its body and envelope; over it nothing is stored and StorageFullError is thrown.
   */
  maxOpenBytes?: number;
}

/** What a store throws when an account's open pushes would hold more than `maxOpenBytes`. */
export class StorageFullError extends Error {
  override readonly name = 'StorageFullError';
}

/** What an open push counts for against `maxOpenBytes` besides its body and envelope (its row, its indexes). */
export const OPEN_PUSH_OVERHEAD = 256;

export interface ComputerRecord {
  hookId: string;
  accountId: string;
  name: string;
  platform: string | null;
  createdAt: number;
  lastSeenAt: number | null;
  /** The last inventory the listener reported, or [] before the first one. */
  sessions: SessionRecord[];
  sessionsAt: number | null;
  /** Its schedules as its listener sealed them with the inventory (absent: none). */
  schedules?: Record<string, unknown>;
  /** The computer's own device (its public key is in the device list), once it registered one. */
  deviceId?: string;
  /**
   * The API key the computer belongs to (the one its `svc login` registered it with): the only key that may be its
   * listener or register it again. Null for a computer registered before the relay recorded owners.
   */
  ownerKeyId: string | null;
}

/** A stored history chunk (relay-server/sqlite/history.ts): the envelope as the listener sealed it. */
export interface HistoryChunkRecord {
  id: number;
  computer: string;
  session: string;
  envelope: Record<string, unknown>;
  /** When the relay stored it (epoch ms). */
  at: number;
}

export type { HistoryLimits };

export interface HistoryQuery {
  accountId: string;
  computer: string;
  session: string;
  /** Only chunks with a smaller id. */
  before?: number | undefined;
  limit: number;
}

/** A device of an account: its public key and what it is. Private keys never reach the relay. */
export interface DeviceRecord {
  deviceId: string;
  accountId: string;
  name: string;
  kind: DeviceKind;
  publicKey: string;
  createdAt: number;
  /** From `getDevice`: the device was paired and holds a device token of its own (only that token acts as it). */
  paired?: boolean;
  /** The proof it paired with (core/devices/pairingProof.ts), kept and listed as it came. */
  pairingProof?: string;
  /** When its own token last reached the relay (kept to the minute, `deviceSeen`); null when never since pairing. */
  lastSeenAt?: number | null;
  /** The web origin it paired at (the app's address on that phone: its storage is bound to it); null when unknown. */
  origin?: string | null;
  /** From `listDevices`: it holds a Web Push subscription (notifications on). */
  notifications?: boolean;
}

/** A phone's Web Push subscription (relay-server/push/webPush.ts): where to push, its keys, the events it wants. */
export interface PushSubscriptionRecord {
  deviceId: string;
  accountId: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  events: string[];
}

/**
 * A notification as the phone's inbox keeps it (svc_notify and the listener's notices): routing outside, the text
 * only inside `envelope` (sealed for the phones; the relay never reads it). `at`: when the relay took it (epoch ms).
 */
export interface NotificationRecord {
  accountId: string;
  computer: string;
  id: string;
  session: string;
  kind: string;
  envelope: Record<string, unknown>;
  at: number;
}

/** The inbox keeps this many notifications per account, the newest (all the app's page shows: INBOX_PAGE). */
export const INBOX_SIZE = INBOX_PAGE;
/** And none older than this (as history chunks: HISTORY_LIMITS.maxAgeMs): a later stolen key opens no more. */
export const INBOX_MAX_AGE_MS = 7 * 24 * 3_600_000;

/** A compare-and-set condition on a push: its state must be one of `states` (and its code `code`, if given). */
export interface PushCondition {
  states: readonly PushState[];
  code?: string;
  /** When given, the push's resultComputer must differ from it (null counts as different). */
  notResultComputer?: string;
}

export interface PushUpdate {
  state: PushState;
  code: string | null;
  resultComputer?: string | null;
  now: number;
}

export interface ReplayQuery {
  accountId: string;
  afterId: number;
  hookId: string;
  type: string;
  states: readonly PushState[];
}

/** A computer as its listener registers it (`registerComputer`). */
export interface ComputerRegistration {
  accountId: string;
  name: string;
  platform: string | null;
  hookId: string;
  deviceId?: string | null;
  /** The registering key: the owner of a new computer, and of an existing one that has none yet. */
  ownerKeyId: string;
  now: number;
}

/** A one-time pairing code (its hash) for the account, claimable until `expiresAt`. */
export interface NewPairing {
  codeHash: string;
  accountId: string;
  now: number;
  expiresAt: number;
}

/** A phone claiming a pairing code with its device and the key it will hold. */
export interface PairingClaim {
  codeHash: string;
  now: number;
  device: { deviceId: string; name: string; publicKey: string; pairingProof?: string; origin?: string };
  key: { keyId: string; keyHash: string; scopes: Scope[] };
}

export type PairingClaimResult =
  | { ok: true; accountId: string; device: DeviceRecord }
  | { ok: false; reason: 'unknown' | 'used' | 'expired' };

export interface Store {
  createAccount(accountId: string, now: number): Promise<void>;
  accountExists(accountId: string): Promise<boolean>;
  createKey(key: KeyRecord & { keyHash: string; now: number }): Promise<void>;
  findKeyByHash(keyHash: string): Promise<KeyRecord | null>;

  /**
   * Store a push with the account's next id, atomically. A clientId already used in the account returns the push
   * stored first with `duplicate: true` and stores nothing.
   */
  insertPush(push: NewPush): Promise<{ push: PushRecord; duplicate: boolean }>;
  getPush(accountId: string, id: number): Promise<PushRecord | null>;
  /**
   * Set the state only when `when` holds: true when it did and the push now has `to`'s state (a final state erases
   * its body and envelope), false when it did not hold or there is no such push. The caller knows the new state, so
   * nothing is read back (two of a push's three writes are these: `delivered`, then the listener's result).
   */
  updatePush(accountId: string, id: number, when: PushCondition, to: PushUpdate): Promise<boolean>;
  /** Pushes of one account with id > afterId of one type and state, addressed to hookId or to no computer; id order. */
  listReplayable(query: ReplayQuery): Promise<PushRecord[]>;
  /** Pushes (any account) in one of `states` created before `createdBefore`, oldest first. */
  listOlderThan(states: readonly PushState[], createdBefore: number, limit: number): Promise<PushRecord[]>;
  /** Delete each account's final pushes beyond its newest `keep` final ones; returns how many went. */
  pruneFinalPushes(keep: number): Promise<number>;
  /** Make erased bodies unrecoverable from the files (SQLite: fold the WAL into the database and empty it). */
  forgetErased(): Promise<void>;

  /** The computer of this account with this name, or a new one with `hookId`; `deviceId` (when given) is recorded. */
  registerComputer(c: ComputerRegistration): Promise<ComputerRecord>;
  getComputer(hookId: string): Promise<ComputerRecord | null>;
  /** Record keyId as the owner of a computer that has none; false when it has one already (or no such computer). */
  claimComputer(hookId: string, keyId: string): Promise<boolean>;
  listComputers(accountId: string): Promise<ComputerRecord[]>;
  /** Stores a history chunk, then drops what the account's limits no longer allow (oldest first). */
  addHistoryChunk(
    chunk: { accountId: string; computer: string; session: string; envelope: Record<string, unknown> },
    now: number,
    limits: HistoryLimits,
  ): Promise<HistoryChunkRecord>;
  /** A page of a session's chunks, newest first. */
  listHistory(q: HistoryQuery): Promise<HistoryChunkRecord[]>;
  /** The inventory, and the sealed schedules that came with it (null: none). */
  saveSessions(
    hookId: string,
    sessions: SessionRecord[],
    now: number,
    schedules?: Record<string, unknown> | null,
  ): Promise<void>;
  touchComputer(hookId: string, now: number): Promise<void>;
  /** hookIds of the account's computers whose last inventory has a session of this name. */
  computersWithSession(accountId: string, sessionName: string): Promise<string[]>;

  /** The account's device with this public key, or a new one with `deviceId`. */
  registerDevice(d: Omit<DeviceRecord, 'createdAt'> & { now: number }): Promise<DeviceRecord>;
  listDevices(accountId: string): Promise<DeviceRecord[]>;
  getDevice(deviceId: string): Promise<DeviceRecord | null>;
  /** The device's token reached the relay at `at` (never moves its time back). */
  deviceSeen(deviceId: string, at: number): Promise<void>;
  /** Remove a device of the account (and unlink it from its computer); false when there was none. */
  deleteDevice(accountId: string, deviceId: string): Promise<boolean>;

  createPairing(p: NewPairing): Promise<void>;
  /** Whether a code (its hash) could be claimed now, or why not; changes nothing. */
  pairingState(codeHash: string, now: number): Promise<'open' | 'unknown' | 'used' | 'expired'>;
  /**
   * Claim a pairing code once, atomically: mark it used, add the app device (or find it by its public key) and a
   * key bound to that device. Fails without changing anything for an unknown, used or expired code.
   */
  claimPairing(c: PairingClaim): Promise<PairingClaimResult>;

  /**
   * A setting of the relay itself, shared by every instance on this store (the VAPID keys): the value stored, or,
   * when there is none yet, `value`, stored now. Two instances starting at once get the same one.
   */
  relaySetting(name: string, value: string): Promise<string>;
  /** Web Push subscriptions, one per device (a new one replaces the old). */
  putPushSubscription(s: PushSubscriptionRecord): Promise<void>;
  deletePushSubscription(deviceId: string): Promise<boolean>;
  getPushSubscription(deviceId: string): Promise<PushSubscriptionRecord | null>;
  listPushSubscriptions(accountId: string): Promise<PushSubscriptionRecord[]>;
  /**
   * Keep a notification in the account's inbox; the oldest beyond INBOX_SIZE, and those older than INBOX_MAX_AGE_MS
   * before this one, go. The same id twice is kept once.
   */
  saveNotification(n: NotificationRecord): Promise<void>;
  /** The account's inbox, newest first, at most `limit`. */
  listNotifications(accountId: string, limit: number): Promise<NotificationRecord[]>;
  close(): Promise<void>;
}
