#!/usr/bin/env node
/**
 * The `svc` command line. Commands load lazily so `svc --version` starts fast.
 */
import { defineCommand, runMain } from 'citty';
import { AGENTS, agentForSubcommand } from '../core/agents.js';
import { VERSION } from '../core/version.js';

const loadAgent = (subcommand: string) => async () => {
  const { agentCommand } = await import('./commands/agent.js');
  return agentCommand(agentForSubcommand(subcommand)!);
};

const main = defineCommand({
  meta: { name: 'svc', version: VERSION, description: 'Drive the coding agents on this computer from your phone.' },
  subCommands: {
    up: () => import('./commands/up.js').then((m) => m.default),
    login: () => import('./commands/login.js').then((m) => m.default),
    pair: () => import('./commands/pair.js').then((m) => m.default),
    listener: () => import('./commands/listener.js').then((m) => m.default),
    relay: () => import('./commands/relay/index.js').then((m) => m.default),
    sh: () => import('./commands/sh.js').then((m) => m.default),
    verify: () => import('./commands/verify.js').then((m) => m.default),
    worktree: () => import('./commands/worktree/index.js').then((m) => m.default),
    debug: () => import('./commands/debug/index.js').then((m) => m.default),
    // `agent` is a group (svc agent send), not an agent: no registry entry has that subcommand.
    agent: () => import('./commands/agentSend.js').then((m) => m.agentGroup),
    devices: () => import('./commands/devices.js').then((m) => m.default),
    mcp: () => import('./commands/mcp.js').then((m) => m.default),
    // `svc cc`, `svc codex`, …: one per registry entry (spec 4.4)
    ...Object.fromEntries(AGENTS.map((a) => [a.subcommand, loadAgent(a.subcommand)])),
  },
});

const wrapped = process.argv[2] ? agentForSubcommand(process.argv[2]) : undefined;
if (process.argv[2] === '--version' || process.argv[2] === '-v') {
  process.stdout.write(`${VERSION}\n`);
} else if (wrapped) {
  // Not through citty: it would take a `--help` meant for the agent (`svc cc -- --help`) as its own.
  const { runAgentWrapper } = await import('./commands/agent.js');
  process.exitCode = await runAgentWrapper(wrapped, process.argv.slice(3));
} else {
  runMain(main);
}
