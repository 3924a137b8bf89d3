/**
 * How soon the phone knows what an agent does (issue "the phone knows within a second"): the REAL Claude Code
 * (test/agents) against the fake model on loopback, in a private tmux server, with `svc listener` and the relay.
 * For each transition — the model starts to stream (working), its approval dialog appears (awaiting_approval), the
 * turn ends (idle) — the time until the screen itself shows it (this benchmark's own `capture-pane` polling through
 * a control-mode client, every 20 ms) and until the relay's `GET /computers` says so (polled every 20 ms), and their
 * ratio. Then the listener's CPU with N agent panes that print without pause, against the same panes quiet.
 *
 *   npm run bench:state                      # build, then node dist/bench/state.js
 *   node dist/bench/state.js --runs 8 --json
 *   node dist/bench/state.js --poll-only     # the same with the persistent tmux client off (5 s poll alone)
 */
import { mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createTmux } from '../actors/tmux/tmux.js';
import { createAccount } from '../relay-server/accounts.js';
import type { Log } from '../relay-server/log.js';
import { startRelay } from '../relay-server/server.js';
import { openSqliteStore } from '../relay-server/sqliteStore.js';
import { type FakeModel, startFakeModel } from '../test/fakes/fakeModel.js';
import { CLAUDE_CODE, prepareAgent } from '../test/helpers/realAgents.js';
import {
  BENCH_HTTP_BUCKET,
  benchArgs,
  clockTicks,
  controlCapture,
  execText,
  FAKE_AGENT,
  type ListenerProc,
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
  startListenerProc,
  stats,
  TMUX,
  waitUntil,
  warn,
  wholeNumber,
} from './inject.js';

const USAGE = `usage: node dist/bench/state.js [--runs N] [--reply-seconds S] [--busy-panes N] [--busy-seconds S] [--poll-only] [--no-agent] [--json]
  --runs N           turns measured with the real Claude Code (default 5; each: working, approval, idle)
  --busy-panes N     agent panes that print without pause, for the listener's CPU (default 20; 0 skips)
  --busy-seconds S   how long the CPU is sampled, busy and then quiet (default 60)
  --reply-seconds S  how long each reply streams (default 3; the 5 s poll alone needs more than 5 to see working)
  --poll-only        the listener without its persistent tmux client (SVC_TMUX_PERSISTENT=0): the 5 s poll alone
  --no-agent         skip the real Claude Code part
  --json             the results as JSON on stdout`;

const POLL_MS = 20;
const STEP_TIMEOUT_MS = 60_000;
const AGENT_BIN = join(ROOT, 'test', 'agents', 'node_modules', '.bin');

type Transition = 'working' | 'awaiting_approval' | 'idle';

interface Sample {
  transition: Transition;
  /** From the cause (the prompt's Enter, or the model answering) to the screen showing it, and to the relay. */
  screenMs: number;
  relayMs: number;
}

interface Env {
  relayUrl: string;
  apiKey: string;
  hookId: string;
  socketPath: string;
  env: NodeJS.ProcessEnv;
  work: string;
}

async function stateOnRelay(e: Env, session: string): Promise<string | undefined> {
  const res = await fetch(`${e.relayUrl}/computers`, { headers: { Authorization: `Bearer ${e.apiKey}` } });
  const json = (await res.json()) as { computers: { hookId: string; sessions: { name: string; state?: string }[] }[] };
  return json.computers.find((c) => c.hookId === e.hookId)?.sessions.find((s) => s.name === session)?.state;
}

/** The first moment (performance.now) `check` holds, polled every POLL_MS from now on. */
async function firstTime(check: () => Promise<boolean>, what: string): Promise<number> {
  return waitUntil(async () => ((await check()) ? now() : 0), what, STEP_TIMEOUT_MS, POLL_MS);
}

