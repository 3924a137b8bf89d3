/**
 * Session history chunks (spec 4.11.1; docs/files.md "History"): envelopes the listeners sealed, stored as they
 * came, per account within its limits (core/relay/history.ts): the oldest go first when an account is over its size,
 * and any older than the age limit go at every insert.
 */
import type Database from 'better-sqlite3';
import type { HistoryChunkRecord, HistoryLimits, HistoryQuery } from '../store.js';

interface Row {
  id: number;
  computer: string;
  session: string;
  envelope: string;
  created_at: number;
}

const toRecord = (r: Row): HistoryChunkRecord => ({
  id: r.id,
  computer: r.computer,
  session: r.session,
  envelope: JSON.parse(r.envelope) as Record<string, unknown>,
  at: r.created_at,
});

/** Stores one chunk and applies the account's limits; returns it with its id. */
export function addHistoryChunk(
  db: Database.Database,
  chunk: { accountId: string; computer: string; session: string; envelope: Record<string, unknown> },
  now: number,
  limits: HistoryLimits,
): HistoryChunkRecord {
  const text = JSON.stringify(chunk.envelope);
  const add = db.transaction((): Row => {
    const row = db
      .prepare(
        `INSERT INTO history (account_id, computer, session, envelope, size, created_at) VALUES (?, ?, ?, ?, ?, ?)
         RETURNING id, computer, session, envelope, created_at`,
      )
      .get(chunk.accountId, chunk.computer, chunk.session, text, Buffer.byteLength(text), now) as Row;
    db.prepare('DELETE FROM history WHERE account_id = ? AND created_at < ?').run(
      chunk.accountId,
      now - limits.maxAgeMs,
    );
    // over its size: the oldest go, one statement (a running sum from the newest down)
    db.prepare(
      `DELETE FROM history WHERE id IN (
         SELECT id FROM (
           SELECT id, SUM(size) OVER (ORDER BY id DESC) AS total FROM history WHERE account_id = ?
         ) WHERE total > ?
       )`,
    ).run(chunk.accountId, limits.maxBytes);
    return row;
  });
  return toRecord(add.immediate());
}

/** A page of a session's chunks, newest first, older than `before` (an id) when given. */
export function listHistory(db: Database.Database, q: HistoryQuery): HistoryChunkRecord[] {
  const rows = db
    .prepare(
      `SELECT id, computer, session, envelope, created_at FROM history
       WHERE account_id = ? AND computer = ? AND session = ? AND id < ? ORDER BY id DESC LIMIT ?`,
    )
    .all(q.accountId, q.computer, q.session, q.before ?? Number.MAX_SAFE_INTEGER, q.limit) as Row[];
  return rows.map(toRecord);
}

/** Bytes of history an account holds now. */
export function historyBytes(db: Database.Database, accountId: string): number {
  const row = db.prepare('SELECT COALESCE(SUM(size), 0) AS total FROM history WHERE account_id = ?').get(accountId) as {
    total: number;
  };
  return row.total;
}
