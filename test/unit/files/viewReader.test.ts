/**
 * The file-view reader (actors/files/view.ts) on a real folder in a temp dir, without the listener: a link out of
 * the project, a link to a secret, a named pipe and a file under the home's ~/.svc are refused with their codes.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFileView } from '../../../actors/files/view.js';
import type { SessionRecord } from '../../../core/protocol/index.js';

let home: string;
let proj: string;
const record = (path: string): SessionRecord => ({
  name: 'svc-proj',
  attached: false,
  createdAt: 1,
  activityAt: 1,
  panes: [{ id: '%1', command: 'claude', path, active: true }],
});
const view = () =>
  createFileView({ settingsPath: join(home, '.svc', 'file-view.json'), logPath: join(home, 'fv.log'), home });
const read = (path: string, at = proj) => view().answer('svc-proj', record(at), { op: 'read', path }, 'd_phone');

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'svc-fv-'));
  proj = join(home, 'proj');
  mkdirSync(proj);
  writeFileSync(join(home, 'outside.txt'), 'outside\n');
  writeFileSync(join(proj, 'notes.md'), 'notes\n');
  writeFileSync(join(proj, '.env'), 'API_KEY=hidden\n');
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

describe('the file-view reader', () => {
  it('reads a plain file, and refuses a link out, a link to a secret and a named pipe', async () => {
    symlinkSync(join(home, 'outside.txt'), join(proj, 'escape.txt'));
    symlinkSync('.env', join(proj, 'alias.txt'));
    execFileSync('mkfifo', [join(proj, 'pipe')]);
    expect(await read('notes.md')).toMatchObject({ text: 'notes\n' });
    expect(await read('escape.txt')).toMatchObject({ refused: 'outside_project' });
    expect(await read('alias.txt')).toMatchObject({ refused: 'secret_file', secret: true });
    expect(await read('pipe')).toMatchObject({ refused: 'not_a_file' });
    expect(JSON.stringify(await read('alias.txt'))).not.toContain('hidden');
  });

  it('a session at the home folder: refused until turned on there, and ~/.svc never shown', async () => {
    mkdirSync(join(home, '.svc'));
    writeFileSync(join(home, '.svc', 'config.json'), '{"apiKey":"svc_secret"}\n');
    expect(await read('outside.txt', home)).toMatchObject({ refused: 'file_view_broad_root' });
    writeFileSync(
      join(home, '.svc', 'file-view.json'),
      JSON.stringify({ version: 1, global: false, off: [], on: [home] }),
    );
    expect(await read('outside.txt', home)).toMatchObject({ text: 'outside\n' });
    const key = await read('.svc/config.json', home);
    expect(key).toMatchObject({ refused: 'secret_file' });
    expect(JSON.stringify(key)).not.toContain('svc_secret');
  });
});
