/**
 * Follows an opencode session in its SQLite database (core/transcripts/opencode.ts decides what a row means): the
 * newest top-level session for the folder, its parts read again while they change (a part is updated in place), each
 * event given once. Same shape as the file follower (actors/transcripts/follow.ts), so the history treats both alike.
 *
 * One read-only connection per database file, kept while it is read (opencode writes in WAL mode; a reader outside
 * a transaction disturbs neither its writes nor its checkpoints), each SQL text prepared once: a poll every second
 * opens nothing and compiles nothing. A file opencode made anew (another inode) gets a new connection and the old
 * one is closed; so is one whose file is gone, and one nothing read for a minute (a session that ended: its file and
 * its shared-memory lock are not held for days).
 */
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { opencodeEvents, opencodeTodos } from '../../core/transcripts/opencode.js';
import type { FollowPosition, FollowResult } from './follow.js';
import type { FiledSession } from './locate.js';

type Env = Readonly<Record<string, string | undefined>>;

// better-sqlite3 is loaded at the first opencode database read, not with every listener (most follow no opencode)
const require = createRequire(import.meta.url);
let BetterSqlite: typeof Database | null = null;

type Reader = { ino: number; db: Database.Database; statements: Map<string, Database.Statement>; used: number };
/** The open connection per file. */
const readers = new Map<string, Reader>();
let opened = 0;
let closed = 0;
/** A connection nothing read for this long is closed (the next read opens another). */
export const READER_IDLE_MS = 60_000;
let sweeping: NodeJS.Timeout | null = null;

function close(dbPath: string): void {
  const r = readers.get(dbPath);
  if (!r) return;
  r.db.close();
  closed++;
  readers.delete(dbPath);
}

/** Closes the connections nothing read since `now - READER_IDLE_MS` (run every half of that while any is open). */
export function closeIdleReaders(now = Date.now()): void {
  for (const [path, r] of readers) if (now - r.used >= READER_IDLE_MS) close(path);
  if (readers.size === 0 && sweeping) {
    clearInterval(sweeping);
    sweeping = null;
  }
}

/** The connection to `dbPath`, opened on first use or when the file was made anew; null when there is no file. */
function reader(dbPath: string): Reader | null {
  let ino: number;
  try {
    ino = statSync(dbPath).ino;
  } catch {
    close(dbPath);
    return null;
  }
  const known = readers.get(dbPath);
  if (known?.ino === ino) {
    known.used = Date.now();
    return known;
  }
  close(dbPath);
  // `timeout`: how long a read waits on opencode's lock (SQLite's busy timeout), without a pragma statement
  BetterSqlite ??= require('better-sqlite3') as typeof Database;
  const db = new BetterSqlite(dbPath, { readonly: true, fileMustExist: true, timeout: 200 });
  const made: Reader = { ino, db, statements: new Map(), used: Date.now() };
  readers.set(dbPath, made);
  opened++;
  sweeping ??= setInterval(() => closeIdleReaders(), READER_IDLE_MS / 2).unref();
  return made;
}

/** `sql` prepared once per connection. */
function statement(r: Reader, sql: string): Database.Statement {
  let s = r.statements.get(sql);
  if (!s) {
    s = r.db.prepare(sql);
    r.statements.set(sql, s);
  }
  return s;
}

/** How many connections were opened, are open, and were closed (for tests). */
export const readerCounts = () => ({ opened, open: readers.size, closed });

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
  try {
    const r = reader(dbPath);
    if (!r) return null;
    const rows = statement(
      r,
      'SELECT id FROM session WHERE directory = ? AND parent_id IS NULL ORDER BY time_updated DESC LIMIT 20',
    ).all(cwd) as { id: string }[];
    const row = rows.find((x) => !skip?.has(`${dbPath}#${x.id}`));
    return row ? { path: `${dbPath}#${row.id}`, id: row.id } : null;
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
      const r = reader(dbPath);
      if (!r) return out;
      const row = statement(
        r,
        'SELECT id FROM session WHERE directory = ? AND parent_id IS NULL AND time_updated >= ? ORDER BY time_updated DESC LIMIT 1',
      ).get(cwd, since) as { id: string } | undefined;
      if (!row) return out;
      if (row.id !== session) {
        out.reset = session !== null;
        session = row.id;
        seen = new Set();
        todos = '';
        watermark = 0;
      }
      const rows = statement(
        r,
        `SELECT p.id AS id, json_extract(m.data, '$.role') AS role, p.data AS data, p.time_updated AS updated
         FROM part p JOIN message m ON m.id = p.message_id
         WHERE p.session_id = ? AND p.time_updated >= ? ORDER BY p.time_created, p.id`,
      ).all(session, watermark - overlap) as { id: string; role: string; data: string; updated: number }[];
      const read = opencodeEvents(rows, seen);
      out.events.push(...read.events);
      out.unknown += read.unknown;
      for (const x of rows) watermark = Math.max(watermark, x.updated);
      overlap = 2_000;
      const list = statement(r, 'SELECT content, status FROM todo WHERE session_id = ? ORDER BY position').all(
        session,
      ) as { content: string; status: string }[];
      const text = JSON.stringify(list);
      if (text !== todos && (list.length > 0 || todos !== '')) out.events.push(opencodeTodos(list));
      todos = text;
      return out;
    },
  };
}
