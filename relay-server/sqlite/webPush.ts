/**
 * The relay's own settings (the VAPID keys), the Web Push subscriptions, one row per device, and the phones' inbox
 * of sealed notifications.
 */
import type Database from 'better-sqlite3';
import { INBOX_MAX_AGE_MS, INBOX_SIZE, type NotificationRecord, type PushSubscriptionRecord } from '../store.js';

interface SubscriptionRow {
  device_id: string;
  account_id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  events: string;
}

const toSubscription = (r: SubscriptionRow): PushSubscriptionRecord => ({
  deviceId: r.device_id,
  accountId: r.account_id,
  endpoint: r.endpoint,
  p256dh: r.p256dh,
  auth: r.auth,
  events: JSON.parse(r.events) as string[],
});

export function relaySetting(db: Database.Database, name: string, value: string): string {
  db.prepare('INSERT INTO relay_settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING').run(name, value);
  return (db.prepare('SELECT value FROM relay_settings WHERE name = ?').get(name) as { value: string }).value;
}

export function putPushSubscription(db: Database.Database, s: PushSubscriptionRecord): void {
  db.prepare(
    `INSERT INTO push_subscriptions (device_id, account_id, endpoint, p256dh, auth, events) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (device_id) DO UPDATE SET account_id = excluded.account_id, endpoint = excluded.endpoint,
       p256dh = excluded.p256dh, auth = excluded.auth, events = excluded.events`,
  ).run(s.deviceId, s.accountId, s.endpoint, s.p256dh, s.auth, JSON.stringify(s.events));
}

export function deletePushSubscription(db: Database.Database, deviceId: string): boolean {
  return db.prepare('DELETE FROM push_subscriptions WHERE device_id = ?').run(deviceId).changes > 0;
}

export function getPushSubscription(db: Database.Database, deviceId: string): PushSubscriptionRecord | null {
  const row = db.prepare('SELECT * FROM push_subscriptions WHERE device_id = ?').get(deviceId) as
    | SubscriptionRow
    | undefined;
  return row ? toSubscription(row) : null;
}

export function listPushSubscriptions(db: Database.Database, accountId: string): PushSubscriptionRecord[] {
  const rows = db
    .prepare('SELECT * FROM push_subscriptions WHERE account_id = ? ORDER BY device_id')
    .all(accountId) as SubscriptionRow[];
  return rows.map(toSubscription);
}

interface NotificationRow {
  account_id: string;
  computer: string;
  id: string;
  session: string;
  kind: string;
  envelope: string;
  at: number;
}

/** The inbox: kept once per id; the oldest beyond INBOX_SIZE, and any past INBOX_MAX_AGE_MS, dropped in the same write. */
export function saveNotification(db: Database.Database, n: NotificationRecord): void {
  db.prepare(
    `INSERT INTO notifications (account_id, computer, id, session, kind, envelope, at) VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (account_id, computer, id) DO NOTHING`,
  ).run(n.accountId, n.computer, n.id, n.session, n.kind, JSON.stringify(n.envelope), n.at);
  db.prepare(
    `DELETE FROM notifications WHERE account_id = ? AND (at < ? OR rowid NOT IN
       (SELECT rowid FROM notifications WHERE account_id = ? ORDER BY at DESC, rowid DESC LIMIT ?))`,
  ).run(n.accountId, n.at - INBOX_MAX_AGE_MS, n.accountId, INBOX_SIZE);
}

export function listNotifications(db: Database.Database, accountId: string, limit: number): NotificationRecord[] {
  const rows = db
    .prepare('SELECT * FROM notifications WHERE account_id = ? ORDER BY at DESC, rowid DESC LIMIT ?')
    .all(accountId, limit) as NotificationRow[];
  return rows.map((r) => ({
    accountId: r.account_id,
    computer: r.computer,
    id: r.id,
    session: r.session,
    kind: r.kind,
    envelope: JSON.parse(r.envelope) as Record<string, unknown>,
    at: r.at,
  }));
}
