/**
 * The Store on Postgres (issue 15; docs/relay.md "Scale-out"), for several relay instances serving one account: the
 * same contract as the SQLite store (test/helpers/storeContract.ts runs against both), the same tables, with the
 * schema brought up to date on open (`svc_schema` holds its version; a database made by a newer relay is refused).
 * Atomic steps that SQLite gets from one writer are transactions here with the account's (or the pairing's) row
 * locked, so two instances never number two pushes alike or claim one pairing code twice.
 */
import pg from 'pg';
import type { PushState, SessionRecord } from '../core/protocol/index.js';
import { HISTORY_LIMITS } from '../core/relay/history.js';
import { num, parseScopes, type Row, toComputer, toDevice, toPush, toSubscription } from './postgres/rows.js';
import { setUpSchema } from './postgres/schema.js';
import {
  type ComputerRecord,
  type ComputerRegistration,
  type DeviceRecord,
  type HistoryChunkRecord,
  type HistoryLimits,
  type HistoryQuery,
  INBOX_MAX_AGE_MS,
  INBOX_SIZE,
  type KeyRecord,
  type NewPairing,
  type NewPush,
  type NotificationRecord,
  OPEN_PUSH_OVERHEAD,
  type PairingClaim,
  type PairingClaimResult,
  type PushCondition,
  type PushRecord,
  type PushSubscriptionRecord,
  type PushUpdate,
  type ReplayQuery,
  StorageFullError,
  type Store,
} from './store.js';

const PAIRING_KEEP_MS = 24 * 60 * 60_000;
const FINAL: readonly PushState[] = ['injected', 'refused', 'expired'];

type Q = Pick<pg.PoolClient, 'query'>;

/** Thrown inside `insertPush`'s transaction to roll it back when its clientId was stored already. */
class DuplicatePush extends Error {
  readonly push: PushRecord;
  constructor(push: PushRecord) {
    super('duplicate clientId');
    this.push = push;
  }
}

/**
 * Opens a pool to `url` and brings the schema up to date. An idle connection that Postgres drops (a restart, a
 * failover) is reported to `onIdleError` and replaced on next use: it never takes the relay down.
 */
export async function openPostgresStore(
  url: string,
  onIdleError: (err: Error) => void = () => {},
): Promise<PostgresStore> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', onIdleError);
  const store = new PostgresStore(pool);
  try {
    await store.setUp();
  } catch (err) {
    await pool.end();
    throw err;
  }
  return store;
}

export class PostgresStore implements Store {
  constructor(private readonly pool: pg.Pool) {}

  /** The tables, brought up to date (relay-server/postgres/schema.ts). */
  async setUp(): Promise<void> {
    await this.tx(setUpSchema);
  }

