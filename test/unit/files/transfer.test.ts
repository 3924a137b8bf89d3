/**
 * Files sent from the phone (core/files/transfer.ts, actors/transfer/receive.ts placeReceived): hostile names made safe, clashes
 * named `name (2).ext`, never overwriting — also with two processes saving the same name at once —, the size limit.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { placeReceived } from '../../../actors/transfer/receive.js';
import {
  clashName,
  MAX_NAME_BYTES,
  MAX_TRANSFER_BYTES,
  safeFileName,
  transferProblem,
} from '../../../core/files/transfer.js';

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'svc-transfer-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('safeFileName', () => {
  it.each([
    ['a plain name', 'report.pdf', 'report.pdf'],
    ['a path up', '../x', 'x'],
    ['far up', '../../../etc/passwd', 'passwd'],
    ['a folder', 'a/b', 'b'],
    ['a Windows path', 'C:\\Users\\me\\notes.txt', 'notes.txt'],
    ['control bytes', 'ev\u0000il\u001b[31m.txt', 'evil[31m.txt'],
    ['a direction override hiding the extension', 'invoice\u202Egpj.exe', 'invoicegpj.exe'],
    ['dots only', '..', 'file'],
    ['nothing', '', 'file'],
    ['a trailing slash', 'dir/', 'file'],
    ['spaces and trailing dots', '  name.txt. . ', 'name.txt'],
    ['a dot file', '.env', '.env'],
  ])('%s', (_what, sent, expected) => {
    expect(safeFileName(sent)).toBe(expected);
  });

  it('cuts a long name to what a file system takes, keeping the extension and whole characters', () => {
    const long = safeFileName(`${'é'.repeat(300)}.tar.gz`);
    expect(new TextEncoder().encode(long).length).toBeLessThanOrEqual(MAX_NAME_BYTES);
    expect(long.endsWith('é.tar.gz') || long.endsWith('.gz')).toBe(true);
    expect(long).not.toContain('\ufffd');
  });

  it('clash names', () => {
    expect(clashName('report.pdf', 1)).toBe('report.pdf');
    expect(clashName('report.pdf', 2)).toBe('report (2).pdf');
    expect(clashName('.env', 3)).toBe('.env (3)');
    expect(clashName('README', 2)).toBe('README (2)');
  });

  it('the size limit', () => {
    expect(transferProblem(1)).toBeNull();
    expect(transferProblem(MAX_TRANSFER_BYTES)).toBeNull();
    expect(transferProblem(MAX_TRANSFER_BYTES + 1)).toMatchObject({ code: 'too_large' });
    expect(transferProblem(0)).toMatchObject({ code: 'empty_body' });
  });
});

describe('placing a received file under ~/Downloads/Svc (placeReceived, what the receiver uses)', () => {
  /** A finished transfer's part file, as the receiver leaves it (0600). */
  const part = (text: string) => {
    const path = join(temp(), `${Math.random().toString(36).slice(2)}.part`);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };

  it('places under its own name, then name (2).ext, never overwriting an existing file', () => {
    const dir = join(temp(), 'Downloads', 'Svc');
    const firstPart = part('one');
    const first = placeReceived(dir, 'notes.txt', firstPart);
    expect(first).toBe(join(dir, 'notes.txt'));
    expect(existsSync(firstPart)).toBe(false);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(first).mode & 0o777).toBe(0o600);
    writeFileSync(join(dir, 'notes (2).txt'), 'the person’s own file');
    const third = placeReceived(dir, '../notes.txt', part('two'));
    expect(third).toBe(join(dir, 'notes (3).txt'));
    expect(readFileSync(first, 'utf8')).toBe('one');
    expect(readFileSync(join(dir, 'notes (2).txt'), 'utf8')).toBe('the person’s own file');
    expect(readFileSync(third, 'utf8')).toBe('two');
  });

  it('two processes placing the same name at once get a file each', async () => {
    const dir = join(temp(), 'Svc');
    const work = temp();
    const receive = resolve('dist/actors/transfer/receive.js');
    const script = `import { writeFileSync } from 'node:fs';
      import { placeReceived } from ${JSON.stringify(receive)};
      for (let i = 0; i < 25; i++) {
        const part = ${JSON.stringify(work)} + '/' + process.argv[1] + i + '.part';
        writeFileSync(part, process.argv[1] + i, { mode: 0o600 });
        placeReceived(${JSON.stringify(dir)}, 'same.bin', part);
      }`;
    const run = (who: string) =>
      new Promise<void>((done, fail) =>
        execFile(process.execPath, ['--input-type=module', '-e', script, who], (err) => (err ? fail(err) : done())),
      );
    await Promise.all([run('a'), run('b')]);
    const files = readdirSync(dir);
    expect(files).toHaveLength(50);
    const contents = files.map((f) => readFileSync(join(dir, f), 'utf8')).sort();
    expect(new Set(contents).size).toBe(50);
  });
});
