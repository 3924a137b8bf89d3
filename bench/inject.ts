/**
 * Benchmark of the delivery path: how long from `POST /pushes/send` until the text shows in a tmux pane, against a
 * bare `tmux send-keys` measured in the same run on the same sessions; and what the listener costs while idle.
 *
 *   npm run bench:inject -- [--messages N] [--sessions N] [--idle-seconds N] [--warmup N]
 *                           [--agent | --no-agent] [--agent-messages N] [--agent-sessions N]
 *                           [--trace-seconds N] [--poll-interval-ms N] [--poller control|exec] [--json]
 *
 * Everything is real and on loopback: the relay runs in this process (127.0.0.1, port 0, SQLite in a temp dir), the
 * listener is the compiled `svc listener` as a child process with a private HOME, and tmux is a private server
 * (`tmux -S <tmpdir>/sock -f /dev/null`), never the user's. Everything is removed at the end, also on failure.
 * Both paths are timed the same way: from just before the POST (or the tmux call) until `capture-pane -p` shows the
 * text, polled through one persistent tmux control-mode client. docs/benchmarks.md says what the figures mean.
 */
import { type ChildProcessWithoutNullStreams, execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, release, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs as parseArgsUtil } from 'node:util';
import { writeFileAtomic } from '../actors/files.js';
import { createTmux } from '../actors/tmux/tmux.js';
import { progress as lineOfProgress } from '../cli/progress.js';
import { agentById } from '../core/agents/registry.js';
import { DEFAULT_VERIFY_DELAY_MS } from '../core/agents/submit.js';
import { LISTENER_NODE_FLAGS } from '../core/daemon/nodeFlags.js';
import { shellQuote } from '../core/tmux/tmux.js';
import {
  type BucketConfig,
  type BucketState,
  fullBucket,
  RELAY_HTTP_BUCKET,
  SESSION_INPUT_BUCKET,
  takeToken,
} from '../core/tokenBucket.js';
import { createAccount } from '../relay-server/accounts.js';
import { type BusEvent, InProcessBus } from '../relay-server/bus.js';
import type { Log } from '../relay-server/log.js';
import { type Relay, startRelay } from '../relay-server/server.js';
import { openSqliteStore } from '../relay-server/sqliteStore.js';
import { type Phone, pairPhone, pushBody } from './phone.js';

// ---------------------------------------------------------------------------
// Where things are (this file runs as dist/bench/inject.js)

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const SVC_BIN = join(ROOT, 'bin', 'svc.js');
export const FAKE_AGENT = join(ROOT, 'test', 'fakes', 'fake-agent.mjs');
export const TMUX = 'tmux';

/** The relay's per-key HTTP bucket for this benchmark: 200 back-to-back POSTs would hit the default 30/s. */
export const BENCH_HTTP_BUCKET: BucketConfig = { capacity: 100_000, refillPerSecond: 100_000 };
const SCREEN = '200x50';
/** A message not visible by then counts as lost. */
const VISIBLE_TIMEOUT_MS = 10_000;
const ACK_TIMEOUT_MS = 10_000;

// ---------------------------------------------------------------------------
// Options

interface Options {
  messages: number;
  sessions: number;
  idleSeconds: number;
  warmup: number;
  agent: boolean;
  agentMessages: number;
  agentSessions: number;
  traceSeconds: number;
  pollIntervalMs: number;
  poller: 'control' | 'exec';
  /** How the listener reaches tmux: its persistent control-mode client (as shipped), or a process per call. */
  listenerTmux: 'persistent' | 'process';
  /** Node's flags for the listener: by default the launchers' own (core/daemon/nodeFlags.ts). */
  listenerNodeOptions: string;
  /** No phone: messages in plaintext with the account's key (the only way before 2026-11-30). */
  plain: boolean;
  json: boolean;
}

const USAGE = `usage: node dist/bench/inject.js [options]
  --messages N          messages through each path, round-robin over the sessions (default 200)
  --sessions N          tmux sessions running cat (default 20)
  --idle-seconds N      idle window for the listener's RSS and CPU (default 60; 0 skips)
  --warmup N            unmeasured messages through each path first (default 10)
  --agent / --no-agent  also measure sessions running the fake Claude Code agent (default on)
  --agent-messages N    messages through each path for the agent row (default 100)
  --agent-sessions N    sessions running the fake agent (default 5)
  --trace-seconds N     count the listener's tmux calls with strace for N idle seconds (default 10; 0 skips)
  --poll-interval-ms N  pause between two capture-pane polls (default 0: a tight loop)
  --poller control|exec how to poll: one persistent tmux control-mode client (default), or one
                        \`tmux capture-pane\` process per poll
  --listener-tmux persistent|process
                        the listener's tmux calls: through its persistent control-mode client (default,
                        as shipped) or a process per call (SVC_TMUX_PERSISTENT=0), for comparison
  --listener-node-options "FLAGS"
                        Node's flags for the listener process, before its script as its launchers put
                        theirs (so V8 flags that NODE_OPTIONS refuses work too). Default: the launchers' own
                        (core/daemon/nodeFlags.ts, as the background listener runs); "" for Node's defaults
  --plain               pair no phone: messages go in plaintext with the account's key. By default a phone
                        (an app device on the relay) is paired and seals every message as the app does, and
                        it sends one before the idle window, as a listener in use has had
  --json                print the result as JSON on stdout (progress stays on stderr)`;

class UsageError extends Error {}

export function parseArgs(argv: readonly string[]): Options | 'help' {
  const o: Options = {
    messages: 200,
    sessions: 20,
    idleSeconds: 60,
    warmup: 10,
    agent: true,
    agentMessages: 100,
    agentSessions: 5,
    traceSeconds: 10,
    pollIntervalMs: 0,
    poller: 'control',
    listenerTmux: 'persistent',
    listenerNodeOptions: LISTENER_NODE_FLAGS.join(' '),
    plain: false,
    json: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const eq = arg.indexOf('=');
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    const inline = eq > 0 ? arg.slice(eq + 1) : undefined;
    const int = (min: number, max: number): number => {
      const raw = inline ?? argv[++i];
      const n = Number(raw);
      if (raw === undefined || raw === '' || !Number.isInteger(n) || n < min || n > max)
        throw new UsageError(`${name} needs a whole number from ${min} to ${max}`);
      return n;
    };
    switch (name) {
      case '--messages':
        o.messages = int(1, 100_000);
        break;
      case '--sessions':
        o.sessions = int(1, 200);
        break;
      case '--idle-seconds':
        o.idleSeconds = int(0, 3600);
        break;
      case '--warmup':
        o.warmup = int(0, 1000);
        break;
      case '--agent':
        o.agent = true;
        break;
      case '--no-agent':
        o.agent = false;
        break;
      case '--agent-messages':
        o.agentMessages = int(1, 100_000);
        break;
      case '--agent-sessions':
        o.agentSessions = int(1, 50);
        break;
      case '--trace-seconds':
        o.traceSeconds = int(0, 600);
        break;
      case '--poll-interval-ms':
        o.pollIntervalMs = int(0, 1000);
        break;
      case '--poller': {
        const v = inline ?? argv[++i];
        if (v !== 'control' && v !== 'exec') throw new UsageError('--poller is control or exec');
        o.poller = v;
        break;
      }
      case '--listener-tmux': {
        const v = inline ?? argv[++i];
        if (v !== 'persistent' && v !== 'process') throw new UsageError('--listener-tmux is persistent or process');
        o.listenerTmux = v;
        break;
      }
      case '--listener-node-options': {
        const v = inline ?? argv[++i];
        if (v === undefined) throw new UsageError('--listener-node-options needs the flags');
        o.listenerNodeOptions = v;
        break;
      }
      case '--plain':
        o.plain = true;
        break;
      case '--json':
        o.json = true;
        break;
      case '--help':
      case '-h':
        return 'help';
      default:
        throw new UsageError(`unknown option ${arg}`);
    }
  }
  return o;
}

