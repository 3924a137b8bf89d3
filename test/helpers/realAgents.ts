/**
 * The REAL agent programs (pinned in test/agents/package.json, installed by test/agents/ensure.mjs), set up to run
 * against the fake model (test/fakes/fakeModel.ts) with no network, no login and no onboarding: per agent, the
 * config its HOME needs and the environment its command needs, and what its screen shows when it is ready, works,
 * or asks to approve a command. Used by the screen capture (test/fixtures/capture/) and the integration tests that
 * drive the real programs. docs/agents.md says where each setting comes from.
 */

import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './tmux.js';

/**
 * Where the agents' programs are: test/agents/node_modules/.bin, or `SVC_AGENTS_BIN`. From this file in the source
 * tree (vitest) or compiled into dist/test/helpers (the benchmarks), the same folder.
 */
const HERE = dirname(fileURLToPath(import.meta.url));
const AGENT_BINS = [
  resolve(HERE, '../agents/node_modules/.bin'),
  resolve(HERE, '../../../test/agents/node_modules/.bin'),
];
export const AGENTS_BIN = process.env.SVC_AGENTS_BIN ?? AGENT_BINS.find((dir) => existsSync(dir)) ?? AGENT_BINS[0]!;

/** What an agent's setup writes into: its HOME, its project (a git repository), and the fake model's URL. */
export interface AgentPlace {
  home: string;
  proj: string;
  model: string;
}

export interface RealAgent {
  /** The registry id (core/agents/registry.ts). */
  id: string;
  /** Its program's name in AGENTS_BIN. */
  program: string;
  /** Writes the agent's config under `home`; returns the environment its command needs. */
  setup(place: AgentPlace): Record<string, string>;
  args?: string[];
  /** The screen is ready for a prompt (after start, and after each reply). */
  ready: RegExp;
  /** A working cue. */
  working: RegExp;
  /** Its approval dialog; absent when it has none. */
  approval?: RegExp;
  /** Keys that dismiss the approval dialog without approving. */
  decline?: string[];
}

const write = (path: string, text: string) => {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
};

export const CLAUDE_CODE: RealAgent = {
  id: 'A1',
  program: 'claude',
  setup({ home, proj, model }) {
    const key = 'sk-ant-fake-key-0123456789abcdefghij';
    write(
      join(home, '.claude.json'),
      JSON.stringify({
        hasCompletedOnboarding: true,
        theme: 'dark',
        customApiKeyResponses: { approved: [key.slice(-20)], rejected: [] },
        projects: { [proj]: { hasTrustDialogAccepted: true, allowedTools: [] } },
      }),
    );
    return {
      ANTHROPIC_BASE_URL: model,
      ANTHROPIC_API_KEY: key,
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    };
  },
  ready: /\? for shortcuts/,
  working: /esc to interrupt/,
  approval: /Do you want to proceed\?/,
  decline: ['Escape'],
};

export const CODEX: RealAgent = {
  id: 'A2',
  program: 'codex',
  setup({ home, proj, model }) {
    write(
      join(home, '.codex/config.toml'),
      [
        'model = "gpt-5-codex"',
        'model_provider = "fake"',
        'approval_policy = "on-request"',
        'sandbox_mode = "read-only"',
        '[model_providers.fake]',
        'name = "Fake"',
        `base_url = "${model}/v1"`,
        'env_key = "FAKE_OPENAI_KEY"',
        'wire_api = "responses"',
        `[projects."${proj}"]`,
        'trust_level = "trusted"',
        '',
      ].join('\n'),
    );
    return { FAKE_OPENAI_KEY: 'fake' };
  },
  ready: /\? for shortcuts/,
  working: /esc to interrupt/,
  approval: /Would you like to run the following command\?/,
  decline: ['Escape'],
};

export const GEMINI_CLI: RealAgent = {
  id: 'A3',
  program: 'gemini',
  setup({ home, model }) {
    write(
      join(home, '.gemini/settings.json'),
      JSON.stringify({
        security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
        ui: { theme: 'Default' },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
        privacy: { usageStatisticsEnabled: false },
        ide: { enabled: false, hasSeenNudge: true },
      }),
    );
    return { GEMINI_API_KEY: 'fake-gemini-key', GOOGLE_GEMINI_BASE_URL: model };
  },
  ready: /Type your message/,
  working: /esc to cancel/,
  approval: /Allow execution of/,
  decline: ['Escape'],
};

export const PI: RealAgent = {
  id: 'A4',
  program: 'pi',
  setup({ home, model }) {
    write(
      join(home, '.pi/agent/models.json'),
      JSON.stringify({
        providers: {
          fake: {
            baseUrl: `${model}/v1`,
            api: 'openai-completions',
            apiKey: 'fake',
            compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
            models: [{ id: 'fake-model', name: 'Fake Model', reasoning: false }],
          },
        },
      }),
    );
    write(
      join(home, '.pi/agent/settings.json'),
      JSON.stringify({ defaultProvider: 'fake', defaultModel: 'fake-model' }),
    );
    return {};
  },
  ready: /fake-model\s*$/m,
  working: /Working\.\.\./,
};

