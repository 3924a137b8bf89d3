/**
 * `#{pane_start_command}` read back into words (core/tmux/startCommand.ts), with the strings real tmux 3.3a shows:
 * one argument as given (`exec '/x y/claude'`, how svc starts a program), several joined and quoted by tmux.
 */
import { describe, expect, it } from 'vitest';
import { startedProgram } from '../../../core/sessions/control.js';
import { forRelay } from '../../../core/sessions/inventory.js';
import { shellWords, startProgramName, startWord } from '../../../core/tmux/startCommand.js';

describe('shellWords', () => {
  it.each([
    ['claude', ['claude']],
    ['  exec  claude  --x ', ['exec', 'claude', '--x']],
    // what tmux 3.3a showed for `new-session -- sh -c 'sleep 1000' "a b" "it's" 'dq"x' '$HOME'`
    [`sh -c "sleep 1000" "a b" "it's" 'dq"x' "\\$HOME"`, ['sh', '-c', 'sleep 1000', 'a b', "it's", 'dq"x', '$HOME']],
    [`exec '/home/ana/my tools/claude'`, ['exec', '/home/ana/my tools/claude']],
    ['a\\ b c', ['a b', 'c']],
    [`''`, ['']],
    ['', []],
  ])('%j → %j', (line, words) => {
    expect(shellWords(line)).toEqual(words);
  });
});

describe('the program a pane was started with', () => {
  it.each([
    [`exec '/home/ana/my tools/claude'`, '/home/ana/my tools/claude', 'claude', '/home/ana/my tools/claude'],
    [`"/home/ana/my tools/claude" --resume abc`, '/home/ana/my tools/claude', 'claude', '/home/ana/my tools/claude'],
    [`"exec '/home/ana/my tools/claude' --x"`, '/home/ana/my tools/claude', 'claude', '/home/ana/my tools/claude'],
    ['exec claude', 'claude', 'claude', undefined],
    [`claude "rotate the prod db password to x"`, 'claude', 'claude', undefined],
    [undefined, undefined, '', undefined],
  ])('%j → %j', (start, word, name, absolute) => {
    expect(startWord(start)).toBe(word);
    expect(startProgramName(start)).toBe(name);
    expect(startedProgram(start)).toBe(absolute);
  });
});

describe('forRelay', () => {
  it('keeps the program and drops its arguments (a first prompt) from every pane', () => {
    const record = {
      name: 'svc-proj',
      attached: false,
      createdAt: 1,
      activityAt: 1,
      panes: [
        { id: '%1', command: 'claude', startCommand: `exec '/opt/x/claude' "rotate the password"`, active: true },
        { id: '%2', command: 'bash', active: false },
      ],
    };
    const out = forRelay(record);
    expect(out.panes).toEqual([
      { id: '%1', command: 'claude', startCommand: 'claude', active: true },
      { id: '%2', command: 'bash', active: false },
    ]);
    expect(JSON.stringify(out)).not.toContain('password');
    expect(JSON.stringify(out)).not.toContain('/opt/x');
  });
});
