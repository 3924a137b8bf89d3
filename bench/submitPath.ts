/**
 * svc's path against each real agent's own floor (issue 35): how much later than a careful person at the keyboard a
 * message sent from the phone reaches the agent's model. In the same run, for each real agent (test/agents) against
 * the fake model on loopback, alternating on the same session:
 *
 *   floor  one bracketed paste of the text into the agent's pane, the agent's own wait (its submit strategy's
 *          `enterDelayMs`, core/agents/registry.ts), and Enter: the fastest typing that submits every time;
 *   svc    `POST /pushes/send` to the real relay (in this process, on SQLite) and the real `svc listener` (its own
 *          process, logged in as a person does), which types it with every safety look it ships with;
 *
 * each timed from its first step to the fake model's request carrying the text, with the agent settled (ready, its
 * screen quiet for a second) before each. A phase runs quiet, then with two CPU spinners (`yes`), unless
 * `--no-loaded`. Prints p50 / p90 of both, their ratio and svc's p50 minus the floor's (the goal: at most 100 ms).
 *
 *   npm run bench:submit-path                           # build, then node dist/bench/submitPath.js
 *   node dist/bench/submitPath.js --agents A2,A3 --trials 12 --json
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createTmux, type Tmux } from '../actors/tmux/tmux.js';
import { agentById } from '../core/agents/registry.js';
import { createAccount } from '../relay-server/accounts.js';
import { type BusEvent, InProcessBus } from '../relay-server/bus.js';
import type { Log } from '../relay-server/log.js';
import { startRelay } from '../relay-server/server.js';
import { openSqliteStore } from '../relay-server/sqliteStore.js';
import { type FakeModel, startFakeModel, userTexts } from '../test/fakes/fakeModel.js';
import {
  agentInstalled,
  CLAUDE_CODE,
  CODEX,
  GEMINI_CLI,
  OPENCODE,
  PI,
  type PreparedAgent,
  prepareAgent,
  type RealAgent,
  waitSettled,
} from '../test/helpers/realAgents.js';
import {
  BENCH_HTTP_BUCKET,
  benchArgs,
  benchLogin,
  execText,
  type ListenerProc,
  loadAverage,
  now,
  onCleanup,
  output,
  progress,
  ROOT,
  runBench,
  type Stats,
  sleep,
  startListenerProc,
  stats,
  TMUX,
  warn,
  wholeNumber,
} from './inject.js';

const USAGE = `usage: node dist/bench/submitPath.js [--agents A1,A2,A3,A4,A5] [--trials N] [--no-loaded] [--json]
  --agents     which real agents (default: every one installed of A1 Claude Code, A2 Codex, A3 Gemini CLI, A4 pi, A5 opencode)
  --trials     messages per path and phase (default 10)
  --no-loaded  the quiet phase only (no phase with two CPU spinners)
  --json       the results as JSON on stdout`;

const AGENTS: Record<string, RealAgent> = { A1: CLAUDE_CODE, A2: CODEX, A3: GEMINI_CLI, A4: PI, A5: OPENCODE };
/** A message not at the model by then is counted as lost (and said). */
const ARRIVAL_TIMEOUT_MS = 15_000;

type Path = 'floor' | 'svc';

interface PhaseRow {
  phase: 'quiet' | 'loaded';
  floor: Stats | null;
  svc: Stats | null;
  /** svc's p50 / the floor's p50, and svc's p50 minus the floor's (ms). */
  ratioP50: number | null;
  overP50Ms: number | null;
  /** Messages that never reached the model, by path. */
  lost: Record<Path, number>;
  /** What the listener answered the relay for svc's messages (injected, refused …), by count. */
  verdicts: Record<string, number>;
}

interface AgentResult {
  id: string;
  name: string;
  enterDelayMs: number;
  phases: PhaseRow[];
}

interface Rig {
  model: FakeModel;
  tmux: Tmux;
  relayUrl: string;
  apiKey: string;
  hookId: string;
  listener: ListenerProc;
  /** The listener's final answer for each push id, from the relay's bus. */
  verdictOf: Map<number, string>;
}

/** The time from `start` (just before the first step) to the model's request with `text`; null when it never came. */
async function arrival(model: FakeModel, text: string, start: number): Promise<number | null> {
  const deadline = start + ARRIVAL_TIMEOUT_MS;
  const from = Math.max(0, model.requests.length - 20);
  while (now() < deadline) {
    for (let i = from; i < model.requests.length; i++)
      if (userTexts(model.requests[i]!.body).some((t) => t.includes(text))) return now() - start;
    await sleep(2);
  }
  return null;
}

async function viaFloor(rig: Rig, pane: string, text: string, waitMs: number): Promise<number | null> {
  const t0 = now();
  const arrived = arrival(rig.model, text, t0);
  await rig.tmux.paste({ pane }, text, { bracketed: true });
  await sleep(waitMs);
  await rig.tmux.sendKeys({ pane }, ['Enter']);
  return arrived;
}