  private async tx<T>(fn: (q: Q) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const out = await fn(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  private async one(sql: string, params: unknown[] = []): Promise<Row | undefined> {
    return (await this.pool.query(sql, params)).rows[0] as Row | undefined;
  }

  async createAccount(accountId: string, now: number): Promise<void> {
    await this.pool.query('INSERT INTO accounts (id, created_at) VALUES ($1, $2)', [accountId, now]);
  }

  async accountExists(accountId: string): Promise<boolean> {
    return (await this.one('SELECT 1 FROM accounts WHERE id = $1', [accountId])) !== undefined;
  }

  async createKey(key: KeyRecord & { keyHash: string; now: number }): Promise<void> {
    await this.pool.query(
      'INSERT INTO api_keys (id, account_id, key_hash, scopes, created_at, device_id) VALUES ($1, $2, $3, $4, $5, $6)',
      [key.keyId, key.accountId, key.keyHash, key.scopes.join(','), key.now, key.deviceId ?? null],
    );
  }

  async findKeyByHash(keyHash: string): Promise<KeyRecord | null> {
    const r = await this.one('SELECT id, account_id, scopes, device_id FROM api_keys WHERE key_hash = $1', [keyHash]);
    if (!r) return null;
    const key: KeyRecord = {
      keyId: r.id as string,
      accountId: r.account_id as string,
      scopes: parseScopes(r.scopes as string),
    };
    if (r.device_id) key.deviceId = r.device_id as string;
    return key;
  }

  async insertPush(p: NewPush): Promise<{ push: PushRecord; duplicate: boolean }> {
    return this.tx(async (q) => {
      // Numbering first: the UPDATE locks the account's row, so pushes of one account are numbered one at a time
      // across instances; a duplicate or a full account rolls the number back with the transaction. Four round
      // trips (with BEGIN and COMMIT); the checks are one statement, after the lock, so they see what the
      // transaction before it committed.
      const account = (
        await q.query(
          'UPDATE accounts SET next_push_id = next_push_id + 1 WHERE id = $1 RETURNING next_push_id - 1 AS id',
          [p.accountId],
        )
      ).rows[0];
      if (!account) throw new Error(`no account ${p.accountId}`);
      const checks = (
        await q.query(
          `SELECT
             (SELECT row_to_json(d) FROM pushes d WHERE $2::text IS NOT NULL AND d.account_id = $1 AND d.client_id = $2)
               AS existing,
             (SELECT COALESCE(SUM($3 + octet_length(body) + COALESCE(octet_length(sealed), 0)), 0)
               FROM pushes WHERE account_id = $1 AND state IN ('pending', 'delivered')) AS held`,
          [p.accountId, p.clientId, OPEN_PUSH_OVERHEAD],
        )
      ).rows[0] as { existing: Row | null; held: unknown };
      if (checks.existing) {
        throw new DuplicatePush(toPush(checks.existing));
      }
      if (p.maxOpenBytes !== undefined) {
        const held = num(checks.held);
        const size = OPEN_PUSH_OVERHEAD + Buffer.byteLength(p.body) + Buffer.byteLength(p.sealed ?? '');
        if (held + size > p.maxOpenBytes)
          throw new StorageFullError(`account ${p.accountId} holds ${held} bytes of open pushes`);
      }
      const row = (
        await q.query(
          `INSERT INTO pushes (account_id, id, type, agent_session_name, body, target_computer, client_id, sealed,
             state, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $9) RETURNING *`,
          [
            p.accountId,
            num(account.id),
            p.type,
            p.agentSessionName,
            p.body,
            p.targetComputer,
            p.clientId,
            p.sealed ?? null,
            p.now,
          ],
        )
      ).rows[0] as Row;
      return { push: toPush(row), duplicate: false };
    }).catch((err: unknown) => {
      // the duplicate's transaction was rolled back (its number with it); the first push is the answer
      if (err instanceof DuplicatePush) return { push: err.push, duplicate: true };
      throw err;
    });
  }

  async getPush(accountId: string, id: number): Promise<PushRecord | null> {
    const r = await this.one('SELECT * FROM pushes WHERE account_id = $1 AND id = $2', [accountId, id]);
    return r ? toPush(r) : null;
  }

  async updatePush(accountId: string, id: number, when: PushCondition, to: PushUpdate): Promise<boolean> {
    if (when.states.length === 0) return false;
    const params: unknown[] = [
      to.state,
      to.code,
      to.now,
      to.resultComputer !== undefined,
      to.resultComputer ?? null,
      FINAL.includes(to.state),
      accountId,
      id,
      when.states,
    ];
    const clauses = ['state = ANY($9::text[])'];
    if (when.code !== undefined) {
      params.push(when.code);
      clauses.push(`code = $${params.length}`);
    }
    if (when.notResultComputer !== undefined) {
      params.push(when.notResultComputer);
      clauses.push(`(result_computer IS NULL OR result_computer <> $${params.length})`);
    }
    const r = await this.pool.query(
      `UPDATE pushes SET state = $1, code = $2, updated_at = $3,
         result_computer = CASE WHEN $4 THEN $5 ELSE result_computer END,
         body = CASE WHEN $6 THEN '' ELSE body END,
         sealed = CASE WHEN $6 THEN NULL ELSE sealed END
       WHERE account_id = $7 AND id = $8 AND ${clauses.join(' AND ')}`,
      params,
    );
    return (r.rowCount ?? 0) > 0;
  }

  async listReplayable(q: ReplayQuery): Promise<PushRecord[]> {
    if (q.states.length === 0) return [];
    const { rows } = await this.pool.query(
      `SELECT * FROM pushes WHERE account_id = $1 AND id > $2 AND type = $3 AND state = ANY($4::text[])
         AND (target_computer IS NULL OR target_computer = $5) ORDER BY id`,
      [q.accountId, q.afterId, q.type, q.states, q.hookId],
    );
    return rows.map(toPush);
  }

  async listOlderThan(states: readonly PushState[], createdBefore: number, limit: number): Promise<PushRecord[]> {
    if (states.length === 0) return [];
    const { rows } = await this.pool.query(
      'SELECT * FROM pushes WHERE state = ANY($1::text[]) AND created_at < $2 ORDER BY created_at LIMIT $3',
      [states, createdBefore, limit],
    );
    return rows.map(toPush);
  }

  async pruneFinalPushes(keep: number): Promise<number> {
    const r = await this.pool.query(
      // only an account that has had more than `keep` pushes can have any to delete (ids are never reused)
      `DELETE FROM pushes p USING accounts a
       WHERE a.next_push_id - 1 > $1 AND p.account_id = a.id AND p.state = ANY($2::text[]) AND p.id <= (
         SELECT id FROM pushes WHERE account_id = a.id AND state = ANY($2::text[]) ORDER BY id DESC LIMIT 1 OFFSET $1
       )`,
      [keep, FINAL],
    );
    return r.rowCount ?? 0;
  }

  /** Erased bodies live on in dead row versions until a vacuum reclaims them. */
  async forgetErased(): Promise<void> {
    await this.pool.query('VACUUM pushes');
  }

  async registerComputer(c: ComputerRegistration): Promise<ComputerRecord> {
    return this.tx(async (q) => {
      // insert if new (a concurrent registration of the same name waits on the unique key), then read it locked
      await q.query(
        `INSERT INTO computers (hook_id, account_id, name, platform, created_at, device_id, owner_key_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (account_id, name) DO NOTHING`,
        [c.hookId, c.accountId, c.name, c.platform, c.now, c.deviceId ?? null, c.ownerKeyId],
      );
      const existing = (
        await q.query('SELECT * FROM computers WHERE account_id = $1 AND name = $2 FOR UPDATE', [c.accountId, c.name])
      ).rows[0] as Row;
      if (existing.owner_key_id !== null && existing.owner_key_id !== c.ownerKeyId) return toComputer(existing);
      const platform = c.platform ?? (existing.platform as string | null);
      const deviceId = c.deviceId ?? (existing.device_id as string | null);
      const owner = (existing.owner_key_id as string | null) ?? c.ownerKeyId;
      if (platform === existing.platform && deviceId === existing.device_id && owner === existing.owner_key_id)
        return toComputer(existing);
      const updated = (
        await q.query(
          'UPDATE computers SET platform = $1, device_id = $2, owner_key_id = $3 WHERE hook_id = $4 RETURNING *',
          [platform, deviceId, owner, existing.hook_id],
        )
      ).rows[0] as Row;
      return toComputer(updated);
    });
  }

  async getComputer(hookId: string): Promise<ComputerRecord | null> {
    const r = await this.one('SELECT * FROM computers WHERE hook_id = $1', [hookId]);
    return r ? toComputer(r) : null;
  }

  async claimComputer(hookId: string, keyId: string): Promise<boolean> {
    const r = await this.pool.query(
      'UPDATE computers SET owner_key_id = $1 WHERE hook_id = $2 AND owner_key_id IS NULL',
      [keyId, hookId],
    );
    return (r.rowCount ?? 0) > 0;
  }

  async listComputers(accountId: string): Promise<ComputerRecord[]> {
    const { rows } = await this.pool.query(
      'SELECT * FROM computers WHERE account_id = $1 ORDER BY created_at, hook_id',
      [accountId],
    );
    return rows.map(toComputer);
  }

  async addHistoryChunk(
    chunk: { accountId: string; computer: string; session: string; envelope: Record<string, unknown> },
    now: number,
    limits: HistoryLimits = HISTORY_LIMITS,
  ): Promise<HistoryChunkRecord> {
    const text = JSON.stringify(chunk.envelope);
    return this.tx(async (q) => {
      await q.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [chunk.accountId]);
      const row = (
        await q.query(
          `INSERT INTO history (account_id, computer, session, envelope, size, created_at) VALUES ($1, $2, $3, $4, $5, $6)
           RETURNING id, computer, session, envelope, created_at`,
          [chunk.accountId, chunk.computer, chunk.session, text, Buffer.byteLength(text), now],
        )
      ).rows[0] as Row;
      await q.query('DELETE FROM history WHERE account_id = $1 AND created_at < $2', [
        chunk.accountId,
        now - limits.maxAgeMs,
      ]);
      await q.query(
        `DELETE FROM history WHERE id IN (
           SELECT id FROM (
             SELECT id, SUM(size) OVER (ORDER BY id DESC) AS total FROM history WHERE account_id = $1
           ) t WHERE total > $2
         )`,
        [chunk.accountId, limits.maxBytes],
      );
      return {
        id: num(row.id),
        computer: row.computer as string,
        session: row.session as string,
        envelope: JSON.parse(row.envelope as string) as Record<string, unknown>,
        at: num(row.created_at),
      };
    });
  }

  async listHistory(q: HistoryQuery): Promise<HistoryChunkRecord[]> {
    const { rows } = await this.pool.query(
      `SELECT id, computer, session, envelope, created_at FROM history
       WHERE account_id = $1 AND computer = $2 AND session = $3 AND id < $4 ORDER BY id DESC LIMIT $5`,
      [q.accountId, q.computer, q.session, q.before ?? Number.MAX_SAFE_INTEGER, q.limit],
    );
    return rows.map((r) => ({
      id: num(r.id),
      computer: r.computer as string,
      session: r.session as string,
      envelope: JSON.parse(r.envelope as string) as Record<string, unknown>,
      at: num(r.created_at),
    }));
  }

  async saveSessions(
    hookId: string,
    sessions: SessionRecord[],
    now: number,
    schedules: Record<string, unknown> | null = null,
  ): Promise<void> {
    await this.pool.query(
      'UPDATE computers SET sessions = $1, sessions_at = $2, last_seen_at = $2, schedules = $3 WHERE hook_id = $4',
      [JSON.stringify(sessions), now, schedules ? JSON.stringify(schedules) : null, hookId],
    );
  }

  async touchComputer(hookId: string, now: number): Promise<void> {
    await this.pool.query('UPDATE computers SET last_seen_at = $1 WHERE hook_id = $2', [now, hookId]);
  }

  async computersWithSession(accountId: string, sessionName: string): Promise<string[]> {
    const { rows } = await this.pool.query(
      `SELECT DISTINCT c.hook_id FROM computers c, jsonb_array_elements(c.sessions) s
       WHERE c.account_id = $1 AND s->>'name' = $2 ORDER BY c.hook_id`,
      [accountId, sessionName],
    );
    return rows.map((r) => r.hook_id as string);
  }

  async relaySetting(name: string, value: string): Promise<string> {
    await this.pool.query('INSERT INTO relay_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [
      name,
      value,
    ]);
    return (await this.one('SELECT value FROM relay_settings WHERE name = $1', [name]))!.value as string;
  }