async function measureAgent(e: Env, model: FakeModel, runs: number): Promise<Sample[]> {
  const tmux = createTmux({ socketPath: e.socketPath, bin: TMUX, configFile: '/dev/null' });
  const place = prepareAgent(CLAUDE_CODE, model.url);
  onCleanup('agent home', () => place.cleanup());
  const session = 'svc-bench-claude';
  const argv = [join(AGENT_BIN, CLAUDE_CODE.program), ...(CLAUDE_CODE.args ?? [])];
  const { paneId } = await tmux.newSession({
    name: session,
    cwd: place.proj,
    command: argv,
    env: place.env,
    width: 200,
    height: 50,
    options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
  });
  await tmux.newSession({ name: 'bench-poller', command: 'exec cat', cwd: e.work });
  const poller = await controlCapture(e.socketPath, 'bench-poller');
  onCleanup('poller', () => poller.close());
  const screen = () => poller.capture(paneId);
  const shows = {
    working: (s: string) => CLAUDE_CODE.working.test(s),
    awaiting_approval: (s: string) => CLAUDE_CODE.approval!.test(s),
    idle: (s: string) => CLAUDE_CODE.ready.test(s) && !CLAUDE_CODE.working.test(s) && !CLAUDE_CODE.approval!.test(s),
  };
  const settledIdle = async () => {
    await waitUntil(async () => shows.idle(await screen()), 'Claude Code ready', 120_000, 250);
    await waitUntil(async () => (await stateOnRelay(e, session)) === 'idle', 'idle on the relay', 120_000, 100);
  };
  /** Both times for one transition, measured from `t0`, polled side by side. */
  const both = async (transition: Transition, t0: number): Promise<Sample> => {
    const [s, r] = await Promise.all([
      firstTime(async () => shows[transition](await screen()), `${transition} on the screen`),
      firstTime(async () => (await stateOnRelay(e, session)) === transition, `${transition} on the relay`),
    ]);
    return { transition, screenMs: s - t0, relayMs: r - t0 };
  };
  const submit = async (text: string) => {
    await tmux.paste({ pane: paneId }, text, { bracketed: true });
    await sleep(400); // as a person: Claude Code takes an Enter right after a paste as part of it
    const t0 = now();
    await tmux.sendKeys({ pane: paneId }, ['Enter']);
    return t0;
  };

  progress('starting Claude Code');
  await settledIdle();
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) {
    // a reply that streams for --reply-seconds: working from the Enter, idle when it ends
    const t0 = await submit(`turn ${i}: svc-slow`);
    samples.push(await both('working', t0));
    const end = await waitUntil(
      async () => (!shows.working(await screen()) ? now() : 0),
      'the reply to end',
      STEP_TIMEOUT_MS,
      POLL_MS,
    );
    samples.push(await both('idle', end));
    await settledIdle();
    // a tool call that asks first
    const t1 = await submit(`turn ${i}: run a command, svc-approve`);
    samples.push(await both('awaiting_approval', t1));
    await tmux.sendKeys({ pane: paneId }, CLAUDE_CODE.decline!);
    await settledIdle();
    progress(`run ${i + 1}/${runs}: ${samples.slice(-3).map((s) => `${s.transition} ${s.relayMs.toFixed(0)} ms`)}`);
  }
  await tmux.killSession(session);
  return samples;
}

interface CpuResult {
  panes: number;
  seconds: number;
  busyCpuPercent: number;
  quietCpuPercent: number;
  busyRssMiB: number;
}

