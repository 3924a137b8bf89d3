/**
 * `svc debug ui`: a small HTTP server in the CLI process (never in the daemon) that serves one self-contained page
 * (actors/debug/page.ts) and relays the listener's control socket to it: `/api/state`, `/api/charts`, and
 * `/api/events` as server-sent events fed by one `events follow` connection shared by every open page.
 *
 * Bound to 127.0.0.1 only. Every request must carry the random token of the printed URL (`?token=`), else 403;
 * a Host header other than 127.0.0.1/localhost on our port is refused too (DNS rebinding). The page loads nothing
 * from anywhere else (its Content-Security-Policy says so) and sends no Referer.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ControlReply, TransitionRecord } from '../../core/daemon/control.js';
import { type ControlConnection, ControlUnavailable, controlConnect, controlRequest } from '../daemon/controlSocket.js';
import { http } from '../nodeHttp.js';
import { debugPageHtml } from './page.js';

export interface DebugUiOptions {
  /** `~/.svc` */
  svcDir: string;
  /** 0: any free port. */
  port?: number;
  token?: string;
  /** How long to wait before asking the listener again after it went away. */
  retryMs?: number;
}

export interface DebugUi {
  url: string;
  port: number;
  token: string;
  close(): Promise<void>;
}

const RECENT = 200;

/** What the page receives on `/api/events`. */
export type UiMessage =
  | { type: 'recent'; transitions: TransitionRecord[] }
  | { type: 'transition'; transition: TransitionRecord }
  | { type: 'down'; message: string }
  | { type: 'up' };

export async function startDebugUi(opts: DebugUiOptions): Promise<DebugUi> {
  const token = opts.token ?? randomBytes(24).toString('base64url');
  const tokenBuf = Buffer.from(token);
  const retryMs = opts.retryMs ?? 1000;
  const clients = new Set<ServerResponse>();
  let recent: TransitionRecord[] = [];
  let upstream: ControlConnection | null = null;
  let upstreamState: 'idle' | 'connecting' | 'up' | 'down' = 'idle';
  let downMessage = '';
  let retry: NodeJS.Timeout | null = null;
  let closing = false;
  let port = 0;

  const sse = (res: ServerResponse, msg: UiMessage) => {
    if (!res.writableEnded) res.write(`data: ${JSON.stringify(msg)}\n\n`);
  };
  const broadcast = (msg: UiMessage) => {
    for (const res of clients) sse(res, msg);
  };

  const connectUpstream = async () => {
    if (closing || upstreamState === 'connecting' || upstreamState === 'up') return;
    upstreamState = 'connecting';
    try {
      const conn = await controlConnect(
        opts.svcDir,
        { type: 'events', follow: true, limit: RECENT },
        (r: ControlReply) => {
          if (r.type === 'events') {
            recent = r.transitions;
            broadcast({ type: 'up' });
            broadcast({ type: 'recent', transitions: recent });
          } else if (r.type === 'transition') {
            recent.push(r.transition);
            if (recent.length > RECENT) recent.splice(0, recent.length - RECENT);
            broadcast({ type: 'transition', transition: r.transition });
          }
        },
      );
      upstream = conn;
      upstreamState = 'up';
      conn.closed.then(() => {
        upstream = null;
        if (closing) return;
        markDown('the listener closed its control socket (stopped?)');
      });
    } catch (err) {
      markDown(err instanceof Error ? err.message : String(err));
    }
  };

  const markDown = (message: string) => {
    upstreamState = 'down';
    downMessage = message;
    broadcast({ type: 'down', message });
    if (!closing && clients.size > 0 && !retry)
      retry = setTimeout(() => {
        retry = null;
        upstreamState = 'idle';
        if (clients.size > 0) void connectUpstream();
      }, retryMs);
  };

  const tokenOk = (given: string | null) => {
    if (!given) return false;
    const buf = Buffer.from(given);
    return buf.length === tokenBuf.length && timingSafeEqual(buf, tokenBuf);
  };

  const send = (res: ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, {
      'Content-Type': type,
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
    });
    res.end(body);
  };
  const json = (res: ServerResponse, status: number, body: unknown) =>
    send(res, status, 'application/json; charset=utf-8', JSON.stringify(body));

  const proxy = async (res: ServerResponse, type: 'state' | 'charts') => {
    try {
      const reply = await controlRequest(opts.svcDir, { type }, type);
      json(res, 200, reply);
    } catch (err) {
      json(res, err instanceof ControlUnavailable ? 503 : 502, { error: (err as Error).message });
    }
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const host = req.headers.host ?? '';
    if (!tokenOk(url.searchParams.get('token')) || (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`)) {
      send(res, 403, 'text/plain; charset=utf-8', 'forbidden: open the URL `svc debug ui` printed\n');
      return;
    }
    if (req.method !== 'GET') return send(res, 405, 'text/plain; charset=utf-8', 'GET only\n');
    switch (url.pathname) {
      case '/':
        res.writeHead(200, {
          'Content-Type': 'text/html; charset=utf-8',
          'Cache-Control': 'no-store',
          'X-Content-Type-Options': 'nosniff',
          'Referrer-Policy': 'no-referrer',
          'Content-Security-Policy':
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
        });
        res.end(debugPageHtml());
        return;
      case '/api/state':
        return void proxy(res, 'state');
      case '/api/charts':
        return void proxy(res, 'charts');
      case '/api/events': {
        res.writeHead(200, {
          'Content-Type': 'text/event-stream; charset=utf-8',
          'Cache-Control': 'no-store',
          Connection: 'keep-alive',
          'X-Content-Type-Options': 'nosniff',
        });
        res.write(': svc debug ui\n\n');
        clients.add(res);
        const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
        req.on('close', () => {
          clearInterval(ping);
          clients.delete(res);
          if (clients.size === 0 && upstream) {
            upstream.close();
            upstream = null;
            upstreamState = 'idle';
          }
        });
        if (upstreamState === 'up') {
          sse(res, { type: 'up' });
          sse(res, { type: 'recent', transitions: recent });
        } else if (upstreamState === 'down') sse(res, { type: 'down', message: downMessage });
        if (upstreamState === 'idle' || (upstreamState === 'down' && !retry)) {
          upstreamState = 'idle';
          void connectUpstream();
        }
        return;
      }
      default:
        send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
    }
  };

  const server = http.createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    port,
    token,
    async close() {
      closing = true;
      if (retry) clearTimeout(retry);
      upstream?.close();
      for (const res of clients) res.end();
      clients.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
