/**
 * `svc verify [--json]` (spec 4.5): tmux, login, listener, service, relay URL and stage, and where each value came
 * from. Exit 0 when everything svc needs is there, 1 otherwise (the FAIL lines say what to do).
 */
import { execFile } from 'node:child_process';
import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { readConfigFile } from '../../actors/daemon/configFile.js';
import { controlRequest, controlSocketPath } from '../../actors/daemon/controlSocket.js';
import { defaultEntry, findListener } from '../../actors/daemon/daemon.js';
import { agentsFound, hooksFound, svcMcpCommand } from '../../actors/hooks/agentsFound.js';
import { listCodexHooks } from '../../actors/hooks/codexTrust.js';
import { fileState, wiredState } from '../../actors/hooks/configFiles.js';
import { relayJson } from '../../actors/relay/http.js';
import { serviceFacts, serviceState } from '../../actors/service/service.js';
import { onPath } from '../../actors/which.js';
import { agentById } from '../../core/agents/registry.js';
import { resolveConfig } from '../../core/daemon/config.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { buildVerifyReport, formatVerifyReport, type PhonesFact } from '../../core/daemon/verify.js';
import { VERSION } from '../../core/daemon/version.js';
import { type AgentWiringRow, agentWiringLines, codexHooksWord, hooksWord } from '../../core/hooks/install.js';
import { codexHooksToTrust, hermesEntry } from '../../core/hooks/wiring.js';
import { formatAsksLine } from '../../core/mcp/verify.js';
import { DeviceListResponse } from '../../core/protocol/index.js';
import { wrapperSocket } from '../../core/sessions/launch.js';
import { formatFailingLines } from '../../core/supervision.js';

/** The account's phones from the relay's device list; what went wrong instead when it did not answer in 5 s. */
async function phonesOf(baseUrl: string, apiKey: string): Promise<PhonesFact> {
  try {
    const { devices } = await relayJson(DeviceListResponse, baseUrl, apiKey, 'GET', '/devices', undefined, 5_000);
    return {
      phones: devices
        .filter((d) => d.kind === 'app')
        .map((d) => ({
          name: d.name,
          // absent: a relay from before it kept them (unknown), not a phone never seen
          ...(d.lastSeenAt !== undefined ? { lastSeenAt: d.lastSeenAt } : {}),
          notifications: d.notifications ?? null,
          origin: d.origin ?? null,
        })),
    };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

function tmuxVersion(path: string): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(path, ['-V'], { encoding: 'utf8', timeout: 5_000 }, (err, out) =>
      resolve(err ? null : String(out).trim() || null),
    );
  });
}

