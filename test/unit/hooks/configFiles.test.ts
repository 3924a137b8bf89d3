/**
 * Editing the agents' own config files (actors/hooks/configFiles.ts) on real files in a temp home: another process
 * that rewrites the file between svc's read and its replace (an agent saving its config) never has its write undone;
 * a file that is not UTF-8 keeps its bytes through install and uninstall, and its backup stays until the file is
 * byte for byte what it was.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BACKUP_SUFFIX, editSeam, installOne, uninstallAll } from '../../../actors/hooks/configFiles.js';
import type { Wiring } from '../../../core/hooks/wiring.js';

let home: string;
const wiring = (file: string, format: 'json' | 'toml'): Wiring => ({
  agentId: 'A1',
  command: 'claude',
  kind: 'mcp',
  file,
  format,
  path: format === 'json' ? ['mcpServers', 'svc'] : ['mcp_servers', 'svc'],
  value: { command: '/usr/bin/svc', args: ['mcp'] },
});

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'svc-config-'));
});
afterEach(() => {
  editSeam.beforeReplace = null;
  rmSync(home, { recursive: true, force: true });
});

describe('a file another process rewrites while svc edits it', () => {
  it('install: the other write is kept, svc’s entry is added on top of it', () => {
    const file = join(home, '.claude.json');
    writeFileSync(file, '{"numStartups": 1}\n');
    let writes = 0;
    editSeam.beforeReplace = (target) => {
      if (target !== file || writes >= 2) return;
      writes++;
      writeFileSync(file, `{"numStartups": ${1 + writes}}\n`); // the agent saves its own state meanwhile
    };
    expect(installOne(home, wiring(file, 'json'), false)).toMatchObject({ result: 'added' });
    const after = JSON.parse(readFileSync(file, 'utf8'));
    expect(after.numStartups).toBe(3);
    expect(after.mcpServers.svc).toEqual({ command: '/usr/bin/svc', args: ['mcp'] });
  });

  it('uninstall: the other write is kept, svc’s entry is taken out of it', () => {
    const file = join(home, '.claude.json');
    writeFileSync(file, '{"numStartups": 1}\n');
    installOne(home, wiring(file, 'json'), false);
    editSeam.beforeReplace = (target) => {
      if (target !== file) return;
      editSeam.beforeReplace = null;
      const now = JSON.parse(readFileSync(file, 'utf8'));
      writeFileSync(file, `${JSON.stringify({ ...now, numStartups: 9 })}\n`);
    };
    expect(uninstallAll(home, false)).toEqual([expect.objectContaining({ result: 'removed' })]);
    const after = JSON.parse(readFileSync(file, 'utf8'));
    expect(after).toEqual({ numStartups: 9 });
  });

  it('gives up in one line after five changes in a row, writing nothing of its own', () => {
    const file = join(home, '.claude.json');
    writeFileSync(file, '{"n": 0}\n');
    let n = 0;
    editSeam.beforeReplace = () => writeFileSync(file, `{"n": ${++n}}\n`);
    expect(installOne(home, wiring(file, 'json'), false)).toMatchObject({
      result: 'refused',
      reason: expect.stringContaining('kept changing while svc edited it'),
    });
    expect(readFileSync(file, 'utf8')).toBe('{"n": 5}\n');
  });
});

describe('a config file that is not UTF-8', () => {
  it('keeps every byte through install and uninstall, and then its backup goes', () => {
    const file = join(home, 'config.toml');
    // a Latin-1 é in a comment: not valid UTF-8
    const original = Buffer.concat([Buffer.from('# caf'), Buffer.from([0xe9]), Buffer.from('\nmodel = "x"\n')]);
    writeFileSync(file, original);
    expect(installOne(home, wiring(file, 'toml'), false)).toMatchObject({ result: 'added' });
    const installed = readFileSync(file);
    expect(installed.includes(Buffer.from([0xe9]))).toBe(true);
    expect(installed.includes(Buffer.from('\ufffd'))).toBe(false);
    expect(readFileSync(file + BACKUP_SUFFIX).equals(original)).toBe(true);
    uninstallAll(home, false);
    expect(readFileSync(file).equals(original)).toBe(true);
    expect(existsSync(file + BACKUP_SUFFIX)).toBe(false);
  });

  it('keeps the backup when the file is not byte for byte what it was', () => {
    const file = join(home, 'config.toml');
    const original = Buffer.concat([Buffer.from('# caf'), Buffer.from([0xe9]), Buffer.from('\n')]);
    writeFileSync(file, original);
    installOne(home, wiring(file, 'toml'), false);
    // the person edits the file meanwhile
    writeFileSync(file, Buffer.concat([readFileSync(file), Buffer.from('theirs = 1\n')]));
    uninstallAll(home, false);
    expect(readFileSync(file).toString('latin1')).toContain('theirs = 1');
    expect(readFileSync(file + BACKUP_SUFFIX).equals(original)).toBe(true);
  });
});
