/** actors/sessions/shellAudit.ts on the real file system: the audit log's place, modes and content (spec 2.6, 8). */
import { chmodSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendShellAudit } from '../../actors/sessions/shellAudit.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { tempHome } from '../helpers/cli.js';

let home: ReturnType<typeof tempHome>;
beforeEach(() => {
  home = tempHome();
});
afterEach(() => home.cleanup());

const at = Date.UTC(2025, 4, 1, 9, 30, 0);
const mode = (path: string) => statSync(path).mode & 0o777;

describe('appendShellAudit', () => {
  it('appends one line per input to ~/.local/state/svc/shell-audit.log, 0600 in a 0700 directory', () => {
    const { shellAudit, stateDir } = svcPaths(home.home);
    expect(shellAudit).toBe(join(home.home, '.local/state/svc/shell-audit.log'));
    appendShellAudit(shellAudit, {
      at,
      session: 'svc-p-sh',
      pane: '%1',
      kind: 'insert',
      program: 'bash',
      text: 'ls -la',
    });
    appendShellAudit(shellAudit, {
      at: at + 1000,
      session: 'svc-p-sh',
      pane: '%1',
      kind: 'insert',
      program: 'sudo',
      text: 'hunter2',
    });
    appendShellAudit(shellAudit, {
      at: at + 2000,
      session: 'svc-p-sh',
      pane: '%1',
      kind: 'insert',
      program: 'zsh',
      text: 'echo "two\nlines"',
    });
    expect(mode(stateDir)).toBe(0o700);
    expect(mode(shellAudit)).toBe(0o600);
    const text = readFileSync(shellAudit, 'utf8');
    expect(text).toBe(
      [
        '2025-05-01T09:30:00.000Z session=svc-p-sh pane=%1 kind=insert program=bash text="ls -la"',
        '2025-05-01T09:30:01.000Z session=svc-p-sh pane=%1 kind=insert program=sudo len=7',
        '2025-05-01T09:30:02.000Z session=svc-p-sh pane=%1 kind=insert program=zsh text="echo \\"two\\nlines\\""',
        '',
      ].join('\n'),
    );
    expect(text).not.toContain('hunter2');
  });

  it('narrows an existing log with a wider mode, and keeps what it held', () => {
    const { shellAudit, stateDir } = svcPaths(home.home);
    mkdirSync(stateDir, { recursive: true, mode: 0o755 });
    writeFileSync(shellAudit, 'old line\n', { mode: 0o644 });
    chmodSync(shellAudit, 0o644);
    appendShellAudit(shellAudit, { at, session: 's', pane: '%2', kind: 'insert', program: 'sh', text: 'pwd' });
    expect(mode(shellAudit)).toBe(0o600);
    expect(mode(stateDir)).toBe(0o700);
    expect(readFileSync(shellAudit, 'utf8')).toBe(
      'old line\n2025-05-01T09:30:00.000Z session=s pane=%2 kind=insert program=sh text="pwd"\n',
    );
  });

  it('refuses to follow a symlink at the log path', () => {
    const { shellAudit, stateDir } = svcPaths(home.home);
    mkdirSync(stateDir, { recursive: true });
    const elsewhere = join(home.home, 'elsewhere.log');
    writeFileSync(elsewhere, '');
    symlinkSync(elsewhere, shellAudit);
    expect(() =>
      appendShellAudit(shellAudit, { at, session: 's', pane: '%2', kind: 'insert', program: 'sh', text: 'x' }),
    ).toThrow(/ELOOP/);
    expect(readFileSync(elsewhere, 'utf8')).toBe('');
  });
});
