/**
 * The hooks of `svc install` (and `svc setup`, the same command) / `svc uninstall` on the files of a person who has
 * their own settings: Claude Code's and Gemini CLI's settings with comments and a hook of their own, pi's extensions
 * folder. The agents on PATH are stand-ins here (the real programs run svc's hooks in remoteHook.realAgents.test.ts):
 * this is about the files.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { fakeAgentBin } from '../helpers/tmux.js';

const CLAUDE = '.claude/settings.json';
const GEMINI = '.gemini/settings.json';
const PI_EXT = '.pi/agent/extensions/svc-remote.ts';

const USER: Record<string, string> = {
  [CLAUDE]:
    '{\n  // mine\n  "theme": "dark",\n  "hooks": {\n    "Stop": [\n      { "hooks": [{ "type": "command", "command": "say done" }] } // ding\n    ]\n  }\n}\n',
  [GEMINI]: '{\n  // the look\n  "ui": { "theme": "GitHub" }\n}\n',
};

let home: string;
let cleanup: () => void;
let env: NodeJS.ProcessEnv;

const read = (rel: string) => readFileSync(join(home, rel), 'utf8');
const write = (rel: string, text: string) => {
  mkdirSync(dirname(join(home, rel)), { recursive: true });
  writeFileSync(join(home, rel), text);
};

beforeEach(async () => {
  ({ home, cleanup } = tempHome());
  for (const [rel, text] of Object.entries(USER)) write(rel, text);
  // Codex's hooks need Codex's own app-server for their trust: the real one runs in remoteHook.realAgents.test.ts
  const bin = await fakeAgentBin(home, ['claude', 'gemini', 'pi']);
  env = svcEnv(home, { PATH: `${bin}${delimiter}${process.env.PATH ?? ''}` });
});
afterEach(() => cleanup());

describe('svc install: the hooks', () => {
  it('adds svc’s hooks after the person’s own, once; uninstall takes out only svc’s, after an edit of theirs', async () => {
    const first = await runSvc(['install'], env);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    // one line per change, saying what went where
    const settings = join(home, CLAUDE);
    expect(first.stdout).toContain(`Claude Code: added the UserPromptSubmit hook (${settings})`);
    expect(first.stdout).toContain(`Claude Code: added the Stop hook (${settings})`);
    expect(first.stdout).toContain(`Claude Code: added the SessionStart hook (${settings})`);
    expect(first.stdout).toContain(`Gemini CLI: added the BeforeAgent hook (${join(home, GEMINI)})`);
    expect(first.stdout).toContain(`pi: added the svc-remote extension (${join(home, PI_EXT)})`);
    // and in the same run, the MCP server and the standing instruction
    expect(first.stdout).toMatch(/^Claude Code: added the MCP server svc \(/m);
    expect(first.stdout).toMatch(/^Gemini CLI: added svc's standing instruction \(/m);
    const claude = read(CLAUDE);
    expect(claude).toContain('// mine');
    expect(claude).toContain('{ "hooks": [{ "type": "command", "command": "say done" }] }, // ding');
    expect(JSON.parse(claude.replace(/\/\/.*$/gm, '')).hooks.Stop).toHaveLength(2);
    expect(claude).toContain('plugins/claude/scripts/svc-remote.sh');
    expect(read(GEMINI)).toContain('remote-hook gemini');
    expect(read(PI_EXT)).toContain('before_agent_start');
    // backups of the person's files, beside them
    expect(read(`${CLAUDE}.svc-backup`)).toBe(USER[CLAUDE]);

    const wired = [read(CLAUDE), read(GEMINI), read(PI_EXT)];
    // `svc setup` is the same command: everything is there already
    const again = await runSvc(['setup'], env);
    expect(again.stdout).not.toMatch(/\badded\b/);
    expect(again.stdout).toContain(`Claude Code: already has the Stop hook (${settings})`);
    expect([read(CLAUDE), read(GEMINI), read(PI_EXT)]).toEqual(wired);
    expect((await runSvc(['verify'], env)).stdout).toMatch(/agent Claude Code: .*; hooks: wired/);

    // the person edits their own part meanwhile
    write(CLAUDE, read(CLAUDE).replace('"theme": "dark"', '"theme": "light"'));
    const gone = await runSvc(['uninstall'], env);
    expect(gone.code, gone.stdout).toBe(0);
    expect(read(CLAUDE)).toBe(USER[CLAUDE]!.replace('"theme": "dark"', '"theme": "light"'));
    expect(read(GEMINI)).toBe(USER[GEMINI]);
    expect(existsSync(join(home, PI_EXT))).toBe(false);
    expect((await runSvc(['verify'], env)).stdout).toMatch(/agent Claude Code: .*; hooks: not wired: run svc install/);
  });

  it('leaves pi’s extension alone once the person changed it', async () => {
    await runSvc(['install'], env);
    write(PI_EXT, `${read(PI_EXT)}\n// my change\n`);
    const gone = await runSvc(['uninstall'], env);
    expect(gone.stdout).toMatch(/pi: changed by you since install: left as it is/);
    expect(read(PI_EXT)).toContain('// my change');
  });

  it('refuses a broken settings file in one line and writes nothing to it', async () => {
    write(GEMINI, '{ "ui": ');
    const res = await runSvc(['install'], env);
    expect(res.code).toBe(1);
    expect(res.stdout).toMatch(/^Gemini CLI: refused \(the BeforeAgent hook\): .*settings\.json: not valid JSON/m);
    expect(read(GEMINI)).toBe('{ "ui": ');
    // the others are wired all the same
    expect(read(CLAUDE)).toContain('svc-remote.sh');
  });

  it('edits a symlinked settings file at its target, and the link stays a link', async () => {
    const target = join(home, 'dotfiles', 'claude-settings.json');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, USER[CLAUDE]!);
    const link = join(home, CLAUDE);
    rmSync(link);
    symlinkSync(target, link);
    await runSvc(['install'], env);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toContain('svc-remote.sh');
    await runSvc(['uninstall'], env);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe(USER[CLAUDE]);
  });

  it('--dry-run says what it would add and writes nothing', async () => {
    const res = await runSvc(['install', '--dry-run', '--json'], env);
    const report = JSON.parse(res.stdout);
    expect(report.hooks.map((h: { result: string }) => h.result)).toContain('would add');
    expect(read(CLAUDE)).toBe(USER[CLAUDE]);
    expect(existsSync(join(home, PI_EXT))).toBe(false);
  });
});
