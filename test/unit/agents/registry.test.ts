import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  AGENTS,
  agentById,
  agentForCommand,
  agentForPane,
  agentForSubcommand,
  agentSubmit,
  genericProgram,
  sessionNameFromTitle,
  startProgram,
  submitStrategyFor,
} from '../../../core/agents/registry.js';
import { inputCleared, readInput } from '../../../core/agents/submit.js';

const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../fixtures/screens');
interface Meta {
  program: string;
  captures: Record<string, { paneCurrentCommand: string; paneTitle: string }>;
}
const metaOf = (id: string): Meta | undefined => {
  const file = join(FIXTURES, id, 'meta.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Meta) : undefined;
};
const fixture = (id: string, file: string) => readFileSync(join(FIXTURES, id, file), 'utf8');

describe('agent registry', () => {
  it('has A1 cc→claude, A2 codex→codex, A3 gemini→gemini, then A4-A16 in spec order', () => {
    expect(AGENTS.map((a) => [a.id, a.subcommand, a.command])).toEqual([
      ['A1', 'cc', 'claude'],
      ['A2', 'codex', 'codex'],
      ['A3', 'gemini', 'gemini'],
      ['A4', 'pi', 'pi'],
      ['A5', 'opencode', 'opencode'],
      ['A6', 'cursor-agent', 'cursor-agent'],
      ['A7', 'hermes', 'hermes'],
      ['A8', 'copilot', 'copilot'],
      ['A9', 'qwen', 'qwen'],
      ['A10', 'cline', 'cline'],
      ['A11', 'crush', 'crush'],
      ['A12', 'droid', 'droid'],
      ['A13', 'amp', 'amp'],
      ['A14', 'auggie', 'auggie'],
      ['A15', 'kimi', 'kimi'],
      ['A16', 'goose', 'goose'],
    ]);
  });

  it('spec 4.4: every subcommand is the command name, except A1 cc', () => {
    for (const a of AGENTS) if (a.id !== 'A1') expect(a.subcommand, a.id).toBe(a.command);
  });

  it('ids, subcommands and commands are unique', () => {
    for (const key of ['id', 'subcommand', 'command'] as const) {
      const values = AGENTS.map((a) => a[key]);
      expect(new Set(values).size, key).toBe(values.length);
    }
  });

  it.each([
    ['A1', 'claude'],
    ['A2', 'codex'],
    ['A3', 'gemini'],
    ['A9', 'qwen'],
    ['A17', undefined],
  ])('agentById(%s)', (id, command) => {
    expect(agentById(id)?.command).toBe(command);
  });

  it.each([
    ['cc', 'A1'],
    ['codex', 'A2'],
    ['gemini', 'A3'],
    ['claude', 'A1'], // the program's own name
    ['claud', undefined],
    ['', undefined],
  ])('agentForSubcommand(%j)', (sub, id) => {
    expect(agentForSubcommand(sub)?.id).toBe(id);
  });

  it.each([
    ['claude', 'A1'],
    ['codex', 'A2'],
    ['gemini', 'A3'],
    ['/usr/local/bin/codex', 'A2'],
    [' claude ', 'A1'],
    ['node', undefined],
    ['bash', undefined],
    ['claude-code', undefined],
    ['Codex', undefined],
    ['', undefined],
  ])('agentForCommand(%j)', (cmd, id) => {
    expect(agentForCommand(cmd)?.id).toBe(id);
  });

  it.each([
    ['"claude --resume"', 'claude'],
    ['"/opt/bin/gemini -m x"', 'gemini'],
    ['codex', 'codex'],
    ['"exec \'claude\'"', 'claude'], // how the wrapper starts a lone program (tmux 3.3a shows it so)
    ['"exec \'/opt/bin/pi\'"', 'pi'],
    ['/usr/bin/node /x/cli.js', 'node'],
    ['', ''],
    [undefined, ''],
  ])('startProgram(%j)', (start, program) => {
    expect(startProgram(start)).toBe(program);
  });

  it.each([
    [{ command: 'codex' }, 'A2'],
    [{ command: 'node', startCommand: '"gemini"' }, 'A3'], // an agent shown as its interpreter
    [{ command: 'node', startCommand: 'claude --continue' }, 'A1'],
    [{ command: 'node', startCommand: '"exec \'gemini\'"' }, 'A3'], // `svc gemini` with no arguments
    [{ command: 'node', startCommand: '"node server.js"' }, undefined],
    [{ command: 'node' }, undefined],
    [{ command: 'bash', startCommand: '"claude"' }, undefined], // agent exited to a shell: not an agent
    [{ command: 'vim', startCommand: '"codex"' }, undefined],
  ])('agentForPane(%j)', (pane, id) => {
    expect(agentForPane(pane)?.id).toBe(id);
  });

  it('unknown programs get the generic strategy: spec 4.7 literal, unverified', () => {
    expect(submitStrategyFor({ command: 'python3' })).toBe(genericProgram.submit);
    expect(genericProgram.submit).toEqual({ kind: 'literal', enterDelayMs: 0 });
    expect(submitStrategyFor({ command: 'claude' })).toEqual(agentSubmit(agentById('A1')!));
    expect(agentSubmit(agentById('A1')!).screen?.trusted).toBe(true);
  });
});

describe('submit strategies in the registry (field notes)', () => {
  it('every known agent pastes as one unit; A1-A3, whose input line captured screens show, have a rule for it', () => {
    for (const a of AGENTS) expect(a.submit.kind, a.id).toBe('paste');
    for (const id of ['A1', 'A2', 'A3']) expect(agentById(id)!.submit.inputLine, id).toBeInstanceOf(RegExp);
  });

  it.each([
    // [agent, idle fixture, what the input line holds when empty: nothing, or the placeholder]
    ['A1', 'idle-1.txt', ''],
    ['A1', 'idle-2.txt', ''],
    ['A2', 'idle-1.txt', 'Ask Codex to do anything'],
    ['A2', 'idle-2.txt', 'Ask Codex to do anything'],
    ['A3', 'idle-1.txt', 'Type your message or @path/to/file'],
    ['A3', 'idle-2.txt', 'Type your message or @path/to/file'],
  ])('%s input line on the real %s → %j', (id, file, content) => {
    const read = readInput(fixture(id, file), agentById(id)!.submit.inputLine!);
    expect(read?.trim()).toBe(content);
  });

  it('A9 Qwen Code: one paste, one Enter, no check (a retry Enter could take the suggestion its input line shows)', () => {
    expect(agentById('A9')!.submit).toEqual({ kind: 'paste', enterDelayMs: 200 });
    // the suggestion it shows after a reply looks exactly like typed text on the captured screen
    expect(fixture('A9', 'idle-3.txt')).toMatch(/^> run the tests$/m);
  });

  it('Codex gets a bracketed paste (typed keys open its 120 ms Enter-as-newline window) and the Enter past its floor', () => {
    const codex = agentById('A2')!.submit;
    expect(codex.kind).toBe('paste');
    // the real 0.169 took every Enter from 10 ms after a bracketed paste (bench:submit, docs/benchmarks.md)
    expect(codex.enterDelayMs).toBeGreaterThanOrEqual(2 * 10);
  });

  it('Codex: a message sent while it starts up is an echo above its status, with no composer: no input line', () => {
    const codex = agentById('A2')!.submit;
    const place = { echoAbove: codex.inputEchoAbove };
    // the real 0.169's screen 250 ms after an Enter, its MCP startup still running (the message went to the model)
    const starting = [
      '  >_ OpenAI Codex (v0.169.0)',
      '     /tmp/svc-agent-A2-K1I3jS/proj',
      '',
      '› message 0 for A2 rx5cqy',
      '',
      '  Waiting for startup  · esc cancel',
    ].join('\n');
    expect(readInput(starting, codex.inputLine!)).toBe('message 0 for A2 rx5cqy'); // what the check read before
    expect(readInput(starting, codex.inputLine!, place)).toBeNull();
    const check = { inputLine: codex.inputLine, inputEchoAbove: codex.inputEchoAbove, text: 'message 0 for A2 rx5cqy' };
    expect(inputCleared({ ...check, after: starting })).toBe('unknown');
    // working: its status is drawn above the composer, which is still the input line
    expect(readInput(fixture('A2', 'working-1.txt'), codex.inputLine!, place)?.trim()).toBe('Ask Codex to do anything');
    expect(inputCleared({ ...check, after: fixture('A2', 'working-1.txt') })).toBe(true);
    expect(inputCleared({ ...check, after: '› message 0 for A2 rx5cqy\n  ? for shortcuts' })).toBe(false);
  });

  const rule = (id: string) => agentById(id)!.submit.inputLine!;
  it.each([
    // [agent, screen line, input content or null]
    ['A2', '› write the tests', 'write the tests'],
    ['A2', '›', ''],
    ['A2', '  › ', ''],
    ['A2', 'you said: › not me', null],
    ['A1', '│ > fix the bug                               │', 'fix the bug'],
    ['A1', '❯ fix the bug', 'fix the bug'],
    ['A1', '> ', ''],
    ['A1', '│ >                                           │', ''],
    ['A1', '? for shortcuts', null],
    ['A3', '│ > Type your message or @path/to/file       │', 'Type your message or @path/to/file'],
    ['A3', '╰──────────────────────────────────────────╯', null],
  ])('%s input line %j → %j', (id, line, content) => {
    expect(readInput(line, rule(id))).toBe(content);
  });
});

describe('capabilities (spec 2.2, 4.8.6, 4.11.2, 4.12, 4.13)', () => {
  const pick = <K extends keyof (typeof AGENTS)[number]>(key: K) =>
    Object.fromEntries(AGENTS.map((a) => [a.id, a[key]]).filter(([, v]) => v !== null && v !== false && v !== 'none'));

  it('names its own session: A1, A2, A5, A7 (A7 unverified)', () => {
    expect(Object.keys(pick('namesOwnSession'))).toEqual(['A1', 'A2', 'A5', 'A7']);
    expect(agentById('A7')!.namesOwnSession!.verified).toBe(false);
  });
  it('accepts a scheduled prompt: A1-A4 only', () => {
    expect(Object.keys(pick('acceptsScheduledPrompt'))).toEqual(['A1', 'A2', 'A3', 'A4']);
  });
  it('hooks', () => {
    expect(pick('hookKind')).toEqual({
      A1: 'plugin-user-prompt-submit',
      A2: 'user-prompt-submit',
      A3: 'before-agent',
      A4: 'before-agent-start-extension',
    });
  });
  it('timeline sources', () => {
    expect(pick('timelineSource')).toEqual({
      A1: 'transcript',
      A2: 'transcript',
      A3: 'transcript',
      A4: 'transcript',
      A5: 'database',
    });
  });
  it('approval reading: A1, A3, A5, A9 from the screen, A4 by extension, A2 not read', () => {
    expect(pick('approvalReading')).toEqual({
      A1: 'screen',
      A3: 'screen',
      A4: 'extension',
      A5: 'screen',
      A9: 'screen',
    });
  });
  it('screen rules only for agents captured here', () => {
    expect(Object.keys(pick('screenRules'))).toEqual(['A1', 'A2', 'A3', 'A4', 'A5', 'A9']);
  });
});

describe('what tmux showed for the real programs (fixtures meta.json)', () => {
  const captured = AGENTS.map((a) => [a.id, metaOf(a.id)] as const).filter(
    (e): e is readonly [string, Meta] => e[1] !== undefined,
  );

  it('the agents captured here are all there (the table tests below run over them)', () => {
    expect(captured.map(([id]) => id)).toEqual(expect.arrayContaining(['A1', 'A2', 'A3', 'A4', 'A5']));
  });

  it.each(captured)('%s is found in its pane by pane_current_command and the start command', (id, meta) => {
    for (const [file, c] of Object.entries(meta.captures)) {
      expect(agentForPane({ command: c.paneCurrentCommand, startCommand: meta.program })?.id, file).toBe(id);
    }
  });

  it.each([
    ['A1', 'idle-1.txt', undefined], // `✳ Claude Code`: the default title names nothing
    ['A1', 'idle-2.txt', 'Svc fixture session'],
    ['A1', 'working-1.txt', 'Svc fixture session'],
    ['A2', 'idle-1.txt', undefined], // the host name, before any title
    ['A2', 'idle-2.txt', 'Svc fixture session'],
    ['A2', 'working-2.txt', 'Svc fixture session'],
    ['A2', 'awaiting_approval-1.txt', 'Svc fixture session'],
  ])('%s session name from the title of %s → %j', (id, file, name) => {
    const meta = metaOf(id)!;
    expect(sessionNameFromTitle(agentById(id)!, meta.captures[file]!.paneTitle, 'vm')).toBe(name);
  });

  it('A5 names its session in the title as `OC | <title>`', () => {
    const meta = metaOf('A5');
    expect(meta, 'test/fixtures/screens/A5/meta.json').toBeDefined();
    if (!meta) return;
    const titles = Object.values(meta.captures).map((c) => c.paneTitle);
    const named = titles.map((t) => sessionNameFromTitle(agentById('A5')!, t, 'vm')).filter(Boolean);
    expect(named.length).toBeGreaterThan(0);
  });

  it('agents that do not name their session, or whose naming is unverified, give no name', () => {
    expect(sessionNameFromTitle(agentById('A3')!, '◇  Ready (proj)')).toBeUndefined();
    expect(sessionNameFromTitle(agentById('A7')!, 'some title')).toBeUndefined();
    expect(sessionNameFromTitle(agentById('A1')!, undefined)).toBeUndefined();
  });
});

describe('fixture files', () => {
  it('are named <state>-<n>.txt', () => {
    const agents = readdirSync(FIXTURES).filter((id) => existsSync(join(FIXTURES, id, 'meta.json')));
    // the loop below must have something to check: the captured agents are all there
    expect(agents).toEqual(expect.arrayContaining(['A1', 'A2', 'A3', 'A4', 'A5']));
    let checked = 0;
    for (const id of agents)
      for (const f of readdirSync(join(FIXTURES, id)).filter((x) => x.endsWith('.txt'))) {
        expect(f).toMatch(/^(idle|working|awaiting_approval|transcript)-\d+\.txt$/);
        checked++;
      }
    expect(checked).toBeGreaterThan(20);
  });
});
