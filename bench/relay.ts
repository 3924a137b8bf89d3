/**
 * The relay under load, next to its floor (issue 15): N listener WebSockets (one account each), pushes at R per
 * second round-robin over the accounts through `POST /pushes/send`, the time from the POST to `push.new` at the
 * listener's socket, and the server's CPU per push and RSS (from /proc, the server runs as its own process), for
 * the relay on SQLite, the relay on Postgres + Redis (`--postgres`), and a minimal raw `ws` + `http` server doing the
 * same routing (bench/relayRaw.ts), all in the same run. Each listener answers `push.result` as a real one does.
 *
 *   npm run bench:relay                                  # build, then node dist/bench/relay.js (5000 / 2000/s / 20 s)
 *   node dist/bench/relay.js --sockets 500 --rate 200 --seconds 5 --postgres --json
 *   node dist/bench/relay.js --tls --rate 1000 --seconds 15 --rounds 3    # issue 35's figures, median of three
 *
 * The generator (sockets and POSTs) runs in this process; on a small machine it competes with the server for the
 * CPUs, the same way for every target, and it collects its garbage on its main thread (GENERATOR_NODE_FLAGS) so that
 * its own collector stops it only briefly while it times. Pushes first run untimed for `--warmup` seconds (JIT,
 * connections, the collections that follow the sockets opening), and the figures print beside them what can stretch
 * a tail that is not the server's: the generator's own CPU and event-loop delay, and the CPU time the hypervisor stole
 * from this machine (/proc/stat) while the pushes were timed.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import WebSocket from 'ws';
import { createAccount } from '../relay-server/accounts.js';
import { openPostgresStore } from '../relay-server/postgresStore.js';
import { openSqliteStore } from '../relay-server/sqliteStore.js';
import type { Store } from '../relay-server/store.js';
import { selfSigned } from '../test/helpers/certs.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { startRedis } from '../test/helpers/redis.js';
import {
  benchArgs,
  clockTicks,
  loadAverage,
  now,
  onCleanup,
  output,
  procSample,
  progress,
  ROOT,
  runBench,
  SVC_BIN,
  sleep,
  stats,
  warn,
  wholeNumber,
} from './inject.js';

const USAGE = `usage: node dist/bench/relay.js [--sockets N] [--rate R] [--seconds S] [--warmup S] [--rounds N] [--postgres] [--tls]
       [--pin] [--server-node-options=FLAGS] [--profile DIR] [--json]
  --sockets N   listener WebSockets, one account each (default 5000)
  --rate R      pushes per second, round-robin over the accounts (default 2000)
  --seconds S   how long pushes are sent and timed (default 20)
  --warmup S    pushes at the same rate first, for S seconds, not timed and not in the CPU figure (default 8; 0: none)
  --rounds N    measure every server N times, in turn (floor, relay, floor, relay, …), and print the median of each
                figure beside the runs (default 1; of an even N, the lower middle one): one run's CPU a push
                varies by 10–20 % on a shared machine
  --postgres    also measure the relay on Postgres + Redis (Debian's postgresql and redis-server)
  --tls         every server (the floor too) serves HTTPS and WSS, with a self-signed certificate for 127.0.0.1
  --server-node-options=FLAGS  node flags for every server, the floor too, split at spaces (no quoting), e.g.
                --server-node-options="--single-threaded-gc --trace-gc"
  --profile DIR run each relay with node --cpu-prof, its profile written to DIR when it stops
  --pin         the server on the last CPU, this process (the generator) on the others (taskset; 2 CPUs or more)
  --json        the results as JSON on stdout`;

interface Target {
  name: string;
  start(): Promise<{ url: string; proc: ChildProcess }>;
  /** Accounts and their keys, made before the server starts where the server stores them. */
  accounts(n: number): Promise<string[]>;
}

interface Result {
  name: string;
  sent: number;
  received: number;
  latency: ReturnType<typeof stats>;
  cpuSeconds: number;
  cpuPerPushMs: number;
  cpuPercent: number;
  rssMiB: number;
  /** The share of the machine's CPU time the hypervisor gave to others over the timed pushes (/proc/stat steal). */
  stealPercent: number;
  /** This process's CPU over the timed pushes, % of one CPU (all its threads). */
  generatorCpuPercent: number;
  /** How late the generator's event loop ran while pushes were timed (ms): how much of the tail is its own. */
  generatorLagMs: { p99: number; max: number };
  /** The most POSTs that waited in the generator for a free connection while pushes were timed (in the latency). */
  queuedMax: number;
}

