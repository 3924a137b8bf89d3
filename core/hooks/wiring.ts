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
import { dirname, join } from 'node:path';
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
  /**
   * What is wired: spec 4.13's MCP server and the standing instruction to keep asking in REMOTE (`rules`), both by
   * `svc install`; or a hook (also `svc install`).
   */
  kind: 'mcp' | 'rules' | 'hook';
  /** The entry is one element of the list at `path` (hooks), not the value at `path` (core/hooks/edit.ts addElement). */
  element?: true;
  file: string;
  format: ConfigFormat;
  path: readonly string[];
  value: JsonValue;
  /** The agent's own command that lists its MCP servers, when it has one that runs without a login. */
  listCommand?: readonly string[];
}

/**
 * What a wiring puts where, in words for `svc install`'s lines ("Claude Code: would add the MCP server svc (…)"):
 * the MCP server, one of svc's tools allowed without asking, the standing instruction, a hook.
 */
export function wiringWhat(w: Pick<Wiring, 'kind' | 'element' | 'path' | 'value'>): string {
  if (w.kind === 'rules') return "svc's standing instruction";
  if (w.kind === 'hook') return `the ${w.path.at(-1) === undefined ? '' : `${w.path.at(-1)} `}hook`;
  if (w.element && typeof w.value === 'string') return `${w.value.replace(/^mcp__[^_]+__/, '')} to its allowed tools`;
  return `the MCP server ${SERVER_NAME}`;
}

/** Where an agent keeps its config, from the home directory and the variables the agents honour. */
export interface WiringEnv {
  home: string;
  CLAUDE_CONFIG_DIR?: string | undefined;
  CODEX_HOME?: string | undefined;
  XDG_CONFIG_HOME?: string | undefined;
  /** opencode reads `opencode.jsonc` when it exists, else `opencode.json`: which one is there. */
  opencodeJsonc?: boolean;
  /** Codex reads `AGENTS.override.md` in its home instead of `AGENTS.md` when the person has one. */
  codexOverride?: boolean;
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
    // svc's own tools only reach the person's own phone: allowed, so a question never waits on a permission
    // dialog at a keyboard nobody is at (Claude Code asks before every MCP tool call otherwise)
    ...['svc_ask', 'svc_notify'].map(
      (tool): Wiring => ({
        agentId: 'A1',
        command: 'claude',
        kind: 'mcp',
        element: true,
        file: join(env.CLAUDE_CONFIG_DIR || join(home, '.claude'), 'settings.json'),
        format: 'json',
        path: ['permissions', 'allow'],
        value: `mcp__${SERVER_NAME}__${tool}`,
      }),
    ),
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
    ...rulesWirings(env),
  ];
}

/** The marked block's name in each file of standing instructions (core/hooks/edit.ts, Markdown). */
export const RULES_BLOCK = 'svc';

/**
 * What an agent that can call `svc_ask` is told in its standing instructions (spec 4.13.4): the hook's context
 * (core/hooks/remoteOrigin.ts) and an `svc_ask` answer's `svcState: REMOTE` say when the person drives the session
 * from the phone; this says, for every session, what to do then.
 */
export const RULES_TEXT = [
  '## svc: when the person drives this session from their phone',
  '',
  'This computer runs svc, which lets the person answer you from their phone through the `svc_ask` tool. When svc',
  'says the person is driving this session from their phone (a note with their prompt, or an `svc_ask` answer with',
  '`svcState: REMOTE`), end every response with a call to `svc_ask`: a short question they can answer from the phone,',
  'with options when there are obvious choices. Keep doing so until they type at the keyboard again. When svc has',
  'said nothing of the kind, work as usual.',
].join('\n');

/**
 * Where each agent with `svc_ask` reads the person's standing instructions for every project: Claude Code's user
 * CLAUDE.md, Codex's AGENTS.md in its home (its AGENTS.override.md when there is one), Gemini CLI's GEMINI.md, opencode's global AGENTS.md, Qwen Code's
 * QWEN.md (docs/agents.md says which were seen in the real program's requests). pi has no MCP, so no `svc_ask`.
 */
