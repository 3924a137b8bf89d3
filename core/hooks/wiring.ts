/**
 * What `svc install` wires into each agent, as data (spec 4.5, 4.13): the agent's own config file, the key path of
 * the MCP server entry there, and the entry. Checked against the real programs where they are installed here
 * (`test/agents`: Claude Code, Codex, Gemini CLI, pi) by their own `mcp list` (test/integration/install.test.ts);
 * the others from their documentation (docs/agents.md says which).
 *
 * The entry runs svc's MCP server as `<node> <svc bin> mcp`, both absolute: an agent started from a desktop
 * launcher, or under another Node version manager's PATH, still finds them. Hermes (A7) is not wired (spec
 * 4.13.6): `hermesEntry` is the one entry the person adds.
 */
import { join } from 'node:path';
import type { ConfigFormat, JsonValue } from './edit.js';

/** How svc's MCP server is started. */
export interface McpCommand {
  /** Absolute path of the Node that runs svc. */
  node: string;
  /** Absolute path of svc's bin script. */
  svcBin: string;
}

export interface Wiring {
  /** Registry id (core/agents/registry.ts). */
  agentId: string;
  /** The agent's command, looked up on PATH to decide whether it is there. */
  command: string;
  /** What is wired: spec 4.13's MCP server (hooks and rules come with `svc setup`). */
  kind: 'mcp';
  file: string;
  format: ConfigFormat;
  path: readonly string[];
  value: JsonValue;
  /** The agent's own command that lists its MCP servers, when it has one that runs without a login. */
  listCommand?: readonly string[];
}

/** Where an agent keeps its config, from the home directory and the variables the agents honour. */
export interface WiringEnv {
  home: string;
  CLAUDE_CONFIG_DIR?: string | undefined;
  CODEX_HOME?: string | undefined;
  XDG_CONFIG_HOME?: string | undefined;
  /** opencode reads `opencode.jsonc` when it exists, else `opencode.json`: which one is there. */
  opencodeJsonc?: boolean;
}

/** The MCP server's key in every agent's table of servers. */
export const SERVER_NAME = 'svc';

export function wirings(env: WiringEnv, mcp: McpCommand): Wiring[] {
  const { home } = env;
  const args = [mcp.svcBin, 'mcp'];
  const plain = { command: mcp.node, args };
  const xdg = env.XDG_CONFIG_HOME || join(home, '.config');
  /** The common layout: `{ "mcpServers": { "svc": { command, args } } }` in a JSON file. */
  const serversJson = (agentId: string, command: string, file: string): Wiring => ({
    agentId,
    command,
    kind: 'mcp',
    file,
    format: 'json',
    path: ['mcpServers', SERVER_NAME],
    value: plain,
  });
  return [
    {
      // `claude mcp add --scope user` writes this: the top-level `mcpServers` of ~/.claude.json
      agentId: 'A1',
      command: 'claude',
      kind: 'mcp',
      file: join(env.CLAUDE_CONFIG_DIR || home, '.claude.json'),
      format: 'json',
      path: ['mcpServers', SERVER_NAME],
      value: { type: 'stdio', command: mcp.node, args, env: {} },
      listCommand: ['claude', 'mcp', 'list'],
    },
    {
      agentId: 'A2',
      command: 'codex',
      kind: 'mcp',
      file: join(env.CODEX_HOME || join(home, '.codex'), 'config.toml'),
      format: 'toml',
      path: ['mcp_servers', SERVER_NAME],
      value: plain,
      listCommand: ['codex', 'mcp', 'list'],
    },
    { ...serversJson('A3', 'gemini', join(home, '.gemini', 'settings.json')), listCommand: ['gemini', 'mcp', 'list'] },
    {
      agentId: 'A5',
      command: 'opencode',
      kind: 'mcp',
      file: join(xdg, 'opencode', env.opencodeJsonc ? 'opencode.jsonc' : 'opencode.json'),
      format: 'json',
      path: ['mcp', SERVER_NAME],
      value: { type: 'local', command: [mcp.node, ...args], enabled: true },
    },
    serversJson('A6', 'cursor-agent', join(home, '.cursor', 'mcp.json')),
    // Qwen Code is a fork of Gemini CLI: the same settings layout in its own folder
    serversJson('A9', 'qwen', join(home, '.qwen', 'settings.json')),
  ];
}

/**
 * The agents of the registry install does not wire, and why (printed by install and verify when the agent is on
 * PATH). pi has no MCP by design; its remote hook is an extension (`svc setup`).
 */
export const NOT_WIRED: Readonly<Record<string, string>> = {
  A4: 'pi has no MCP client by design; svc setup installs its extension',
  A7: 'Hermes is wired by hand (spec 4.13.6): add the entry below, then reload MCP inside Hermes',
};

/** Spec 4.13.6: the one entry the person adds under `mcp_servers` in Hermes's YAML config. */
export function hermesEntry(): string {
  return ['mcp_servers:', `  ${SERVER_NAME}:`, '    command: svc', '    args: ["mcp"]'].join('\n');
}
