/** Which agents are on PATH, and the wiring of each for this home and this svc (IO around core/hooks/wiring.ts). */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AGENTS } from '../../core/agents/registry.js';
import {
  HOOKS_ELSEWHERE,
  hookWirings,
  type McpCommand,
  NOT_WIRED,
  piExtension,
  piExtensionPath,
  type Wiring,
  wirings,
} from '../../core/hooks/wiring.js';
import { defaultEntry } from '../daemon/daemon.js';
import { onPath } from '../which.js';

export interface AgentsFound {
  /** Agents on PATH that install wires. */
  wired: Wiring[];
  /** Agents on PATH that install does not wire, with why. */
  notWired: { agentId: string; name: string; why: string }[];
}

export function svcMcpCommand(): McpCommand {
  return { node: process.execPath, svcBin: defaultEntry() };
}

export function agentsFound(home: string, env: NodeJS.ProcessEnv = process.env): AgentsFound {
  const xdg = env.XDG_CONFIG_HOME || join(home, '.config');
  const all = wirings(
    {
      home,
      CLAUDE_CONFIG_DIR: env.CLAUDE_CONFIG_DIR,
      CODEX_HOME: env.CODEX_HOME,
      XDG_CONFIG_HOME: env.XDG_CONFIG_HOME,
      opencodeJsonc: existsSync(join(xdg, 'opencode', 'opencode.jsonc')),
      codexOverride: existsSync(join(env.CODEX_HOME || join(home, '.codex'), 'AGENTS.override.md')),
    },
    svcMcpCommand(),
  );
  const found = AGENTS.filter((a) => onPath(a.command, env.PATH));
  return {
    wired: all.filter((w) => found.some((a) => a.id === w.agentId)),
    notWired: found
      .filter((a) => !all.some((w) => w.agentId === a.id))
      .map((a) => ({ agentId: a.id, name: a.name, why: NOT_WIRED[a.id] ?? 'no config svc knows how to wire yet' })),
  };
}

/** The hooks `svc install` writes for the agents on PATH: hook entries, and pi's extension file. */
export interface HooksFound {
  entries: Wiring[];
  files: { agentId: string; file: string; content: string }[];
  /** Agents on PATH whose hooks are not written, with why. */
  elsewhere: { agentId: string; name: string; why: string }[];
}

export function hooksFound(home: string, env: NodeJS.ProcessEnv = process.env): HooksFound {
  const mcp = svcMcpCommand();
  const all = hookWirings({ home, CLAUDE_CONFIG_DIR: env.CLAUDE_CONFIG_DIR, CODEX_HOME: env.CODEX_HOME }, mcp);
  const found = AGENTS.filter((a) => onPath(a.command, env.PATH));
  const has = (id: string) => found.some((a) => a.id === id);
  return {
    entries: all.filter((w) => has(w.agentId)),
    files: has('A4') ? [{ agentId: 'A4', file: piExtensionPath(home), content: piExtension(mcp) }] : [],
    elsewhere: found
      .filter((a) => HOOKS_ELSEWHERE[a.id] && !all.some((w) => w.agentId === a.id) && a.id !== 'A4')
      .map((a) => ({ agentId: a.id, name: a.name, why: HOOKS_ELSEWHERE[a.id] ?? '' })),
  };
}