async function viaSvc(rig: Rig, session: string, text: string): Promise<{ ms: number | null; id: number | null }> {
  const t0 = now();
  const arrived = arrival(rig.model, text, t0);
  const res = await fetch(`${rig.relayUrl}/pushes/send`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${rig.apiKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ type: 'agent.command', agentSessionName: session, body: text, targetComputer: rig.hookId }),
  });
  const answer = (await res.json()) as { id?: number };
  if (res.status !== 200 || typeof answer.id !== 'number') {
    warn(`POST /pushes/send: HTTP ${res.status} ${JSON.stringify(answer)}`);
    await arrived;
    return { ms: null, id: null };
  }
  return { ms: await arrived, id: answer.id };
}

async function runPhase(
  rig: Rig,
  agent: RealAgent,
  place: { session: string; pane: string },
  phase: PhaseRow['phase'],
  trials: number,
  waitMs: number,
): Promise<PhaseRow> {
  const screen = () => rig.tmux.capture({ pane: place.pane }, 50);
  const settled = (what: string) => waitSettled(agent, screen, { quietMs: 1_000, timeoutMs: 120_000, what });
  const times: Record<Path, number[]> = { floor: [], svc: [] };
  const lost: Record<Path, number> = { floor: 0, svc: 0 };
  const ids: number[] = [];
  for (let i = 0; i < trials; i++) {
    // alternating, and which goes first alternating too, so a drift in the agent or the machine costs both alike
    const order: Path[] = i % 2 === 0 ? ['floor', 'svc'] : ['svc', 'floor'];
    for (const path of order) {
      await settled(`${agent.id} ready before ${path} #${i}`);
      const text = `${path} ${agent.id} ${phase} #${i} ${Math.random().toString(36).slice(2, 8)}`;
      let ms: number | null;
      if (path === 'floor') ms = await viaFloor(rig, place.pane, text, waitMs);
      else {
        const sent = await viaSvc(rig, place.session, text);
        ms = sent.ms;
        if (sent.id !== null) ids.push(sent.id);
      }
      if (ms === null) {
        lost[path] += 1;
        warn(`${agent.id} ${phase}: "${text}" (${path}) did not reach the model within ${ARRIVAL_TIMEOUT_MS} ms`);
        await rig.tmux.sendKeys({ pane: place.pane }, ['C-u']).catch(() => {});
      } else times[path].push(ms);
    }
    progress(`${agent.id} ${phase}: ${i + 1}/${trials}`);
  }
  await settled(`${agent.id} ready after ${phase}`);
  const verdicts: Record<string, number> = {};
  for (const id of ids) {
    const v = rig.verdictOf.get(id) ?? 'no answer yet';
    verdicts[v] = (verdicts[v] ?? 0) + 1;
  }
  const floor = stats(times.floor);
  const svc = stats(times.svc);
  return {
    phase,
    floor,
    svc,
    ratioP50: floor && svc ? Math.round((svc.p50 / floor.p50) * 100) / 100 : null,
    overP50Ms: floor && svc ? Math.round(svc.p50 - floor.p50) : null,
    lost,
    verdicts,
  };
}

function spinners(n: number): ChildProcess[] {
  const procs = Array.from({ length: n }, () => spawn('yes', [], { stdio: 'ignore' }));
  onCleanup('spinners', () => {
    for (const p of procs) p.kill('SIGKILL');
  });
  return procs;
}

async function measureAgent(rig: Rig, agent: RealAgent, trials: number, loaded: boolean): Promise<AgentResult> {
  const spec = agentById(agent.id)!;
  const place: PreparedAgent = prepareAgent(agent, rig.model.url);
  onCleanup(`${agent.id} home`, () => place.cleanup());
  const session = `svc-path-${agent.id.toLowerCase()}`;
  // as `svc <agent>` marks its session: the listener types with this agent's strategy
  const { paneId } = await rig.tmux.newSession({
    name: session,
    cwd: place.proj,
    command: place.argv,
    env: place.env,
    width: 200,
    height: 50,
    options: { '@svc-kind': 'agent', '@svc-agent': agent.id, '@svc-project': 'proj' },
  });
  onCleanup(`${agent.id} session`, () => rig.tmux.killSession(session).catch(() => {}));
  progress(`${agent.id} ${spec.name}: starting`);
  await waitSettled(agent, () => rig.tmux.capture({ pane: paneId }, 50), {
    quietMs: 1_000,
    timeoutMs: 120_000,
    what: `${agent.id} ready`,
  });
  await rig.listener.waitForLine(new RegExp(`reported \\d+ session\\(s\\):.*\\b${session}\\b`), 30_000);
  const waitMs = spec.submit.kind === 'paste' ? spec.submit.enterDelayMs : 0;
  const phases = [await runPhase(rig, agent, { session, pane: paneId }, 'quiet', trials, waitMs)];
  if (loaded) {
    const spin = spinners(2);
    try {
      phases.push(await runPhase(rig, agent, { session, pane: paneId }, 'loaded', trials, waitMs));
    } finally {
      for (const p of spin) p.kill('SIGKILL');
    }
  }
  await rig.tmux.killSession(session).catch(() => {});
  return { id: agent.id, name: spec.name, enterDelayMs: waitMs, phases };
}

