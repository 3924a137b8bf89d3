/**
 * The decisions of `svc install` / `uninstall` / `verify` that need no IO: how tmux is installed on this system
 * (spec 4.5), and the lines printed for what happened to each agent's config.
 */

/** What the command saw of the system. */
export interface SystemFacts {
  platform: string;
  /** Package managers found on PATH (`brew`, `apt-get`, `dnf`, `pacman`, `zypper`, `apk`, `port`). */
  managers: readonly string[];
}

/** The one line that installs tmux here; `offerBrew` on macOS with Homebrew (install offers to run it). */
export function tmuxInstallLine(facts: SystemFacts): { line: string; offerBrew: boolean } {
  const has = (m: string) => facts.managers.includes(m);
  if (facts.platform === 'darwin') {
    if (has('brew')) return { line: 'brew install tmux', offerBrew: true };
    if (has('port')) return { line: 'sudo port install tmux', offerBrew: false };
    return { line: 'install Homebrew (https://brew.sh), then: brew install tmux', offerBrew: false };
  }
  if (has('apt-get')) return { line: 'sudo apt-get install tmux', offerBrew: false };
  if (has('dnf')) return { line: 'sudo dnf install tmux', offerBrew: false };
  if (has('pacman')) return { line: 'sudo pacman -S tmux', offerBrew: false };
  if (has('zypper')) return { line: 'sudo zypper install tmux', offerBrew: false };
  if (has('apk')) return { line: 'sudo apk add tmux', offerBrew: false };
  if (has('brew')) return { line: 'brew install tmux', offerBrew: false };
  return { line: "install tmux with your system's package manager", offerBrew: false };
}

export const PACKAGE_MANAGERS = ['brew', 'port', 'apt-get', 'dnf', 'pacman', 'zypper', 'apk'] as const;

/** Said by install when it does not ask (no terminal, --json, --dry-run) and the service is not installed. */
/**
 * What `svc install` offers for the login service: `svc up` when this computer is logged in to a relay on loopback
 * (its own `svc up`: the relay must start too, and `svc up` runs the listener), else the listener alone.
 */
export function loginServiceOffer(localRelay: boolean): { line: string; question: string; command: string[] } {
  return localRelay
    ? {
        line: 'login service: not installed; to start svc up (relay, listener, web app) at login run: svc up --install-service',
        question: 'Start svc up (the relay and the listener) at login (login service)? [y/N] ',
        command: ['up'],
      }
    : {
        line: 'login service: not installed; to start the listener at login run: svc listener --install-service',
        question: 'Start the listener at login (login service)? [y/N] ',
        command: ['listener'],
      };
}

/** One word for an agent's hooks, from the state of each entry `svc install` writes for it (and why, when none). */
export function hooksWord(states: readonly string[], elsewhere?: string): string {
  if (states.length === 0) return elsewhere ? `not wired (${elsewhere})` : 'none that svc uses';
  if (states.every((s) => s === 'wired')) return 'wired';
  if (states.includes('unreadable')) return 'unreadable';
  if (states.some((s) => s === 'wired')) return 'partly wired: run svc install';
  return 'not wired: run svc install';
}

/**
 * Codex runs only the hooks it trusts (docs/agents.md "Codex trust"): what `svc verify` says of Codex's hooks once
 * they are wired, from Codex's own list (`untrusted`: how many of svc's entries it does not trust, or why the list
 * could not be had).
 */
export function codexHooksWord(word: string, untrusted: number | { unknown: string }): string {
  if (word !== 'wired') return word;
  if (typeof untrusted === 'object') return `wired (whether Codex trusts them is unknown: ${untrusted.unknown})`;
  return untrusted === 0 ? 'wired' : 'wired, but Codex does not trust them (it skips them): run svc install';
}

/** One agent found on PATH, as `svc verify` reports it. */
export interface AgentWiringRow {
  agentId: string;
  name: string;
  /** `wired`, `not wired` (run svc install), `other entry` (an `svc` entry svc did not write), `unreadable`, or
   * `not wired by install` for the agents install leaves alone. */
  mcp: 'wired' | 'not wired' | 'other entry' | 'unreadable' | 'not wired by install';
  file: string | null;
  /** Why install leaves it alone. */
  note?: string;
  /** What `svc install` wired of the agent's hooks (`hooksWord`). */
  hooks: string;
}

export function agentWiringLines(rows: readonly AgentWiringRow[]): string[] {
  if (rows.length === 0) return ['agents: none that svc knows found on PATH'];
  return rows.map((r) => {
    const what =
      r.mcp === 'wired'
        ? `MCP wired in ${r.file}`
        : r.mcp === 'not wired'
          ? `MCP not wired (${r.file}): run svc install`
          : r.mcp === 'other entry'
            ? `MCP: ${r.file} has an "svc" entry svc did not write`
            : r.mcp === 'unreadable'
              ? `MCP: ${r.file} cannot be read`
              : `MCP not wired: ${r.note}`;
    return `agent ${r.name}: ${what}; hooks: ${r.hooks}`;
  });
}
