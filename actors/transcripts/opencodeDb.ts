/**
 * Follows an opencode session in its SQLite database (core/transcripts/opencode.ts decides what a row means): the
 * newest top-level session for the folder, its parts read again while they change (a part is updated in place), each
 * event given once. Opened read-only (opencode writes it in WAL mode; readers do not disturb it), closed between
 * polls. Same shape as the file follower (actors/transcripts/follow.ts), so the history treats both alike.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { opencodeEvents, opencodeTodos } from '../../core/transcripts/opencode.js';
import type { FollowPosition, FollowResult } from './follow.js';
import type { FiledSession } from './locate.js';

type Env = Readonly<Record<string, string | undefined>>;

/** `$XDG_DATA_HOME/opencode/opencode.db`, else `~/.local/share/opencode/opencode.db`. */
export const opencodeDbPath = (env: Env) =>
  join(env.XDG_DATA_HOME || join(env.HOME || homedir(), '.local', 'share'), 'opencode', 'opencode.db');

/**
 * opencode's most recently updated top-level session for `cwd` whose place (`<db>#<id>`, as the follower names it)
 * is not in `skip`: what a resume of a past session in that folder takes. Null when there is none or no database.
 */
export function opencodeSession(
  cwd: string,
  env: Env = process.env,
  skip?: ReadonlySet<string>,
  dbPath = opencodeDbPath(env),
): FiledSession | null {
  if (!existsSync(dbPath)) return null;
  try {
    const db = new Database(dbPath, { readonly: true, fileMustExist: true });
    try {
      db.pragma('busy_timeout = 200');
      const rows = db
        .prepare('SELECT id FROM session WHERE directory = ? AND parent_id IS NULL ORDER BY time_updated DESC LIMIT 20')
        .all(cwd) as { id: string }[];
      const row = rows.find((r) => !skip?.has(`${dbPath}#${r.id}`));
      return row ? { path: `${dbPath}#${row.id}`, id: row.id } : null;
    } finally {
      db.close();
    }
  } catch {
    return null; // a database of another shape, or locked: nothing to resume from
  }
}

/** `start`: where an earlier follower stopped (its session and watermark), so a restart does not send it all again. */
export function followOpencode(
  cwd: string,
  since: number,
  env: Env = process.env,
  start?: FollowPosition,
  dbPath = opencodeDbPath(env),
) {
  const resumed = start?.path.startsWith(`${dbPath}#`) ? start : undefined;
  let session: string | null = resumed ? resumed.path.slice(dbPath.length + 1) : null;
  let seen = new Set<string>();
  let todos = '';
  /** Parts changed at or after this (ms) are read again; a little overlap, `seen` drops what was given. */
  let watermark = resumed?.offset ?? 0;
  let overlap = resumed ? 0 : 2_000;

  return {
    position(): FollowPosition | null {
      return session ? { path: `${dbPath}#${session}`, ino: 0, offset: watermark } : null;
    },
    poll(): FollowResult {
      const out: FollowResult = { events: [], reset: false, unknown: 0 };
      if (!existsSync(dbPath)) return out;
      const db = new Database(dbPath, { readonly: true, fileMustExist: true });
      try {
        db.pragma('busy_timeout = 200');
        const row = db
          .prepare(
            'SELECT id FROM session WHERE directory = ? AND parent_id IS NULL AND time_updated >= ? ORDER BY time_updated DESC LIMIT 1',
          )
          .get(cwd, since) as { id: string } | undefined;
        if (!row) return out;
        if (row.id !== session) {
          out.reset = session !== null;
          session = row.id;
          seen = new Set();
          todos = '';
          watermark = 0;
        }
        const rows = db
          .prepare(
            `SELECT p.id AS id, json_extract(m.data, '$.role') AS role, p.data AS data, p.time_updated AS updated
             FROM part p JOIN message m ON m.id = p.message_id
             WHERE p.session_id = ? AND p.time_updated >= ? ORDER BY p.time_created, p.id`,
          )
          .all(session, watermark - overlap) as { id: string; role: string; data: string; updated: number }[];
        const read = opencodeEvents(rows, seen);
        out.events.push(...read.events);
        out.unknown += read.unknown;
        for (const r of rows) watermark = Math.max(watermark, r.updated);
        overlap = 2_000;
        const list = db
          .prepare('SELECT content, status FROM todo WHERE session_id = ? ORDER BY position')
          .all(session) as { content: string; status: string }[];
        const text = JSON.stringify(list);
        if (text !== todos && (list.length > 0 || todos !== '')) out.events.push(opencodeTodos(list));
        todos = text;
      } finally {
        db.close();
      }
      return out;
    },
  };
}