// ---------------------------------------------------------------------------
// Small helpers

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const now = () => performance.now();
/** On a terminal, what the benchmark is doing, on one line redrawn in place; nothing in a pipe (cli/progress.ts). */
const shown = lineOfProgress();
export const progress = (msg: string) => shown.step(msg);
/** Something gone wrong on the way: a line on stderr, on a terminal or not. */
export const warn = (msg: string) => shown.say(`bench: ${msg}`);
/** The result, on stdout (the progress line wiped first). */
export function output(text: string): void {
  shown.done();
  process.stdout.write(text);
}

export function execText(
  file: string,
  args: readonly string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = execFile(
      file,
      args,
      {
        encoding: 'utf8',
        timeout: opts.timeoutMs ?? 10_000,
        maxBuffer: 16 * 1024 * 1024,
        env: opts.env ?? process.env,
      },
      (error, stdout, stderr) => {
        if (error)
          reject(new Error(`${file} ${args.slice(0, 6).join(' ')}: ${String(stderr).trim() || error.message}`));
        else resolvePromise({ stdout, stderr });
      },
    );
    child.stdin?.on('error', () => {});
    child.stdin?.end();
  });
}

/** Poll until `check` gives something truthy; throw after `timeoutMs`. */
export async function waitUntil<T>(check: () => T | Promise<T>, what: string, timeoutMs = 15_000, intervalMs = 50) {
  const deadline = now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(intervalMs);
  }
}

export interface Stats {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

/** Nearest-rank percentiles. */
export function stats(values: readonly number[]): Stats | null {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const rank = (q: number) => v[Math.min(v.length - 1, Math.max(0, Math.ceil(q * v.length) - 1))] as number;
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    n: v.length,
    p50: round(rank(0.5)),
    p90: round(rank(0.9)),
    p99: round(rank(0.99)),
    mean: round(v.reduce((a, b) => a + b, 0) / v.length),
    min: round(v[0] as number),
    max: round(v.at(-1) as number),
  };
}

// ---------------------------------------------------------------------------
// Cleanup: everything started registers how to undo it; undone in reverse, also on failure and on a signal.

const cleanups: { what: string; fn: () => Promise<unknown> | unknown }[] = [];
let cleaning: Promise<void> | null = null;

export function onCleanup(what: string, fn: () => Promise<unknown> | unknown) {
  cleanups.push({ what, fn });
}

export function cleanupAll(): Promise<void> {
  cleaning ??= (async () => {
    while (cleanups.length > 0) {
      const { what, fn } = cleanups.pop()!;
      try {
        await Promise.race([
          Promise.resolve().then(fn),
          sleep(10_000).then(() => {
            throw new Error('took more than 10 s');
          }),
        ]);
      } catch (error) {
        warn(`cleanup of ${what} failed: ${(error as Error).message}`);
      }
    }
  })();
  return cleaning;
}

/**
 * A benchmark's flags (node:util parseArgs, `--help` added): a bad flag prints the usage and exits 2, `--help`
 * prints it and exits 0.
 */
export function benchArgs(
  options: Record<string, { type: 'string' | 'boolean'; default?: string | boolean }>,
  usage: string,
): Record<string, string | boolean | undefined> {
  try {
    const { values } = parseArgsUtil({ options: { ...options, help: { type: 'boolean', default: false } } });
    if (values.help) {
      process.stdout.write(`${usage}\n`);
      process.exit(0);
    }
    return values as Record<string, string | boolean | undefined>;
  } catch (error) {
    process.stderr.write(`bench: ${(error as Error).message}\n${usage}\n`);
    process.exit(2);
  }
}

/**
 * A flag of `benchArgs`'s values that takes a whole number of at least `least` ('' is not 0); anything else prints
 * the usage and exits 2.
 */
export function wholeNumber(
  values: Record<string, string | boolean | undefined>,
  name: string,
  least: number,
  usage: string,
): number {
  const n = /^\d+$/.test(String(values[name])) ? Number(values[name]) : Number.NaN;
  if (!(n >= least)) {
    process.stderr.write(`bench: --${name} takes a whole number ≥ ${least}\n${usage}\n`);
    process.exit(2);
  }
  return n;
}

/** Runs a benchmark's `main` to the end: cleans up after it, on failure and on Ctrl-C too, and exits. */
export function runBench(main: () => Promise<unknown>): void {
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.on(sig, () => {
      shown.done();
      void cleanupAll().finally(() => process.exit(130));
    });
  main()
    .then(() => cleanupAll())
    .then(() => process.exit(0))
    .catch(async (error: Error) => {
      shown.done();
      process.stderr.write(`bench: ${error.stack ?? error.message}\n`);
      await cleanupAll();
      process.exit(1);
    });
}

// ---------------------------------------------------------------------------
// The private tmux server and the capture-pane poller (the same for both paths)

interface Poller {
  /** Durations of every capture-pane call (ms). */
  captureMs: number[];
  /** Capture until `needle` is on the screen; the time it was seen, or null at the deadline or when `abort()`. */
  waitVisible(
    target: string,
    needle: string,
    deadline: number,
    abort?: () => boolean,
  ): Promise<{ at: number; polls: number } | null>;
}

export type Capture = (target: string) => Promise<string>;

/** `capture-pane -p` by a new tmux client per call (execFile): a fork of this process, which holds the relay. */
function execCapture(socketPath: string): Capture {
  return async (target) =>
    (await execText(TMUX, ['-u', '-S', socketPath, 'capture-pane', '-p', '-t', target], { timeoutMs: 5_000 })).stdout;
}

