/**
 * Each real agent's submit floor: the shortest wait between the paste and the Enter that still submits every time.
 * The REAL Claude Code, Codex, Gemini CLI and pi (test/agents) against the fake model on loopback, in a private tmux
 * server. For each wait on a ladder, `--trials` messages go through the listener's own submit code
 * (`actors/agents/inject.ts` with the agent's strategy from `core/agents/registry.ts`, the wait replaced), through a
 * persistent tmux client as the listener's; a message counts as submitted when the fake model received it (the
 * agent really sent a turn with that text), and the time is from the paste to that request.
 *
 *   npm run bench:submit                         # build, then node dist/bench/submit.js
 *   node dist/bench/submit.js --agents A1,A2 --delays 0,50,100,200 --trials 10 --json
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { injectText } from '../actors/agents/inject.js';
import { createTmux } from '../actors/tmux/tmux.js';
import { agentById } from '../core/agents/registry.js';
import { type FakeModel, startFakeModel, userTexts } from '../test/fakes/fakeModel.js';
import {
  agentProgram,
  CLAUDE_CODE,
  CODEX,
  GEMINI_CLI,
  PI,
  prepareAgent,
  type RealAgent,
  waitSettled,
} from '../test/helpers/realAgents.js';
import {
  benchArgs,
  execText,
  loadAverage,
  now,
  onCleanup,
  output,
  progress,
  ROOT,
  runBench,
  sleep,
  stats,
  TMUX,
} from './inject.js';

const USAGE = `usage: node dist/bench/submit.js [--agents A1,A2,A3,A4] [--delays 0,25,50,100,200] [--trials N] [--json]
  --agents   which real agents (default: all four that are installed)
  --delays   the waits between paste and Enter to try, in ms (default 0,25,50,100,200)
  --trials   messages per wait (default 8)
  --json     the results as JSON on stdout`;

const AGENTS: Record<string, RealAgent> = { A1: CLAUDE_CODE, A2: CODEX, A3: GEMINI_CLI, A4: PI };
const SUBMIT_TIMEOUT_MS = 15_000;

interface Row {
  delayMs: number;
  submitted: number;
  trials: number;
  /** What the listener's own check said (true / false / unverified), by count. */
  checks: Record<string, number>;
  /** From the paste to the fake model's request carrying the text. */
  toRequest: ReturnType<typeof stats>;
}

interface AgentResult {
  id: string;
  name: string;
  shippedDelayMs: number;
  rows: Row[];
  /** The smallest wait that submitted every trial, with every larger wait also doing so. */
  floorMs: number | null;
}

async function measureAgent(
  agent: RealAgent,
  model: FakeModel,
  socketPath: string,
  delays: number[],
  trials: number,
): Promise<AgentResult> {
  const spec = agentById(agent.id)!;
  const tmux = createTmux({ socketPath, bin: TMUX, persistent: true });
  onCleanup(`${agent.id} tmux client`, () => tmux.close());
  const place = prepareAgent(agent, model.url);
  onCleanup(`${agent.id} home`, () => place.cleanup());
  const session = `svc-submit-${agent.id.toLowerCase()}`;
  const { paneId } = await tmux.newSession({
    name: session,
    cwd: place.proj,
    command: [agentProgram(agent), ...(agent.args ?? [])],
    env: place.env,
    width: 200,
    height: 50,
  });
  onCleanup(`${agent.id} session`, () => tmux.killSession(session).catch(() => {}));
  const screen = () => tmux.capture({ pane: paneId }, 50);
  const settled = (what: string) => waitSettled(agent, screen, { quietMs: 1_000, timeoutMs: 120_000, what });
  progress(`${agent.id} ${spec.name}: starting`);
  await settled('ready');

  const rows: Row[] = [];
  for (const delayMs of delays) {
    const row: Row = { delayMs, submitted: 0, trials, checks: {}, toRequest: null };
    const times: number[] = [];
    for (let i = 0; i < trials; i++) {
      const text = `floor ${agent.id} ${delayMs}ms #${i} ${Math.random().toString(36).slice(2, 8)}`;
      const seen = () => model.requests.findIndex((r) => userTexts(r.body).some((t) => t.includes(text)));
      const t0 = now();
      // the request's arrival, watched while the submit code runs (it waits for its own check meanwhile)
      let arrived: number | null = null;
      const deadline = t0 + SUBMIT_TIMEOUT_MS;
      const watching = (async () => {
        while (arrived === null && now() < deadline) {
          if (seen() >= 0) arrived = now();
          else await sleep(2);
        }
      })();
      const result = await injectText({
        tmux,
        target: { pane: paneId },
        text,
        strategy: { ...spec.submit, enterDelayMs: delayMs },
        sleep,
      });
      row.checks[String(result.submitted)] = (row.checks[String(result.submitted)] ?? 0) + 1;
      await watching;
      if (arrived !== null) {
        row.submitted += 1;
        times.push(arrived - t0);
      } else {
        // not submitted: clear the input line so the next trial starts clean (C-u clears a line in all four)
        await tmux.sendKeys({ pane: paneId }, ['C-u']);
      }
      await settled(`ready after ${delayMs} ms #${i}`).catch(async () => {
        await tmux.sendKeys({ pane: paneId }, ['Escape']);
        await settled(`ready after Esc, ${delayMs} ms #${i}`);
      });
    }
    row.toRequest = stats(times);
    rows.push(row);
    progress(`${agent.id} wait ${delayMs} ms: ${row.submitted}/${trials} submitted`);
  }
  let floorMs: number | null = null;
  for (const row of [...rows].sort((a, b) => b.delayMs - a.delayMs)) {
    if (row.submitted !== row.trials) break;
    floorMs = row.delayMs;
  }
  const shipped = spec.submit.kind === 'paste' ? spec.submit.enterDelayMs : 0;
  return { id: agent.id, name: spec.name, shippedDelayMs: shipped, rows, floorMs };
}