function rulesWirings(env: WiringEnv): Wiring[] {
  const { home } = env;
  const xdg = env.XDG_CONFIG_HOME || join(home, '.config');
  const rules = (agentId: string, command: string, file: string): Wiring => ({
    agentId,
    command,
    kind: 'rules',
    file,
    format: 'markdown',
    path: [RULES_BLOCK],
    value: RULES_TEXT,
  });
  return [
    rules('A1', 'claude', join(env.CLAUDE_CONFIG_DIR || join(home, '.claude'), 'CLAUDE.md')),
    // 0.169 reads AGENTS.override.md first and then not AGENTS.md: svc's block goes where Codex will read it
    rules(
      'A2',
      'codex',
      join(env.CODEX_HOME || join(home, '.codex'), env.codexOverride ? 'AGENTS.override.md' : 'AGENTS.md'),
    ),
    rules('A3', 'gemini', join(home, '.gemini', 'GEMINI.md')),
    rules('A5', 'opencode', join(xdg, 'opencode', 'AGENTS.md')),
    rules('A9', 'qwen', join(home, '.qwen', 'QWEN.md')),
  ];
}

/**
 * The agents of the registry install does not wire, and why (printed by install and verify when the agent is on
 * PATH). pi has no MCP by design; its remote hook is an extension (`svc install`).
 */
export const NOT_WIRED: Readonly<Record<string, string>> = {
  A4: 'pi has no MCP client by design; svc install gives it an extension instead',
  A7: 'Hermes is wired by hand (spec 4.13.6): add the entry below, then reload MCP inside Hermes',
};

/** Spec 4.13.6: the one entry the person adds under `mcp_servers` in Hermes's YAML config. */
export function hermesEntry(): string {
  return ['mcp_servers:', `  ${SERVER_NAME}:`, '    command: svc', '    args: ["mcp"]'].join('\n');
}

