/**
 * Opening a SQLite file, with one rule for every better-sqlite3 object: none is ever left to the garbage collector.
 *
 * better-sqlite3 12 wraps each Database and Statement in Node's `ObjectWrap`. From Node 24 on, that class adds an
 * environment cleanup hook when it is made and removes it in its destructor, and removing one needs a current
 * JavaScript context: when the garbage collector frees a wrapper while none is entered (a collection V8 runs from
 * one of its own tasks, for instance), Node aborts the process with `Assertion failed: (env) != nullptr` in
 * `node::RemoveEnvironmentCleanupHook`, under `Database::~Database` or `Statement::~Statement`. It is not a
 * JavaScript error that anything could catch: the relay, or a test worker, simply dies (SIGABRT).
 * better-sqlite3 13 no longer uses `ObjectWrap`, but it supports Node 22 and later only (it crashes on Node 20).
 *
 * So a database opened here is kept referenced until the process exits (after `close()` what stays is a small
 * wrapper; the SQLite connection is gone), and its `prepare` hands out one statement per SQL text, made once and
 * kept with the database (which also spares SQLite compiling the same SQL again). At exit Node's own cleanup
 * destroys them while its environment is still there. Do not call `db.pragma()` on it, which makes a statement of
 * its own each time: set pragmas with `exec` and read them with `prepare`.
 */
import Database from 'better-sqlite3';

/** Every database opened here, with its statements: referenced until the process exits. */
const kept = new Map<Database.Database, Map<string, Database.Statement>>();

export function openDatabase(file: string, options?: Database.Options): Database.Database {
  const db = new Database(file, options);
  const statements = new Map<string, Database.Statement>();
  kept.set(db, statements);
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  }) as typeof db.prepare;
  return db;
}

/** How many databases and statements are kept (for tests). */
export function keptCounts(): { databases: number; statements: number } {
  let statements = 0;
  for (const s of kept.values()) statements += s.size;
  return { databases: kept.size, statements };
}