export default defineCommand({
  meta: {
    name: 'verify',
    description: 'Check tmux, login, listener, service, relay URL and phones, and where each came from',
  },
  args: {
    json: { type: 'boolean', description: 'Print the report as JSON' },
  },
  async run({ args }) {
    const home = homedir();
    const paths = svcPaths(home);
    const env = process.env;
    const tmuxPath = onPath('tmux', env.PATH);
    const reading = readConfigFile(paths.config);
    const config = resolveConfig(reading, env, {}, paths.config);
    const report = buildVerifyReport({
      cliVersion: VERSION,
      tmux: { path: tmuxPath, version: tmuxPath ? await tmuxVersion(tmuxPath) : null },
      socket: wrapperSocket(env, process.getuid?.() ?? 0),
      configPath: paths.config,
      configReading: reading.status,
      config,
      listener: await findListener({ paths, home, entry: defaultEntry() }),
      pidFile: paths.pid,
      controlSocket: controlSocketPath(paths.dir),
      versionFile: paths.version,
      service: serviceState(serviceFacts(home, svcMcpCommand())),
    });
    // svc_asks the listener waits on (docs/mcp.md); null when no listener answers.
    const asks = report.listener.running
      ? await controlRequest(paths.dir, { type: 'asks' }, 'asks').then(
          (r) => r.asks,
          () => null,
        )
      : null;
    // children the listener stopped restarting (core/supervision.ts): a FAIL each, and exit 1
    const failing = report.listener.running
      ? await controlRequest(paths.dir, { type: 'status' }, 'status').then(
          (r) => r.failing ?? [],
          () => [],
        )
      : [];
    const givenUp = failing.filter((c) => c.givenUp);
    // the phones of the account, as the relay lists them (when logged in)
    const phones = report.login.ok ? await phonesOf(config.baseUrl.value, config.apiKey.value ?? '') : null;
    // per agent found on PATH: what svc install wired (informational: it does not change the exit code)
    const found = agentsFound(home, env);
    const hooks = hooksFound(home, env);
    const hooksOf = (agentId: string) =>
      hooksWord(
        [
          ...hooks.entries.filter((w) => w.agentId === agentId).map((w) => wiredState(w)),
          ...hooks.files.filter((f) => f.agentId === agentId).map((f) => fileState(f.file, f.content)),
        ],
        hooks.elsewhere.find((n) => n.agentId === agentId)?.why,
      );
    // Codex skips hooks it does not trust: ask it (the same question svc install asks), only when they are wired
    const codexWord = async (word: string): Promise<string> => {
      const codex = onPath('codex', env.PATH);
      const ours = hooks.entries.filter((w) => w.agentId === 'A2');
      if (word !== 'wired' || !codex || ours.length === 0) return word;
      try {
        const listed = await listCodexHooks(codex, { cwd: home, env, timeoutMs: 15_000 });
        const untrusted = codexHooksToTrust(listed, {
          file: ours[0]!.file,
          commands: ours.map((w) => (w.value as { hooks: { command: string }[] }).hooks[0]!.command),
        });
        return codexHooksWord(word, untrusted.length);
      } catch (err) {
        return codexHooksWord(word, { unknown: (err as Error).message });
      }
    };
    const agents: AgentWiringRow[] = [
      // one row per agent: its server entry, and wired only when everything install writes for the MCP server is
      // there (the standing instruction is not the server: an edited block of it is the person's)
      ...found.wired
        .filter((w, i) => found.wired.findIndex((x) => x.agentId === w.agentId) === i)
        .map((w) => {
          const mcpWirings = found.wired.filter((x) => x.agentId === w.agentId && x.kind === 'mcp');
          const states = mcpWirings.map((x) => wiredState(x));
          const mcp = states[0] === 'wired' && states.some((x) => x !== 'wired') ? 'not wired' : states[0]!;
          return {
            agentId: w.agentId,
            name: agentById(w.agentId)?.name ?? w.agentId,
            mcp,
            file: w.file,
            hooks: hooksOf(w.agentId),
          };
        }),
      ...found.notWired.map((n) => ({
        agentId: n.agentId,
        name: n.name,
        mcp: 'not wired by install' as const,
        file: null,
        note: n.why,
        hooks: hooksOf(n.agentId),
      })),
    ];
    for (const row of agents) if (row.agentId === 'A2') row.hooks = await codexWord(row.hooks);
    // Hermes is wired by hand (spec 4.13.6): the entry its line says to add, printed here too
    const hermes = agents.some((r) => r.agentId === 'A7') ? hermesEntry() : null;
    if (args.json)
      process.stdout.write(
        `${JSON.stringify({ ...report, asks, failing, agents, hermesEntry: hermes, phones }, null, 2)}\n`,
      );
    else {
      const lines = formatVerifyReport(report, phones);
      lines.splice(lines.length - 1, 0, formatAsksLine(asks, Date.now()), ...formatFailingLines(failing));
      process.stdout.write(`${[...lines, ...agentWiringLines(agents)].join('\n')}\n`);
      if (hermes) process.stdout.write(`${hermes}\n`);
    }
    process.exitCode = report.ok && givenUp.length === 0 ? 0 : 1;
  },
});
