/**
 * Opening a SQLite file: a better-sqlite3 database whose `prepare` hands out one statement per SQL text, made once
 * and kept with the database, so SQLite never compiles the same SQL twice (the store's calls are few and repeated).
 *
 * better-sqlite3 13 is built on Node-API and ships its binaries in the package (no compiler at install). Version 12
 * wrapped each object in Node's `ObjectWrap`, whose destructor aborts Node 24 when the collector frees it outside a
 * JavaScript context; this file kept every object alive for that reason until 13 (docs/install.md).
 */
import Database from 'better-sqlite3';

let prepared = 0;

export function openDatabase(file: string, options?: Database.Options): Database.Database {
  const db = new Database(file, options);
  const statements = new Map<string, Database.Statement>();
  const prepare = db.prepare.bind(db);
  db.prepare = ((sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = prepare(sql);
      statements.set(sql, statement);
      prepared++;
    }
    return statement;
  }) as typeof db.prepare;
  return db;
}

/** How many statements were prepared in this process, all databases together (for tests). */
export const preparedCount = () => prepared;
