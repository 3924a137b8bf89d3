/**
 * File view through the real listener and relay (spec 4.11.3, 4.5): a session's project in a real git repository,
 * a phone sending sealed requests on the relay's WebSocket and opening the sealed answers. Listed: tracked files and
 * untracked ones not covered by .gitignore; refused: `..`, absolute paths, control bytes, a symlink leading out, an
 * ignored file; a secret file is listed and never shown; a planted token is masked in the file and in the diff; a
 * binary file is not shown; each read is in `svc file-view log`; `svc file-view off` turns it off for the project.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type FileRequest, FileResultBody } from '../../core/protocol/bodies.js';
import { runSvc, type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { computerDevice, databaseHolds, registerTestDevice, type TestDevice } from '../helpers/devices.js';
import { startTestRelay, type TestRelay, TestSocket } from '../helpers/relay.js';
import { waitFor } from '../helpers/tmux.js';

const SESSION = 'svc-files';
// a GitHub token shape secretlint's recommended rules know (random, never a real one)
const TOKEN = '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';
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd });

let relay: TestRelay;
let computer: TestComputer;
let me: { id: string; publicKey: string };
let app: TestDevice;
let sock: TestSocket;
let listener: SpawnedSvc;
let project: string;
let seq = 0;

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

beforeEach(async () => {
  computer = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: `box-${Date.now()}` });
  me = await computerDevice(relay, computer.hookId);
  app = await registerTestDevice(relay, 'app', 'phone');
  project = join(computer.home.home, 'proj');
  mkdirSync(join(project, 'src'), { recursive: true });
  git(project, 'init', '-q', '-b', 'main');
  writeFileSync(join(project, '.gitignore'), 'build/\n.env\n');
  writeFileSync(join(project, 'src', 'app.ts'), 'export const a = 1;\n');
  writeFileSync(join(project, 'config.ts'), 'export const token = "x";\n');
  writeFileSync(join(project, 'server.pem'), '-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n');
  git(project, 'add', '.');
  git(project, 'commit', '-qm', 'first');
  // after the commit: a change with a token in it, an untracked file, an ignored one, a secret, a binary, a way out
  writeFileSync(join(project, 'config.ts'), `export const token = "${TOKEN}";\n`);
  writeFileSync(join(project, 'notes.md'), 'untracked notes\n');
  mkdirSync(join(project, 'build'));
  writeFileSync(join(project, 'build', 'out.js'), 'ignored\n');
  writeFileSync(join(project, '.env'), 'API_KEY=hidden\n');
  writeFileSync(join(project, 'image.bin'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 1, 2, 3]));
  writeFileSync(join(computer.home.home, 'outside.txt'), 'outside the project\n');
  symlinkSync(join(computer.home.home, 'outside.txt'), join(project, 'escape.txt'));
  await computer.tmux.newSession(SESSION, ['cat'], {
    cwd: join(project, 'src'),
    options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'proj' },
  });
  listener = spawnSvc(['listener'], computer.env);
  await listener.waitForLine(/connected to ws:/);
  sock = await TestSocket.open(relay.wsUrl, relay.apiKey);
  sock.send({ type: 'subscribe', role: 'app', deviceId: app.deviceId });
  await sock.next('subscribed');
});

afterEach(async () => {
  await sock?.close();
  await listener?.stop();
  await computer.tmux.cleanup();
  computer.home.cleanup();
});

/** Sends a sealed file request and opens the sealed answer. */
async function ask(file: FileRequest, session = SESSION): Promise<FileResultBody> {
  const n = ++seq;
  const envelope = await app.seal('pane.keys', me, { session, seq: n, file });
  sock.send({ type: 'pane.keys', computer: computer.hookId, session, envelope });
  const result = await sock.next('keys.result', (f) => f.session === session && f.seq === n, 20_000);
  expect(result.envelope, `an answer for ${JSON.stringify(file)}`).toBeDefined();
  const body = FileResultBody.parse(await app.open('file', result.envelope, me.publicKey));
  expect(body).toMatchObject({ session, seq: n, op: file.op });
  expect(result.state).toBe(body.refused ? 'refused' : 'typed');
  return body;
}

