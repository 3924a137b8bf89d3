/**
 * The compiled `svc` as a person or a script meets it: through a pipe (no terminal: no escape codes, no QR code), in
 * a terminal (node-pty), with NO_COLOR and FORCE_COLOR; unknown commands and flags; --help and --version at every
 * level; flags that do nothing yet; what `svc --help` loads.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as pty from 'node-pty';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ROOT } from '../../cli/commands.js';
import { NOT_YET } from '../../core/cli/commandLine.js';
import { VERSION } from '../../core/daemon/version.js';
import { SVC_BIN, svcEnv, tempHome } from '../helpers/cli.js';
import { startTestRelay, type TestRelay } from '../helpers/relay.js';

let home: ReturnType<typeof tempHome>;
let env: NodeJS.ProcessEnv;
let relay: TestRelay | null = null;

beforeEach(() => {
  home = tempHome();
  env = svcEnv(home.home);
  delete env.NO_COLOR;
  delete env.FORCE_COLOR;
});

afterEach(async () => {
  await relay?.close();
  relay = null;
  home.cleanup();
});

function svc(
  args: string[],
  extra: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [...nodeArgs, SVC_BIN, ...args],
      { env: { ...env, ...extra }, timeout: 30_000 },
      (err, stdout, stderr) => done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** `svc …` in a real terminal; resolves with everything it drew. */
function inTerminal(args: string[], extra: Record<string, string> = {}): Promise<string> {
  return new Promise((done) => {
    const term = pty.spawn(process.execPath, [SVC_BIN, ...args], {
      name: 'xterm-256color',
      cols: 120,
      rows: 60,
      env: { ...env, TERM: 'xterm-256color', ...extra } as Record<string, string>,
    });
    let out = '';
    term.onData((d) => {
      out += d;
    });
    term.onExit(() => done(out));
  });
}

const ESC = '\x1b';

