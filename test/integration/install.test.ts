/**
 * `svc install` / `svc uninstall` in a temp HOME with the REAL agents on PATH (test/agents): each agent's own
 * `mcp list` shows the server install wired, and uninstall leaves every file byte-identical to before (also after
 * the user edited one in between). Plus the files install must refuse or handle with care: a broken config, a
 * symlinked one, a HOME it cannot write.
 */
import { execFile } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { basename, delimiter, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keptLines, runSvc, SVC_BIN, svcEnv, svcInTerminal, tempHome } from '../helpers/cli.js';
import {
  AGENTS_BIN,
  agentInstalled,
  CLAUDE_CODE,
  CODEX,
  GEMINI_CLI,
  killProcessesUnder,
} from '../helpers/realAgents.js';

const haveAgents = [CLAUDE_CODE, CODEX, GEMINI_CLI].every(agentInstalled);

/** The user's own configs, with comments and entries of their own. */
const USER_FILES: Record<string, string> = {
  '.claude.json':
    '{\n  "numStartups": 7,\n  "mcpServers": {\n    "github": {\n      "type": "stdio",\n      "command": "gh-mcp",\n      "args": [],\n      "env": {}\n    }\n  }\n}\n',
  '.codex/config.toml':
    '# my Codex settings\nmodel = "gpt-5" # the fast one\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n',
  '.gemini/settings.json': '{\n  // the look\n  "ui": { "theme": "GitHub" }\n}\n',
};

function seed(home: string): void {
  for (const [rel, text] of Object.entries(USER_FILES)) {
    mkdirSync(dirname(join(home, rel)), { recursive: true });
    writeFileSync(join(home, rel), text);
  }
}

const read = (home: string, rel: string) => readFileSync(join(home, rel), 'utf8');