async function measureBusy(e: Env, listener: ListenerProc, panes: number, seconds: number): Promise<CpuResult> {
  const tmux = createTmux({ socketPath: e.socketPath, bin: TMUX, configFile: '/dev/null' });
  const names = Array.from({ length: panes }, (_, i) => `svc-busy-${i + 1}`);
  const start = (busyMs: number) =>
    Promise.all(
      names.map((name) =>
        tmux.newSession({
          name,
          cwd: e.work,
          command: [process.execPath, FAKE_AGENT],
          env: { FAKE_AGENT_PROCESS_NAME: 'claude', FAKE_AGENT_PROMPT: '❯', FAKE_AGENT_BUSY_MS: String(busyMs) },
          options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'busy' },
        }),
      ),
    );
  const ticks = clockTicks();
  const sample = async (what: string) => {
    await sleep(6_000); // the listener has seen them (a 5 s tick)
    const a = procSample(listener.pid);
    await sleep(seconds * 1000);
    const b = procSample(listener.pid);
    const cpu = ((b.selfTicks - a.selfTicks + b.childTicks - a.childTicks) / ticks / ((b.at - a.at) / 1000)) * 100;
    progress(`${what}: listener ${cpu.toFixed(2)} % of a core over ${seconds} s`);
    return { cpu, rss: b.rssKiB / 1024 };
  };
  progress(`${panes} agent panes printing a line every 50 ms`);
  await start(50);
  const busy = await sample('busy');
  for (const name of names) await tmux.killSession(name);
  await start(0);
  const quiet = await sample('quiet');
  for (const name of names) await tmux.killSession(name);
  return {
    panes,
    seconds,
    busyCpuPercent: Math.round(busy.cpu * 100) / 100,
    quietCpuPercent: Math.round(quiet.cpu * 100) / 100,
    busyRssMiB: Math.round(busy.rss * 10) / 10,
  };
}

async function main(opts: {
  runs: number;
  busyPanes: number;
  busySeconds: number;
  replySeconds: number;
  pollOnly: boolean;
  agent: boolean;
  json: boolean;
}) {
  const loadStart = loadAverage();
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-state-'));
  onCleanup('temp dir', () => rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  const home = join(root, 'home');
  const work = join(root, 'work');
  mkdirSync(home, { recursive: true });
  mkdirSync(work, { recursive: true });

  const quiet: Log = { info: () => {}, warn: () => {}, error: (m) => warn(`relay: ${m}`) };
  const store = openSqliteStore(join(root, 'relay'));
  onCleanup('relay store', () => store.close());
  const account = await createAccount(store);
  // polled every 20 ms: the per-key HTTP bucket (30/s) is raised as in bench/inject.ts
  const relay = await startRelay({ host: '127.0.0.1', port: 0, store, log: quiet, httpBucket: BENCH_HTTP_BUCKET });
  onCleanup('relay', () => relay.close());
  const model = await startFakeModel({ slowMs: opts.replySeconds * 1000, slowChunkMs: 200 });
  onCleanup('fake model', () => model.close());

  const socketPath = join(root, 'sock');
  await execText(TMUX, ['-S', socketPath, '-f', '/dev/null', 'start-server', ';', 'set', '-g', 'exit-empty', 'off']);
  onCleanup('tmux server', () => execText(TMUX, ['-S', socketPath, 'kill-server']).catch(() => {}));

  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, SVC_TMUX_SOCKET: socketPath };
  for (const k of Object.keys(env)) if (k.startsWith('SVC_') && k !== 'SVC_TMUX_SOCKET') delete env[k];
  delete env.TMUX;
  if (opts.pollOnly) env.SVC_TMUX_PERSISTENT = '0';
  const login = await execText(
    process.execPath,
    [SVC_BIN, 'login', '--url', relay.url, '--key', account.apiKey, '--name', 'bench', '--json'],
    { env, timeoutMs: 30_000 },
  );
  const e: Env = {
    relayUrl: relay.url,
    apiKey: account.apiKey,
    hookId: (JSON.parse(login.stdout) as { hookId: string }).hookId,
    socketPath,
    env,
    work,
  };
  const listener = startListenerProc(env);
  onCleanup('listener', () => listener.stop());
  await listener.waitForLine(/connected to ws:/);

  const samples = opts.agent ? await measureAgent(e, model, opts.runs) : [];
  const cpu = opts.busyPanes > 0 ? await measureBusy(e, listener, opts.busyPanes, opts.busySeconds) : null;
  const rows = (['working', 'awaiting_approval', 'idle'] as const).map((t) => {
    const of = samples.filter((s) => s.transition === t);
    const screen = stats(of.map((s) => s.screenMs));
    const relayS = stats(of.map((s) => s.relayMs));
    const lag = stats(of.map((s) => s.relayMs - s.screenMs));
    return { transition: t, screen, relay: relayS, lag, ratio: screen && relayS ? relayS.p50 / screen.p50 : null };
  });
  const result = {
    machine: { nproc: availableParallelism(), node: process.version },
    mode: opts.pollOnly ? 'poll only (SVC_TMUX_PERSISTENT=0)' : 'persistent tmux client + screen watch',
    runs: opts.runs,
    replySeconds: opts.replySeconds,
    rows,
    cpu,
    load: { start: loadStart, end: loadAverage() },
  };
  if (opts.json) output(`${JSON.stringify(result, null, 2)}\n`);
  else output(report(result));
}

