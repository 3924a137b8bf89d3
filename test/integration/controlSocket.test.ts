/**
 * The control socket (actors/daemon/controlSocket.ts) on a real Unix socket in a temp ~/.svc: who may connect, and what
 * it survives. Connections from another user are tried for real when the tests run as root (CI does): a client
 * process is started as `nobody`.
 */
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createActor, setup } from 'xstate';
import {
  type ControlServer,
  ControlSocketError,
  ControlUnavailable,
  controlConnect,
  controlRequest,
  controlSocketPath,
  privateDirProblem,
  startControlServer,
} from '../../actors/daemon/controlSocket.js';
import { createInspector, type Inspector } from '../../actors/debug/inspector.js';
import type { ControlReply } from '../../core/daemon/control.js';
import { waitFor } from '../helpers/tmux.js';

const isRoot = process.getuid?.() === 0;
if (!isRoot) console.warn('controlSocket.test.ts: not root, so connections as another user are not tried here');
const NOBODY = 65534;

let root: string;
let dir: string;
let inspector: Inspector;
let server: ControlServer | null;
let stops: number;

const toggle = setup({ types: { events: {} as { type: 'FLIP' } } }).createMachine({
  id: 'toggle',
  initial: 'off',
  states: { off: { on: { FLIP: 'on' } }, on: { on: { FLIP: 'off' } } },
});

async function start(): Promise<ControlServer> {
  server = await startControlServer({
    dir,
    inspector,
    version: '9.9.9',
    tmuxSocket: '/tmp/tmux-test/default',
    stop: () => {
      stops++;
    },
  });
  return server;
}

/** A raw connection: write what is given, collect reply lines until closed or `lines` arrived. */
function raw(path: string): { sock: Socket; lines: () => ControlReply[]; closed: Promise<void> } {
  const sock = createConnection(path);
  let buf = '';
  sock.setEncoding('utf8');
  sock.on('data', (d: string) => {
    buf += d;
  });
  sock.on('error', () => {});
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  return {
    sock,
    lines: () =>
      buf
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as ControlReply),
    closed,
  };
}

/** Try to connect as another user (root only): resolves with the error code, or 'connected'. */
function connectAs(uid: number, path: string): Promise<string> {
  const script = `const s=require('net').createConnection(${JSON.stringify(path)});s.on('connect',()=>{console.log('connected');s.destroy()});s.on('error',e=>console.log(e.code))`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', script], { uid, gid: uid, stdio: ['ignore', 'pipe', 'pipe'] });
    // e.g. EACCES: the other user cannot run this node (one kept under /root); say so instead of hanging
    child.on('error', (e) => reject(new Error(`cannot run ${process.execPath} as uid ${uid}: ${e.message}`)));
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      out += d;
    });
    child.on('exit', () => resolve(out.trim()));
  });
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'svc-ctl-'));
  dir = join(root, '.svc');
  mkdirSync(dir, { mode: 0o700 });
  inspector = createInspector();
  server = null;
  stops = 0;
});