/**
 * `capture-pane -p` through one persistent control-mode client (`tmux -C attach`), one command at a time: no
 * process per poll. It attaches to a session of its own, which nothing is sent to. Replies are the blocks between
 * `%begin <time> <n> 1` and `%end`/`%error` with the same numbers; notifications outside blocks are skipped.
 */
export async function controlCapture(
  socketPath: string,
  session: string,
): Promise<{ capture: Capture; close(): Promise<void> }> {
  const child = spawn(TMUX, ['-u', '-S', socketPath, '-C', 'attach', '-t', `=${session}`], { stdio: 'pipe' });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const waiting: { resolve(text: string): void; reject(error: Error): void }[] = [];
  let partial = '';
  let block: { key: string; mine: boolean; lines: string[] } | null = null;
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdout.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString('utf8')).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      if (block) {
        const end = /^%(end|error) (\S+ \S+) /.exec(line);
        if (end && end[2] === block.key) {
          const done = block;
          block = null;
          if (!done.mine) continue;
          const w = waiting.shift();
          if (end[1] === 'end') w?.resolve(done.lines.join('\n'));
          else w?.reject(new Error(`tmux: ${done.lines.join(' ')}`));
        } else block.lines.push(line);
        continue;
      }
      const begin = /^%begin (\S+ \S+) (\d+)/.exec(line);
      if (begin) block = { key: begin[1] as string, mine: begin[2] === '1', lines: [] };
    }
  });
  child.once('exit', () => {
    for (const w of waiting.splice(0)) w.reject(new Error(`tmux control client exited: ${stderr.trim()}`));
  });
  child.stdin.on('error', () => {});
  const capture: Capture = (target) =>
    new Promise<string>((resolvePromise, reject) => {
      if (child.exitCode !== null) return reject(new Error(`tmux control client exited: ${stderr.trim()}`));
      waiting.push({ resolve: resolvePromise, reject });
      child.stdin.write(`capture-pane -p -t ${target}\n`);
    });
  // The first reply proves the client is attached and answering.
  await Promise.race([
    capture(`=${session}:`),
    sleep(5_000).then(() => {
      throw new Error(`tmux control client did not answer: ${stderr.trim()}`);
    }),
  ]);
  return {
    capture,
    async close() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function makePoller(capture: Capture, pollIntervalMs: number): Poller {
  const captureMs: number[] = [];
  const timed = async (target: string) => {
    const t = now();
    const screen = await capture(target);
    captureMs.push(now() - t);
    return screen;
  };
  return {
    captureMs,
    async waitVisible(target, needle, deadline, abort) {
      let polls = 0;
      while (now() < deadline) {
        if (abort?.()) return null;
        const screen = await timed(target);
        polls += 1;
        if (screen.includes(needle)) return { at: now(), polls };
        if (pollIntervalMs > 0) await sleep(pollIntervalMs);
      }
      return null;
    },
  };
}

// ---------------------------------------------------------------------------
// /proc readings of the listener

export interface ProcSample {
  at: number;
  rssKiB: number;
  hwmKiB: number;
  /** utime + stime, and the same for waited-for children (its tmux clients), in clock ticks. */
  selfTicks: number;
  childTicks: number;
  /**
   * Time on a CPU of its threads alive now, in ns (`/proc/<pid>/task/<tid>/schedstat`): finer than the ticks, which
   * count 10 ms at a time and make an idle minute's 0.2 % only a dozen of them. null where the kernel keeps none.
   */
  threadsNs: number | null;
}

function threadsNs(pid: number): number | null {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // a thread that ended just now
      }
    }
    return Number.isFinite(ns) ? ns : null;
  } catch {
    return null;
  }
}

export function clockTicks(): number {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isInteger(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
}

export function procSample(pid: number): ProcSample {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? NaN);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the `(comm)`, which may hold spaces: [0] is field 3 (state), so field N is [N - 3].
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  const field = (n: number) => f[n - 3] ?? 0;
  return {
    at: now(),
    rssKiB: kib('VmRSS'),
    hwmKiB: kib('VmHWM'),
    selfTicks: field(14) + field(15),
    childTicks: field(16) + field(17),
    threadsNs: threadsNs(pid),
  };
}

// ---------------------------------------------------------------------------
// The listener process

/**
 * `svc login` as a person runs it, with a private HOME and the private tmux socket (no other SVC_ variable of this
 * process, no TMUX): the environment the listener is then started with, and the computer's id at the relay.
 */
export async function benchLogin(o: {
  home: string;
  socketPath: string;
  relayUrl: string;
  apiKey: string;
  extra?: NodeJS.ProcessEnv;
}): Promise<{ env: NodeJS.ProcessEnv; hookId: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: o.home, SVC_TMUX_SOCKET: o.socketPath };
  for (const k of Object.keys(env)) if (k.startsWith('SVC_') && k !== 'SVC_TMUX_SOCKET') delete env[k];
  delete env.TMUX;
  Object.assign(env, o.extra);
  const login = await execText(
    process.execPath,
    [SVC_BIN, 'login', '--url', o.relayUrl, '--key', o.apiKey, '--name', 'bench', '--json'],
    { env, timeoutMs: 30_000 },
  );
  return { env, hookId: (JSON.parse(login.stdout) as { hookId: string }).hookId };
}

export interface ListenerProc {
  child: ChildProcessWithoutNullStreams;
  pid: number;
  output(): string;
  waitForLine(re: RegExp, timeoutMs?: number): Promise<string>;
  /** Epoch ms of the `push <id>: typed into …` log line (the listener's tmux call has returned). */
  typedAt: Map<number, number>;
  stop(): Promise<void>;
}

