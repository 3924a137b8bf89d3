/**
 * The listener's control socket, `~/.svc/listener.sock`: the server inside the daemon and the client the CLI uses
 * (`svc listener --status/--stop/--restart`, `svc debug …`). Protocol: core/daemon/control.ts.
 *
 * Who may talk to it. Node cannot read a Unix socket peer's uid (SO_PEERCRED) without a native addon, so the
 * file system is the lock: the socket is created 0600 (under a umask of 0177, so it is never more open, not even
 * for a moment) inside `~/.svc`, which must be a directory owned by this user with no group or other bits —
 * otherwise the server does not start. The client talks only to a socket owned by its own uid. Root can still
 * connect, as root can read `~/.svc/config.json` anyway.
 *
 * What it survives: non-JSON and unknown requests (an error line, the connection stays), a line longer than
 * 64 KiB (an error line, then closed), clients that half-close or vanish, idle clients (closed after a minute),
 * slow followers (dropped past 1 MiB unread), more than 16 clients at once (refused).
 */
import { chmodSync, lstatSync, type Stats, unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import {
  CONTROL_SOCKET_NAME,
  ControlReply,
  type ControlRequest,
  errorReply,
  type FailingChild,
  formatStateValue,
  parseRequest,
  type StatusReply,
  takeLines,
} from '../../core/daemon/control.js';
import { actorTreeLines, chartModel } from '../../core/debug/statechart.js';
import { MACHINES } from '../../machines/index.js';
import type { Inspector } from '../debug/inspector.js';
import { hasExited } from './daemonFiles.js';

export const controlSocketPath = (svcDir: string) => join(svcDir, CONTROL_SOCKET_NAME);

/** Unix socket paths are limited to 104 (macOS) – 108 (Linux) bytes, terminator included. */
const MAX_SOCKET_PATH = 103;
const MAX_CLIENTS = 16;
const IDLE_MS = 60_000;
const MAX_UNREAD = 1024 * 1024;

export class ControlSocketError extends Error {}

const myUid = () => process.getuid?.() ?? -1;

/** Why `dir` may not hold the control socket, or null when it may: ours, a real directory, no group/other bits. */
export function privateDirProblem(dir: string, uid = myUid()): string | null {
  let st: Stats;
  try {
    st = lstatSync(dir);
  } catch (err) {
    return `${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`;
  }
  if (!st.isDirectory()) return `${dir} is not a directory`;
  if (uid >= 0 && st.uid !== uid) return `${dir} is owned by uid ${st.uid}, not by you (uid ${uid})`;
  if ((st.mode & 0o077) !== 0)
    return `${dir} is open to group or others (mode ${(st.mode & 0o777).toString(8)}); run chmod 700 ${dir}`;
  return null;
}

// ---------------------------------------------------------------------------
// Server

export interface ControlServerOptions {
  /** `~/.svc` */
  dir: string;
  inspector: Inspector;
  version: string;
  tmuxSocket: string;
  /** `up` when the listener runs inside `svc up` (stopping it leaves that process and its relay running). */
  host?: 'listener' | 'up';
  /** Asked to stop the listener (after the `stop` answer is written). */
  stop: () => void;
  now?: () => number;
  /** `ask`, `notify` and `asks` requests (svc mcp, svc verify): actors/mcp/asks.ts. */
  mcp?: McpRequestHandler;
  /** `hook` requests (svc remote-hook): the agent's own hooks, answered at once (actors/hooks/listenerHooks.ts). */
  hook?: (request: HookRequest) => ControlReply;
  /** The children that failed (core/supervision.ts), for `status` (svc verify) and `state` (svc debug state). */
  failing?: () => FailingChild[];
}

export type McpRequest = Extract<ControlRequest, { type: 'ask' | 'notify' | 'asks' }>;
export type HookRequest = Extract<ControlRequest, { type: 'hook' }>;
/** Answers an MCP request on `sock`; an `ask` keeps the connection until the ask ends. */
export type McpRequestHandler = (sock: Socket, request: McpRequest, send: (r: ControlReply) => void) => void;

export interface ControlServer {
  path: string;
  /** Stops answering and removes the socket file. Synchronous, so it can run right before process.exit. */
  close(): void;
}

function probe(path: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection(path);
    const done = (alive: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(alive);
    };
    // something holds it but does not answer: not ours to take. Decided after the loop has read once more (a turn
    // runs its timers before it polls): a listener descheduled past the limit on a busy machine would otherwise take
    // a refused connect still unread for an answer, and exit
    const timer = setTimeout(() => setImmediate(() => done(true)), timeoutMs);
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

/** Remove a socket left by a listener that died, refusing anything that is not a dead socket of ours. */
async function clearStale(path: string, uid: number): Promise<void> {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch {
    return;
  }
  if (!st.isSocket()) throw new ControlSocketError(`${path} exists and is not a socket; not touching it`);
  if (uid >= 0 && st.uid !== uid) throw new ControlSocketError(`${path} belongs to uid ${st.uid}; not touching it`);
  if (await probe(path)) throw new ControlSocketError(`another listener answers on ${path}`);
  unlinkSync(path);
}

export async function startControlServer(opts: ControlServerOptions): Promise<ControlServer> {
  const path = controlSocketPath(opts.dir);
  const uid = myUid();
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) throw new ControlSocketError(`socket path too long: ${path}`);
  const problem = privateDirProblem(opts.dir, uid);
  if (problem) throw new ControlSocketError(`not starting the control socket: ${problem}`);
  await clearStale(path, uid);

  const now = opts.now ?? Date.now;
  const startedAt = now();
  const clients = new Set<Socket>();
  let charts: ControlReply | null = null;

  const status = (): StatusReply => {
    const actors = opts.inspector.actors();
    const relay = actors.find((a) => a.id === 'relay');
    return {
      ok: true,
      type: 'status',
      pid: process.pid,
      version: opts.version,
      startedAt,
      uptimeMs: now() - startedAt,
      tmuxSocket: opts.tmuxSocket,
      relay: relay ? formatStateValue(relay.value) : null,
      sessions: actors.filter((a) => a.machine === 'session').length,
      host: opts.host ?? 'listener',
      ...(opts.failing ? { failing: opts.failing() } : {}),
    };
  };

  const answer = (sock: Socket, request: ControlRequest, send: (r: ControlReply) => void) => {
    switch (request.type) {
      case 'status':
        return send(status());
      case 'stop':
        send({ ok: true, type: 'stop', pid: process.pid, host: opts.host ?? 'listener' });
        setImmediate(opts.stop);
        return;
      case 'state':
        return send({
          ok: true,
          type: 'state',
          actors: opts.inspector.actors(),
          ...(opts.failing ? { failing: opts.failing() } : {}),
        });
      case 'charts':
        charts ??= {
          ok: true,
          type: 'charts',
          charts: MACHINES.map((e) => chartModel(e.machine)),
          tree: actorTreeLines(MACHINES),
        };
        return send(charts);
      case 'events': {
        const following = request.follow === true;
        send({ ok: true, type: 'events', transitions: opts.inspector.recent(request.limit), following });
        if (!following) return;
        sock.setTimeout(0);
        const unsubscribe = opts.inspector.subscribe((transition) =>
          send({ ok: true, type: 'transition', transition }),
        );
        sock.once('close', unsubscribe);
        return;
      }
      case 'ask':
      case 'notify':
      case 'asks':
        if (!opts.mcp) return send(errorReply('internal', 'this listener does not take asks'));
        return opts.mcp(sock, request, send);
      case 'hook':
        if (!opts.hook) return send(errorReply('internal', 'this listener does not take hook events'));
        return send(opts.hook(request));
    }
  };

  const onConnection = (sock: Socket) => {
    clients.add(sock);
    sock.setEncoding('utf8');
    sock.setTimeout(IDLE_MS, () => sock.destroy());
    sock.on('error', () => {}); // a client that vanished; 'close' follows
    sock.once('close', () => clients.delete(sock));
    let pending = '';
    const send = (reply: ControlReply) => {
      if (sock.destroyed || !sock.writable) return;
      if (sock.writableLength > MAX_UNREAD) {
        sock.destroy(); // a follower that stopped reading
        return;
      }
      sock.write(`${JSON.stringify(reply)}\n`);
    };
    sock.on('data', (chunk: string) => {
      const taken = takeLines(pending, chunk);
      if (taken.overflow) {
        pending = '';
        send(errorReply('line_too_long', 'request line over 64 KiB'));
        sock.end();
        sock.destroy();
        return;
      }
      pending = taken.rest;
      for (const line of taken.lines) {
        const parsed = parseRequest(line);
        if ('error' in parsed) send(parsed.error);
        else {
          try {
            answer(sock, parsed.request, send);
          } catch (err) {
            send(errorReply('internal', (err as Error).message.slice(0, 200)));
          }
        }
      }
    });
  };

  const server: Server = createServer({ allowHalfOpen: false }, onConnection);
  server.maxConnections = MAX_CLIENTS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // The socket file is created with the mode the umask leaves: 0600 from its first moment.
    const umask = process.umask(0o177);
    try {
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    } finally {
      process.umask(umask);
    }
  });
  server.on('error', () => {}); // after listening, errors are per connection
  chmodSync(path, 0o600);
  const created = lstatSync(path);
  if ((created.mode & 0o077) !== 0) {
    server.close();
    throw new ControlSocketError(`${path} came out with mode ${(created.mode & 0o777).toString(8)}; not serving`);
  }

  let closed = false;
  return {
    path,
    close() {
      if (closed) return;
      closed = true;
      server.close();
      for (const sock of clients) sock.destroy();
      try {
        // Only our own file: a listener started after us may have put its socket here.
        if (lstatSync(path).ino === created.ino) unlinkSync(path);
      } catch {
        // already gone
      }
    },
  };
}