describe('file view', () => {
  it('lists what git lists, shows files with secrets masked, never a secret file, nothing outside', async () => {
    const list = await ask({ op: 'list' });
    const paths = list.entries!.map((e) => e.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        '.gitignore',
        'config.ts',
        'escape.txt',
        'image.bin',
        'notes.md',
        'server.pem',
        'src/app.ts',
      ]),
    );
    expect(paths).not.toContain('build/out.js'); // ignored
    expect(paths).not.toContain('.env'); // ignored here; a secret either way
    expect(list.entries!.find((e) => e.path === 'server.pem')).toMatchObject({ secret: true });
    expect(list.entries!.find((e) => e.path === 'config.ts')).toMatchObject({ changed: true });

    const src = await ask({ op: 'read', path: 'src/app.ts' });
    expect(src.text).toBe('export const a = 1;\n');
    const config = await ask({ op: 'read', path: 'config.ts' });
    expect(config.masked).toBe(1);
    expect(config.text).not.toContain(TOKEN);
    expect(config.text).toMatch(/export const token = "•+";/);
    expect(await ask({ op: 'read', path: 'server.pem' })).toMatchObject({ secret: true, refused: 'secret_file' });
    expect((await ask({ op: 'read', path: 'server.pem' })).text).toBeUndefined();
    expect(await ask({ op: 'read', path: 'image.bin' })).toMatchObject({ binary: true, size: 9 });

    // refused: the way out, and names that are not plain project paths
    for (const [path, code] of [
      ['escape.txt', 'outside_project'],
      ['../outside.txt', 'bad_path'],
      ['src/../../outside.txt', 'bad_path'],
      [join(computer.home.home, 'outside.txt'), 'bad_path'],
      ['src/app.ts\u0000', 'bad_path'],
      ['build/out.js', 'not_in_project'],
      ['.env', 'not_in_project'],
    ] as const) {
      const r = await ask({ op: 'read', path });
      expect(r.refused, path).toBe(code);
      expect(r.text).toBeUndefined();
    }

    const diff = await ask({ op: 'diff' });
    expect(diff.text).toContain('+export const token = "');
    expect(diff.text).not.toContain(TOKEN);
    expect(diff.masked).toBe(1);
    // a new file git does not track yet is a change too, added whole; an ignored one is not
    expect(diff.text).toContain('+++ b/notes.md\n@@ -0,0 +1 @@\n+untracked notes');
    expect(diff.text).not.toContain('API_KEY');
    expect(diff.text).not.toContain('build/out.js');
    expect((await ask({ op: 'diff', path: 'notes.md' })).text).toContain('+untracked notes');

    // nothing of it in the clear on the relay or in its frames
    expect(JSON.stringify(sock.frames)).not.toContain('export const a');
    expect(databaseHolds(relay.dataDir, 'export const a')).toBe(false);

    // every read is in the log, the refusals too
    const log = await runSvc(['file-view', 'log'], computer.env);
    expect(log.stdout).toContain(`${app.deviceId}  ${SESSION}  read config.ts  shown, 1 masked`);
    expect(log.stdout).toContain(`${app.deviceId}  ${SESSION}  read escape.txt  outside_project`);
    expect(log.stdout.trim().split('\n').length).toBeLessThanOrEqual(50);
  }, 90_000);

  it('a named pipe is refused, never waited on: the listener goes on serving', async () => {
    execFileSync('mkfifo', [join(project, 'pipe')]);
    symlinkSync('pipe', join(project, 'to-pipe.txt'));
    const r = await ask({ op: 'read', path: 'to-pipe.txt' });
    expect(r).toMatchObject({ refused: 'not_a_file' });
    // the listener was not frozen: it answers the next request at once, and a push is typed
    expect((await ask({ op: 'read', path: 'src/app.ts' })).text).toBe('export const a = 1;\n');
    expect(listener.child.exitCode).toBeNull();
  }, 60_000);

  it('secrecy goes by what is read: a link to .env, a file named *, and never the keys under the home', async () => {
    // a link with an innocent name that leads to the secret
    symlinkSync('.env', join(project, 'alias.txt'));
    expect(await ask({ op: 'read', path: 'alias.txt' })).toMatchObject({ secret: true, refused: 'secret_file' });
    // a tracked secret with a change, and a file named `*`: its diff is its own, not a pattern for every file
    writeFileSync(join(project, '.env.local'), 'DB_PASSWORD=first\n');
    writeFileSync(join(project, '*'), 'star one\n');
    git(project, 'add', '-f', '.env.local', '*');
    git(project, 'commit', '-qm', 'secret and star');
    writeFileSync(join(project, '.env.local'), 'DB_PASSWORD=changed-secret\n');
    writeFileSync(join(project, '*'), 'star two\n');
    const star = await ask({ op: 'diff', path: '*' });
    expect(star.text).toContain('+star two');
    expect(star.text).not.toContain('changed-secret');
    expect((await ask({ op: 'diff' })).text).not.toContain('changed-secret');

    // a session whose folder is the home directory: refused until turned on there, and then never ~/.svc
    await computer.tmux.newSession('svc-home', ['cat'], {
      cwd: computer.home.home,
      options: { '@svc-kind': 'agent', '@svc-agent': 'A1', '@svc-project': 'home' },
    });
    const apiKey = JSON.parse(readFileSync(join(computer.home.home, '.svc', 'config.json'), 'utf8')).apiKey as string;
    expect(apiKey.length).toBeGreaterThan(10);
    await waitFor(async () => (await ask({ op: 'list' }, 'svc-home')).refused !== 'session_not_found', {
      what: 'the listener to know svc-home',
    });
    expect(await ask({ op: 'list' }, 'svc-home')).toMatchObject({ refused: 'file_view_broad_root' });
    expect(await ask({ op: 'read', path: 'outside.txt' }, 'svc-home')).toMatchObject({
      refused: 'file_view_broad_root',
    });
    const on = await runSvc(['file-view', 'on'], computer.env, { cwd: computer.home.home });
    expect(on.stdout).toContain('broad folder');
    expect((await ask({ op: 'read', path: 'outside.txt' }, 'svc-home')).text).toBe('outside the project\n');
    for (const path of ['.svc/config.json', '.svc/device-key.json']) {
      const r = await ask({ op: 'read', path }, 'svc-home');
      expect(r.refused, path).toMatch(/^(secret_file|not_in_project)$/);
      expect(JSON.stringify(r)).not.toContain(apiKey);
    }
    const listed = await ask({ op: 'list' }, 'svc-home');
    for (const e of listed.entries ?? [])
      if (e.path.startsWith('.svc/')) expect(e, e.path).toMatchObject({ secret: true });
  }, 90_000);

  it('svc file-view off refuses for this project until on; the log keeps the last 50', async () => {
    const off = await runSvc(['file-view', 'off'], computer.env, { cwd: join(project, 'src') });
    expect(off.stdout.trim()).toBe(`file view off: ${project}`);
    expect(await ask({ op: 'list' })).toMatchObject({ refused: 'file_view_off' });
    expect(await ask({ op: 'read', path: 'src/app.ts' })).toMatchObject({ refused: 'file_view_off' });
    await runSvc(['file-view', 'on'], computer.env, { cwd: project });
    expect((await ask({ op: 'read', path: 'src/app.ts' })).text).toBe('export const a = 1;\n');
    await runSvc(['file-view', 'off', '--global'], computer.env, { cwd: '/' });
    expect(await ask({ op: 'list' })).toMatchObject({ refused: 'file_view_off' });
    await runSvc(['file-view', 'on', '--global'], computer.env, { cwd: '/' });
    for (let i = 0; i < 52; i++) await ask({ op: 'read', path: 'notes.md' });
    const lines = (await runSvc(['file-view', 'log'], computer.env)).stdout.trim().split('\n');
    expect(lines).toHaveLength(50);
    expect(lines.every((l) => l.includes('read notes.md  shown'))).toBe(true);
  }, 120_000);
});