export const OPENCODE: RealAgent = {
  id: 'A5',
  program: 'opencode',
  setup({ home, model }) {
    write(
      join(home, '.config/opencode/opencode.json'),
      JSON.stringify({
        model: 'anthropic/claude-sonnet-4-5',
        small_model: 'anthropic/claude-sonnet-4-5',
        autoupdate: false,
        share: 'disabled',
        permission: { bash: 'ask', edit: 'ask' },
        provider: { anthropic: { options: { baseURL: `${model}/v1`, apiKey: 'fake-anthropic-key' } } },
      }),
    );
    return { OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1' };
  },
  ready: /ctrl\+p commands/,
  working: /esc interrupt/,
  approval: /Permission required|Allow once|△/,
  decline: ['Escape'],
};

export const QWEN_CODE: RealAgent = {
  id: 'A9',
  program: 'qwen',
  setup({ home, model }) {
    write(
      join(home, '.qwen/settings.json'),
      JSON.stringify({
        general: { enableAutoUpdate: false },
        privacy: { usageStatisticsEnabled: false },
        // its default is `auto` (a model classifies each tool call); `default` asks before a shell command
        tools: { approvalMode: 'default', useRipgrep: false },
        ui: { autoModeAcknowledged: true },
      }),
    );
    // all three set: the OpenAI-compatible provider is chosen without the "Select Authentication Method" dialog
    return { OPENAI_API_KEY: 'fake-openai-key', OPENAI_BASE_URL: `${model}/v1`, OPENAI_MODEL: 'fake-model' };
  },
  // the approval-mode line alone; while it works the same line starts with `Enter to steer · Ctrl+Q to queue · `
  ready: /^\s+⏸ Ask permissions \(shift \+ tab to cycle\)$/m,
  working: /esc to cancel\)/,
  approval: /Allow execution of/,
  decline: ['Escape'],
};

/** The agents whose approval dialog the listener must never answer (pi has none of its own). */
export const AGENTS_WITH_APPROVAL: readonly RealAgent[] = [CLAUDE_CODE, CODEX, GEMINI_CLI];

/** The program's path; it is there when test/agents/ensure.mjs ran. */
export const agentProgram = (agent: RealAgent): string => join(AGENTS_BIN, agent.program);
export const agentInstalled = (agent: RealAgent): boolean => existsSync(agentProgram(agent));

/** A fresh HOME and git project for one agent, its config written there for the fake model at `model`. */
export interface PreparedAgent extends AgentPlace {
  /** The environment for its command: `HOME` and what its setup returned. */
  env: Record<string, string>;
  /** Its argv: the program's absolute path (so tmux's start command names it) and its arguments. */
  argv: string[];
  /** Removes HOME and project (the program may still be writing there for a moment after its session ended). */
  cleanup(): Promise<void>;
}

/**
 * Kill every process whose command line names something under `dir`, or that runs in it (Linux: read from /proc).
 * Gemini CLI relaunches itself as a child that ignores the hang-up of its tmux pane: it outlives its session, in
 * the project it ran in.
 */
export function killProcessesUnder(dir: string): void {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      const cwd = (() => {
        try {
          return readlinkSync(`/proc/${pid}/cwd`);
        } catch {
          return '';
        }
      })();
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir) || cwd.startsWith(dir))
        process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone already, or not ours
    }
  }
}

export function prepareAgent(agent: RealAgent, model: string): PreparedAgent {
  const work = mkdtempSync(join(tmpdir(), `svc-agent-${agent.id}-`));
  const home = join(work, 'home');
  const proj = join(work, 'proj');
  mkdirSync(home, { recursive: true });
  mkdirSync(proj, { recursive: true });
  execFileSync('git', ['init', '-q', proj]);
  // A person's terminal, not a CI job: `.ci/run` runs with CI=true and DEBIAN_FRONTEND=noninteractive, and an agent
  // that sees them may start differently (Gemini CLI's session ended at once under CI). Emptied for the agent.
  const env = { HOME: home, CI: '', DEBIAN_FRONTEND: '', ...agent.setup({ home, proj, model }) };
  return {
    home,
    proj,
    model,
    env,
    argv: [agentProgram(agent), ...(agent.args ?? [])],
    cleanup: async () => {
      // Codex 0.169 starts a background app-server of its own from this HOME (~/.codex/packages/app-server-daemon)
      // that outlives the session: it goes with the HOME
      killProcessesUnder(work);
      for (let i = 0; ; i++) {
        try {
          rmSync(work, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
          return;
        } catch (e) {
          if (i >= 20) throw e;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    },
  };
}

/**
 * Until the agent is ready for a prompt: its ready cue, no approval dialog, no startup still running (Codex shows its
 * prompt before its startup is done), and the screen unchanged for `quietMs`.
 */
export async function waitSettled(
  agent: RealAgent,
  screen: () => Promise<string>,
  opts: { quietMs?: number; timeoutMs?: number; what?: string } = {},
): Promise<string> {
  const { quietMs = 2000, timeoutMs = 120_000 } = opts;
  let last = '';
  let since = Date.now();
  return waitFor(
    async () => {
      const s = await screen();
      if (s !== last) [last, since] = [s, Date.now()];
      const busy = agent.approval?.test(s) || /Waiting for startup|Starting MCP/.test(s);
      return agent.ready.test(s) && !busy && Date.now() - since >= quietMs ? s : undefined;
    },
    { timeoutMs, intervalMs: 250, what: `${agent.id} ${opts.what ?? 'ready'}` },
  );
}