describe('svc on a pipe and on a terminal', () => {
  it('help through a pipe has no escape codes; in a terminal it is styled, unless NO_COLOR; FORCE_COLOR forces it', async () => {
    const piped = await svc(['--help']);
    expect(piped.code).toBe(0);
    expect(piped.stdout).toContain('Usage: svc <command>');
    expect(piped.stdout).not.toContain(ESC);
    expect(await inTerminal(['--help'])).toContain(`${ESC}[1mUsage:`);
    expect(await inTerminal(['--help'], { NO_COLOR: '1' })).not.toContain(ESC);
    expect((await svc(['--help'], { FORCE_COLOR: '1' })).stdout).toContain(`${ESC}[1mUsage:`);
  });

  it('svc pair prints the link alone through a pipe, and the QR code only on a terminal, for an address a phone reaches', async () => {
    relay = await startTestRelay();
    expect((await svc(['login', '--url', relay.url, '--key', relay.apiKey])).code).toBe(0);
    const piped = await svc(['pair']);
    expect(piped.code).toBe(0);
    expect(piped.stdout).toMatch(/^ {2}http:\/\/127\.0\.0\.1:\d+\/#pair=\S+$/m);
    expect(piped.stdout).not.toContain(ESC);
    expect(piped.stdout).not.toMatch(/[▀▄█]/);
    // the login is on loopback: a phone could not open the link, so no code is drawn even on a terminal
    const here = await inTerminal(['pair']);
    expect(here).not.toMatch(/[▀▄█]/);
    expect(here).toMatch(/a phone cannot open it, so no QR code/);
    // an address a phone reaches, named with --url: drawn on a terminal
    const drawn = await inTerminal(['pair', '--url', 'https://relay.example.org']);
    expect(drawn).toMatch(/[▀▄█]/);
    expect(drawn).toContain(ESC);
    expect(drawn).toMatch(/https:\/\/relay\.example\.org\/#pair=/);
    const plain = await inTerminal(['pair', '--url', 'https://relay.example.org'], { NO_COLOR: '1' });
    expect(plain).toMatch(/[▀▄█]/); // block characters, no colour codes
    expect(plain).not.toContain(ESC);
  });
});

describe('a command line that says what it did not understand', () => {
  it.each([
    [['shedule'], 'svc: unknown command "shedule"; did you mean "svc schedule"?; see svc --help'],
    [['verfy'], 'svc: unknown command "verfy"; did you mean "svc verify"?; see svc --help'],
    // an alias not listed in --help is still a command a person may have meant
    [['claud'], 'svc: unknown command "claud"; did you mean "svc claude"?; see svc --help'],
    [['stup'], 'svc: unknown command "stup"; did you mean "svc setup"?; see svc --help'],
    [['frobnicate'], 'svc: unknown command "frobnicate"; see svc --help'],
    [
      ['relay', 'sreve'],
      'svc: unknown command "sreve" for svc relay; did you mean "svc relay serve"?; see svc relay --help',
    ],
    [['verify', '--frob'], 'svc: unknown flag "--frob" for svc verify; see svc verify --help'],
    [
      ['relay', 'serve', '--prot', '1'],
      'svc: unknown flag "--prot" for svc relay serve; did you mean "--port"?; see svc relay serve --help',
    ],
    [['agent', 'send'], 'svc: nothing to send: svc agent send [--session NAME] TEXT; see svc agent send --help'],
  ])('svc %j: one line on stderr, exit 2', async (args, line) => {
    expect(await svc(args)).toEqual({ code: 2, stdout: '', stderr: `${line}\n` });
  });

  it('svc --help starts with what a new user runs, in order, and keeps the plumbing for last', async () => {
    const help = (await svc(['--help'])).stdout;
    expect(help).toMatch(/^Start here:\n {2}up .*\n {2}cc .*\n {2}pair .*\n {2}verify .*\n\n/m);
    const advanced = help.slice(help.indexOf('Advanced:'));
    for (const plumbing of ['remote-hook', 'mcp', 'listener', 'debug'])
      expect(advanced).toMatch(new RegExp(`^ {2}${plumbing} `, 'm'));
  });

  it('the agent’s own program name works as its command: svc claude is svc cc', async () => {
    const help = await svc(['claude', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: svc claude [--detach]');
    expect((await svc(['--help'])).stdout).not.toMatch(/^\s+claude\s/m); // listed once, as cc
  });

  it.each([
    [[]],
    [['relay']],
    [['relay', 'serve']],
    [['relay', 'account', 'create']],
    [['verify']],
    [['listener']],
    [['debug', 'state']],
    [['worktree', 'clean']],
    [['agent', 'send']],
  ])('svc %j --help names the whole command; --version answers', async (args) => {
    const help = await svc([...args, '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain(`Usage: ${['svc', ...args].join(' ')}`);
    expect(await svc([...args, '--version'])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
    expect(await svc([...args, '-v'])).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: '' });
  });

  it.each(['--turn-history', '--no-turn-history'])(
    'svc listener %s is a flag now: taken, and the listener says why it cannot start (not logged in)',
    async (flag) => {
      expect(NOT_YET).toEqual({});
      const run = await svc(['listener', flag]);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/not logged in/);
      expect(existsSync(join(home.home, '.svc', 'listener.pid'))).toBe(false);
    },
  );

  it('keeps V8’s compiled code in the cache folder of the HOME, or of XDG_CACHE_HOME', async () => {
    const plain = { ...env };
    delete plain.NODE_COMPILE_CACHE; // the tests share one (test/globalSetup.ts); a person's is in their HOME
    delete plain.XDG_CACHE_HOME;
    const run = (extra: NodeJS.ProcessEnv) =>
      new Promise<number>((done) =>
        execFile(process.execPath, [SVC_BIN, '--version'], { env: { ...plain, ...extra } }, (err) => done(err ? 1 : 0)),
      );
    expect(await run({})).toBe(0);
    const cache = join(home.home, '.cache', 'svc', 'compile');
    const written = readdirSync(cache, { recursive: true }).length;
    expect(written).toBeGreaterThan(1);
    // XDG_CACHE_HOME moves it
    expect(await run({ XDG_CACHE_HOME: join(home.home, 'xdg') })).toBe(0);
    expect(readdirSync(join(home.home, 'xdg', 'svc', 'compile')).length).toBeGreaterThan(0);
  });

  it('svc --help loads only the table of commands: no command module, no citty', async () => {
    const log = join(home.home, 'imports.log');
    const run = await svc(['--help'], { SVC_IMPORT_LOG: log }, [
      '--import',
      resolve(import.meta.dirname, '../helpers/importLog.mjs'),
    ]);
    expect(run.code).toBe(0);
    const loaded = readFileSync(log, 'utf8').trim().split('\n');
    expect(loaded.some((url) => url.endsWith('/dist/cli/commands.js'))).toBe(true); // the hook saw the run
    expect(loaded.filter((url) => url.includes('/dist/cli/commands/'))).toEqual([]);
    expect(loaded.filter((url) => url.includes('/node_modules/'))).toEqual([]);
    rmSync(log);
  });
});

describe('output into a pipe whose reader has gone (`svc … | head -1`)', () => {
  /** `svc <args> | true`: `true` reads nothing and exits at once, so every write of svc meets a closed pipe. */
  const intoClosedPipe = (args: readonly string[]) =>
    new Promise<{ status: string; stderr: string }>((done) => {
      const line = `"${process.execPath}" "${SVC_BIN}" ${args.join(' ')} | true; echo "status=\${PIPESTATUS[0]}" >&2`;
      execFile('bash', ['-c', line], { env, timeout: 30_000 }, (_err, _stdout, stderr) =>
        done({ status: /status=(\d+)/.exec(stderr)?.[1] ?? '?', stderr }),
      );
    });

  it.each([
    ...Object.entries(ROOT.commands)
      .filter(([, c]) => !c.hidden)
      .map(([name]) => [name, '--help']),
    ['--help'],
    ['schedule'],
    ['verify'],
    ['worktree'],
    ['schedule', '--json'],
  ])('svc %s %s ends quietly, with no EPIPE, and its own exit code', async (...args) => {
    const words = args.filter(Boolean) as string[];
    const r = await intoClosedPipe(words);
    expect(r.stderr).not.toMatch(/EPIPE|node:events|Unhandled/);
    // the exit code it has with a reader (a failed verify still fails a pipefail script); help always has 0
    const code = words.includes('--help') ? 0 : (await svc(words)).code;
    expect(r.status, r.stderr).toBe(String(code));
  });
});