function report(results: AgentResult[], trials: number, load: { start: number[]; end: number[] }): string {
  const ms = (x: number | undefined) => (x === undefined ? '-' : `${x.toFixed(0)} ms`);
  const out = [
    `svc submit path — real agents, ${trials} messages per path and phase; to the fake model's request`,
    '',
    '  agent               phase    floor p50 / p90      svc p50 / p90        svc / floor   svc − floor   lost    listener said',
  ];
  for (const r of results)
    for (const p of r.phases) {
      const said = Object.entries(p.verdicts)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      out.push(
        `  ${`${r.id} ${r.name}`.padEnd(19)} ${p.phase.padEnd(7)}  ${`${ms(p.floor?.p50)} / ${ms(p.floor?.p90)}`.padEnd(19)}  ${`${ms(p.svc?.p50)} / ${ms(p.svc?.p90)}`.padEnd(19)}  ${`${p.ratioP50 ?? '-'}x`.padStart(11)}  ${`${p.overP50Ms ?? '-'} ms`.padStart(12)}   ${`${p.lost.floor}/${p.lost.svc}`.padEnd(6)}  ${said}`,
      );
    }
  out.push(
    '',
    "floor: bracketed paste, the agent's own wait, Enter. svc: POST /pushes/send through the relay and the listener.",
    `Load average at the start ${load.start.join(' ')}, at the end ${load.end.join(' ')}.`,
    '',
  );
  return out.join('\n');
}

async function main(opts: { agents: string[]; trials: number; loaded: boolean; json: boolean }) {
  const loadStart = loadAverage();
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-path-'));
  onCleanup('temp dir', () => rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  const model = await startFakeModel();
  onCleanup('fake model', () => model.close());

  // the relay, in this process, with the listener's verdicts read off its bus
  const problems: string[] = [];
  const log: Log = { info: () => {}, warn: (m) => problems.push(m), error: (m) => problems.push(m) };
  const store = openSqliteStore(join(root, 'relay'));
  onCleanup('relay store', () => store.close());
  const bus = new InProcessBus((e) => log.error(`bus handler: ${String(e)}`));
  onCleanup('relay bus', () => bus.close());
  const account = await createAccount(store);
  const verdictOf = new Map<number, string>();
  bus.subscribe(account.accountId, (event: BusEvent) => {
    if (event.kind === 'push.status' && event.state !== 'pending' && event.state !== 'delivered')
      verdictOf.set(event.id, event.code ? `${event.state} ${event.code}` : event.state);
  });
  const relay = await startRelay({ host: '127.0.0.1', port: 0, store, bus, log, httpBucket: BENCH_HTTP_BUCKET });
  onCleanup('relay', () => relay.close());

  const socketPath = join(root, 'sock');
  await execText(TMUX, ['-S', socketPath, '-f', '/dev/null', 'start-server', ';', 'set', '-g', 'exit-empty', 'off']);
  onCleanup('tmux server', () => execText(TMUX, ['-S', socketPath, 'kill-server']).catch(() => {}));
  const tmux = createTmux({ socketPath, bin: TMUX, persistent: true, configFile: '/dev/null' });
  onCleanup('tmux client', () => tmux.close());

  // svc login and the listener as a person runs them: a private HOME, the private tmux socket
  const home = join(root, 'home');
  mkdirSync(home);
  const { env, hookId } = await benchLogin({ home, socketPath, relayUrl: relay.url, apiKey: account.apiKey });
  const listener = startListenerProc(env);
  onCleanup('listener', () => listener.stop());
  await listener.waitForLine(/connected to ws:/);

  const rig: Rig = { model, tmux, relayUrl: relay.url, apiKey: account.apiKey, hookId, listener, verdictOf };
  const results: AgentResult[] = [];
  for (const id of opts.agents) {
    const agent = AGENTS[id];
    if (!agent) throw new Error(`no real agent ${id} (${Object.keys(AGENTS).join(', ')})`);
    if (!agentInstalled(agent)) {
      warn(`${id} ${agent.program} is not installed (node test/agents/ensure.mjs): left out`);
      continue;
    }
    results.push(await measureAgent(rig, agent, opts.trials, opts.loaded));
  }
  for (const p of problems.slice(0, 10)) warn(`relay: ${p}`);
  const load = { start: loadStart, end: loadAverage() };
  if (opts.json) output(`${JSON.stringify({ trials: opts.trials, results, load }, null, 2)}\n`);
  else output(report(results, opts.trials, load));
}

const isMain =
  process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(ROOT, 'dist', 'bench', 'submitPath.js');
if (isMain) {
  const values = benchArgs(
    {
      agents: { type: 'string', default: 'A1,A2,A3,A4,A5' },
      trials: { type: 'string', default: '10' },
      'no-loaded': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    USAGE,
  );
  const trials = wholeNumber(values, 'trials', 1, USAGE);
  const agents = String(values.agents).split(',').filter(Boolean);
  runBench(() => main({ agents, trials, loaded: values['no-loaded'] !== true, json: values.json === true }));
}
