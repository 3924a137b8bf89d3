import { describe, expect, it } from 'vitest';
import { ROOT } from '../../../cli/commands.js';
import {
  checkFlags,
  closest,
  colorEnabled,
  type FlagSpec,
  firstPositional,
  flagNames,
  NOT_YET,
  progressShown,
  qrStyle,
  unknownCommandLine,
  unknownFlagLine,
  usageText,
} from '../../../core/cli/commandLine.js';

const SPECS: Record<string, FlagSpec> = {
  port: { type: 'string', description: 'Port', default: '8787' },
  json: { type: 'boolean', description: 'JSON' },
  'ws-url': { type: 'string' },
  detach: { type: 'boolean', alias: ['d'] },
  text: { type: 'positional', required: true, description: 'The message' },
};

describe('core/cli/commandLine', () => {
  it.each([
    [true, {}, true],
    [false, {}, false], // a pipe, a file, a log
    [true, { NO_COLOR: '1' }, false],
    [true, { NO_COLOR: '' }, true], // no-color.org: set and not empty
    [false, { FORCE_COLOR: '1' }, true],
    [false, { FORCE_COLOR: '' }, true],
    [true, { FORCE_COLOR: '0' }, false],
    [true, { FORCE_COLOR: 'false' }, false],
    [false, { FORCE_COLOR: '1', NO_COLOR: '1' }, false], // NO_COLOR wins
    [true, { TERM: 'dumb' }, false],
  ])('colorEnabled(tty %s, %j) = %s', (tty, env, on) => {
    expect(colorEnabled(tty, env)).toBe(on);
  });

  it.each([
    [true, {}, true],
    [false, {}, false], // a pipe, a file
    [true, { CI: 'true' }, false],
    [true, { TERM: 'dumb' }, false],
    [true, { NO_COLOR: '1' }, true], // plain characters: colour is another question
  ])('progressShown(tty %s, %j) = %s', (tty, env, on) => {
    expect(progressShown(tty, env)).toBe(on);
  });

  it.each([
    [true, {}, 'ansi'],
    [true, { NO_COLOR: '1' }, 'blocks'],
    [false, {}, 'none'],
    [false, { FORCE_COLOR: '1' }, 'ansi'],
  ] as const)('qrStyle(tty %s, %j) = %s', (tty, env, style) => {
    expect(qrStyle(tty, env)).toBe(style);
  });

  it.each([
    [[], { ok: true, help: false, version: false }],
    [['--port', '0', '--json'], { ok: true, help: false, version: false }],
    [['--port=0', '--ws-url', 'ws://x', '--wsUrl=y'], { ok: true, help: false, version: false }],
    [['--no-json', '-d', 'hello'], { ok: true, help: false, version: false }],
    [['--port', '--help'], { ok: true, help: false, version: false }], // the value of --port
    [['-h'], { ok: true, help: true, version: false }],
    [['x', '--version'], { ok: true, help: false, version: true }],
    [['--', '--frob'], { ok: true, help: false, version: false }], // after -- nothing is a flag
    [['--frob'], { ok: false, kind: 'unknown', flag: '--frob' }],
    [['--frob=1'], { ok: false, kind: 'unknown', flag: '--frob' }],
    [['-x'], { ok: false, kind: 'unknown', flag: '-x' }],
    [['--no-port'], { ok: false, kind: 'unknown', flag: '--no-port' }], // only booleans negate
    [['--text'], { ok: false, kind: 'unknown', flag: '--text' }], // a positional is not a flag
  ])('checkFlags(%j)', (args, result) => {
    expect(checkFlags(args, SPECS)).toEqual(result);
  });

  it('refuses the flags that do nothing yet, each with its own line', () => {
    expect(NOT_YET).toEqual({}); // every flag svc listed has landed
    const says = (flag: string) => `svc: ${flag} does nothing yet (it comes later): leave it out`;
    const listener = { '--frob': says('--frob'), '--no-frob': says('--no-frob') };
    for (const flag of ['--frob', '--no-frob']) {
      const check = checkFlags([flag], {}, listener);
      expect(check).toMatchObject({ ok: false, kind: 'not-yet', flag });
      expect(check.ok === false && check.kind === 'not-yet' && check.message).toMatch(
        new RegExp(`^svc: ${flag} (does nothing yet|is not available yet)`),
      );
    }
  });

  it.each([
    [['serve', '--port', '1'], 0],
    [['--port', '1', 'serve'], 2],
    [['--json', 'x'], 1],
    [['--', 'x'], -1],
    [['--port'], -1],
  ])('firstPositional(%j) = %i', (args, at) => {
    expect(firstPositional(args, SPECS)).toBe(at);
  });

  it('one line for an unknown command or flag, naming the whole command', () => {
    expect(unknownCommandLine('shedule', 'svc')).toBe('svc: unknown command "shedule"; see svc --help');
    expect(unknownCommandLine('foo', 'svc relay')).toBe(
      'svc: unknown command "foo" for svc relay; see svc relay --help',
    );
    expect(unknownFlagLine('--frob', 'svc relay serve')).toBe(
      'svc: unknown flag "--frob" for svc relay serve; see svc relay serve --help',
    );
  });

  it.each([
    ['verfy', ['up', 'verify', 'pair'], 'verify'],
    ['shedule', ['schedule', 'setup'], 'schedule'],
    ['udp', ['up', 'pair'], 'up'],
    ['xyz', ['up', 'pi'], undefined], // too far for a word this short
    ['pu', ['up', 'pair'], 'up'], // two neighbours swapped: one step
    ['--detatch', ['--detach', '--label'], '--detach'],
    ['--lable', ['--label', '--wt'], '--label'],
    ['frobnicate', ['up', 'verify'], undefined],
    ['cx', ['cc', 'cd'], undefined], // as near to two: no guess
  ])('the command or flag %j most likely meant, among %j: %j', (word, candidates, meant) => {
    expect(closest(word, candidates)).toBe(meant);
  });

  it('says which command or flag was most likely meant', () => {
    expect(unknownCommandLine('verfy', 'svc', ['up', 'verify'])).toBe(
      'svc: unknown command "verfy"; did you mean "svc verify"?; see svc --help',
    );
    expect(unknownFlagLine('--detatch', 'svc cc', flagNames({ detach: { type: 'boolean', alias: 'd' } }))).toBe(
      'svc: unknown flag "--detatch" for svc cc; did you mean "--detach"?; see svc cc --help',
    );
  });

  it('usage names the whole command, its arguments, commands and options; bold only when asked', () => {
    const text = usageText({
      command: 'svc agent send',
      description: 'Send a message',
      flags: SPECS,
      commands: [],
    });
    expect(text).toContain('Usage: svc agent send [options] <text>');
    expect(text).toMatch(/^ {2}--port <port> +Port \(default: 8787\)$/m);
    expect(text).toMatch(/^ {2}-d, --detach$/m);
    expect(text).toMatch(/^ {2}-h, --help +this help$/m);
    expect(text).not.toContain('\x1b');
    const group = usageText(
      { command: 'svc relay', description: 'Relay', flags: {}, commands: [{ name: 'serve', description: 'Run it' }] },
      (s) => `<b>${s}</b>`,
    );
    expect(group).toContain('<b>Usage:</b> svc relay <command>');
    expect(group).toMatch(/^ {2}serve +Run it$/m);
  });

  it('the root usage starts with the daily commands and puts plumbing under Advanced, all in one column', () => {
    const text = usageText({
      command: 'svc',
      description: 'svc',
      flags: {},
      commands: [
        { name: 'login', description: 'Log in' },
        { name: 'up', description: 'Everything', section: 'start' },
        { name: 'remote-hook', description: 'Hook', section: 'advanced' },
      ],
    });
    expect(text.indexOf('Start here:')).toBeLessThan(text.indexOf('Commands:'));
    expect(text.indexOf('Commands:')).toBeLessThan(text.indexOf('Advanced:'));
    expect(text).toMatch(/Start here:\n {2}up {11}Everything\n/);
    expect(text).toMatch(/Advanced:\n {2}remote-hook {2}Hook\n/);
  });

  it("the root table's descriptions are the commands' own", async () => {
    for (const [name, entry] of Object.entries(ROOT.commands)) {
      const command = await entry.load();
      const meta = typeof command.meta === 'function' ? await command.meta() : await command.meta;
      expect(meta?.description, name).toBe(entry.description);
    }
  });
});

describe('checkFlags for a command whose words are a message', () => {
  it.each([
    [['-5', 'degrees'], { ok: true, help: false, version: false }],
    [['-rf', '--force', 'now'], { ok: true, help: false, version: false }],
    [['--help'], { ok: true, help: true, version: false }],
  ])('%j', (args, expected) => {
    expect(checkFlags(args, {}, {}, true)).toEqual(expected);
    expect(checkFlags(args, {}, {}, false).ok).toBe(args[0] === '--help');
  });
});
