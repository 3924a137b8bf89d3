/**
 * Pushes: numbered per account (`accounts.next_push_id`), deduplicated by clientId, moved between states by
 * compare-and-set, and emptied of their text at a final state.
 *
 * Writes run inside the store's group commit (`writeQueue.ts`), so none opens a transaction of its own, and none
 * reads back what it wrote: a push's insert and its two state changes are most of the relay's work for a push
 * (docs/benchmarks.md, "What a push costs the store").
 */
import type Database from 'better-sqlite3';
import type { PushState } from '../../core/protocol/index.js';
import {
  type NewPush,
  OPEN_PUSH_OVERHEAD,
  type PushCondition,
  type PushRecord,
  type PushUpdate,
  type ReplayQuery,
  StorageFullError,
} from '../store.js';

interface PushRow {
  account_id: string;
  id: number;
  type: string;
  agent_session_name: string;
  body: string;
  target_computer: string | null;
  client_id: string | null;
  sealed: string | null;
  state: string;
  code: string | null;
  result_computer: string | null;
  created_at: number;
  updated_at: number;
}

const FINAL_STATES: ReadonlySet<PushState> = new Set(['injected', 'refused', 'expired']);

function toPush(row: PushRow): PushRecord {
  return {
    accountId: row.account_id,
    id: row.id,
    type: row.type,
    agentSessionName: row.agent_session_name,
    body: row.body,
    targetComputer: row.target_computer,
    clientId: row.client_id,
    sealed: row.sealed,
    state: row.state as PushState,
    code: row.code,
    resultComputer: row.result_computer,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The condition of the partial indexes of open pushes (schema.ts); a query repeats it to be answered from them. */
const OPEN_STATES_SQL = "('pending', 'delivered')";

/** What an account's open pushes hold, read through the `pushes_open` index (a busy account keeps 10 000 final ones). */
export const OPEN_BYTES_SQL = `SELECT COALESCE(SUM(? + length(CAST(body AS BLOB)) + COALESCE(length(CAST(sealed AS BLOB)), 0)), 0)
  AS held FROM pushes WHERE account_id = ? AND state IN ${OPEN_STATES_SQL}`;

/**
 * Several statements: run it where a failure rolls all of them back (the write queue's savepoint does). The record
 * returned is made from `p`, not read back.
 */
export function insertPush(db: Database.Database, p: NewPush): { push: PushRecord; duplicate: boolean } {
  if (p.clientId !== null) {
    const existing = db
      .prepare('SELECT * FROM pushes WHERE account_id = ? AND client_id = ?')
      .get(p.accountId, p.clientId) as PushRow | undefined;
    if (existing) return { push: toPush(existing), duplicate: true };
  }
  if (p.maxOpenBytes !== undefined) {
    const { held } = db.prepare(OPEN_BYTES_SQL).get(OPEN_PUSH_OVERHEAD, p.accountId) as { held: number };
    const size = OPEN_PUSH_OVERHEAD + Buffer.byteLength(p.body) + Buffer.byteLength(p.sealed ?? '');
    if (held + size > p.maxOpenBytes) {
      throw new StorageFullError(`account ${p.accountId} holds ${held} bytes of open pushes`);
    }
  }
  const account = db
    .prepare('UPDATE accounts SET next_push_id = next_push_id + 1 WHERE id = ? RETURNING next_push_id - 1 AS id')
    .get(p.accountId) as { id: number } | undefined;
  if (!account) throw new Error(`no account ${p.accountId}`);
  const push: PushRecord = {
    accountId: p.accountId,
    id: account.id,
    type: asStored(p.type),
    agentSessionName: asStored(p.agentSessionName),
    body: asStored(p.body),
    targetComputer: p.targetComputer === null ? null : asStored(p.targetComputer),
    clientId: p.clientId === null ? null : asStored(p.clientId),
    sealed: p.sealed ?? null,
    state: 'pending',
    code: null,
    resultComputer: null,
    createdAt: p.now,
    updatedAt: p.now,
  };
  db.prepare(
    `INSERT INTO pushes (account_id, id, type, agent_session_name, body, target_computer, client_id, sealed,
       state, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    push.accountId,
    push.id,
    push.type,
    push.agentSessionName,
    push.body,
    push.targetComputer,
    push.clientId,
    push.sealed,
    push.state,
    push.createdAt,
    push.updatedAt,
  );
  return { push, duplicate: false };
}

/** A string as SQLite gives it back: UTF-8 has no lone surrogate, so the driver stores U+FFFD in its place. */
function asStored(text: string): string {
  return text.isWellFormed() ? text : text.toWellFormed();
}

export function getPush(db: Database.Database, accountId: string, id: number): PushRecord | null {
  const row = db.prepare('SELECT * FROM pushes WHERE account_id = ? AND id = ?').get(accountId, id) as
    | PushRow
    | undefined;
  return row ? toPush(row) : null;
}

/** The UPDATE of `updatePush` for each shape of condition, made once: the text is the statement's key (db.ts). */
const updateSql = new Map<string, string>();

function updateText(states: number, code: boolean, notResultComputer: boolean): string {
  const shape = `${states} ${code} ${notResultComputer}`;
  let sql = updateSql.get(shape);
  if (sql === undefined) {
    const clauses = [`state IN (${Array.from({ length: states }, () => '?').join(', ')})`];
    if (code) clauses.push('code = ?');
    if (notResultComputer) clauses.push('(result_computer IS NULL OR result_computer != ?)');
    sql = `UPDATE pushes SET state = ?, code = ?, updated_at = ?,
         result_computer = CASE WHEN ? THEN ? ELSE result_computer END,
         body = CASE WHEN ? THEN '' ELSE body END,
         sealed = CASE WHEN ? THEN NULL ELSE sealed END
       WHERE account_id = ? AND id = ? AND ${clauses.join(' AND ')}`;
    updateSql.set(shape, sql);
  }
  return sql;
}

/** One statement: SQLite undoes it by itself if it fails, so it needs no savepoint (`WriteQueue.add`). */
export function updatePush(
  db: Database.Database,
  accountId: string,
  id: number,
  when: PushCondition,
  to: PushUpdate,
): boolean {
  if (when.states.length === 0) return false;
  const params: (string | number | null)[] = [...when.states];
  if (when.code !== undefined) params.push(when.code);
  if (when.notResultComputer !== undefined) params.push(when.notResultComputer);
  const final = FINAL_STATES.has(to.state);
  const sql = updateText(when.states.length, when.code !== undefined, when.notResultComputer !== undefined);
  const { changes } = db
    .prepare(sql)
    .run(
      to.state,
      to.code,
      to.now,
      to.resultComputer !== undefined ? 1 : 0,
      to.resultComputer ?? null,
      final ? 1 : 0,
      final ? 1 : 0,
      accountId,
      id,
      ...params,
    );
  return changes > 0;
}

export function listReplayable(db: Database.Database, q: ReplayQuery): PushRecord[] {
  if (q.states.length === 0) return [];
  const rows = db
    .prepare(
      `SELECT * FROM pushes
       WHERE account_id = ? AND id > ? AND type = ? AND state IN (${q.states.map(() => '?').join(', ')})
         AND (target_computer IS NULL OR target_computer = ?)
       ORDER BY id`,
    )
    .all(q.accountId, q.afterId, q.type, ...q.states, q.hookId) as PushRow[];
  return rows.map(toPush);
}

export function listOlderThan(
  db: Database.Database,
  states: readonly PushState[],
  createdBefore: number,
  limit: number,
): PushRecord[] {
  if (states.length === 0) return [];
  const rows = db.prepare(olderThanSql(states)).all(...states, createdBefore, limit) as PushRow[];
  return rows.map(toPush);
}

/**
 * The query of `listOlderThan`. Open states are read through `pushes_open_created`, which holds only open pushes:
 * SQLite uses a partial index when the query repeats the index's condition word for word.
 */
export function olderThanSql(states: readonly PushState[]): string {
  const open = states.every((s) => s === 'pending' || s === 'delivered') ? `state IN ${OPEN_STATES_SQL} AND ` : '';
  const marks = states.map(() => '?').join(', ');
  return `SELECT * FROM pushes WHERE ${open}state IN (${marks}) AND created_at < ? ORDER BY created_at LIMIT ?`;
}

/**
 * Each account's newest `keep` final pushes stay; older final ones go. Only an account that has had more than
 * `keep` pushes can have any to delete (ids are never reused), so the others are not looked at.
 */
export function pruneFinalPushes(db: Database.Database, keep: number): number {
  const accounts = db.prepare('SELECT id FROM accounts WHERE next_push_id - 1 > ?').all(keep) as { id: string }[];
  let deleted = 0;
  for (const { id } of accounts) {
    deleted += db
      .prepare(
        `DELETE FROM pushes WHERE account_id = @account AND state IN ('injected', 'refused', 'expired') AND id <= (
           SELECT id FROM pushes WHERE account_id = @account AND state IN ('injected', 'refused', 'expired')
           ORDER BY id DESC LIMIT 1 OFFSET @keep
         )`,
      )
      .run({ account: id, keep }).changes;
  }
  return deleted;
}