afterEach(() => {
  server?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('control socket: who may connect', () => {
  it('is created 0600 in a 0700 directory and answers its owner', async () => {
    const s = await start();
    expect(s.path).toBe(controlSocketPath(dir));
    expect(lstatSync(s.path).isSocket()).toBe(true);
    expect(statSync(s.path).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    const status = await controlRequest(dir, { type: 'status' }, 'status');
    expect(status).toMatchObject({ pid: process.pid, version: '9.9.9', sessions: 0 });
  });

  it('does not start in a directory open to group or others', async () => {
    chmodSync(dir, 0o755);
    expect(privateDirProblem(dir)).toMatch(/open to group or others \(mode 755\)/);
    await expect(start()).rejects.toThrow(ControlSocketError);
    expect(() => lstatSync(controlSocketPath(dir))).toThrow();
  });

  it.runIf(isRoot)('does not start in a directory owned by another user', async () => {
    chownSync(dir, NOBODY, NOBODY);
    await expect(start()).rejects.toThrow(/owned by uid 65534/);
  });

  it.runIf(isRoot)('refuses another user: by the directory, and by the socket’s own mode', async () => {
    const s = await start();
    // as laid out: ~/.svc is 0700
    expect(await connectAs(NOBODY, s.path)).toBe('EACCES');
    // even with every directory on the way opened for traversal, the socket itself (0600) refuses
    chmodSync(root, 0o711);
    chmodSync(dir, 0o711);
    expect(await connectAs(NOBODY, s.path)).toBe('EACCES');
    // and the owner still gets in
    expect(await controlRequest(dir, { type: 'status' }, 'status')).toMatchObject({ type: 'status' });
  });

  it.runIf(isRoot)('the client does not talk to a socket another user owns', async () => {
    const s = await start();
    chownSync(s.path, NOBODY, NOBODY);
    await expect(controlRequest(dir, { type: 'status' }, 'status')).rejects.toThrow(ControlUnavailable);
  });

  it('takes over a socket left by a dead listener, but never a live one or a file that is not a socket', async () => {
    const path = controlSocketPath(dir);
    // another process listens there, then dies without cleaning up (SIGKILL)
    const script = `require('net').createServer().listen(${JSON.stringify(path)},()=>console.log('ready'))`;
    const other = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((r) => other.stdout.once('data', () => r()));
    await expect(start()).rejects.toThrow(/another listener answers/);
    const exited = new Promise((r) => other.once('exit', r));
    other.kill('SIGKILL');
    await exited;
    expect(lstatSync(path).isSocket()).toBe(true); // left behind
    const s = await start();
    expect(await controlRequest(dir, { type: 'status' }, 'status')).toMatchObject({ type: 'status' });
    s.close();
    server = null;
    writeFileSync(path, 'not a socket');
    await expect(start()).rejects.toThrow(/not a socket/);
  });
});

describe('control socket: what it survives', () => {
  it('answers garbage with an error line and keeps the connection', async () => {
    const s = await start();
    const c = raw(s.path);
    c.sock.write('this is not json\n');
    c.sock.write('{"type":"format-disk"}\n');
    c.sock.write(Buffer.from([0, 1, 2, 255, 254, 10]));
    c.sock.write('{"type":"status"}\n');
    await waitFor(() => c.lines().length >= 4, { what: 'four answers' });
    const [a, b, bin, ok] = c.lines();
    expect(a).toMatchObject({ ok: false, error: { code: 'bad_json' } });
    expect(b).toMatchObject({ ok: false, error: { code: 'bad_request' } });
    expect(bin).toMatchObject({ ok: false, error: { code: 'bad_json' } });
    expect(ok).toMatchObject({ ok: true, type: 'status' });
    c.sock.destroy();
  });

  it('closes on a line over 64 KiB, and goes on serving others', async () => {
    const s = await start();
    const c = raw(s.path);
    c.sock.write('x'.repeat(200 * 1024));
    await c.closed;
    expect(c.lines()[0]).toMatchObject({ ok: false, error: { code: 'line_too_long' } });
    expect(await controlRequest(dir, { type: 'status' }, 'status')).toMatchObject({ type: 'status' });
  });

  it('shrugs off half-closed and vanished clients', async () => {
    const s = await start();
    const half = raw(s.path);
    half.sock.end('{"type":"sta');
    await half.closed;
    const gone = raw(s.path);
    gone.sock.write('{"type":"state"}\n');
    gone.sock.destroy();
    const answered = raw(s.path);
    answered.sock.end('{"type":"status"}\n');
    await answered.closed;
    expect(answered.lines()[0]).toMatchObject({ type: 'status' });
    expect(await controlRequest(dir, { type: 'state' }, 'state')).toMatchObject({ actors: [] });
  });

  it('refuses clients past 16 at once, and serves again when they leave', async () => {
    const s = await start();
    const many = Array.from({ length: 24 }, () => raw(s.path));
    await waitFor(() => many.filter((c) => c.sock.destroyed).length >= 8, { what: 'the extra clients refused' });
    for (const c of many) c.sock.destroy();
    await waitFor(async () => (await controlRequest(dir, { type: 'status' }, 'status').catch(() => null)) !== null, {
      what: 'the socket to answer again',
    });
  });

  it('streams transitions to a follower, and `stop` asks the listener to stop', async () => {
    const actor = createActor(toggle, { inspect: inspector.inspect });
    actor.start();
    await start();
    const replies: ControlReply[] = [];
    const conn = await controlConnect(dir, { type: 'events', follow: true, limit: 10 }, (r) => replies.push(r));
    await waitFor(() => replies.length >= 1, { what: 'the first answer' });
    expect(replies[0]).toMatchObject({ type: 'events', following: true });
    actor.send({ type: 'FLIP' });
    await waitFor(() => replies.some((r) => r.type === 'transition'), { what: 'a transition line' });
    const t = replies.find((r) => r.type === 'transition');
    expect(t).toMatchObject({ transition: { actor: 'toggle', event: 'FLIP', from: 'off', to: 'on' } });
    conn.close();
    expect(await controlRequest(dir, { type: 'stop' }, 'stop')).toMatchObject({ pid: process.pid });
    await waitFor(() => stops === 1, { what: 'stop to be called' });
    actor.stop();
  });

  it('removes its socket file when closed', async () => {
    const s = await start();
    s.close();
    server = null;
    expect(() => lstatSync(s.path)).toThrow();
    await expect(controlRequest(dir, { type: 'status' }, 'status')).rejects.toThrow(ControlUnavailable);
  });
});
