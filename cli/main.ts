#!/usr/bin/env node
/**
 * The `svc` command line. `svc --help` and `svc --version` load only the table of commands (cli/commands.ts);
 * cli/run.ts runs the tree (unknown commands and flags, --help and --version at every level).
 */
import { agentForSubcommand } from '../core/agents/registry.js';
import { ROOT } from './commands.js';
import { runCli } from './run.js';

// The reader went away (`svc schedule | head -1`): the rest of the output has nowhere to go. End quietly, as the
// tools people pipe do, never with a stack trace of an unhandled EPIPE. A command that watches its own output (the
// listener stops cleanly: actors/daemon/logger.ts watchStdio) is left to do so.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (stream.listenerCount('error') > 1) return;
    if (error.code !== 'EPIPE') throw error;
    // the code the command set stands (a failed `svc verify | head -1` still fails a pipefail script)
    process.exit(process.exitCode ?? 0);
  });

const wrapped = process.argv[2] ? agentForSubcommand(process.argv[2]) : undefined;
if (wrapped) {
  // Not through the table: a `--help` meant for the agent (`svc cc -- --help`) must reach it.
  const { runAgentWrapper } = await import('./commands/agent.js');
  process.exitCode = await runAgentWrapper(wrapped, process.argv.slice(3), process.argv[2]);
} else {
  process.exitCode = await runCli(ROOT, process.argv.slice(2));
}