  async putPushSubscription(sub: PushSubscriptionRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO push_subscriptions (device_id, account_id, endpoint, p256dh, auth, events)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (device_id) DO UPDATE SET account_id = EXCLUDED.account_id, endpoint = EXCLUDED.endpoint,
         p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth, events = EXCLUDED.events`,
      [sub.deviceId, sub.accountId, sub.endpoint, sub.p256dh, sub.auth, JSON.stringify(sub.events)],
    );
  }

  async deletePushSubscription(deviceId: string): Promise<boolean> {
    const r = await this.pool.query('DELETE FROM push_subscriptions WHERE device_id = $1', [deviceId]);
    return (r.rowCount ?? 0) > 0;
  }

  async getPushSubscription(deviceId: string): Promise<PushSubscriptionRecord | null> {
    const r = await this.one('SELECT * FROM push_subscriptions WHERE device_id = $1', [deviceId]);
    return r ? toSubscription(r) : null;
  }

  async listPushSubscriptions(accountId: string): Promise<PushSubscriptionRecord[]> {
    const { rows } = await this.pool.query(
      'SELECT * FROM push_subscriptions WHERE account_id = $1 ORDER BY device_id',
      [accountId],
    );
    return rows.map(toSubscription);
  }

  /** The inbox: kept once per id; then the oldest beyond INBOX_SIZE and any past INBOX_MAX_AGE_MS go. */
  async saveNotification(n: NotificationRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO notifications (account_id, computer, id, session, kind, envelope, at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (account_id, computer, id) DO NOTHING`,
      [n.accountId, n.computer, n.id, n.session, n.kind, JSON.stringify(n.envelope), n.at],
    );
    await this.pool.query(
      `DELETE FROM notifications WHERE account_id = $1 AND (at < $3 OR seq NOT IN
         (SELECT seq FROM notifications WHERE account_id = $1 ORDER BY at DESC, seq DESC LIMIT $2))`,
      [n.accountId, INBOX_SIZE, n.at - INBOX_MAX_AGE_MS],
    );
  }

  async listNotifications(accountId: string, limit: number): Promise<NotificationRecord[]> {
    const { rows } = await this.pool.query(
      'SELECT * FROM notifications WHERE account_id = $1 ORDER BY at DESC, seq DESC LIMIT $2',
      [accountId, limit],
    );
    return rows.map((r) => ({
      accountId: r.account_id,
      computer: r.computer,
      id: r.id,
      session: r.session,
      kind: r.kind,
      envelope: r.envelope as Record<string, unknown>,
      at: num(r.at),
    }));
  }

  async registerDevice(d: Omit<DeviceRecord, 'createdAt'> & { now: number }): Promise<DeviceRecord> {
    await this.pool.query(
      `INSERT INTO devices (id, account_id, name, kind, public_key, created_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (account_id, public_key) DO NOTHING`,
      [d.deviceId, d.accountId, d.name, d.kind, d.publicKey, d.now],
    );
    const r = await this.one('SELECT * FROM devices WHERE account_id = $1 AND public_key = $2', [
      d.accountId,
      d.publicKey,
    ]);
    return toDevice(r as Row);
  }

  async listDevices(accountId: string): Promise<DeviceRecord[]> {
    const { rows } = await this.pool.query(
      `SELECT d.*, EXISTS (SELECT 1 FROM push_subscriptions s WHERE s.device_id = d.id) AS notifications
       FROM devices d WHERE d.account_id = $1 ORDER BY d.created_at, d.id`,
      [accountId],
    );
    return rows.map(toDevice);
  }

  async deviceSeen(deviceId: string, at: number): Promise<void> {
    await this.pool.query(
      'UPDATE devices SET last_seen_at = $1 WHERE id = $2 AND (last_seen_at IS NULL OR last_seen_at < $1)',
      [at, deviceId],
    );
  }

  async getDevice(deviceId: string): Promise<DeviceRecord | null> {
    const r = await this.one(
      'SELECT d.*, EXISTS (SELECT 1 FROM api_keys k WHERE k.device_id = d.id) AS paired FROM devices d WHERE d.id = $1',
      [deviceId],
    );
    return r ? toDevice(r) : null;
  }

  async deleteDevice(accountId: string, deviceId: string): Promise<boolean> {
    return this.tx(async (q) => {
      const gone = await q.query('DELETE FROM devices WHERE account_id = $1 AND id = $2', [accountId, deviceId]);
      if ((gone.rowCount ?? 0) === 0) return false;
      await q.query('DELETE FROM api_keys WHERE account_id = $1 AND device_id = $2', [accountId, deviceId]);
      await q.query('UPDATE computers SET device_id = NULL WHERE account_id = $1 AND device_id = $2', [
        accountId,
        deviceId,
      ]);
      return true;
    });
  }

  async createPairing(p: NewPairing): Promise<void> {
    await this.pool.query('DELETE FROM pairings WHERE expires_at < $1', [p.now - PAIRING_KEEP_MS]);
    await this.pool.query(
      'INSERT INTO pairings (code_hash, account_id, created_at, expires_at) VALUES ($1, $2, $3, $4)',
      [p.codeHash, p.accountId, p.now, p.expiresAt],
    );
  }

  async pairingState(codeHash: string, now: number): Promise<'open' | 'unknown' | 'used' | 'expired'> {
    const r = await this.one('SELECT expires_at, used_at FROM pairings WHERE code_hash = $1', [codeHash]);
    if (!r) return 'unknown';
    if (r.used_at !== null) return 'used';
    return num(r.expires_at) <= now ? 'expired' : 'open';
  }

  async claimPairing(c: PairingClaim): Promise<PairingClaimResult> {
    return this.tx(async (q) => {
      // the code's row, locked: one claim wins, across instances
      const pairing = (await q.query('SELECT * FROM pairings WHERE code_hash = $1 FOR UPDATE', [c.codeHash])).rows[0];
      if (!pairing) return { ok: false, reason: 'unknown' };
      if (pairing.used_at !== null) return { ok: false, reason: 'used' };
      if (num(pairing.expires_at) <= c.now) return { ok: false, reason: 'expired' };
      const accountId = pairing.account_id as string;
      await q.query(
        `INSERT INTO devices (id, account_id, name, kind, public_key, created_at) VALUES ($1, $2, $3, 'app', $4, $5)
         ON CONFLICT (account_id, public_key) DO NOTHING`,
        [c.device.deviceId, accountId, c.device.name, c.device.publicKey, c.now],
      );
      const row = (
        await q.query('SELECT * FROM devices WHERE account_id = $1 AND public_key = $2', [
          accountId,
          c.device.publicKey,
        ])
      ).rows[0] as Row;
      if (c.device.pairingProof) {
        await q.query('UPDATE devices SET pairing_proof = $1 WHERE id = $2', [c.device.pairingProof, row.id]);
        row.pairing_proof = c.device.pairingProof;
      }
      await q.query('UPDATE devices SET origin = $1, last_seen_at = $2 WHERE id = $3', [
        c.device.origin ?? null,
        c.now,
        row.id,
      ]);
      row.origin = c.device.origin ?? null;
      row.last_seen_at = c.now;
      await q.query(
        'INSERT INTO api_keys (id, account_id, key_hash, scopes, created_at, device_id) VALUES ($1, $2, $3, $4, $5, $6)',
        [c.key.keyId, accountId, c.key.keyHash, c.key.scopes.join(','), c.now, row.id],
      );
      await q.query('UPDATE pairings SET used_at = $1, device_id = $2 WHERE code_hash = $3', [
        c.now,
        row.id,
        c.codeHash,
      ]);
      return { ok: true, accountId, device: toDevice(row) };
    });
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
