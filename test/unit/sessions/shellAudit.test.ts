/** core/sessions/shellAudit.ts: the audit line of spec 8. */
import { describe, expect, it } from 'vitest';
import { escapeAuditText, formatShellAudit } from '../../../core/sessions/shellAudit.js';

const at = Date.UTC(2025, 4, 1, 9, 30, 0);
const entry = { at, session: 'svc-app-sh', pane: '%3', kind: 'insert', program: 'bash', text: 'git status' };

describe('formatShellAudit', () => {
  it('the shell in front: time, session, pane, kind, program and the text', () => {
    expect(formatShellAudit(entry)).toBe(
      '2025-05-01T09:30:00.000Z session=svc-app-sh pane=%3 kind=insert program=bash text="git status"',
    );
  });

  it.each(['bash', 'zsh', '-zsh', '/bin/sh', 'fish', 'dash'])('%s in front: the text', (program) => {
    expect(formatShellAudit({ ...entry, program })).toMatch(/ text="git status"$/);
  });

  it.each([
    ['sudo', 'hunter2', 'len=7'],
    ['ssh', 'pa ss', 'len=5'],
    ['python3', 'print(1)', 'len=8'],
    ['sudo', 'pässwörd', 'len=8'], // characters, not bytes
    ['sudo', '', 'len=0'],
  ])('%s in front: the length only', (program, text, tail) => {
    const line = formatShellAudit({ ...entry, program, text });
    expect(line.endsWith(` program=${program} ${tail}`)).toBe(true);
    if (text) expect(line).not.toContain(text);
  });

  it('one entry is one line whatever the text', () => {
    const text = 'a\nb\rc\td\x1b[31me\x00f\x7fg\u0085h\u2028i\u2029j"k\\l';
    const line = formatShellAudit({ ...entry, text });
    expect(line).not.toMatch(/[\n\r\u0085\u2028\u2029\x00-\x1f\x7f]/);
    expect(line).toContain('text="a\\nb\\rc\\td\\x1b[31me\\x00f\\x7fg\\x85h\\u2028i\\u2029j\\"k\\\\l"');
  });

  it('odd session, pane and program values are quoted and escaped', () => {
    const line = formatShellAudit({ ...entry, session: 'a b', pane: '', program: 'x\ny' });
    expect(line).toBe('2025-05-01T09:30:00.000Z session="a b" pane="" kind=insert program="x\\ny" len=10');
  });

  it('accepts a Date', () => {
    expect(formatShellAudit({ ...entry, at: new Date(at) })).toBe(formatShellAudit(entry));
  });

  it('escapeAuditText keeps other Unicode', () => {
    expect(escapeAuditText('héllo → 日本 😀')).toBe('héllo → 日本 😀');
  });
});