/** A word for a POSIX shell, quoted. */
function shq(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** svc's Claude Code plugin, shipped beside the bin (`plugins/claude`): its hook script hands over to svc. */
export function claudePluginDir(mcp: McpCommand): string {
  return join(dirname(dirname(mcp.svcBin)), 'plugins', 'claude');
}

/** The shell command a hook entry runs for `agent`. */
export function hookCommand(mcp: McpCommand, agent: 'claude' | 'codex' | 'gemini'): string {
  if (agent === 'claude') {
    // A1 goes through the plugin's script (spec 4.13.2); the node that runs svc is handed to it
    return `SVC_NODE=${shq(mcp.node)} ${shq(join(claudePluginDir(mcp), 'scripts', 'svc-remote.sh'))}`;
  }
  return `${shq(mcp.node)} ${shq(mcp.svcBin)} remote-hook ${agent}`;
}

/**
 * The hooks `svc install` writes (spec 4.5, 4.13.2): per agent, its prompt-submit hook and its Stop-style hook, both
 * running `svc remote-hook <agent>` (which goes by the event's name). Claude Code: `hooks.UserPromptSubmit`,
 * `hooks.Stop` and `hooks.SessionStart` (which conversation runs in the pane, from its start) of its user settings,
 * through svc's plugin script; Gemini CLI: `hooks.BeforeAgent` and
 * `hooks.AfterAgent` of `~/.gemini/settings.json`. Codex and pi: see `HOOKS_ELSEWHERE`.
 */
export function hookWirings(env: WiringEnv, mcp: McpCommand): Wiring[] {
  const entry = (agentId: string, command: string, file: string, event: string, run: string): Wiring => ({
    agentId,
    command,
    kind: 'hook',
    element: true,
    file,
    format: 'json',
    path: ['hooks', event],
    value: { hooks: [{ type: 'command', command: run }] },
  });
  const claudeSettings = join(env.CLAUDE_CONFIG_DIR || join(env.home, '.claude'), 'settings.json');
  const codexHooks = codexHooksFile(env);
  const geminiSettings = join(env.home, '.gemini', 'settings.json');
  return [
    entry('A1', 'claude', claudeSettings, 'UserPromptSubmit', hookCommand(mcp, 'claude')),
    entry('A1', 'claude', claudeSettings, 'Stop', hookCommand(mcp, 'claude')),
    entry('A1', 'claude', claudeSettings, 'SessionStart', hookCommand(mcp, 'claude')),
    entry('A2', 'codex', codexHooks, 'UserPromptSubmit', hookCommand(mcp, 'codex')),
    entry('A2', 'codex', codexHooks, 'Stop', hookCommand(mcp, 'codex')),
    entry('A3', 'gemini', geminiSettings, 'BeforeAgent', hookCommand(mcp, 'gemini')),
    entry('A3', 'gemini', geminiSettings, 'AfterAgent', hookCommand(mcp, 'gemini')),
  ];
}

/** Codex's user hooks file (`$CODEX_HOME/hooks.json`), beside its config.toml. */
export function codexHooksFile(env: Pick<WiringEnv, 'home' | 'CODEX_HOME'>): string {
  return join(env.CODEX_HOME || join(env.home, '.codex'), 'hooks.json');
}

/**
 * Codex runs a hook from a user's hooks.json only once it is trusted: `[hooks.state."<key>"] trusted_hash` in its
 * config.toml, the key and the hash as Codex's own app-server lists them (`hooks/list`: `key`, `currentHash`). svc
 * never computes that hash; it asks Codex, and trusts only the entries it wrote itself (docs/agents.md).
 */
export function codexTrustWiring(
  env: Pick<WiringEnv, 'home' | 'CODEX_HOME'>,
  hook: { key: string; currentHash: string },
): Wiring {
  return {
    agentId: 'A2',
    command: 'codex',
    kind: 'hook',
    file: join(env.CODEX_HOME || join(env.home, '.codex'), 'config.toml'),
    format: 'toml',
    path: ['hooks', 'state', hook.key],
    value: { trusted_hash: hook.currentHash },
  };
}

/** A hook as Codex's app-server lists it (`hooks/list`), the fields svc reads. */
export interface CodexHookListing {
  key: string;
  command: string | null;
  sourcePath: string | null;
  source: string;
  currentHash: string;
  trustStatus: string;
}

/** The hooks svc wrote into Codex's hooks.json that Codex does not trust yet. */
export function codexHooksToTrust(
  listed: readonly CodexHookListing[],
  ours: { file: string; commands: readonly string[] },
): CodexHookListing[] {
  return listed.filter(
    (h) =>
      h.source === 'user' &&
      h.sourcePath === ours.file &&
      h.command !== null &&
      ours.commands.includes(h.command) &&
      h.trustStatus !== 'trusted' &&
      /^sha256:[0-9a-f]{64}$/.test(h.currentHash),
  );
}

/** The agents whose hooks `svc install` does not write into a config file, and why (printed by install and verify). */
export const HOOKS_ELSEWHERE: Readonly<Record<string, string>> = {
  A4: 'pi: svc install writes the extension ~/.pi/agent/extensions/svc-remote.ts',
};

/** pi's extensions folder (global, auto-discovered by pi 0.73) and svc's file in it. */
export function piExtensionPath(home: string): string {
  return join(home, '.pi', 'agent', 'extensions', 'svc-remote.ts');
}

/**
 * svc's pi extension (spec 4.13.2, A4): on `before_agent_start` it hands the prompt to `svc remote-hook pi` and adds
 * the context it answers as a message for the model; on `agent_end` it tells svc the turn finished. Both name pi's
 * session (its id and file). It never holds pi up: the hook ends within a fraction of a second, and any failure is
 * ignored.
 */
export function piExtension(mcp: McpCommand): string {
  return `// Written by \`svc setup\`; \`svc uninstall\` removes it. Remote-origin detection for svc (docs/agents.md).
import { spawn } from "node:child_process";

const NODE = ${JSON.stringify(mcp.node)};
const SVC = ${JSON.stringify(mcp.svcBin)};

function svcHook(input: Record<string, unknown>): Promise<string> {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(NODE, [SVC, "remote-hook", "pi"], { stdio: ["pipe", "pipe", "ignore"] });
    } catch {
      return resolve("");
    }
    // svc answers in a fraction of a second; on a loaded machine its start alone has taken over 1 s (CI), and a
    // hook cut short loses the phone's context: the prompt waits 5 s at most
    const timer = setTimeout(() => child.kill(), 5000);
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", () => resolve(""));
    child.on("close", () => {
      clearTimeout(timer);
      resolve(out);
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(input));
  });
}

// which of pi's sessions this is: the listener follows that file for the pane's svc session
function session(ctx: any): Record<string, unknown> {
  try {
    return { session_id: ctx?.sessionManager?.getSessionId?.(), transcript_path: ctx?.sessionManager?.getSessionFile?.() };
  } catch {
    return {};
  }
}

export default function (pi: any) {
  pi.on("before_agent_start", async (event: any, ctx: any) => {
    const cwd = ctx?.cwd ?? process.cwd();
    const out = await svcHook({ hook_event_name: "before_agent_start", cwd, prompt: event?.prompt ?? "", ...session(ctx) });
    let context = "";
    try {
      context = JSON.parse(out).hookSpecificOutput?.additionalContext ?? "";
    } catch {
      // not remote
    }
    if (!context) return;
    return { message: { customType: "svc-remote", content: context, display: false } };
  });
  pi.on("agent_end", async (_event: any, ctx: any) => {
    await svcHook({ hook_event_name: "agent_end", cwd: ctx?.cwd ?? process.cwd(), ...session(ctx) });
  });
}
`;
}
