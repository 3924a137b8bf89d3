/**
 * The embedded store's part of a push, alone: the three writes the relay asks of `SqliteStore` for each push (the
 * insert, `delivered`, the listener's `injected`), through its group commit, next to a floor that writes the same
 * rows with three bare statements in a transaction a group, on a database with the same schema, in the same process.
 * The groups are made the same way for both: each holds the inserts of `--group` new pushes and the two state
 * changes of the pushes before them, as the relay's do under load (docs/benchmarks.md, "What a push costs the
 * store"), and both commit at most once every GROUP_GAP_MS, as the store does under load. The two alternate in
 * rounds, so that the machine's drift falls on both.
 *
 *   npm run build && node dist/bench/relayStore.js                   # 5000 accounts, groups of 5, 8 rounds
 *   node dist/bench/relayStore.js --accounts 100 --pushes 2000 --rounds 4 --json
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { newAccountId } from '../relay-server/auth.js';
import { openDatabase } from '../relay-server/sqlite/db.js';
import { setUpDatabase } from '../relay-server/sqlite/schema.js';
import { GROUP_GAP_MS } from '../relay-server/sqlite/writeQueue.js';
import { openSqliteStore, type SqliteStore } from '../relay-server/sqliteStore.js';
import { benchArgs, onCleanup, output, progress, runBench, stats, wholeNumber } from './inject.js';

const USAGE = `usage: node dist/bench/relayStore.js [--accounts N] [--group K] [--pushes P] [--rounds R] [--json]
  --accounts N  accounts the pushes go round (default 5000, as bench/relay.ts's sockets)
  --group K     new pushes a group commit holds, with the two state changes of K earlier ones (default 5: 15
                writes; the relay's groups at 1 000 pushes/s hold about 13.5)
  --pushes P    pushes a round, each side, a multiple of K (default 4000)
  --rounds R    rounds, the store and the floor in turn (default 8; the first of each is not counted; of an even
                number counted, the median is the lower middle one)
  --json        the results as JSON on stdout`;

interface Side {
  name: string;
  /** Writes `k` new pushes for `accounts[first..]` and moves the `k` before them on; settles once committed. */
  group(first: number, k: number): Promise<void>;
  close(): Promise<void>;
}

function storeSide(store: SqliteStore, accounts: string[], ids: number[]): Side {
  const n = accounts.length;
  const open = ['pending', 'delivered'] as const;
  return {
    name: 'SqliteStore (the relay)',
    async group(first, k) {
      const writes: Promise<unknown>[] = [];
      for (let i = first; i < first + k; i++) {
        const accountId = accounts[i % n]!;
        writes.push(
          store
            .insertPush({
              accountId,
              type: 'agent.command',
              agentSessionName: 'svc-bench',
              body: `p${i}`,
              targetComputer: 'c_bench',
              clientId: null,
              now: Date.now(),
              maxOpenBytes: 16 * 1024 * 1024,
            })
            .then(({ push }) => {
              ids[i] = push.id;
            }),
        );
        if (i - k < 0) continue;
        const before = accounts[(i - k) % n]!;
        const id = ids[i - k]!;
        const moved = (done: boolean) => {
          if (!done) throw new Error(`push ${before}/${id} did not change state`);
        };
        const delivered = { state: 'delivered', code: null, now: 1 } as const;
        const injected = { state: 'injected', code: null, resultComputer: 'c', now: 2 } as const;
        writes.push(store.updatePush(before, id, { states: ['pending'] }, delivered).then(moved));
        writes.push(store.updatePush(before, id, { states: open }, injected).then(moved));
      }
      await Promise.all(writes);
    },
    close: () => store.close(),
  };
}

/** The rows alone: an id from a counter, no checks, no savepoints, one transaction a group. */
function floorSide(db: Database.Database, accounts: string[]): Side {
  const n = accounts.length;
  const next = new Map<string, number>();
  const ids: number[] = [];
  const insert = db.prepare(
    `INSERT INTO pushes (account_id, id, type, agent_session_name, body, target_computer, client_id, sealed, state,
       created_at, updated_at) VALUES (?, ?, 'agent.command', 'svc-bench', ?, 'c_bench', NULL, NULL, 'pending', ?, ?)`,
  );
  const delivered = db.prepare("UPDATE pushes SET state = 'delivered', updated_at = 1 WHERE account_id = ? AND id = ?");
  const injected = db.prepare(
    "UPDATE pushes SET state = 'injected', updated_at = 2, body = '', result_computer = 'c' WHERE account_id = ? AND id = ?",
  );
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  let lastCommit = Number.NEGATIVE_INFINITY;
  return {
    name: 'bare statements (floor)',
    async group(first, k) {
      // the store's pace: a turn of the event loop, and at most one commit every GROUP_GAP_MS
      const wait = lastCommit + GROUP_GAP_MS - performance.now();
      await new Promise<void>((resolve) => (wait > 0 ? setTimeout(resolve, wait) : setImmediate(resolve)));
      lastCommit = performance.now();
      begin.run();
      for (let i = first; i < first + k; i++) {
        const accountId = accounts[i % n]!;
        const id = (next.get(accountId) ?? 0) + 1;
        next.set(accountId, id);
        ids[i] = id;
        const now = Date.now();
        insert.run(accountId, id, `p${i}`, now, now);
        if (i - k < 0) continue;
        delivered.run(accounts[(i - k) % n]!, ids[i - k]!);
        injected.run(accounts[(i - k) % n]!, ids[i - k]!);
      }
      commit.run();
    },
    close: async () => {
      db.close();
    },
  };
}