/** The agents' own environment: offline, a dummy key, PATH with the real agents first. */
function agentEnv(home: string): NodeJS.ProcessEnv {
  return svcEnv(home, {
    PATH: `${AGENTS_BIN}${delimiter}${process.env.PATH ?? ''}`,
    ANTHROPIC_API_KEY: 'sk-ant-fake',
    OPENAI_API_KEY: 'sk-fake',
    GEMINI_API_KEY: 'fake',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  });
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, cwd, timeout: 90_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

describe.skipIf(!haveAgents)('svc install with the real agents', () => {
  it('wires Claude Code, Codex and Gemini CLI, each sees it, and uninstall gives every file back', async () => {
    const { home, cleanup } = tempHome();
    try {
      seed(home);
      const env = agentEnv(home);
      // each agent has run before (Claude Code writes its own first-run keys into ~/.claude.json): what the user has
      for (const program of ['claude', 'codex', 'gemini'])
        await run(join(AGENTS_BIN, program), ['mcp', 'list'], env, home);
      const mine = Object.fromEntries(Object.keys(USER_FILES).map((rel) => [rel, read(home, rel)]));
      expect(mine['.codex/config.toml']).toBe(USER_FILES['.codex/config.toml']);
      const res = await runSvc(['install', '--json'], env);
      const report = JSON.parse(res.stdout);
      const result = (id: string) => report.agents.find((a: { agentId: string }) => a.agentId === id)?.result;
      expect([result('A1'), result('A2'), result('A3')]).toEqual(['added', 'added', 'added']);
      // the hooks in the same run, Codex's trusted as Codex itself lists them
      expect(report.codexTrust).toBeNull();
      const hooksOf = (id: string) =>
        report.hooks.filter((h: { agentId: string }) => h.agentId === id).map((h: { what: string }) => h.what);
      expect(hooksOf('A2')).toEqual([
        'the UserPromptSubmit hook',
        'the Stop hook',
        'trust for its user_prompt_submit hook',
        'trust for its stop hook',
      ]);
      expect(hooksOf('A3')).toEqual(['the BeforeAgent hook', 'the AfterAgent hook']);
      expect(hooksOf('A4')).toEqual(['the svc-remote extension']);
      // pi is on PATH and not wired, with the reason
      expect(report.notWired.map((n: { agentId: string }) => n.agentId)).toContain('A4');
      // the first change kept a backup beside each file
      for (const rel of Object.keys(USER_FILES)) expect(read(home, `${rel}.svc-backup`)).toBe(mine[rel]);

      // each agent's own view of its MCP servers
      for (const [program, args] of [
        ['claude', ['mcp', 'list']],
        ['codex', ['mcp', 'list']],
        ['gemini', ['mcp', 'list']],
      ] as const) {
        const listed = await run(join(AGENTS_BIN, program), [...args], env, home);
        const line = listed.out.split('\n').find((l) => /^\s*\S*\s*svc\b/.test(l) && l.includes(SVC_BIN));
        expect(line, `${program} mcp list:\n${listed.out}`).toBeDefined();
        expect(line).toContain('mcp');
        // the user's own servers are still there
        if (program !== 'gemini') expect(listed.out).toMatch(program === 'claude' ? /github/ : /docs/);
      }

      // svc verify sees the same, per agent found
      const verified = async () => JSON.parse((await runSvc(['verify', '--json'], env)).stdout);
      const wiredBy = async () =>
        Object.fromEntries((await verified()).agents.map((a: { agentId: string; mcp: string }) => [a.agentId, a.mcp]));
      const v = await verified();
      expect(
        Object.fromEntries(v.agents.map((a: { agentId: string; mcp: string }) => [a.agentId, a.mcp])),
      ).toMatchObject({ A1: 'wired', A2: 'wired', A3: 'wired', A4: 'not wired by install' });
      expect(Object.fromEntries(v.agents.map((a: { agentId: string; hooks: string }) => [a.agentId, a.hooks]))).toEqual(
        expect.objectContaining({ A1: 'wired', A2: 'wired', A3: 'wired', A4: 'wired' }),
      );

      // the second run changes nothing
      const snapshot = Object.keys(USER_FILES).map((rel) => read(home, rel));
      const again = JSON.parse((await runSvc(['install', '--json'], env)).stdout);
      const second = again.agents.filter((a: { agentId: string }) => ['A1', 'A2', 'A3'].includes(a.agentId));
      // Claude Code's server entry, and svc_ask and svc_notify allowed in its settings; Codex; Gemini CLI; then the
      // standing instruction of each of the three
      expect(second.map((a: { result: string }) => a.result)).toEqual(Array(8).fill('already'));
      expect(Object.keys(USER_FILES).map((rel) => read(home, rel))).toEqual(snapshot);

      // dry run of uninstall changes nothing
      const dry = await runSvc(['uninstall', '--dry-run'], env);
      expect(dry.stdout).toMatch(/Codex: would remove/);
      expect(Object.keys(USER_FILES).map((rel) => read(home, rel))).toEqual(snapshot);

      // the user edits the Codex file elsewhere in between
      writeFileSync(join(home, '.codex/config.toml'), read(home, '.codex/config.toml').replace('"gpt-5"', '"gpt-5.1"'));
      const un = await runSvc(['uninstall'], env);
      expect(un.code, un.stdout + un.stderr).toBe(0);
      expect(read(home, '.claude.json')).toBe(mine['.claude.json']);
      expect(read(home, '.gemini/settings.json')).toBe(mine['.gemini/settings.json']);
      expect(read(home, '.codex/config.toml')).toBe(mine['.codex/config.toml']?.replace('"gpt-5"', '"gpt-5.1"'));
      // backups identical to the file go; the edited file's backup stays (it is the user's last version before svc)
      expect(existsSync(join(home, '.claude.json.svc-backup'))).toBe(false);
      expect(existsSync(join(home, '.codex/config.toml.svc-backup'))).toBe(true);
      expect(existsSync(join(home, '.svc/installed.json'))).toBe(false);
      expect(await wiredBy()).toMatchObject({ A1: 'not wired', A2: 'not wired', A3: 'not wired' });
      const after = await run(join(AGENTS_BIN, 'codex'), ['mcp', 'list'], env, home);
      expect(after.out).not.toContain(SVC_BIN);
    } finally {
      // anything Codex left running from this HOME (its app-server, asked for the hooks' trust) goes with it
      killProcessesUnder(home);
      cleanup();
    }
  }, 240_000);
});

describe('svc install with files it must handle with care', () => {
  /** Only the fake agents named, on a PATH of their own, so the test does not depend on what is installed. */
  function fakeAgents(home: string, names: string[]): NodeJS.ProcessEnv {
    const bin = join(home, 'bin');
    mkdirSync(bin, { recursive: true });
    for (const n of names) {
      writeFileSync(join(bin, n), '#!/bin/sh\nexit 0\n');
      chmodSync(join(bin, n), 0o755);
    }
    return svcEnv(home, { PATH: `${bin}${delimiter}/usr/bin${delimiter}/bin` });
  }

  it('refuses a broken config in one line, writes nothing to it, and wires the others', async () => {
    const { home, cleanup } = tempHome();
    try {
      const env = fakeAgents(home, ['codex', 'gemini']);
      const broken = '[mcp_servers.docs\ncommand = "x"\n';
      mkdirSync(join(home, '.codex'));
      writeFileSync(join(home, '.codex/config.toml'), broken);
      // a dry run says what would change and writes nothing: no file, no backup, no record
      const dry = JSON.parse((await runSvc(['install', '--dry-run', '--json'], env)).stdout);
      // the MCP server of each, then the standing instruction of each (the Markdown files are not broken)
      expect(
        dry.agents.map((a: { agentId: string; file: string; result: string }) => [
          a.agentId,
          basename(a.file),
          a.result,
        ]),
      ).toEqual([
        ['A2', 'config.toml', 'refused'],
        ['A3', 'settings.json', 'would add'],
        ['A2', 'AGENTS.md', 'would add'],
        ['A3', 'GEMINI.md', 'would add'],
      ]);
      expect(existsSync(join(home, '.gemini'))).toBe(false);
      expect(existsSync(join(home, '.svc'))).toBe(false);
      const res = await runSvc(['install'], env);
      expect(res.code).toBe(1);
      const lines = res.stdout.split('\n').filter((l) => l.startsWith('Codex:') && l.includes('MCP server'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^Codex: refused \(the MCP server svc\): .*config\.toml: not valid TOML/);
      expect(read(home, '.codex/config.toml')).toBe(broken);
      expect(existsSync(join(home, '.codex/config.toml.svc-backup'))).toBe(false);
      expect(res.stdout).toMatch(/Gemini CLI: added/);
      // a file that did not exist is made, and uninstall deletes it again
      expect(JSON.parse(read(home, '.gemini/settings.json')).mcpServers.svc.args).toEqual([SVC_BIN, 'mcp']);
      expect((await runSvc(['uninstall'], env)).code).toBe(0);
      expect(existsSync(join(home, '.gemini/settings.json'))).toBe(false);
      // …and the folder it made for it
      expect(existsSync(join(home, '.gemini'))).toBe(false);
    } finally {
      cleanup();
    }
  });

  it('on a terminal, says what it is doing until it prints; in a pipe, only what it did', async () => {
    const { home, cleanup } = tempHome();
    try {
      const env = fakeAgents(home, ['gemini']);
      delete env.CI; // only the pipe keeps the progress line off here (CI would too)
      const piped = await runSvc(['install', '--dry-run'], env);
      expect(piped).toMatchObject({ code: 0, stderr: '' });
      expect(piped.stdout).toContain('Gemini CLI: would add');
      const run = svcInTerminal(['install', '--dry-run'], env);
      expect(await run.exited).toBe(0);
      const out = run.output();
      // each step drawn, then wiped before the lines that follow it: what the terminal keeps of each line (the
      // text after its last wipe) is never a progress line
      const steps = ['looking for agents on PATH…', 'reading the hooks…'];
      for (const step of steps) expect(out).toContain(step);
      expect(out.indexOf(steps[0]!)).toBeLessThan(out.indexOf('Gemini CLI: would add'));
      const kept = keptLines(out);
      expect(kept.filter((line) => /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/.test(line))).toEqual([]);
      expect(kept.some((line) => line.startsWith('Gemini CLI: would add'))).toBe(true);
    } finally {
      cleanup();
    }
  });

  it('edits a symlinked config at its target and keeps the link', async () => {
    const { home, cleanup } = tempHome();
    try {
      const env = fakeAgents(home, ['gemini']);
      const target = join(home, 'dotfiles', 'gemini.json');
      mkdirSync(dirname(target), { recursive: true });
      mkdirSync(join(home, '.gemini'));
      const text = '{\n  // mine\n  "ui": {}\n}\n';
      writeFileSync(target, text);
      symlinkSync('../dotfiles/gemini.json', join(home, '.gemini/settings.json'));
      expect((await runSvc(['install'], env)).code).toBe(0);
      expect(lstatSync(join(home, '.gemini/settings.json')).isSymbolicLink()).toBe(true);
      expect(readlinkSync(join(home, '.gemini/settings.json'))).toBe('../dotfiles/gemini.json');
      expect(readFileSync(target, 'utf8')).toContain('"svc"');
      expect((await runSvc(['uninstall'], env)).code).toBe(0);
      expect(readFileSync(target, 'utf8')).toBe(text);
      expect(lstatSync(join(home, '.gemini/settings.json')).isSymbolicLink()).toBe(true);
    } finally {
      cleanup();
    }
  });

  it('says clearly when it cannot write the home directory, and writes nothing', async () => {
    const { home, cleanup } = tempHome();
    try {
      const env = fakeAgents(home, ['gemini']);
      // root can write anywhere: as root, run svc as nobody, whose HOME is this root-owned folder
      const root = process.getuid?.() === 0;
      chmodSync(home, root ? 0o755 : 0o555);
      const res = root
        ? await run(
            'setpriv',
            ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, SVC_BIN, 'install'],
            env,
            '/',
          )
        : await run(process.execPath, [SVC_BIN, 'install'], env, '/');
      chmodSync(home, 0o700);
      expect(res.code).toBe(1);
      expect(res.out).toMatch(/Gemini CLI: refused \([^)]*\): cannot write .*: permission denied/);
      expect(existsSync(join(home, '.gemini'))).toBe(false);
      expect(existsSync(join(home, '.svc'))).toBe(false);
    } finally {
      cleanup();
    }
  });
});

describe('svc verify with Hermes on PATH', () => {
  it('prints the entry its line says to add (spec 4.13.6), in text and in --json', async () => {
    const { home, cleanup } = tempHome();
    try {
      const bin = join(home, 'bin');
      mkdirSync(bin);
      writeFileSync(join(bin, 'hermes'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      const env = svcEnv(home, { PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` });
      const text = (await runSvc(['verify'], env)).stdout;
      expect(text).toMatch(/agent Hermes: MCP not wired: Hermes is wired by hand .*add the entry below/);
      expect(text).toContain('mcp_servers:\n  svc:\n    command: svc\n    args: ["mcp"]\n');
      const json = JSON.parse((await runSvc(['verify', '--json'], env)).stdout);
      expect(json.hermesEntry).toBe('mcp_servers:\n  svc:\n    command: svc\n    args: ["mcp"]');
    } finally {
      cleanup();
    }
  });
});
