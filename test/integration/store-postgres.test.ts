/**
 * The Store contract (test/helpers/storeContract.ts) on a real Postgres (Debian's package, started on loopback by
 * test/helpers/postgres.ts): a new database for each test. And what only Postgres has: a database made by a newer
 * relay is refused; two relays starting on one empty database at once both come up.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../relay-server/postgresStore.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { storeContract } from '../helpers/storeContract.js';

let server: TestPostgres;
let url: string;

beforeAll(async () => {
  server = await startPostgres();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe('the Postgres store', () => {
  storeContract({
    open: async () => {
      url = await server.database();
      return openPostgresStore(url);
    },
    clearOwner: async (hookId) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query('UPDATE computers SET owner_key_id = NULL WHERE hook_id = $1', [hookId]);
      await client.end();
    },
  });

  it('two relays starting on one empty database at once both come up; a newer schema is refused', async () => {
    const fresh = await server.database();
    const [a, b] = await Promise.all([openPostgresStore(fresh), openPostgresStore(fresh)]);
    await a.createAccount('acc', 1);
    expect(await b.accountExists('acc')).toBe(true);
    await a.close();
    await b.close();
    const client = new pg.Client({ connectionString: fresh });
    await client.connect();
    await client.query('UPDATE svc_schema SET version = 99');
    await client.end();
    await expect(openPostgresStore(fresh)).rejects.toThrow(/newer relay \(schema 99\)/);
  });
});