/**
 * In the daemon: start the control socket beside the listener without delaying it. A failure is logged and the
 * listener runs on without one (the CLI falls back to the pid file and signals).
 */
export function startListenerControl(
  opts: ControlServerOptions & { log: { info(m: string): void; warn(m: string): void } },
): { close(): void } {
  let server: ControlServer | null = null;
  let closed = false;
  const stop = () => {
    opts.log.info('stop asked on the control socket');
    opts.stop();
  };
  startControlServer({ ...opts, stop }).then(
    (s) => {
      if (closed) s.close();
      else {
        server = s;
        opts.log.info(`control socket ${s.path}`);
      }
    },
    (err) => opts.log.warn(`no control socket: ${(err as Error).message}`),
  );
  return {
    close() {
      closed = true;
      server?.close();
    },
  };
}

// ---------------------------------------------------------------------------
// Client

/** No listener answers on the socket (none running, an old one without a socket, or not ours). */
export class ControlUnavailable extends Error {}

function checkOwnSocket(path: string): void {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch {
    throw new ControlUnavailable(`no control socket at ${path}`);
  }
  const uid = myUid();
  if (!st.isSocket()) throw new ControlUnavailable(`${path} is not a socket`);
  if (uid >= 0 && st.uid !== uid) throw new ControlUnavailable(`${path} is not owned by you; not talking to it`);
}

