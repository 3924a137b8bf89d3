/**
 * Group commit (relay-server/sqlite/writeQueue.ts) on a real SQLite file: the writes of one turn share a
 * transaction, settle only once it has committed, fail alone when they throw, and all fail when SQLite gives the
 * whole transaction up.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../../relay-server/sqlite/db.js';
import { GROUP_GAP_MS, WriteQueue } from '../../../relay-server/sqlite/writeQueue.js';
import { openSqliteStore } from '../../../relay-server/sqliteStore.js';

let root: string;
let db: Database.Database;
let reader: Database.Database;
let queue: WriteQueue;

const insert = (x: string) => () => db.prepare('INSERT INTO t (x) VALUES (?) RETURNING id').get(x) as { id: number };
/** What another connection (another process, say) sees committed. */
const committed = () => (reader.prepare('SELECT x FROM t ORDER BY id').all() as { x: string }[]).map((r) => r.x);

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'svc-writequeue-'));
  db = openDatabase(join(root, 'q.db'));
  db.exec('PRAGMA journal_mode = WAL; CREATE TABLE t (id INTEGER PRIMARY KEY, x TEXT NOT NULL)');
  reader = openDatabase(join(root, 'q.db'));
  queue = new WriteQueue(db);
});

afterEach(async () => {
  reader.close();
  db.close();
  await rm(root, { recursive: true, force: true });
});

describe('WriteQueue', () => {
  it('commits the writes of one turn together, in order, and settles each only after the commit', async () => {
    const seenDuring: string[][] = [];
    const a = queue.add(insert('a'));
    const b = queue.add(() => {
      seenDuring.push(committed());
      return insert('b')();
    });
    const c = queue.add(insert('c'));
    expect(committed()).toEqual([]); // nothing runs in the turn that asked
    const [ra, rb, rc] = await Promise.all([a, b, c]);
    expect(seenDuring).toEqual([[]]); // 'a' was not committed yet while 'b' ran: one transaction
    expect([ra.id, rb.id, rc.id]).toEqual([1, 2, 3]);
    expect(committed()).toEqual(['a', 'b', 'c']);
  });

  it('rolls back only the write that throws; the others of its group commit', async () => {
    const a = queue.add(insert('a'));
    const bad = queue.add(() => {
      insert('half')();
      throw new Error('refused');
    });
    const c = queue.add(insert('c'));
    await expect(bad).rejects.toThrow('refused');
    await Promise.all([a, c]);
    expect(committed()).toEqual(['a', 'c']);
  });

  it('a one-statement write that breaks a constraint is backed out by SQLite and fails alone', async () => {
    const a = queue.add(insert('a'));
    // two rows in one statement; the second breaks NOT NULL after the first went in
    const bad = queue.add(() => db.prepare("INSERT INTO t (x) VALUES ('half'), (NULL)").run(), { oneStatement: true });
    const c = queue.add(insert('c'), { oneStatement: true });
    await expect(bad).rejects.toThrow(/NOT NULL/);
    await Promise.all([a, c]);
    expect(committed()).toEqual(['a', 'c']);
  });

  it('a one-statement write that fails otherwise fails its group: no savepoint would undo what it changed', async () => {
    const a = queue.add(insert('a'));
    // what an error after the statement had written would leave (SQLITE_CORRUPT in an index, say): a half-done write
    const broken = queue.add(
      () => {
        insert('half')();
        throw Object.assign(new Error('database disk image is malformed'), { code: 'SQLITE_CORRUPT' });
      },
      { oneStatement: true },
    );
    const results = await Promise.allSettled([a, broken]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(committed()).toEqual([]);
    await queue.add(insert('b'), { oneStatement: true }); // and the next group works again
    expect(committed()).toEqual(['b']);
  });

  it('rejects only the write that hits a full disk when SQLite keeps the transaction', async () => {
    const pages = (db.prepare('PRAGMA page_count').get() as { page_count: number }).page_count;
    db.exec(`PRAGMA max_page_count = ${pages + 1}`);
    const a = queue.add(insert('a'));
    const huge = queue.add(insert('x'.repeat(200_000)));
    const c = queue.add(insert('c'));
    await expect(huge).rejects.toThrow(/full/i);
    await Promise.all([a, c]);
    expect(committed()).toEqual(['a', 'c']);
  });

  it('stores nothing of the group and rejects every write when SQLite gives the transaction up', async () => {
    const a = queue.add(insert('a'));
    // what SQLite does on an I/O error or a full disk mid-statement: the whole transaction is rolled back
    const broken = queue.add(() => {
      insert('b')();
      db.exec('ROLLBACK');
      throw new Error('disk I/O error');
    });
    const c = queue.add(insert('c'));
    const results = await Promise.allSettled([a, broken, c]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/disk I\/O error/);
    expect(committed()).toEqual([]);
    await queue.add(insert('d')); // and the next group works again
    expect(committed()).toEqual(['d']);
  });

  it('commits at once after a quiet spell, and at most once every GROUP_GAP_MS while writes keep coming', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'setImmediate', 'Date'] });
    try {
      const timed = new WriteQueue(db, () => Date.now());
      const settled: string[] = [];
      const write = (x: string) => timed.add(insert(x)).then(() => settled.push(x));
      const first = write('a');
      await vi.advanceTimersByTimeAsync(0); // the next turn
      await first;
      expect(committed()).toEqual(['a']);
      // right after a commit: the next group waits for the gap, and gathers what comes meanwhile
      const more = [write('b')];
      await vi.advanceTimersByTimeAsync(1);
      more.push(write('c'));
      await vi.advanceTimersByTimeAsync(GROUP_GAP_MS - 3);
      expect(committed()).toEqual(['a']);
      await vi.advanceTimersByTimeAsync(2);
      await Promise.all(more);
      expect(committed()).toEqual(['a', 'b', 'c']);
      // a quiet spell: at once again
      await vi.advanceTimersByTimeAsync(GROUP_GAP_MS * 4);
      const late = write('d');
      await vi.advanceTimersByTimeAsync(0);
      await late;
      expect(settled).toEqual(['a', 'b', 'c', 'd']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a store commits what is queued when it closes', async () => {
    const store = openSqliteStore(join(root, 'data'));
    const pending = store.createAccount('acct_closing', 1);
    await store.close();
    await pending;
    const again = openSqliteStore(join(root, 'data'));
    expect(await again.accountExists('acct_closing')).toBe(true);
    await again.close();
  });
});