/** How late the generator's loop timer fired (ms, 0.01), from an interval monitorEventLoopDelay recorded (ns). */
const lateBy = (ns: number) => Math.round(Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS) * 100) / 100;

/**
 * Connections the POSTs share, all opened at the start of the warm-up and used in turn: at 1 000 pushes/s each is used
 * every quarter second, so none idles the 5 s after which a server closes it, and a server that stalls for up to
 * a quarter second still finds a connection free for every push (more wait in this process: `queuedMax`).
 */
const POST_CONNECTIONS = 256;
/** monitorEventLoopDelay's timer (ms): it records the time between two of its fires, this much of it not a delay. */
const LOOP_RESOLUTION_MS = 5;

let profileDir: string | null = null;
/** --server-node-options: node flags every server is started with. */
let serverNodeOptions: string[] = [];
/** With --pin: the CPU each server is kept on (the generator has the others), else null. */
let serverCpu: number | null = null;
/** With --tls: the certificate every server serves, which the clients trust (PEM). */
let tlsCa: string | null = null;
type Agent = HttpAgent | HttpsAgent;

function startProcess(args: string[], ready: RegExp): Promise<{ url: string; proc: ChildProcess }> {
  const profile = profileDir ? ['--cpu-prof', '--cpu-prof-interval=200', `--cpu-prof-dir=${profileDir}`] : [];
  const node = [...serverNodeOptions, ...profile];
  const command = [process.execPath, ...node, ...args];
  // taskset execs node, so the child's pid (and its /proc CPU figures) are the server's
  const pinned = serverCpu === null ? command : ['taskset', '-c', String(serverCpu), ...command];
  const proc = spawn(pinned[0]!, pinned.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  onCleanup(`${args[1]} process`, () => {
    proc.kill('SIGKILL');
  });
  // The server's output until it is ready, then only its tail (for the message if it dies): the relay logs two
  // lines a push, and matching all of it again at every chunk once cost this process more CPU than the relay used.
  let out = '';
  let started = false;
  return new Promise((resolvePromise, reject) => {
    const onData = (c: Buffer) => {
      out += c.toString();
      if (started) {
        if (out.length > 64 * 1024) out = out.slice(-4096);
        return;
      }
      const m = ready.exec(out);
      if (m) {
        started = true;
        resolvePromise({ url: m[1]!, proc });
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code}): ${out}`)));
  });
}

/** The machine's CPU time in clock ticks, all CPUs: how much of it was stolen by the hypervisor, out of all. */
function machineTicks(): { steal: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is counted in user already)
  const total = cpu.slice(0, 8).reduce((a, b) => a + b, 0);
  return { steal: cpu[7] ?? 0, total };
}

async function makeAccounts(store: Store, n: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < n; i++) keys.push((await createAccount(store)).apiKey);
  await store.close();
  return keys;
}

/** Up to `limit` of `fn` at once over `items`. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

function post(
  agent: Agent,
  url: string,
  path: string,
  key: string,
  body: unknown,
): Promise<{ status: number; json: unknown }> {
  const data = JSON.stringify(body);
  return new Promise((resolvePromise, reject) => {
    const request = url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = request(`${url}${path}`, {
      method: 'POST',
      agent,
      ...(tlsCa ? { ca: tlsCa } : {}),
      headers: {
        Authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(data),
      },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        resolvePromise({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null });
      });
    });
    req.on('error', reject);
    req.end(data);
  });
}

async function measure(
  target: Target,
  opts: { sockets: number; rate: number; seconds: number; warmup: number },
): Promise<Result> {
  progress(`${target.name}: ${opts.sockets} accounts`);
  const keys = await target.accounts(opts.sockets);
  const { url, proc } = await target.start();
  // A fixed set of kept-alive connections used in turn (fifo): none idles long enough for the server to close it, so
  // the generator never stops to open a connection (a TLS handshake) in the middle of the timed pushes.
  const pooled = { keepAlive: true, maxSockets: POST_CONNECTIONS, scheduling: 'fifo' } as const;
  const agent = url.startsWith('https:') ? new HttpsAgent(pooled) : new HttpAgent(pooled);
  const hooks = await pool(keys, 64, async (key) => {
    const r = await post(agent, url, '/computers', key, { name: 'bench' });
    if (r.status !== 200) throw new Error(`POST /computers: ${r.status} ${JSON.stringify(r.json)}`);
    return (r.json as { hookId: string }).hookId;
  });
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  const sockets: WebSocket[] = [];
  progress(`${target.name}: ${opts.sockets} listener sockets`);
  await pool(
    keys.map((key, i) => ({ key, hookId: hooks[i]! })),
    128,
    ({ key, hookId }) =>
      new Promise<void>((resolvePromise, reject) => {
        const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`, {
          headers: { Authorization: `Bearer ${key}` },
          ...(tlsCa ? { ca: tlsCa } : {}),
        });
        sockets.push(ws);
        ws.on('error', reject);
        ws.on('open', () =>
          ws.send(JSON.stringify({ type: 'subscribe', role: 'listener', hookId, lastPushId: 0, version: '0.1.0' })),
        );
        ws.on('message', (data) => {
          const frame = JSON.parse(String(data)) as { type: string; push?: { id: number; body: string } };
          if (frame.type === 'subscribed') resolvePromise();
          else if (frame.type === 'push.new' && frame.push) {
            const t0 = sentAt.get(frame.push.body);
            if (t0 !== undefined) {
              latencies.push(now() - t0);
              sentAt.delete(frame.push.body);
            }
            ws.send(JSON.stringify({ type: 'push.result', id: frame.push.id, state: 'injected' }));
          }
        });
      }),
  );
  onCleanup(`${target.name} sockets`, () => {
    for (const ws of sockets) ws.terminate();
  });
  // Pushes at the rate for `seconds`, timed only when `timed` (the warm-up is not): round-robin over the accounts.
  let sent = 0;
  let failed = 0;
  /** The most POSTs seen waiting in this process for a free connection while pushes were timed. */
  let queuedMax = 0;
  const queued = () => Object.values(agent.requests).reduce((n, waiting) => n + (waiting?.length ?? 0), 0);
  const pushOne = (timed: boolean) => {
    const i = sent % keys.length;
    const body = `${timed ? 'p' : 'w'}${sent++}`;
    if (timed) sentAt.set(body, now());
    return post(agent, url, '/pushes/send', keys[i]!, {
      type: 'agent.command',
      agentSessionName: 'svc-bench',
      body,
      targetComputer: hooks[i],
    }).then(
      (r) => r.status === 200 || failed++,
      () => failed++,
    );
  };
  const pushFor = async (seconds: number, timed: boolean) => {
    const total = opts.rate * seconds;
    const started = now();
    const inflight: Promise<unknown>[] = [];
    for (let n = 0; n < total; ) {
      const due = Math.min(total, Math.floor(((now() - started) / 1000) * opts.rate));
      for (; n < due; n++) inflight.push(pushOne(timed));
      if (timed) queuedMax = Math.max(queuedMax, queued());
      await sleep(2);
    }
    await Promise.all(inflight);
  };
  if (opts.warmup > 0) {
    progress(`${target.name}: warm-up, ${opts.rate} pushes/s for ${opts.warmup} s (not timed)`);
    // all the POSTs' connections opened at once, before anything is timed
    await Promise.all(Array.from({ length: POST_CONNECTIONS }, () => pushOne(false)));
    await pushFor(opts.warmup, false);
  }
  progress(`${target.name}: ${opts.rate} pushes/s for ${opts.seconds} s`);
  const ticks = clockTicks();
  const before = procSample(proc.pid!);
  const firstTimed = sent;
  // how late this process's own event loop ran: the generator's share of the tail
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  loop.enable();
  const ownBefore = process.cpuUsage();
  const cpuBefore = machineTicks();
  const timedFrom = now();
  await pushFor(opts.seconds, true);
  const timedSeconds = (now() - timedFrom) / 1000;
  const own = process.cpuUsage(ownBefore);
  const cpuAfter = machineTicks();
  loop.disable();
  const pushes = sent - firstTimed;
  const deadline = now() + 10_000;
  while (sentAt.size > 0 && now() < deadline) await sleep(20);
  const after = procSample(proc.pid!);
  const cpuSeconds = (after.selfTicks - before.selfTicks) / ticks;
  const wall = (after.at - before.at) / 1000;
  if (failed > 0) warn(`${target.name}: ${failed} POSTs failed`);
  // Let go of this target's sockets (the cleanup above holds the array): the next target's generator should not
  // carry 5000 dead sockets in its old space, which makes its own garbage collector mark longer while it times.
  for (const ws of sockets.splice(0)) ws.terminate();
  agent.destroy();
  proc.kill('SIGTERM');
  await new Promise((r) => (proc.exitCode === null ? proc.once('exit', r) : r(null)));
  return {
    name: target.name,
    sent: pushes,
    received: latencies.length,
    latency: stats(latencies),
    cpuSeconds: Math.round(cpuSeconds * 100) / 100,
    cpuPerPushMs: Math.round((cpuSeconds / pushes) * 1000 * 1000) / 1000,
    cpuPercent: Math.round((cpuSeconds / wall) * 1000) / 10,
    rssMiB: Math.round((after.rssKiB / 1024) * 10) / 10,
    stealPercent:
      Math.round(((cpuAfter.steal - cpuBefore.steal) / Math.max(1, cpuAfter.total - cpuBefore.total)) * 1000) / 10,
    generatorCpuPercent: Math.round(((own.user + own.system) / 1e6 / timedSeconds) * 1000) / 10,
    generatorLagMs: { p99: lateBy(loop.percentile(99)), max: lateBy(loop.max) },
    queuedMax,
  };
}

