import { describe, expect, it } from 'vitest';
import {
  AGENTS,
  agentById,
  agentForCommand,
  agentForPane,
  agentForSubcommand,
  genericProgram,
  startProgram,
  submitStrategyFor,
} from '../../core/agents.js';
import { readInput } from '../../core/submit.js';

describe('agent registry', () => {
  it('has A1 cc→claude, A2 codex→codex, A3 gemini→gemini', () => {
    expect(AGENTS.map((a) => [a.id, a.subcommand, a.command])).toEqual([
      ['A1', 'cc', 'claude'],
      ['A2', 'codex', 'codex'],
      ['A3', 'gemini', 'gemini'],
    ]);
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
    ['A9', undefined],
  ])('agentById(%s)', (id, command) => {
    expect(agentById(id)?.command).toBe(command);
  });

  it.each([
    ['cc', 'A1'],
    ['codex', 'A2'],
    ['gemini', 'A3'],
    ['claude', undefined],
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
    expect(submitStrategyFor({ command: 'claude' })).toBe(agentById('A1')!.submit);
  });
});

describe('submit strategies in the registry (field notes)', () => {
  it('every known agent pastes as one unit and has an input-line rule', () => {
    for (const a of AGENTS) {
      expect(a.submit.kind, a.id).toBe('paste');
      expect(a.submit.inputLine, a.id).toBeInstanceOf(RegExp);
    }
  });

  it("Codex's Enter comes well after its 120 ms paste window", () => {
    expect(agentById('A2')!.submit.enterDelayMs).toBeGreaterThanOrEqual(2 * 120);
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
