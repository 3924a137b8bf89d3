/**
 * `svc <agent> [--detach] [--label x] [--wt branch] [agent args…]` (spec 4.4): one command per registry entry.
 * Flags are read from the front only, by core/sessions/launch.ts `parseWrapperArgs`, never by citty, so the agent gets its
 * arguments exactly as typed (cli/main.ts sends `svc <agent> …` here before citty sees `--help` anywhere).
 */
import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { runWrapper } from '../../actors/sessions/wrapper.js';
import type { AgentSpec } from '../../core/agents/registry.js';
import { parseWrapperArgs } from '../../core/sessions/launch.js';
import { fail } from '../output.js';

/** `name`: the command as typed (`cc`, or the program's own name: `claude`). */
export function agentUsage(agent: AgentSpec, name = agent.subcommand): string {
  const cmd = `svc ${name}`;
  return [
    `Run ${agent.name} (${agent.command}) in a tmux session named for this project, reachable from your phone.`,
    '',
    `Usage: ${cmd} [--detach] [--label <x>] [--wt <branch>] [--] [${agent.command} arguments…]`,
    '',
    '  --detach        create the session without attaching and print its name (no terminal needed)',
    '  --label <x>     name the session svc-<project>-<x> instead of svc-<project>, -2, -3, …',
    '  --wt <branch>   run in the git worktree <repo>-wt-<branch> beside this checkout (session svc-<repo>-wt-<branch>)',
    '',
    `Wrapper flags are read from the front; everything after them (or after --) goes to ${agent.command} as is.`,
    `A detached session of this project running ${agent.name} is reattached instead of starting another.`,
    `Inside tmux (without --detach) ${agent.command} runs in the current pane, where the listener cannot reach it.`,
    '',
  ].join('\n');
}

/** The whole command; resolves with the exit code. */
export async function runAgentWrapper(
  agent: AgentSpec,
  rawArgs: readonly string[],
  name = agent.subcommand,
): Promise<number> {
  const parsed = parseWrapperArgs(rawArgs);
  if ('error' in parsed) {
    fail(new Error(`${parsed.error} (see \`svc ${name} --help\`)`));
    return 1;
  }
  if (parsed.help) {
    process.stdout.write(agentUsage(agent, name));
    return 0;
  }
  return runWrapper({
    target: { kind: 'agent', agent, args: parsed.agentArgs },
    flags: parsed.flags,
    wt: parsed.wt,
    env: process.env,
    cwd: process.cwd(),
    home: homedir(),
    platform: process.platform,
    tty: Boolean(process.stdin.isTTY),
    uid: process.getuid?.() ?? 0,
    stdout: (line) => process.stdout.write(`${line}\n`),
    stderr: (line) => process.stderr.write(`${line}\n`),
  });
}

/** For `svc --help` (the list of commands); running it goes through `runAgentWrapper` with the raw arguments. */
export function agentCommand(agent: AgentSpec) {
  return defineCommand({
    meta: {
      name: agent.subcommand,
      description: `${agent.name} in a named tmux session: [--detach] [--label x] [--wt branch] [${agent.command} args…]`,
    },
    async run({ rawArgs }) {
      process.exitCode = await runAgentWrapper(agent, rawArgs);
    },
  });
}