/** `svc listener`, with Node's `flags` before the script: by default the launchers' own (core/daemon/nodeFlags.ts). */
export function startListenerProc(
  env: NodeJS.ProcessEnv,
  flags: readonly string[] = LISTENER_NODE_FLAGS,
): ListenerProc {
  const child = spawn(process.execPath, [...flags, SVC_BIN, 'listener'], { env, stdio: 'pipe' });
  const lines: string[] = [];
  const typedAt = new Map<number, number>();
  let partial = '';
  const onData = (chunk: Buffer) => {
    const text = partial + chunk.toString('utf8');
    const parts = text.split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      if (lines.length < 20_000) lines.push(line);
      const m = /^(\S+) info\s+push (\d+): typed into /.exec(line);
      if (m) typedAt.set(Number(m[2]), Date.parse(m[1] as string));
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    child,
    pid: child.pid as number,
    typedAt,
    output: () => [...lines, partial].join('\n'),
    async waitForLine(re, timeoutMs = 20_000) {
      const deadline = now() + timeoutMs;
      for (;;) {
        const line = lines.find((l) => re.test(l));
        if (line !== undefined) return line;
        if (child.exitCode !== null || child.signalCode !== null || now() > deadline) {
          const why = child.exitCode !== null || child.signalCode !== null ? 'the listener exited' : 'timed out';
          throw new Error(`${why} before a line matching ${re}; its output:\n${[...lines, partial].join('\n')}`);
        }
        await sleep(20);
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// ---------------------------------------------------------------------------
// One measured message through each path

interface OursSample {
  session: string;
  id: number;
  /** All in ms from just before the POST. */
  postMs: number;
  fanoutMs: number;
  typedMs: number;
  visibleMs: number;
  ackMs: number;
  polls: number;
}

interface BaseSample {
  session: string;
  sentMs: number;
  visibleMs: number;
  polls: number;
}

interface Failure {
  path: 'svc' | 'baseline';
  session: string;
  id?: number;
  state?: string;
  code?: string | null;
  error: string;
}

interface Bench {
  relay: Relay;
  apiKey: string;
  phone: Phone | null;
  poller: Poller;
  socketPath: string;
  listener: ListenerProc;
  /** push.new seen on the relay's bus, by body; push.status by id. */
  fanoutAt: Map<string, number>;
  statusOf: Map<number, { state: string; code: string | null; at: number }>;
  buckets: Map<string, BucketState>;
  paced: number;
}

/** Stay inside the listener's per-session bucket (spec 7.6: 10 burst, 2/s), with one token to spare. */
async function pace(b: Bench, session: string) {
  const cfg = SESSION_INPUT_BUCKET;
  const at = Date.now();
  const state = b.buckets.get(session) ?? fullBucket(cfg, at);
  const tokens = Math.min(
    cfg.capacity,
    state.tokens + (Math.max(0, at - state.updatedAt) / 1000) * cfg.refillPerSecond,
  );
  if (tokens < 2) {
    b.paced += 1;
    await sleep(Math.ceil(((2 - tokens) / cfg.refillPerSecond) * 1000));
  }
  const t = Date.now();
  b.buckets.set(session, takeToken(cfg, b.buckets.get(session) ?? fullBucket(cfg, t), t).state);
}

const paneTarget = (session: string) => `=${session}:`;

async function sendOurs(b: Bench, session: string, text: string, needle: string): Promise<OursSample | Failure> {
  await pace(b, session);
  const clientId = randomBytes(8).toString('hex');
  const body = await pushBody(b.phone, session, text, clientId);
  const headers = { Authorization: `Bearer ${b.apiKey}`, 'Content-Type': 'application/json' };
  const wallOffset = Date.now() - now();
  let postFailed: string | null = null;
  const t0 = now();
  let tPost = Number.NaN;
  const post = fetch(`${b.relay.url}/pushes/send`, { method: 'POST', headers, body, redirect: 'manual' })
    .then(async (res) => {
      tPost = now();
      const answer = (await res.json()) as { id?: number };
      if (res.status !== 200 || typeof answer.id !== 'number')
        throw new Error(`POST /pushes/send: HTTP ${res.status} ${JSON.stringify(answer)}`);
      return answer.id;
    })
    .catch((error: unknown) => {
      postFailed = String(error);
      return -1;
    });
  const seen = await b.poller.waitVisible(paneTarget(session), needle, t0 + VISIBLE_TIMEOUT_MS, () => !!postFailed);
  const id = await post;
  if (postFailed) return { path: 'svc', session, error: postFailed };
  // The listener's answer reaches the relay (and so the sender) after the text is typed; wait for it so the next
  // measurement starts on a quiet system.
  const status = await waitUntil(
    () => {
      const s = b.statusOf.get(id);
      return s && s.state !== 'pending' && s.state !== 'delivered' ? s : null;
    },
    `the result of push ${id}`,
    seen ? ACK_TIMEOUT_MS : 1_000,
    1,
  ).catch(() => null);
  if (!seen || !status || status.state !== 'injected') {
    return {
      path: 'svc',
      session,
      id,
      state: status?.state ?? b.statusOf.get(id)?.state ?? 'unknown',
      code: status?.code ?? null,
      error: seen ? 'the listener did not report it injected' : `not visible within ${VISIBLE_TIMEOUT_MS} ms`,
    };
  }
  const typedEpoch = await waitUntil(() => b.listener.typedAt.get(id), `the log line of push ${id}`, 2_000, 2).catch(
    () => Number.NaN,
  );
  const fanout = b.fanoutAt.get(clientId);
  b.fanoutAt.delete(clientId);
  return {
    session,
    id,
    postMs: tPost - t0,
    fanoutMs: fanout === undefined ? Number.NaN : fanout - t0,
    typedMs: typedEpoch - wallOffset - t0,
    visibleMs: seen.at - t0,
    ackMs: status.at - t0,
    polls: seen.polls,
  };
}

async function sendBaseline(b: Bench, session: string, text: string, needle: string): Promise<BaseSample | Failure> {
  const target = paneTarget(session);
  // What the listener's literal path does (actors/tmux/tmux.ts sendLiteral with enter), by hand: one tmux call.
  const args = ['-u', '-S', b.socketPath, 'send-keys', '-t', target, '-l', '--', text, ';'];
  args.push('send-keys', '-t', target, 'Enter');
  let failed: string | null = null;
  const t0 = now();
  let tSent = Number.NaN;
  const send = execText(TMUX, args, { timeoutMs: 5_000 }).then(
    () => {
      tSent = now();
    },
    (error: unknown) => {
      failed = String(error);
    },
  );
  const seen = await b.poller.waitVisible(target, needle, t0 + VISIBLE_TIMEOUT_MS, () => !!failed);
  await send;
  if (failed || !seen)
    return { path: 'baseline', session, error: failed ?? `not visible within ${VISIBLE_TIMEOUT_MS} ms` };
  return { session, sentMs: tSent - t0, visibleMs: seen.at - t0, polls: seen.polls };
}

interface PhaseResult {
  sessions: number;
  messages: number;
  warmup: number;
  ours: Stats | null;
  baseline: Stats | null;
  ratio: { p50: number | null; p99: number | null };
  breakdown: {
    postAnswered: Stats | null;
    relayFanout: Stats | null;
    listenerTyped: Stats | null;
    visible: Stats | null;
    ackAtRelay: Stats | null;
    baselineSendKeysReturned: Stats | null;
  };
  pollsPerSample: { ours: Stats | null; baseline: Stats | null };
  captureMs: Stats | null;
  pacedWaits: number;
  failures: Failure[];
  /** The listener's CPU over the phase (both paths' messages, and its ticks meanwhile) per svc message, ms. */
  listenerCpuPerMessageMs?: number;
}

const isFailure = (x: OursSample | BaseSample | Failure): x is Failure => 'error' in x;
const ratio = (a: number | undefined, c: number | undefined) =>
  a === undefined || c === undefined || c <= 0 ? null : Math.round((a / c) * 100) / 100;

/** Warm-up, then `messages` pairs: one through svc, then one bare send-keys into the same session. */
async function runPhase(
  b: Bench,
  label: string,
  sessions: readonly string[],
  messages: number,
  warmup: number,
  needleFor: (text: string) => string,
): Promise<PhaseResult> {
  const ours: OursSample[] = [];
  const base: BaseSample[] = [];
  const failures: Failure[] = [];
  const captureStart = b.poller.captureMs.length;
  const pacedStart = b.paced;
  const total = warmup + messages;
  let lastReport = now();
  let cpuFrom: ReturnType<typeof procSample> | null = null;
  for (let i = 0; i < total; i++) {
    const session = sessions[i % sessions.length] as string;
    const measured = i >= warmup;
    if (i === warmup) cpuFrom = procSample(b.listener.pid);
    const tag = randomBytes(4).toString('hex');
    const o = await sendOurs(b, session, `m-${i}-${tag}`, needleFor(`m-${i}-${tag}`));
    const c = await sendBaseline(b, session, `b-${i}-${tag}`, needleFor(`b-${i}-${tag}`));
    for (const r of [o, c]) {
      if (isFailure(r)) {
        failures.push(r);
        warn(`${label}: message ${i} ${r.path} to ${r.session} failed: ${r.error} (state ${r.state ?? '-'})`);
      }
    }
    if (measured && !isFailure(o)) ours.push(o);
    if (measured && !isFailure(c)) base.push(c);
    if (now() - lastReport > 5_000) {
      lastReport = now();
      progress(`${label}: ${i + 1}/${total}`);
    }
  }
  const cpuTo = procSample(b.listener.pid);
  const cpuMs = cpuFrom ? ((cpuTo.selfTicks - cpuFrom.selfTicks) / clockTicks()) * 1000 : 0;
  const oursStats = stats(ours.map((s) => s.visibleMs));
  const baseStats = stats(base.map((s) => s.visibleMs));
  return {
    listenerCpuPerMessageMs: Math.round((cpuMs / Math.max(1, messages)) * 1000) / 1000,
    sessions: sessions.length,
    messages,
    warmup,
    ours: oursStats,
    baseline: baseStats,
    ratio: { p50: ratio(oursStats?.p50, baseStats?.p50), p99: ratio(oursStats?.p99, baseStats?.p99) },
    breakdown: {
      postAnswered: stats(ours.map((s) => s.postMs)),
      relayFanout: stats(ours.map((s) => s.fanoutMs)),
      listenerTyped: stats(ours.map((s) => s.typedMs)),
      visible: oursStats,
      ackAtRelay: stats(ours.map((s) => s.ackMs)),
      baselineSendKeysReturned: stats(base.map((s) => s.sentMs)),
    },
    pollsPerSample: { ours: stats(ours.map((s) => s.polls)), baseline: stats(base.map((s) => s.polls)) },
    captureMs: stats(b.poller.captureMs.slice(captureStart)),
    pacedWaits: b.paced - pacedStart,
    failures,
  };
}

// ---------------------------------------------------------------------------
// Idle footprint and tmux calls

interface IdleResult {
  seconds: number;
  sessions: number;
  rssStartMiB: number;
  rssEndMiB: number;
  peakRssMiB: number;
  cpuSeconds: number;
  cpuPercent: number;
  /** The same from the threads' schedstat (ns; null where the kernel keeps none): the finer figure. */
  cpuPercentNs: number | null;
  /** CPU of the tmux clients it ran and waited for, in the same window. */
  childCpuSeconds: number;
  clockTicksPerSecond: number;
}

async function measureIdle(pid: number, seconds: number, sessions: number): Promise<IdleResult> {
  const hz = clockTicks();
  const a = procSample(pid);
  await sleep(seconds * 1000);
  const z = procSample(pid);
  const elapsed = (z.at - a.at) / 1000;
  const mib = (kib: number) => Math.round((kib / 1024) * 10) / 10;
  const cpuSeconds = (z.selfTicks - a.selfTicks) / hz;
  return {
    seconds: Math.round(elapsed * 10) / 10,
    sessions,
    rssStartMiB: mib(a.rssKiB),
    rssEndMiB: mib(z.rssKiB),
    peakRssMiB: mib(z.hwmKiB),
    cpuSeconds,
    cpuPercent: Math.round((cpuSeconds / elapsed) * 100 * 100) / 100,
    cpuPercentNs:
      a.threadsNs === null || z.threadsNs === null
        ? null
        : Math.round(((z.threadsNs - a.threadsNs) / 1e9 / elapsed) * 100 * 1000) / 1000,
    childCpuSeconds: (z.childTicks - a.childTicks) / hz,
    clockTicksPerSecond: hz,
  };
}

interface TmuxCalls {
  seconds: number;
  calls: number;
  /** Inventory ticks are 5 s apart (machines/inventory.ts `inventoryPoll`). */
  perTick: number;
  commands: string[];
}

/** strace the listener's execve calls for a while (after the idle window: ptrace slows what it watches). */
async function countTmuxCalls(pid: number, seconds: number, dir: string): Promise<TmuxCalls | { error: string }> {
  const out = join(dir, 'strace.txt');
  const child = spawn(
    'strace',
    ['-f', '-qq', '-s', '64', '-e', 'trace=execve', '-e', 'signal=none', '-o', out, '-p', String(pid)],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((r) => {
    child.once('exit', (code) => r(code));
    child.once('error', (error) => {
      stderr += String(error);
      r(-1);
    });
  });
  onCleanup('strace', () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const started = now();
  const early = await Promise.race([exited, sleep(seconds * 1000).then(() => 'running' as const)]);
  if (early !== 'running') return { error: `strace exited (${early}): ${stderr.trim().slice(0, 200)}` };
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
  const elapsed = (now() - started) / 1000;
  const text = await readFile(out, 'utf8').catch(() => '');
  // libuv tries each PATH entry in turn: count the execve that succeeded.
  const ok = text.split('\n').filter((l) => /execve\("[^"]*\/tmux", /.test(l) && !/ = -1 /.test(l));
  const commands = ok.map((l) => {
    const m = /"-S", "[^"]*", (.*)\], /.exec(l);
    return (m?.[1] ?? l).replaceAll('"', '').slice(0, 60);
  });
  return {
    seconds: Math.round(elapsed * 10) / 10,
    calls: ok.length,
    perTick: Math.round((ok.length / (elapsed / 5)) * 100) / 100,
    commands,
  };
}

// ---------------------------------------------------------------------------
// Output

const ms = (x: number | null | undefined) => (x === null || x === undefined ? '-' : `${x.toFixed(1)} ms`);
const pad = (s: string, n: number) => s.padStart(n);

function phaseTable(title: string, p: PhaseResult, baselineNote: string): string {
  const row = (name: string, s: Stats | null) =>
    `  ${name.padEnd(34)}${pad(ms(s?.p50), 10)}${pad(ms(s?.p99), 10)}${pad(ms(s?.mean), 10)}${pad(ms(s?.max), 10)}`;
  const x = (r: number | null) => (r === null ? '-' : `${r.toFixed(2)}x`);
  const lines = [
    title,
    `  ${''.padEnd(34)}${pad('p50', 10)}${pad('p99', 10)}${pad('mean', 10)}${pad('max', 10)}`,
    row('svc: POST → visible in the pane', p.ours),
    row(`baseline: ${baselineNote}`, p.baseline),
    `  ${'ratio svc / baseline'.padEnd(34)}${pad(x(p.ratio.p50), 10)}${pad(x(p.ratio.p99), 10)}`,
    '  where the svc time goes (from just before the POST):',
    row('  POST answered (stored)', p.breakdown.postAnswered),
    row('  relay fan-out (bus push.new)', p.breakdown.relayFanout),
    row('  listener logged its result (±1)', p.breakdown.listenerTyped),
    row('  visible in the pane', p.breakdown.visible),
    row('  result back at the relay', p.breakdown.ackAtRelay),
    row('  baseline: send-keys returned', p.breakdown.baselineSendKeysReturned),
    row('  one capture-pane poll', p.captureMs),
    `  polls per message: svc p50 ${p.pollsPerSample.ours?.p50 ?? '-'}, baseline p50 ${p.pollsPerSample.baseline?.p50 ?? '-'}; ` +
      `waits to stay in the session bucket: ${p.pacedWaits}; failures: ${p.failures.length}`,
    `  the listener's CPU per svc message (its ticks meanwhile included): ${p.listenerCpuPerMessageMs ?? '-'} ms`,
  ];
  return lines.join('\n');
}

// ---------------------------------------------------------------------------
// The run

interface Result {
  machine: Record<string, string | number>;
  options: Options;
  relayHttpBucket: { bench: BucketConfig; default: BucketConfig };
  sessionBucket: BucketConfig;
  literal: PhaseResult;
  agent: (PhaseResult & { strategy: unknown }) | null;
  idle: IdleResult | null;
  tmuxCalls: TmuxCalls | { error: string } | null;
  /** What the two paths are made of, timed alone on this machine just before the messages. */
  reference: {
    atomicWriteFsyncMs: Stats | null;
    spawnFromBenchMs: Stats | null;
    benchRssMiB: number;
    listenerRssMiB: number;
  };
  loadAverage: { start: number[]; end: number[] };
  relayWarnings: string[];
}

/**
 * The listener writes its ledger and the remote-origin marker with an fsync'd atomic replace (actors/files.ts)
 * before it types, and runs each tmux call as a new process: time both alone, here.
 */
async function referenceCosts(dir: string) {
  const writes: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t = now();
    writeFileAtomic(join(dir, 'reference.json'), JSON.stringify({ i, pad: 'x'.repeat(2000) }));
    writes.push(now() - t);
  }
  const spawns: number[] = [];
  for (let i = 0; i < 30; i++) {
    const t = now();
    await execText('true', []);
    spawns.push(now() - t);
  }
  return { atomicWriteFsyncMs: stats(writes), spawnFromBenchMs: stats(spawns) };
}

export const loadAverage = () => loadavg().map((x) => Math.round(x * 100) / 100);

async function main(opts: Options): Promise<number> {
  if (!existsSync(SVC_BIN) || !existsSync(join(ROOT, 'dist', 'cli', 'main.js')))
    throw new Error(`no compiled CLI at ${SVC_BIN}: run \`npm run build\` (npm run bench:inject does)`);
  const tmuxVersion = (await execText(TMUX, ['-V'])).stdout.trim();
  const machine = {
    nproc: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    kernel: release(),
    node: process.version,
    tmux: tmuxVersion,
  };
  const loadStart = loadAverage();

  const root = await mkdtemp(join(tmpdir(), 'svc-bench-'));
  onCleanup('temp dir', () => rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  const home = join(root, 'home');
  const work = join(root, 'work');
  mkdirSync(home, { recursive: true });
  mkdirSync(work, { recursive: true });

  // The relay, in this process, with a quiet log that keeps what went wrong.
  const relayWarnings: string[] = [];
  const log: Log = {
    info: () => {},
    warn: (m) => relayWarnings.length < 200 && relayWarnings.push(`warn: ${m}`),
    error: (m) => relayWarnings.length < 200 && relayWarnings.push(`error: ${m}`),
  };
  const store = openSqliteStore(join(root, 'relay'));
  onCleanup('relay store', () => store.close());
  const bus = new InProcessBus((e) => log.error(`bus handler: ${String(e)}`));
  onCleanup('relay bus', () => bus.close());
  const account = await createAccount(store);
  const fanoutAt = new Map<string, number>();
  const statusOf = new Map<number, { state: string; code: string | null; at: number }>();
  bus.subscribe(account.accountId, (event: BusEvent) => {
    if (event.kind === 'push.new' && event.push.clientId) fanoutAt.set(event.push.clientId, now());
    else if (event.kind === 'push.status') statusOf.set(event.id, { state: event.state, code: event.code, at: now() });
  });
  const relay = await startRelay({ host: '127.0.0.1', port: 0, store, bus, log, httpBucket: BENCH_HTTP_BUCKET });
  onCleanup('relay', () => relay.close());
  progress(
    `relay on ${relay.url} (SQLite in ${join(root, 'relay')}); per-key HTTP bucket raised from ` +
      `${RELAY_HTTP_BUCKET.refillPerSecond}/s to ${BENCH_HTTP_BUCKET.refillPerSecond}/s for back-to-back POSTs`,
  );

  // The private tmux server and the sessions.
  const socketPath = join(root, 'sock');
  await execText(TMUX, [
    '-u',
    '-S',
    socketPath,
    '-f',
    '/dev/null',
    'start-server',
    ';',
    'set-option',
    '-g',
    'exit-empty',
    'off',
    ';',
    'set-option',
    '-g',
    'default-size',
    SCREEN,
  ]);
  onCleanup('tmux server', () => execText(TMUX, ['-S', socketPath, 'kill-server']).catch(() => {}));
  const tmux = createTmux({ socketPath, bin: TMUX, configFile: '/dev/null' });
  const catSessions = Array.from({ length: opts.sessions }, (_, i) => `bench-${i + 1}`);
  for (const name of catSessions) await tmux.newSession({ name, command: 'exec cat', cwd: work });
  await waitUntil(async () => {
    const list = await tmux.listSessions();
    return catSessions.every((n) => list.find((s) => s.name === n)?.panes[0]?.command === 'cat');
  }, 'cat in every session');
  progress(`tmux ${tmuxVersion} on ${socketPath}: ${catSessions.length} sessions running cat`);

  // svc login and the listener, as a user would run them, with a private HOME and the private tmux socket.
  const { env, hookId } = await benchLogin({
    home,
    socketPath,
    relayUrl: relay.url,
    apiKey: account.apiKey,
    extra: {
      ...(opts.listenerTmux === 'process' ? { SVC_TMUX_PERSISTENT: '0' } : {}),
    },
  });

  // The phone, paired before the listener starts (as `svc up` and then the app's pairing leave it).
  const phone = opts.plain ? null : await pairPhone({ url: relay.url, apiKey: account.apiKey }, hookId);

  const listenerFlags = opts.listenerNodeOptions.split(/\s+/).filter(Boolean);
  let listener = startListenerProc(env, listenerFlags);
  onCleanup('listener', () => listener.stop());
  await listener.waitForLine(/connected to ws:/);

  const relaySessions = async (): Promise<Map<string, string>> => {
    const res = await fetch(`${relay.url}/computers`, { headers: { Authorization: `Bearer ${account.apiKey}` } });
    const json = (await res.json()) as {
      computers: { hookId: string; sessions: { name: string; panes: { command: string; active: boolean }[] }[] }[];
    };
    const me = json.computers.find((c) => c.hookId === hookId);
    return new Map(
      (me?.sessions ?? []).map((s) => [s.name, (s.panes.find((p) => p.active) ?? s.panes[0])?.command ?? '']),
    );
  };
  const waitInventory = (names: readonly string[], command: string) =>
    waitUntil(
      async () => {
        const known = await relaySessions();
        return names.every((n) => known.get(n) === command);
      },
      `the relay to list ${names.length} sessions running ${command}`,
      30_000,
      100,
    );
  await waitInventory(catSessions, 'cat');
  progress(`listener pid ${listener.pid} connected; the relay lists the ${catSessions.length} sessions`);

  // Idle footprint: the sessions are there, and the phone has sent one message (a listener in use has opened one).
  if (phone) {
    const clientId = randomBytes(8).toString('hex');
    const res = await fetch(`${relay.url}/pushes/send`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${account.apiKey}`, 'Content-Type': 'application/json' },
      body: await pushBody(phone, catSessions[0]!, `first-${clientId}`, clientId),
    });
    const answer = (await res.json()) as { id?: number };
    if (res.status !== 200 || typeof answer.id !== 'number')
      throw new Error(`the phone's first message: HTTP ${res.status} ${JSON.stringify(answer)}`);
    const id = answer.id;
    const final = await waitUntil(
      () => {
        const status = statusOf.get(id);
        return status && status.state !== 'pending' && status.state !== 'delivered' ? status : null;
      },
      "the phone's first message",
      15_000,
      20,
    );
    if (final.state !== 'injected')
      throw new Error(`the phone's first message was not typed: ${JSON.stringify(final)}`);
  }
  let idle: IdleResult | null = null;
  if (opts.idleSeconds > 0) {
    progress(`idle: sampling the listener for ${opts.idleSeconds} s`);
    idle = await measureIdle(listener.pid, opts.idleSeconds, catSessions.length);
  }
  // The poller's own session (never sent to), made before the listener restarts so its inventory has it at once.
  let capture = execCapture(socketPath);
  if (opts.poller === 'control') {
    await tmux.newSession({ name: 'bench-poller', command: 'exec cat', cwd: work });
    const client = await controlCapture(socketPath, 'bench-poller');
    onCleanup('tmux control client', () => client.close());
    capture = client.capture;
  }
  let tmuxCalls: TmuxCalls | { error: string } | null = null;
  if (opts.traceSeconds > 0) {
    progress(`counting the listener's tmux calls with strace for ${opts.traceSeconds} s`);
    tmuxCalls = await countTmuxCalls(listener.pid, opts.traceSeconds, root);
    // ptrace leaves nothing behind, but start the measured part from a listener no one has watched.
    await listener.stop();
    listener = startListenerProc(env, listenerFlags);
    await listener.waitForLine(/connected to ws:/);
    await listener.waitForLine(/reported \d+ session\(s\)/);
  }

  const reference = {
    ...(await referenceCosts(join(root, 'reference'))),
    benchRssMiB: Math.round((process.memoryUsage().rss / 1048576) * 10) / 10,
    listenerRssMiB: Math.round((procSample(listener.pid).rssKiB / 1024) * 10) / 10,
  };
  const bench: Bench = {
    relay,
    apiKey: account.apiKey,
    phone,
    poller: makePoller(capture, opts.pollIntervalMs),
    socketPath,
    listener,
    fanoutAt,
    statusOf,
    buckets: new Map(),
    paced: 0,
  };

  progress(
    `literal path: ${opts.warmup} warm-up + ${opts.messages} messages each way over ${catSessions.length} sessions`,
  );
  const literal = await runPhase(bench, 'cat', catSessions, opts.messages, opts.warmup, (t) => t);

  let agent: Result['agent'] = null;
  if (opts.agent && !existsSync(FAKE_AGENT)) warn(`no ${FAKE_AGENT}: skipping the agent row`);
  else if (opts.agent) {
    const agentSessions = Array.from({ length: opts.agentSessions }, (_, i) => `bench-agent-${i + 1}`);
    const command = [
      'exec',
      'env',
      'FAKE_AGENT_PROCESS_NAME=claude',
      shellQuote('FAKE_AGENT_PROMPT=❯'),
      shellQuote(process.execPath),
      shellQuote(FAKE_AGENT),
    ].join(' ');
    for (const name of agentSessions) await tmux.newSession({ name, command, cwd: work });
    for (const name of agentSessions)
      await waitUntil(
        async () => (await tmux.capture(name, 50)).split('\n').at(-1)?.startsWith('❯'),
        `the fake agent in ${name} to draw its input line`,
      );
    await waitInventory(agentSessions, 'claude');
    progress(
      `agent path: ${opts.warmup} warm-up + ${opts.agentMessages} messages each way over ${agentSessions.length} ` +
        'sessions running the fake agent as claude',
    );
    const phase = await runPhase(
      bench,
      'agent',
      agentSessions,
      opts.agentMessages,
      opts.warmup,
      (t) => `you said: ${t}`,
    );
    const claude = agentById('A1')?.submit;
    const strategy = claude && {
      kind: claude.kind,
      enterDelayMs: claude.enterDelayMs,
      verifyDelayMs: claude.verifyDelayMs ?? DEFAULT_VERIFY_DELAY_MS,
    };
    agent = { ...phase, strategy };
  }

  const result: Result = {
    machine,
    options: opts,
    relayHttpBucket: { bench: BENCH_HTTP_BUCKET, default: RELAY_HTTP_BUCKET },
    sessionBucket: SESSION_INPUT_BUCKET,
    literal,
    agent,
    idle,
    tmuxCalls,
    reference,
    loadAverage: { start: loadStart, end: loadAverage() },
    relayWarnings,
  };

  if (opts.json) output(`${JSON.stringify(result, null, 2)}\n`);
  else output(`${report(result)}\n`);
  const failures = literal.failures.length + (agent?.failures.length ?? 0);
  if (failures > 0) {
    process.stderr.write(`bench: ${failures} message(s) failed; the listener's last lines:\n`);
    process.stderr.write(`${listener.output().split('\n').slice(-40).join('\n')}\n`);
  }
  return failures > 0 ? 1 : 0;
}

function report(r: Result): string {
  const o = r.options;
  const out: string[] = [];
  out.push(
    `svc inject benchmark — ${r.machine.nproc} CPUs (${r.machine.cpu}), Linux ${r.machine.kernel}, node ${r.machine.node}, ${r.machine.tmux}`,
  );
  out.push(
    o.listenerTmux === 'persistent'
      ? "The listener's tmux calls go through its persistent control-mode client (as shipped)."
      : "The listener's tmux calls are a process each (--listener-tmux process: SVC_TMUX_PERSISTENT=0).",
  );
  out.push(
    `The listener runs as \`node ${o.listenerNodeOptions ? `${o.listenerNodeOptions} ` : ''}svc.js listener\`` +
      `${o.listenerNodeOptions === LISTENER_NODE_FLAGS.join(' ') ? ' (the flags its launchers pass)' : ''}; ` +
      (o.plain ? "messages in plaintext with the account's key (--plain)." : 'a paired phone seals every message.'),
  );
  out.push(
    `Relay in this process on 127.0.0.1 with SQLite; its per-key HTTP bucket is raised to ${r.relayHttpBucket.bench.refillPerSecond}/s ` +
      `for the benchmark (default ${r.relayHttpBucket.default.capacity} burst, ${r.relayHttpBucket.default.refillPerSecond}/s).`,
  );
  out.push(
    `Messages go one at a time, round-robin over the sessions, so each session stays inside the listener's ` +
      `per-session bucket (${r.sessionBucket.capacity} burst, ${r.sessionBucket.refillPerSecond}/s, spec 7.6). ` +
      `Each svc message is followed by one bare send-keys into the same session; ${o.warmup} warm-up pairs are not counted.`,
  );
  const how = o.poller === 'control' ? 'one persistent tmux control-mode client' : 'a new tmux client per poll';
  const often = o.pollIntervalMs === 0 ? 'in a tight loop' : `every ${o.pollIntervalMs} ms`;
  out.push(
    'Times run from just before the POST (or the tmux call) until `capture-pane -p` shows the text, polled ' +
      `${often} through ${how}, the same way for both paths.`,
  );
  out.push('');
  out.push(
    phaseTable(
      `cat (generic literal strategy: send-keys -l + Enter in one tmux call), ${r.literal.messages} messages, ${r.literal.sessions} sessions`,
      r.literal,
      'send-keys -l ; Enter',
    ),
  );
  if (r.agent) {
    const s = r.agent.strategy as { enterDelayMs?: number } | undefined;
    out.push('');
    out.push(
      phaseTable(
        `fake agent as claude (Claude Code strategy: bracketed paste, ${s?.enterDelayMs ?? '?'} ms, Enter, verify), ` +
          `to "you said: …", ${r.agent.messages} messages, ${r.agent.sessions} sessions`,
        r.agent,
        'send-keys -l ; Enter',
      ),
    );
    out.push(
      '  (the bare send-keys submits here only because this fake has no paste-burst rule; into Codex it would not)',
    );
  }
  out.push('');
  if (r.idle) {
    const i = r.idle;
    out.push(
      `Idle listener, ${i.sessions} sessions, ${r.options.plain ? 'nothing sent' : "a paired phone's one message before"}, ${i.seconds} s: RSS ${i.rssStartMiB} MiB at the start, ` +
        `${i.rssEndMiB} MiB at the end (peak ${i.peakRssMiB} MiB); CPU ${i.cpuSeconds.toFixed(2)} s = ${i.cpuPercent.toFixed(2)} % ` +
        `of one core${i.cpuPercentNs === null ? '' : ` (${i.cpuPercentNs.toFixed(3)} % from its threads' schedstat)`} ` +
        `(its tmux clients: ${i.childCpuSeconds.toFixed(2)} s more)`,
    );
  }
  if (r.tmuxCalls && 'error' in r.tmuxCalls)
    out.push(`tmux processes started while idle: not counted (${r.tmuxCalls.error})`);
  else if (r.tmuxCalls) {
    const t = r.tmuxCalls;
    const kinds = [...new Set(t.commands.map((c) => c.split(',')[0]?.trim()))].join(', ');
    out.push(
      `tmux processes started while idle (strace, ${t.seconds} s): ${t.calls} = ${t.perTick} per 5 s inventory tick; the persistent client carries the calls${kinds ? ` (${kinds})` : ''}`,
    );
  }
  const ref = r.reference;
  out.push(
    `Alone on this machine: an fsync'd atomic file write p50 ${ms(ref.atomicWriteFsyncMs?.p50)} ` +
      `(the listener does two before typing, one after), spawning \`true\` from this process p50 ` +
      `${ms(ref.spawnFromBenchMs?.p50)} (RSS here ${ref.benchRssMiB} MiB, listener ${ref.listenerRssMiB} MiB).`,
  );
  out.push(`Load average at the start ${r.loadAverage.start.join(' ')}, at the end ${r.loadAverage.end.join(' ')}.`);
  if (r.relayWarnings.length > 0) {
    out.push(`relay warnings (${r.relayWarnings.length}):`);
    for (const w of r.relayWarnings.slice(0, 10)) out.push(`  ${w.slice(0, 300)}`);
  }
  return out.join('\n');
}

// ---------------------------------------------------------------------------

const isMain = process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  let parsed: Options | 'help';
  try {
    parsed = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`bench: ${(error as Error).message}\n${USAGE}\n`);
    process.exit(2);
  }
  if (parsed === 'help') {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const opts = parsed;
  const budgetMs =
    300_000 +
    (opts.idleSeconds + opts.traceSeconds) * 1000 +
    (opts.messages + opts.warmup) * 3_000 +
    (opts.agent ? (opts.agentMessages + opts.warmup) * 5_000 : 0);
  const watchdog = setTimeout(() => {
    process.stderr.write(`bench: gave up after ${Math.round(budgetMs / 1000)} s\n`);
    void cleanupAll().finally(() => process.exit(1));
  }, budgetMs);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`bench: ${signal}, cleaning up\n`);
      void cleanupAll().finally(() => process.exit(130));
    });
  }
  let code = 1;
  try {
    code = await main(opts);
  } catch (error) {
    // After a signal, cleanup pulls things from under the run: its error is not news.
    if (!cleaning) process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
    code = 1;
  } finally {
    await cleanupAll();
    clearTimeout(watchdog);
  }
  process.exit(code);
}
