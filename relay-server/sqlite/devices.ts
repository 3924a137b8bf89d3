/**
 * Devices (a public key and what it is) and pairing codes, which add an app device and a key bound to it in one
 * transaction. Removing a device removes its keys and unlinks it from its computer.
 */
import type Database from 'better-sqlite3';
import type { DeviceKind } from '../../core/protocol/index.js';
import type { DeviceRecord, NewPairing, PairingClaim, PairingClaimResult } from '../store.js';

/** Used or expired pairing codes are kept this long (so a second click can say "already used"), then dropped. */
const PAIRING_KEEP_MS = 24 * 60 * 60_000;

interface DeviceRow {
  id: string;
  account_id: string;
  name: string;
  kind: string;
  public_key: string;
  created_at: number;
  paired?: number;
  pairing_proof?: string | null;
  last_seen_at?: number | null;
  origin?: string | null;
  notifications?: number;
}

function toDevice(row: DeviceRow): DeviceRecord {
  return {
    deviceId: row.id,
    accountId: row.account_id,
    name: row.name,
    kind: row.kind as DeviceKind,
    publicKey: row.public_key,
    createdAt: row.created_at,
    ...(row.paired !== undefined ? { paired: row.paired === 1 } : {}),
    ...(row.pairing_proof ? { pairingProof: row.pairing_proof } : {}),
    lastSeenAt: row.last_seen_at ?? null,
    origin: row.origin ?? null,
    ...(row.notifications !== undefined ? { notifications: row.notifications === 1 } : {}),
  };
}

export function registerDevice(
  db: Database.Database,
  d: Omit<DeviceRecord, 'createdAt'> & { now: number },
): DeviceRecord {
  const register = db.transaction((): DeviceRow => {
    const existing = db
      .prepare('SELECT * FROM devices WHERE account_id = ? AND public_key = ?')
      .get(d.accountId, d.publicKey) as DeviceRow | undefined;
    if (existing) return existing;
    return db
      .prepare(
        `INSERT INTO devices (id, account_id, name, kind, public_key, created_at) VALUES (?, ?, ?, ?, ?, ?)
         RETURNING *`,
      )
      .get(d.deviceId, d.accountId, d.name, d.kind, d.publicKey, d.now) as DeviceRow;
  });
  return toDevice(register.immediate());
}

export function listDevices(db: Database.Database, accountId: string): DeviceRecord[] {
  const rows = db
    .prepare(
      `SELECT d.*, EXISTS (SELECT 1 FROM push_subscriptions s WHERE s.device_id = d.id) AS notifications
       FROM devices d WHERE d.account_id = ? ORDER BY d.created_at, d.id`,
    )
    .all(accountId) as DeviceRow[];
  return rows.map(toDevice);
}

export function deviceSeen(db: Database.Database, deviceId: string, at: number): void {
  db.prepare('UPDATE devices SET last_seen_at = ? WHERE id = ? AND (last_seen_at IS NULL OR last_seen_at < ?)').run(
    at,
    deviceId,
    at,
  );
}

export function getDevice(db: Database.Database, deviceId: string): DeviceRecord | null {
  const row = db
    .prepare(
      'SELECT d.*, EXISTS (SELECT 1 FROM api_keys k WHERE k.device_id = d.id) AS paired FROM devices d WHERE d.id = ?',
    )
    .get(deviceId) as DeviceRow | undefined;
  return row ? toDevice(row) : null;
}

export function deleteDevice(db: Database.Database, accountId: string, deviceId: string): boolean {
  const remove = db.transaction((): boolean => {
    const gone = db.prepare('DELETE FROM devices WHERE account_id = ? AND id = ?').run(accountId, deviceId);
    if (gone.changes === 0) return false;
    db.prepare('DELETE FROM api_keys WHERE account_id = ? AND device_id = ?').run(accountId, deviceId);
    db.prepare('UPDATE computers SET device_id = NULL WHERE account_id = ? AND device_id = ?').run(accountId, deviceId);
    return true;
  });
  return remove.immediate();
}

export function createPairing(db: Database.Database, p: NewPairing): void {
  db.prepare('DELETE FROM pairings WHERE expires_at < ?').run(p.now - PAIRING_KEEP_MS);
  db.prepare('INSERT INTO pairings (code_hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)').run(
    p.codeHash,
    p.accountId,
    p.now,
    p.expiresAt,
  );
}

export function pairingState(db: Database.Database, codeHash: string, now: number) {
  const pairing = db.prepare('SELECT expires_at, used_at FROM pairings WHERE code_hash = ?').get(codeHash) as
    | { expires_at: number; used_at: number | null }
    | undefined;
  if (!pairing) return 'unknown' as const;
  if (pairing.used_at !== null) return 'used' as const;
  return pairing.expires_at <= now ? ('expired' as const) : ('open' as const);
}

export function claimPairing(db: Database.Database, c: PairingClaim): PairingClaimResult {
  const claim = db.transaction((): PairingClaimResult => {
    const pairing = db.prepare('SELECT * FROM pairings WHERE code_hash = ?').get(c.codeHash) as
      | { account_id: string; expires_at: number; used_at: number | null }
      | undefined;
    if (!pairing) return { ok: false, reason: 'unknown' };
    if (pairing.used_at !== null) return { ok: false, reason: 'used' };
    if (pairing.expires_at <= c.now) return { ok: false, reason: 'expired' };
    const accountId = pairing.account_id;
    const existing = db
      .prepare('SELECT * FROM devices WHERE account_id = ? AND public_key = ?')
      .get(accountId, c.device.publicKey) as DeviceRow | undefined;
    let row =
      existing ??
      (db
        .prepare(
          `INSERT INTO devices (id, account_id, name, kind, public_key, created_at) VALUES (?, ?, ?, 'app', ?, ?)
           RETURNING *`,
        )
        .get(c.device.deviceId, accountId, c.device.name, c.device.publicKey, c.now) as DeviceRow);
    if (c.device.pairingProof)
      row = db
        .prepare('UPDATE devices SET pairing_proof = ? WHERE id = ? RETURNING *')
        .get(c.device.pairingProof, row.id) as DeviceRow;
    row = db
      .prepare('UPDATE devices SET origin = ?, last_seen_at = ? WHERE id = ? RETURNING *')
      .get(c.device.origin ?? null, c.now, row.id) as DeviceRow;
    db.prepare(
      'INSERT INTO api_keys (id, account_id, key_hash, scopes, created_at, device_id) VALUES (?, ?, ?, ?, ?, ?)',
    ).run(c.key.keyId, accountId, c.key.keyHash, c.key.scopes.join(','), c.now, row.id);
    db.prepare('UPDATE pairings SET used_at = ?, device_id = ? WHERE code_hash = ?').run(c.now, row.id, c.codeHash);
    return { ok: true, accountId, device: toDevice(row) };
  });
  return claim.immediate();
}