export interface ControlConnection {
  /** Resolves when the connection ends (the daemon stopped, or close() was called). */
  closed: Promise<void>;
  close(): void;
}

/**
 * Send one request and hand every reply line to `onReply` until the connection ends or `close()`. Rejects with
 * ControlUnavailable when nothing answers within `timeoutMs`.
 */
export function controlConnect(
  svcDir: string,
  request: ControlRequest,
  onReply: (reply: ControlReply) => void,
  { timeoutMs = 3000 }: { timeoutMs?: number } = {},
): Promise<ControlConnection> {
  const path = controlSocketPath(svcDir);
  checkOwnSocket(path);
  return new Promise((resolve, reject) => {
    const sock = createConnection(path);
    sock.setEncoding('utf8');
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new ControlUnavailable(`the listener did not answer on ${path} within ${timeoutMs} ms`));
    }, timeoutMs);
    let pending = '';
    const closed = new Promise<void>((res) => sock.once('close', () => res()));
    sock.once('error', (err) => {
      clearTimeout(timer);
      reject(new ControlUnavailable(`no listener answers on ${path} (${(err as NodeJS.ErrnoException).code})`));
    });
    sock.once('connect', () => {
      clearTimeout(timer);
      sock.write(`${JSON.stringify(request)}\n`);
      resolve({ closed, close: () => sock.destroy() });
    });
    sock.on('data', (chunk: string) => {
      const taken = takeLines(pending, chunk, 64 * 1024 * 1024);
      pending = taken.rest;
      for (const line of taken.lines) {
        let json: unknown;
        try {
          json = JSON.parse(line);
        } catch {
          continue;
        }
        const parsed = ControlReply.safeParse(json);
        if (parsed.success) onReply(parsed.data);
      }
    });
  });
}