function report(results: AgentResult[], trials: number, load: { start: number[]; end: number[] }): string {
  const out = [`svc submit floor — real agents, ${trials} messages per wait, through actors/agents/inject.ts`, ''];
  for (const r of results) {
    out.push(`${r.id} ${r.name} (shipped wait ${r.shippedDelayMs} ms):`);
    out.push('  wait    submitted   check said               paste → request p50 / max');
    for (const row of r.rows) {
      const checks = Object.entries(row.checks)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      const t = row.toRequest ? `${row.toRequest.p50.toFixed(0)} / ${row.toRequest.max.toFixed(0)} ms` : '-';
      out.push(
        `  ${`${row.delayMs} ms`.padStart(6)}  ${`${row.submitted}/${row.trials}`.padStart(9)}   ${checks.padEnd(24)} ${t}`,
      );
    }
    out.push(
      `  floor: ${r.floorMs === null ? 'none of these waits submitted every time' : `${r.floorMs} ms (every wait from it up submitted ${trials}/${trials})`}`,
      '',
    );
  }
  out.push(`Load average at the start ${load.start.join(' ')}, at the end ${load.end.join(' ')}.`, '');
  return out.join('\n');
}

async function main(opts: { agents: string[]; delays: number[]; trials: number; json: boolean }) {
  const loadStart = loadAverage();
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-submit-'));
  onCleanup('temp dir', () => rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 }));
  const model = await startFakeModel();
  onCleanup('fake model', () => model.close());
  const socketPath = join(root, 'sock');
  await execText(TMUX, ['-S', socketPath, '-f', '/dev/null', 'start-server', ';', 'set', '-g', 'exit-empty', 'off']);
  onCleanup('tmux server', () => execText(TMUX, ['-S', socketPath, 'kill-server']).catch(() => {}));
  const results: AgentResult[] = [];
  for (const id of opts.agents) {
    const agent = AGENTS[id];
    if (!agent) throw new Error(`no real agent ${id} (A1, A2, A3, A4)`);
    results.push(await measureAgent(agent, model, socketPath, opts.delays, opts.trials));
  }
  const load = { start: loadStart, end: loadAverage() };
  if (opts.json) output(`${JSON.stringify({ trials: opts.trials, results, load }, null, 2)}\n`);
  else output(report(results, opts.trials, load));
}

const isMain =
  process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(ROOT, 'dist', 'bench', 'submit.js');
if (isMain) {
  const values = benchArgs(
    {
      agents: { type: 'string', default: 'A1,A2,A3,A4' },
      delays: { type: 'string', default: '0,25,50,100,200' },
      trials: { type: 'string', default: '8' },
      json: { type: 'boolean', default: false },
    },
    USAGE,
  );
  const list = (s: unknown) => String(s).split(',').filter(Boolean);
  const delays = list(values.delays).map(Number);
  const trials = Number(values.trials);
  if (delays.some((d) => !Number.isInteger(d) || d < 0 || d > 5000) || !Number.isInteger(trials) || trials < 1) {
    process.stderr.write(`bench: --delays takes whole ms from 0 to 5000, --trials a whole number ≥ 1\n${USAGE}\n`);
    process.exit(2);
  }
  runBench(() => main({ agents: list(values.agents), delays, trials, json: values.json === true }));
}
