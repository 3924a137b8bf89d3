/**
 * Group commit for the embedded store: the writes asked for in one turn of the event loop run one after another
 * in a single `BEGIN IMMEDIATE` transaction, and each promise settles only once that transaction has committed. A
 * write runs inside its own savepoint: when it throws it is rolled back to it and rejects alone; the others commit.
 * A write of one statement (`oneStatement`) runs without: SQLite backs out a statement that breaks a constraint (its
 * default, ABORT), so that write too rejects alone; any other error from it fails the whole group, as nothing else
 * would undo what it had changed. If SQLite gives up the whole transaction (a full disk, an I/O error) or the
 * commit fails, nothing of the group is stored and every write of it rejects with that error: a caller is never
 * told a write happened that did not, nor the reverse.
 *
 * The writes run in the order they were asked for, so a compare-and-set sees the writes queued before it. A read
 * runs at once and sees what has been committed; a caller that awaited its write sees that write.
 *
 * Under load the groups are made larger on purpose: a group commits on the next turn of the event loop, but not
 * sooner than GROUP_GAP_MS after the previous commit. A write after a quiet spell commits at once; under a stream
 * of writes there is at most one commit every GROUP_GAP_MS. Measured with `npm run bench:relay` (2 000 pushes/s,
 * three writes each): about 4 writes a commit without the gap, 0.16 ms of relay CPU per push; with 5 ms, 0.12–0.14
 * ms and p50 3 ms instead of 0.6 (docs/benchmarks.md, "bench/relay.ts").
 */
import type Database from 'better-sqlite3';

/** Least time between two commits while writes keep coming. */
export const GROUP_GAP_MS = 5;

export interface WriteOptions {
  /**
   * `run` executes one SQL statement and nothing after it can throw: it runs without a savepoint of its own (two
   * writes in three a push; a savepoint is a statement before and after it, and SQLite copies each page the write
   * touches again into the savepoint's journal).
   */
  oneStatement?: boolean;
}

interface Write {
  run(): unknown;
  oneStatement: boolean;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export class WriteQueue {
  private readonly db: Database.Database;
  private readonly now: () => number;
  private queue: Write[] = [];
  /** When the last group was committed (-Infinity: never). */
  private lastCommit = Number.NEGATIVE_INFINITY;

  constructor(db: Database.Database, now: () => number = () => performance.now()) {
    this.db = db;
    this.now = now;
  }

  /** Run `run` in the next group; its result once the group has committed. */
  add<T>(run: () => T, options: WriteOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const oneStatement = options.oneStatement === true;
      this.queue.push({ run, oneStatement, resolve: resolve as (value: unknown) => void, reject });
      if (this.queue.length > 1) return;
      const wait = this.lastCommit + GROUP_GAP_MS - this.now();
      if (wait > 0) setTimeout(() => this.flush(), wait);
      else setImmediate(() => this.flush());
    });
  }

  /** Commit what is queued now (the event loop does it on its next turn; `close` does it at once). */
  flush(): void {
    const group = this.queue;
    if (group.length === 0) return;
    this.queue = [];
    this.lastCommit = this.now();
    const { db } = this;
    const settle: (() => void)[] = [];
    try {
      db.prepare('BEGIN IMMEDIATE').run();
      for (let i = 0; i < group.length; i++) {
        const write = group[i]!;
        const savepoint = !write.oneStatement;
        if (savepoint) db.prepare('SAVEPOINT svc_write').run();
        try {
          const value = write.run();
          if (savepoint) db.prepare('RELEASE svc_write').run();
          settle.push(() => write.resolve(value));
        } catch (error) {
          // SQLite rolled the whole transaction back: the writes before this one are gone too.
          if (!db.inTransaction) throw error;
          // Without a savepoint only a refused statement is known to have changed nothing.
          if (!savepoint && !isConstraintError(error)) throw error;
          if (savepoint) {
            db.prepare('ROLLBACK TO svc_write').run();
            db.prepare('RELEASE svc_write').run();
          }
          settle.push(() => write.reject(error));
        }
      }
      db.prepare('COMMIT').run();
    } catch (error) {
      if (db.open && db.inTransaction) db.prepare('ROLLBACK').run();
      for (const write of group) write.reject(error);
      return;
    }
    for (const done of settle) done();
  }
}

/** SQLite refused the statement for breaking a constraint (NOT NULL, UNIQUE, CHECK, a foreign key). */
function isConstraintError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_CONSTRAINT');
}