/** The listener answering on this `~/.svc`'s control socket (the best witness that one runs), or null. */
export async function runningListener(svcDir: string, timeoutMs = 3000): Promise<StatusReply | null> {
  try {
    return await controlRequest(svcDir, { type: 'status' }, 'status', { timeoutMs });
  } catch {
    return null; // nothing answers, or not a listener of ours
  }
}

/** One request, its first reply. Error replies reject with their message. */
export async function controlRequest<T extends ControlReply['type']>(
  svcDir: string,
  request: ControlRequest,
  expect: T,
  { timeoutMs = 5000 }: { timeoutMs?: number } = {},
): Promise<Extract<ControlReply, { type: T }>> {
  let settle!: (r: ControlReply | null) => void;
  const first = new Promise<ControlReply | null>((res) => {
    settle = res;
  });
  const conn = await controlConnect(svcDir, request, (r) => settle(r), { timeoutMs });
  conn.closed.then(() => settle(null));
  const timer = setTimeout(() => settle(null), timeoutMs);
  const reply = await first;
  clearTimeout(timer);
  conn.close();
  if (!reply) throw new ControlUnavailable('the listener closed the control socket without answering');
  if (reply.type === 'error') throw new Error(`listener: ${reply.error.code}: ${reply.error.message}`);
  if (reply.type !== expect) throw new Error(`listener answered ${reply.type} to ${request.type}`);
  return reply as Extract<ControlReply, { type: T }>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function socketGone(path: string): boolean {
  try {
    lstatSync(path);
    return false;
  } catch {
    return true;
  }
}

/**
 * `svc listener --stop` through the socket: ask, then wait for the process to exit. Null when no listener answers
 * (the caller falls back to the pid file and signals); `exited: false` when it answered but is still running after
 * `timeoutMs`.
 */
export async function stopThroughControl(
  svcDir: string,
  timeoutMs = 10_000,
): Promise<{ pid: number; exited: boolean; host: 'listener' | 'up' } | null> {
  let reply: Extract<ControlReply, { type: 'stop' }>;
  try {
    reply = await controlRequest(svcDir, { type: 'stop' }, 'stop');
  } catch (err) {
    if (err instanceof ControlUnavailable) return null;
    throw err;
  }
  const { pid } = reply;
  // A listener inside `svc up` stops while that process keeps serving its relay: its socket going away says so.
  const gone = reply.host === 'up' ? () => socketGone(controlSocketPath(svcDir)) : () => hasExited(pid);
  // the monotonic clock: a wall clock stepped forward (a VM's clock caught up) must not cut the wait short
  const deadline = performance.now() + timeoutMs;
  while (!gone() && performance.now() < deadline) await sleep(25);
  return { pid, exited: gone(), host: reply.host ?? 'listener' };
}