async function main(opts: {
  sockets: number;
  rate: number;
  seconds: number;
  warmup: number;
  postgres: boolean;
  tls: boolean;
  rounds: number;
  json: boolean;
  profile: string | null;
  pin: boolean;
  serverNodeOptions: string[];
}) {
  profileDir = opts.profile;
  serverNodeOptions = opts.serverNodeOptions;
  if (opts.pin) serverCpu = pinGenerator();
  const load = loadAverage();
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-relay-'));
  onCleanup('temp dir', () => rm(root, { recursive: true, force: true }));
  // --tls: one self-signed certificate for 127.0.0.1, served by each server, trusted by the clients
  const cert = { cert: join(root, 'bench.crt'), key: join(root, 'bench.key') };
  if (opts.tls) {
    selfSigned(cert, { cn: '127.0.0.1', san: 'IP:127.0.0.1' });
    tlsCa = readFileSync(cert.cert, 'utf8');
  }
  const tlsArgs = opts.tls ? ['--tls-cert', cert.cert, '--tls-key', cert.key] : [];
  const relayTls = opts.tls ? [...tlsArgs, '--host', '127.0.0.1', '--https-port', '0'] : [];
  let round = 1;
  const relayServe = (name: string, extra: string[]) => () =>
    startProcess(
      [SVC_BIN, 'relay', 'serve', '--port', '0', '--data', join(root, `${name}-${round}`), ...relayTls, ...extra],
      /relay listening on (https?:\/\/\S+)/,
    );
  const targets: Target[] = [
    {
      name: opts.tls ? 'raw wss + https (floor)' : 'raw ws + http (floor)',
      accounts: async (n) => Array.from({ length: n }, (_, i) => `raw-key-${i}-${Math.random().toString(36).slice(2)}`),
      start: () =>
        startProcess([join(ROOT, 'dist', 'bench', 'relayRaw.js'), ...tlsArgs], /raw listening on (https?:\/\/\S+)/),
    },
    {
      name: 'relay, SQLite',
      accounts: (n) => makeAccounts(openSqliteStore(join(root, `sqlite-${round}`)), n),
      start: relayServe('sqlite', []),
    },
  ];
  if (opts.postgres) {
    const pgServer = await startPostgres();
    onCleanup('postgres', () => pgServer.stop());
    const redis = await startRedis();
    onCleanup('redis', () => redis.stop());
    // a database a round, made with its accounts (measure makes them just before it starts the server)
    let db = '';
    targets.push({
      name: 'relay, Postgres + Redis',
      accounts: async (n) => {
        db = await pgServer.database();
        return makeAccounts(await openPostgresStore(db), n);
      },
      start: () => relayServe('pg', ['--store', db, '--bus', redis.url])(),
    });
  }
  // Each round is its own: fresh servers and data, the floor first; a server's figures are set against the floor's
  // of the same round.
  const ratio = (a: number | undefined, b: number | undefined) => (a && b ? Math.round((a / b) * 100) / 100 : null);
  const rows: (Result & { round: number; vsFloor: Record<'p50' | 'p99' | 'cpuPerPush', number | null> })[] = [];
  for (; round <= opts.rounds; round++) {
    const results: Result[] = [];
    for (const t of targets) results.push(await measure(t, opts));
    const floor = results[0]!;
    for (const r of results) {
      const vsFloor = {
        p50: ratio(r.latency?.p50, floor.latency?.p50),
        p99: ratio(r.latency?.p99, floor.latency?.p99),
        cpuPerPush: ratio(r.cpuPerPushMs, floor.cpuPerPushMs),
      };
      rows.push({ ...r, round, vsFloor });
    }
  }
  const medians =
    opts.rounds > 1
      ? targets.map((t) =>
          medianRow(
            t.name,
            rows.filter((r) => r.name === t.name),
          ),
        )
      : [];
  const out = { options: opts, load: { start: load, end: loadAverage() }, results: rows, medians };
  if (opts.json) {
    output(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  const f = (x: number | undefined | null, unit = ' ms') => (x === undefined || x === null ? '-' : `${x}${unit}`);
  const lines = [
    `svc relay benchmark — ${opts.sockets} listener sockets, ${opts.rate} pushes/s for ${opts.seconds} s after ${opts.warmup} s of warm-up, POST → push.new${opts.tls ? ', HTTPS + WSS' : ''}${serverCpu === null ? '' : `, the server alone on CPU ${serverCpu}`}`,
    '',
    '  server                      p50       p99       max   received   CPU/push   CPU      RSS     generator: CPU, late p99 / max, queued   steal   vs floor: p50 / p99 / CPU',
  ];
  const many = opts.rounds > 1;
  // one line a server; a median line leaves blank what it has no median of
  const line = (
    name: string,
    c: Partial<Record<'p50' | 'p99' | 'max' | 'received' | 'cpu' | 'pct' | 'rss' | 'gen' | 'steal', string>>,
    vs: Record<'p50' | 'p99' | 'cpuPerPush', number | null>,
  ) =>
    `  ${name.padEnd(24)} ${(c.p50 ?? '').padStart(9)} ${(c.p99 ?? '').padStart(9)} ${(c.max ?? '').padStart(9)}   ${(c.received ?? '').padStart(11)}  ${(c.cpu ?? '').padStart(9)}  ${(c.pct ?? '').padStart(7)}  ${(c.rss ?? '').padStart(9)}   ${(c.gen ?? '').padStart(38)}  ${(c.steal ?? '').padStart(6)}   ${vs.p50 ?? '-'}x / ${vs.p99 ?? '-'}x / ${vs.cpuPerPush ?? '-'}x`;
  for (const r of rows) {
    if (many && r.name === rows[0]!.name) lines.push(`  round ${r.round}`);
    const gen = `${f(r.generatorCpuPercent, ' %')}, ${f(r.generatorLagMs.p99)} / ${f(r.generatorLagMs.max)}, ${r.queuedMax}`;
    const cells = {
      p50: f(r.latency?.p50),
      p99: f(r.latency?.p99),
      max: f(r.latency?.max),
      received: `${r.received}/${r.sent}`,
      cpu: f(r.cpuPerPushMs),
      pct: f(r.cpuPercent, ' %'),
      rss: f(r.rssMiB, ' MiB'),
      gen,
      steal: f(r.stealPercent, ' %'),
    };
    lines.push(line(r.name, cells, r.vsFloor));
  }
  if (many) {
    lines.push('', `  median of ${opts.rounds} rounds`);
    for (const m of medians)
      lines.push(line(m.name, { p50: f(m.p50), p99: f(m.p99), max: f(m.max), cpu: f(m.cpuPerPushMs) }, m.vsFloor));
  }
  lines.push('', `Load average at the start ${out.load.start.join(' ')}, at the end ${out.load.end.join(' ')}.`, '');
  output(lines.join('\n'));
}

/** The median of each figure over one server's rounds (the ratios too: each round's against its own floor). */
function medianRow(
  name: string,
  rows: {
    latency: Result['latency'];
    cpuPerPushMs: number;
    vsFloor: Record<'p50' | 'p99' | 'cpuPerPush', number | null>;
  }[],
) {
  // not stats(): it rounds to 0.01, and a CPU a push of 0.293 ms would read 0.29
  const median = (values: (number | null | undefined)[]) => {
    const v = values.filter((x): x is number => typeof x === 'number').sort((a, b) => a - b);
    return v.length === 0 ? null : v[Math.ceil(v.length / 2) - 1]!;
  };
  return {
    name,
    p50: median(rows.map((r) => r.latency?.p50)),
    p99: median(rows.map((r) => r.latency?.p99)),
    max: median(rows.map((r) => r.latency?.max)),
    cpuPerPushMs: median(rows.map((r) => r.cpuPerPushMs)),
    vsFloor: {
      p50: median(rows.map((r) => r.vsFloor.p50)),
      p99: median(rows.map((r) => r.vsFloor.p99)),
      cpuPerPush: median(rows.map((r) => r.vsFloor.cpuPerPush)),
    },
  };
}

/**
 * --pin: this process, every thread of it (the generator: sockets, POSTs, its libuv and V8 threads), on all CPUs but
 * the last, which each server is started on. Returns the server's CPU.
 */
function pinGenerator(): number {
  const cpus = availableParallelism();
  if (cpus < 2) {
    process.stderr.write('bench: --pin needs 2 CPUs or more\n');
    process.exit(2);
  }
  const server = cpus - 1;
  const generator = server === 1 ? '0' : `0-${server - 1}`;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', generator, String(process.pid)], { stdio: 'ignore' });
  } catch (err) {
    process.stderr.write(`bench: --pin needs taskset (util-linux): ${(err as Error).message}\n`);
    process.exit(2);
  }
  progress(`pinned: the generator on CPU ${generator}, each server on CPU ${server}`);
  return server;
}

/**
 * This process (the generator) runs with these node flags, started again with them if it was not. On a small
 * machine the collector's helper threads (four by default) take turns with the main thread on the same CPU while
 * they mark: the generator stopped up to 140 ms at a time, and every push that arrived meanwhile was timed that much
 * late, whichever server it was timing. Collecting on the main thread keeps each stop short (docs/benchmarks.md,
 * "What the tail was"). The servers keep node's defaults unless `--server-node-options` says otherwise.
 */
const GENERATOR_NODE_FLAGS = ['--single-threaded-gc'];

const isMain = process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(ROOT, 'dist', 'bench', 'relay.js');
if (isMain && !GENERATOR_NODE_FLAGS.every((flag) => process.execArgv.includes(flag))) {
  const args = [...GENERATOR_NODE_FLAGS, ...process.execArgv, ...process.argv.slice(1)];
  // The same process (its pid, so signals and `--pin` reach the generator) where node can (22.15 and later) ...
  process.execve?.(process.execPath, [process.execPath, ...args]);
  // ... else a child, whose end is this process's end.
  const again = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (again.error)
    process.stderr.write(
      `bench: could not start again with ${GENERATOR_NODE_FLAGS.join(' ')}: ${again.error.message}\n`,
    );
  if (again.signal) process.kill(process.pid, again.signal);
  process.exit(again.status ?? 1);
}
if (isMain) {
  const values = benchArgs(
    {
      sockets: { type: 'string', default: '5000' },
      rate: { type: 'string', default: '2000' },
      seconds: { type: 'string', default: '20' },
      warmup: { type: 'string', default: '8' },
      rounds: { type: 'string', default: '1' },
      postgres: { type: 'boolean', default: false },
      tls: { type: 'boolean', default: false },
      profile: { type: 'string' },
      'server-node-options': { type: 'string', default: '' },
      pin: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    USAGE,
  );
  const int = (name: string, least = 1) => wholeNumber(values, name, least, USAGE);
  const opts = {
    sockets: int('sockets'),
    rate: int('rate'),
    seconds: int('seconds'),
    warmup: int('warmup', 0),
    rounds: int('rounds'),
    postgres: values.postgres === true,
    tls: values.tls === true,
    json: values.json === true,
    profile: typeof values.profile === 'string' ? resolve(values.profile) : null,
    pin: values.pin === true,
    serverNodeOptions: String(values['server-node-options']).split(/\s+/).filter(Boolean),
  };
  runBench(() => main(opts));
}
