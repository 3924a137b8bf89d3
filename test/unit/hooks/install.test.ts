import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { AGENTS } from '../../../core/agents/registry.js';
import { agentWiringLines, codexHooksWord, tmuxInstallLine } from '../../../core/hooks/install.js';
import { hermesEntry, NOT_WIRED, wirings, wiringWhat } from '../../../core/hooks/wiring.js';

describe('tmuxInstallLine', () => {
  it.each([
    ['darwin', ['brew'], 'brew install tmux', true],
    ['darwin', ['port'], 'sudo port install tmux', false],
    ['darwin', [], 'install Homebrew (https://brew.sh), then: brew install tmux', false],
    ['linux', ['apt-get', 'brew'], 'sudo apt-get install tmux', false],
    ['linux', ['dnf'], 'sudo dnf install tmux', false],
    ['linux', ['pacman'], 'sudo pacman -S tmux', false],
    ['linux', ['apk'], 'sudo apk add tmux', false],
    ['linux', ['brew'], 'brew install tmux', false],
    ['freebsd', [], "install tmux with your system's package manager", false],
  ])('%s with %j: %s', (platform, managers, line, offerBrew) => {
    expect(tmuxInstallLine({ platform, managers })).toEqual({ line, offerBrew });
  });
});

describe('wirings', () => {
  const mcp = { node: '/n/node', svcBin: '/s/svc.js' };
  it('follows the variables the agents honour', () => {
    const w = wirings(
      { home: '/h', CLAUDE_CONFIG_DIR: '/c', CODEX_HOME: '/x', XDG_CONFIG_HOME: '/g', opencodeJsonc: true },
      mcp,
    );
    const file = (id: string) => w.find((x) => x.agentId === id)?.file;
    expect([file('A1'), file('A2'), file('A3'), file('A5'), file('A6'), file('A9')]).toEqual([
      '/c/.claude.json',
      '/x/config.toml',
      '/h/.gemini/settings.json',
      '/g/opencode/opencode.jsonc',
      '/h/.cursor/mcp.json',
      '/h/.qwen/settings.json',
    ]);
    const d = wirings({ home: '/h' }, mcp);
    expect(d.find((x) => x.agentId === 'A1')?.file).toBe('/h/.claude.json');
    // Codex's standing instructions: its AGENTS.override.md when the person has one (Codex then skips AGENTS.md)
    const rules = (e: Parameters<typeof wirings>[0]) =>
      wirings(e, mcp).find((x) => x.agentId === 'A2' && x.kind === 'rules')?.file;
    expect(rules({ home: '/h' })).toBe('/h/.codex/AGENTS.md');
    expect(rules({ home: '/h', CODEX_HOME: '/x', codexOverride: true })).toBe('/x/AGENTS.override.md');
    expect(d.find((x) => x.agentId === 'A5')?.file).toBe('/h/.config/opencode/opencode.json');
  });

  it("says what each wiring puts where, for svc install's lines", () => {
    const said = wirings({ home: '/h' }, mcp)
      .filter((w) => w.agentId === 'A1')
      .map((w) => wiringWhat(w));
    expect(said).toEqual([
      'the MCP server svc',
      'svc_ask to its allowed tools',
      'svc_notify to its allowed tools',
      "svc's standing instruction",
    ]);
    expect(wiringWhat({ kind: 'hook', element: true, path: ['hooks', 'UserPromptSubmit'], value: {} })).toBe(
      'the UserPromptSubmit hook',
    );
  });

  it('every wiring names a registry agent by its own command; none is also listed as not wired', () => {
    for (const w of wirings({ home: '/h' }, mcp)) {
      expect(AGENTS.find((a) => a.id === w.agentId)?.command).toBe(w.command);
      expect(NOT_WIRED[w.agentId]).toBeUndefined();
    }
  });

  it('the Hermes entry is YAML with command svc and args [mcp] under mcp_servers (spec 4.13.6)', () => {
    expect(parseDocument(hermesEntry()).toJS()).toEqual({ mcp_servers: { svc: { command: 'svc', args: ['mcp'] } } });
  });
});

describe('agentWiringLines', () => {
  it('says per agent what is wired and what to do', () => {
    expect(
      agentWiringLines([
        { agentId: 'A1', name: 'Claude Code', mcp: 'wired', file: '/h/.claude.json', hooks: 'wired' },
        { agentId: 'A2', name: 'Codex', mcp: 'not wired', file: '/h/.codex/config.toml', hooks: 'wired' },
        { agentId: 'A4', name: 'pi', mcp: 'not wired by install', file: null, note: 'no MCP', hooks: 'wired' },
      ]),
    ).toEqual([
      'agent Claude Code: MCP wired in /h/.claude.json; hooks: wired',
      'agent Codex: MCP not wired (/h/.codex/config.toml): run svc install; hooks: wired',
      'agent pi: MCP not wired: no MCP; hooks: wired',
    ]);
    expect(agentWiringLines([])).toEqual(['agents: none that svc knows found on PATH']);
  });
});

describe('codexHooksWord', () => {
  it.each([
    ['wired and trusted', 'wired', 0, 'wired'],
    ['wired, not trusted', 'wired', 2, 'wired, but Codex does not trust them (it skips them): run svc install'],
    [
      'wired, Codex not asked',
      'wired',
      { unknown: 'codex app-server did not answer' },
      'wired (whether Codex trusts them is unknown: codex app-server did not answer)',
    ],
    ['not wired: nothing to ask', 'not wired: run svc install', 2, 'not wired: run svc install'],
  ] as const)('%s', (_what, word, untrusted, expected) => {
    expect(codexHooksWord(word, untrusted)).toBe(expected);
  });
});
