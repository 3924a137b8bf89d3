/**
 * The top-level commands with their one-line descriptions, so `svc --help` loads nothing else; a command's module
 * loads when it runs or shows its own help (cli/run.ts).
 */
import { AGENTS } from '../core/agents/registry.js';
import type { CommandTable } from './run.js';

/** A command listed with its description; its module is imported only by `load`. */
const entry = <M extends Record<string, unknown>>(
  description: string,
  importer: () => Promise<M>,
  name: keyof M = 'default',
) => ({ description, load: async () => (await importer())[name] as never });

/** Each description is the command's own `meta.description` (test/unit/cli/commandLine.test.ts keeps them equal). */
export const ROOT: CommandTable = {
  description: 'Drive the coding agents on this computer from your phone.',
  start: ['up', 'cc', 'pair', 'verify'],
  advanced: ['listener', 'remote-hook', 'mcp', 'debug', 'agent'],
  commands: {
    up: entry(
      'Everything on this computer: a local relay (embedded SQLite), an account, the listener, the web app',
      () => import('./commands/up.js'),
    ),
    login: entry(
      'Register this computer with a relay and save the key in ~/.svc/config.json',
      () => import('./commands/login.js'),
    ),
    pair: entry(
      'Print a one-time link (and QR code) that pairs a phone with this account',
      () => import('./commands/pair.js'),
    ),
    listener: entry(
      'Run the listener in the foreground: relay link, inventory, injection',
      () => import('./commands/listener.js'),
    ),
    relay: entry('Run a relay server and manage its accounts and API keys', () => import('./commands/relay/index.js')),
    sh: entry(
      'Your login shell in the session svc-<project>-sh, reachable from your phone',
      () => import('./commands/sh.js'),
    ),
    verify: entry(
      'Check tmux, login, listener, service, relay URL and phones, and where each came from',
      () => import('./commands/verify.js'),
    ),
    install: entry(
      'Wire svc into the agents on this computer: MCP server, standing instruction, hooks; checks tmux',
      () => import('./commands/install.js'),
    ),
    uninstall: entry(
      'Take out of the agents’ configs exactly what svc install added',
      () => import('./commands/uninstall.js'),
    ),
    // the hooks had a command of their own once; `svc install` does them now, and `svc setup` is the same command
    setup: {
      ...entry(
        'Wire svc into the agents on this computer: MCP server, standing instruction, hooks; checks tmux',
        () => import('./commands/install.js'),
      ),
      hidden: true,
    },
    'remote-hook': entry(
      'Hook entry for remote-origin detection: svc remote-hook claude|codex|gemini|pi',
      () => import('./commands/remoteHook.js'),
    ),
    mute: entry(
      'Never flag prompts in this project (or --all) as sent from the phone; --list shows what is muted',
      () => import('./commands/mute.js'),
      'muteCommand',
    ),
    unmute: entry(
      'Flag prompts from the phone again in this project (or --all)',
      () => import('./commands/mute.js'),
      'unmuteCommand',
    ),
    worktree: entry(
      'List the worktrees made by --wt and what holds each',
      () => import('./commands/worktree/index.js'),
    ),
    schedule: entry(
      'List scheduled agent sessions, their next run and last result; add and rm change them',
      () => import('./commands/schedule.js'),
    ),
    'file-view': entry(
      'Turn file view from the phone off or on, and print the last 50 reads',
      () => import('./commands/fileView.js'),
    ),
    'new-session': entry(
      'Allow or refuse starting agents from the phone on this computer (on by default)',
      () => import('./commands/newSession.js'),
    ),
    debug: entry(
      'Look inside the running listener: its actors, their states, what they do',
      () => import('./commands/debug/index.js'),
    ),
    // `agent` is a group (svc agent send), not an agent: no registry entry has that subcommand.
    agent: entry('Talk to agent sessions: svc agent send', () => import('./commands/agentSend.js'), 'agentGroup'),
    devices: entry('The account’s devices: pinned, verified, safety codes', () => import('./commands/devices.js')),
    mcp: entry(
      'MCP server on stdio for agents: svc_ask and svc_notify reach your phone',
      () => import('./commands/mcp.js'),
    ),
    // `svc cc`, `svc codex`, …: one per registry entry (spec 4.4); run below, not through the table. Each is also
    // there under its program's own name when that differs (`svc claude` is `svc cc`), not listed in --help.
    ...Object.fromEntries(
      AGENTS.flatMap((a) => {
        const command = {
          description: `${a.name} in a named tmux session: [--detach] [--label x] [--wt branch] [${a.command} args…]`,
          load: async () => (await import('./commands/agent.js')).agentCommand(a),
        };
        return a.command === a.subcommand
          ? [[a.subcommand, command]]
          : [
              [a.subcommand, command],
              [a.command, { ...command, hidden: true }],
            ];
      }),
    ),
  },
};