async function main(opts: { accounts: number; group: number; pushes: number; rounds: number; json: boolean }) {
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-store-'));
  onCleanup('temp dir', () => rm(root, { recursive: true, force: true }));
  progress(`making ${opts.accounts} accounts in each database`);
  const accounts = Array.from({ length: opts.accounts }, () => newAccountId());
  const store = openSqliteStore(join(root, 'store'));
  await Promise.all(accounts.map((id) => store.createAccount(id, 0))); // one group commit
  const raw = openDatabase(join(root, 'floor.db'));
  setUpDatabase(raw);
  const add = raw.prepare('INSERT INTO accounts (id, created_at) VALUES (?, 0)');
  raw.transaction(() => {
    for (const id of accounts) add.run(id);
  })();
  const sides = [storeSide(store, accounts, []), floorSide(raw, accounts)];
  const perPush = new Map<string, number[]>(sides.map((s) => [s.name, []]));
  const pushed = new Map<string, number>(sides.map((s) => [s.name, 0]));
  for (let round = 0; round < opts.rounds; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      progress(`round ${round + 1}/${opts.rounds}: ${side.name}`);
      const first = pushed.get(side.name)!;
      const cpu = process.cpuUsage();
      for (let i = first; i < first + opts.pushes; i += opts.group) await side.group(i, opts.group);
      const used = process.cpuUsage(cpu);
      pushed.set(side.name, first + opts.pushes);
      // the first round of each warms the code and the page cache
      if (round > 0) perPush.get(side.name)!.push((used.user + used.system) / opts.pushes);
    }
  }
  for (const side of sides) await side.close();
  const results = sides.map((s) => ({ name: s.name, cpuPerPushUs: stats(perPush.get(s.name)!) }));
  const [relay, floor] = results as [(typeof results)[0], (typeof results)[0]];
  const ratio =
    relay.cpuPerPushUs && floor.cpuPerPushUs
      ? Math.round((relay.cpuPerPushUs.p50 / floor.cpuPerPushUs.p50) * 100) / 100
      : null;
  if (opts.json) {
    output(`${JSON.stringify({ options: opts, results, ratio }, null, 2)}\n`);
    return;
  }
  const f = (x: number | undefined) => (x === undefined ? '-' : `${x.toFixed(1)} µs`);
  output(
    [
      `svc relay store benchmark — ${opts.accounts} accounts, groups of ${opts.group} new pushes with the state changes of ${opts.group} earlier ones, ${opts.pushes} pushes a round, ${opts.rounds - 1} rounds counted`,
      '',
      '  writes of a push, CPU           median       min       max',
      ...results.map(
        (r) =>
          `  ${r.name.padEnd(28)} ${f(r.cpuPerPushUs?.p50).padStart(9)} ${f(r.cpuPerPushUs?.min).padStart(9)} ${f(r.cpuPerPushUs?.max).padStart(9)}`,
      ),
      '',
      `  the store against the floor: ${ratio ?? '-'}x (medians)`,
      '',
    ].join('\n'),
  );
}

const values = benchArgs(
  {
    accounts: { type: 'string', default: '5000' },
    group: { type: 'string', default: '5' },
    pushes: { type: 'string', default: '4000' },
    rounds: { type: 'string', default: '8' },
    json: { type: 'boolean', default: false },
  },
  USAGE,
);
const int = (name: string, least: number) => wholeNumber(values, name, least, USAGE);
const group = int('group', 1);
const pushes = int('pushes', 1);
if (pushes % group !== 0) {
  process.stderr.write(`bench: --pushes takes a multiple of --group (${group})\n${USAGE}\n`);
  process.exit(2);
}
runBench(() =>
  main({
    accounts: int('accounts', 1),
    group,
    pushes,
    rounds: int('rounds', 2),
    json: values.json === true,
  }),
);
