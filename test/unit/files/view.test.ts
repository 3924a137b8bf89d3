/** File view's rules (core/files/view.ts): which paths may be read, which files are secret, masking, the switch. */
import { describe, expect, it } from 'vitest';
import { maskSecrets } from '../../../actors/files/view.js';
import { decideChunk, MAX_TRANSFER_BYTES } from '../../../core/files/transfer.js';
import {
  changeFileView,
  checkViewPath,
  FILE_VIEW_ON,
  fileViewRefusal,
  isPrivatePath,
  isSecretFile,
  maskRanges,
} from '../../../core/files/view.js';

const HOME = '/home/ana';

describe('file view rules', () => {
  it.each([
    ['src/app.ts', true],
    ['a', true],
    ['dir with space/ü.md', true],
    ['', false],
    ['/etc/passwd', false],
    ['../x', false],
    ['src/../x', false],
    ['./x', false],
    ['a//b', false],
    ['a\\b', false],
    ['a\u0000b', false],
    ['a\nb', false],
    ['x'.repeat(4097), false],
  ])('checkViewPath(%j) ok: %s', (path, ok) => {
    expect(checkViewPath(path).ok).toBe(ok);
  });

  it.each([
    ['.env', true],
    ['config/.env.production', true],
    ['server.pem', true],
    ['certs/tls.KEY', true],
    ['home/.ssh/id_rsa', true],
    ['id_ed25519.pub', true],
    ['.npmrc', true],
    ['aws/credentials', true],
    ['secrets.yaml', true],
    ['prod.tfvars', true],
    ['environment.ts', false],
    ['keyboard.ts', false],
    ['src/key.ts', false],
    ['README.md', false],
  ])('isSecretFile(%j): %s', (path, secret) => {
    expect(isSecretFile(path)).toBe(secret);
  });

  it('masks ranges, keeping line breaks and the rest', () => {
    expect(maskRanges('a SECRET b', [[2, 8]])).toBe('a •••••• b');
    expect(maskRanges('k1\nk2 x', [[0, 5]])).toBe('••\n•• x');
    expect(
      maskRanges('abcdef', [
        [1, 3],
        [2, 5],
      ]),
    ).toBe('a••••f');
    expect(maskRanges('x'.repeat(100), [[0, 100]])).toBe('•'.repeat(40));
  });

  it('masks what secretlint finds, best effort', async () => {
    const token = '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';
    const key = '-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----';
    const r = await maskSecrets(`const t = "${token}";\n${key}\nconst n = 1;\n`, 'a.ts');
    expect(r.masked).toBe(2);
    expect(r.text).not.toContain(token);
    expect(r.text).not.toContain('MIIEpAIBAAKCAQEA');
    expect(r.text).toContain('const n = 1;');
    expect((await maskSecrets('nothing secret here', 'a.txt')).masked).toBe(0);
  });

  it('turns off per project or everywhere, and on again', () => {
    const off = changeFileView(FILE_VIEW_ON, { kind: 'off', global: false, project: '/src/a' });
    expect(fileViewRefusal(off, '/src/a', HOME)).toBe('file_view_off');
    expect(fileViewRefusal(off, '/src/b', HOME)).toBeNull();
    const all = changeFileView(off, { kind: 'off', global: true, project: '/x' });
    expect(fileViewRefusal(all, '/src/b', HOME)).toBe('file_view_off');
    const stillOff = changeFileView(all, { kind: 'on', global: false, project: '/src/b' });
    expect(fileViewRefusal(stillOff, '/src/b', HOME)).toBe('file_view_off');
    const on = changeFileView(all, { kind: 'on', global: true, project: '/x' });
    expect(on).toEqual(FILE_VIEW_ON);
  });

  it('the home directory and / are refused until turned on there by name', () => {
    for (const root of [HOME, `${HOME}/`, '/'])
      expect(fileViewRefusal(FILE_VIEW_ON, root, HOME)).toBe('file_view_broad_root');
    expect(fileViewRefusal(FILE_VIEW_ON, `${HOME}/proj`, HOME)).toBeNull();
    const on = changeFileView(FILE_VIEW_ON, { kind: 'on', global: false, project: HOME, broad: true });
    expect(fileViewRefusal(on, HOME, HOME)).toBeNull();
    expect(fileViewRefusal(on, '/', HOME)).toBe('file_view_broad_root');
    const offAgain = changeFileView(on, { kind: 'off', global: false, project: HOME, broad: true });
    expect(fileViewRefusal(offAgain, HOME, HOME)).toBe('file_view_off');
    expect(offAgain.on).toEqual([]);
  });

  it.each([
    [`${HOME}/proj/notes.txt`, false],
    [`${HOME}/proj/.env`, true],
    [`${HOME}/proj/deploy.key`, true],
    [`${HOME}/.svc/config.json`, true],
    [`${HOME}/.svc/device-key.json`, true],
    [`${HOME}/.svc`, true],
    [`${HOME}/.ssh/config`, true],
    [`${HOME}/.gnupg/pubring.kbx`, true],
    [`${HOME}/.aws/credentials`, true],
    [`${HOME}/.config/gcloud/application_default_credentials.json`, true],
    [`${HOME}/.claude/.credentials.json`, true],
    [`${HOME}/.codex/auth.json`, true],
    [`${HOME}/.gemini/oauth_creds.json`, true],
    [`${HOME}/.claude/settings.json`, false],
    [`${HOME}/.svcx/notes.txt`, false],
    ['/etc/ssl/private/server.key', true],
    ['/srv/.ssh/config', false],
  ])('isPrivatePath(%s) → %s', (real, expected) => {
    expect(isPrivatePath(real, HOME)).toBe(expected);
  });
});

describe('a chunk of a file sent to the computer (decideChunk)', () => {
  const sha = 'a'.repeat(64);
  const state = { id: 'x', device: 'd_1', name: 'a.txt', size: 100, sha256: sha, received: 40 };
  const chunk = (offset: number, bytes: number, more: Partial<{ size: number; sha256: string }> = {}) => ({
    id: 'x',
    size: 100,
    sha256: sha,
    offset,
    bytes,
    ...more,
  });
  it.each([
    ['the first chunk starts it', null, chunk(0, 40), 'd_1', { kind: 'append', start: true }],
    ['the next chunk goes on', state, chunk(40, 60), 'd_1', { kind: 'append', start: false }],
    ['a chunk already in is a duplicate', state, chunk(0, 40), 'd_1', { kind: 'duplicate' }],
    ['no data asks where it stands', state, chunk(0, 0), 'd_1', { kind: 'status' }],
    ['a gap is refused', state, chunk(60, 10), 'd_1', { kind: 'refuse', code: 'bad_transfer' }],
    ['past its size is refused', state, chunk(40, 61), 'd_1', { kind: 'refuse', code: 'bad_transfer' }],
    ['another device cannot add to it', state, chunk(40, 10), 'd_2', { kind: 'refuse', code: 'bad_transfer' }],
    ['another file under the same id', state, chunk(40, 10, { sha256: 'b'.repeat(64) }), 'd_1', { kind: 'refuse' }],
    [
      'over 100 MiB',
      null,
      chunk(0, 10, { size: MAX_TRANSFER_BYTES + 1 }),
      'd_1',
      { kind: 'refuse', code: 'too_large' },
    ],
    ['an empty file', null, chunk(0, 0, { size: 0 }), 'd_1', { kind: 'refuse', code: 'empty_body' }],
  ] as const)('%s', (_what, s, c, device, decision) => {
    expect(decideChunk(s, c, device)).toMatchObject(decision);
  });
});
