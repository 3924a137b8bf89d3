/**
 * `svc install [--dry-run] [--json]` (spec 4.5, 4.13.2; `svc setup` is the same command): checks tmux, then wires
 * everything svc needs into every agent found on PATH, one line per change saying what went where: svc's MCP server
 * and its standing instruction (core/hooks/wiring.ts), and the remote-origin and turn-end hooks
 * (actors/hooks/hooksInstall.ts), keeping the person's files as they were around them (actors/hooks/configFiles.ts).
 * Hermes is not wired: its one entry is printed (spec 4.13.6). Then the login service is offered. Exit 1 when a
 * file was refused, Codex's hooks could not be trusted, or tmux is missing.
 */
import { spawnSync } from 'node:child_process';
import { homedir } from 'node:os';
import { createInterface } from 'node:readline/promises';
import { defineCommand } from 'citty';
import { readConfigFile } from '../../actors/daemon/configFile.js';
import { agentsFound, svcMcpCommand } from '../../actors/hooks/agentsFound.js';
import { type InstallOutcome, installOne } from '../../actors/hooks/configFiles.js';
import { installHooks } from '../../actors/hooks/hooksInstall.js';
import { installService, isServiceInstalled, serviceFacts, serviceState } from '../../actors/service/service.js';
import { onPath } from '../../actors/which.js';
import { agentById } from '../../core/agents/registry.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { loginServiceOffer, PACKAGE_MANAGERS, tmuxInstallLine } from '../../core/hooks/install.js';
import { hermesEntry, wiringWhat } from '../../core/hooks/wiring.js';
import { stageOf } from '../../core/relay/reach.js';
import { fail } from '../output.js';
import { progress } from '../progress.js';

async function askYes(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

/** One line per change: the agent, what happened, what (`wiringWhat`, when known), and the file. */
export function outcomeLine(
  o: { agentId: string; file: string; result: string; reason?: string },
  what?: string,
): string {
  const name = agentById(o.agentId)?.name ?? o.agentId;
  if (o.reason) return `${name}: refused${what ? ` (${what})` : ''}: ${o.reason}`;
  if (!what) return `${name}: ${o.result} (${o.file})`;
  const said =
    o.result === 'already'
      ? `already has ${what}`
      : o.result === 'user entry'
        ? `${what}: an entry svc did not write, left as it is`
        : `${o.result} ${what}`;
  return `${name}: ${said} (${o.file})`;
}

export default defineCommand({
  meta: {
    name: 'install',
    description: 'Wire svc into the agents on this computer: MCP server, standing instruction, hooks; checks tmux',
  },
  args: {
    'dry-run': { type: 'boolean', description: 'Print what would change, change nothing' },
    json: { type: 'boolean', description: 'Print the outcome as JSON' },
  },
  async run({ args }) {
    // on a terminal, what it is doing while nothing is printed (Codex's app-server takes seconds to answer)
    const shown = progress();
    try {
      const home = homedir();
      const dryRun = Boolean(args['dry-run']);
      const out = (line: string) => {
        shown.done();
        if (!args.json) process.stdout.write(`${line}\n`);
      };
      let tmuxPath = onPath('tmux');
      const advice = tmuxInstallLine({
        platform: process.platform,
        managers: PACKAGE_MANAGERS.filter((m) => onPath(m)),
      });
      if (tmuxPath) out(`tmux: ${tmuxPath}`);
      else if (advice.offerBrew && !dryRun && !args.json && process.stdin.isTTY) {
        if (await askYes('tmux is not installed. Install it now with `brew install tmux`? [y/N] ')) {
          spawnSync('brew', ['install', 'tmux'], { stdio: 'inherit' });
          tmuxPath = onPath('tmux');
        }
        if (!tmuxPath) out(`tmux: not found; install it: ${advice.line}`);
      } else out(`tmux: not found; install it: ${advice.line}`);

      shown.step('looking for agents on PATH');
      const found = agentsFound(home);
      const outcomes: InstallOutcome[] = found.wired.map((w) => installOne(home, w, dryRun));
      outcomes.forEach((o, i) => {
        out(outcomeLine(o, wiringWhat(found.wired[i]!)));
      });
      for (const n of found.notWired) {
        out(`${n.name}: not wired: ${n.why}`);
        if (n.agentId === 'A7') out(hermesEntry());
      }
      // the hooks: a message from the phone is known as remote, a finished turn is told
      shown.step(dryRun ? 'reading the hooks' : 'wiring the hooks (Codex is asked to trust them)');
      const hooks = await installHooks(home, dryRun);
      shown.done();
      for (const o of hooks.hooks) out(outcomeLine(o, o.what));
      for (const n of hooks.elsewhere) out(`${n.name}: hooks not wired: ${n.why}`);
      if (hooks.codexTrust) out(`Codex: hooks not trusted: ${hooks.codexTrust}`);
      if (found.wired.length === 0 && hooks.hooks.length === 0) out('no agent that svc wires was found on PATH');
      // the login service (spec 4.9): asked in a terminal, said otherwise
      const service = serviceFacts(home, svcMcpCommand());
      let loginService = service ? serviceState(service) : 'not available on this system';
      if (service && !isServiceInstalled(service)) {
        const config = readConfigFile(svcPaths(home).config);
        const baseUrl = config.status === 'ok' ? config.data.baseUrl : undefined;
        const offer = loginServiceOffer(baseUrl !== undefined && stageOf(baseUrl) === 'local');
        if (!dryRun && !args.json && process.stdin.isTTY && (await askYes(offer.question))) {
          const done = installService({ ...service, command: offer.command });
          for (const line of done.lines) out(line);
          loginService = serviceState(service);
        } else out(offer.line);
      } else out(`login service: ${loginService}`);
      const refused = [...outcomes, ...hooks.hooks].some((o) => o.result === 'refused');
      if (args.json)
        process.stdout.write(
          `${JSON.stringify(
            {
              dryRun,
              tmux: { path: tmuxPath, install: tmuxPath ? null : advice.line },
              agents: outcomes,
              notWired: found.notWired,
              hermesEntry: found.notWired.some((n) => n.agentId === 'A7') ? hermesEntry() : null,
              hooks: hooks.hooks,
              hooksNotWired: hooks.elsewhere,
              codexTrust: hooks.codexTrust,
              loginService,
            },
            null,
            2,
          )}\n`,
        );
      process.exitCode = refused || hooks.codexTrust || !tmuxPath ? 1 : 0;
    } catch (err) {
      fail(err); // wipes the progress line first
    }
  },
});