const f = (x: number | undefined | null) => (x === undefined || x === null ? '-' : `${x.toFixed(0)} ms`);

function report(r: {
  mode: string;
  runs: number;
  replySeconds: number;
  rows: {
    transition: string;
    screen: ReturnType<typeof stats>;
    relay: ReturnType<typeof stats>;
    lag: ReturnType<typeof stats>;
    ratio: number | null;
  }[];
  cpu: CpuResult | null;
  load: { start: number[]; end: number[] };
}): string {
  const lines = [`svc agent-state benchmark — ${r.mode}`, ''];
  if (r.rows.some((x) => x.screen)) {
    lines.push(
      `Real Claude Code, ${r.runs} runs (replies streaming ${r.replySeconds} s); from the cause (the prompt's Enter; the reply's end) to the screen showing`,
      'it (polled every 20 ms) and to GET /computers saying so (polled every 20 ms):',
      '',
      '  transition            screen p50   relay p50   relay p99   relay − screen p50 / max   ratio p50',
    );
    for (const x of r.rows) {
      if (!x.screen) continue;
      lines.push(
        `  ${x.transition.padEnd(20)}  ${f(x.screen.p50).padStart(10)}  ${f(x.relay?.p50).padStart(10)}  ${f(x.relay?.p99).padStart(10)}   ${f(x.lag?.p50).padStart(10)} / ${f(x.lag?.max).padEnd(8)}  ${x.ratio?.toFixed(2) ?? '-'}x`,
      );
    }
    lines.push('');
  }
  if (r.cpu) {
    lines.push(
      `Listener CPU with ${r.cpu.panes} agent panes, ${r.cpu.seconds} s each: printing a line every 50 ms ${r.cpu.busyCpuPercent} % of a core (RSS ${r.cpu.busyRssMiB} MiB); quiet ${r.cpu.quietCpuPercent} %`,
      '',
    );
  }
  lines.push(`Load average at the start ${r.load.start.join(' ')}, at the end ${r.load.end.join(' ')}.`, '');
  return lines.join('\n');
}

const isMain = process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(ROOT, 'dist', 'bench', 'state.js');
if (isMain) {
  const v = benchArgs(
    {
      runs: { type: 'string', default: '5' },
      'busy-panes': { type: 'string', default: '20' },
      'busy-seconds': { type: 'string', default: '60' },
      'reply-seconds': { type: 'string', default: '3' },
      'poll-only': { type: 'boolean', default: false },
      'no-agent': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    USAGE,
  );
  const int = (name: string) => wholeNumber(v, name, 0, USAGE);
  const opts = {
    runs: int('runs'),
    busyPanes: int('busy-panes'),
    busySeconds: int('busy-seconds'),
    replySeconds: int('reply-seconds'),
    pollOnly: v['poll-only'] === true,
    agent: v['no-agent'] !== true,
    json: v.json === true,
  };
  runBench(() => main(opts));
}
