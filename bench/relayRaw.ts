/**
 * The floor for `bench/relay.ts`: a minimal `ws` + `http` server doing the relay's routing for the benchmark and
 * nothing else — no storage, no auth beyond a map lookup by key, no limits, no replay. `POST /computers` answers a
 * hook id, a WebSocket that says `subscribe` is the key's listener, `POST /pushes/send` numbers the push per key and
 * writes `push.new` to that listener. Run as its own process so its CPU is its own: prints `raw listening on <url>`.
 * With `--tls-cert FILE --tls-key FILE` it serves HTTPS and WSS instead (node:https, the same handler).
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';

const listeners = new Map<string, { ws: WebSocket | null; seq: number }>();
const keyOf = (header: string | undefined) => header?.replace(/^Bearer /, '') ?? '';
const entry = (key: string) => {
  let e = listeners.get(key);
  if (!e) {
    e = { ws: null, seq: 0 };
    listeners.set(key, e);
  }
  return e;
};

const flag = (name: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const [certFile, keyFile] = [flag('--tls-cert'), flag('--tls-key')];

const handle = (req: IncomingMessage, res: ServerResponse) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const key = keyOf(req.headers.authorization);
    if (req.method === 'POST' && req.url === '/computers') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ hookId: `c_${key.slice(-16)}` }));
      return;
    }
    if (req.method === 'POST' && req.url === '/pushes/send') {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      const e = entry(key);
      const id = ++e.seq;
      e.ws?.send(JSON.stringify({ type: 'push.new', push: { id, ...body, ageMs: 0 } }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id, state: 'pending' }));
      return;
    }
    res.writeHead(404).end();
  });
};
const server =
  certFile && keyFile
    ? createHttpsServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, handle)
    : createHttpServer(handle);
const wss = new WebSocketServer({ server, path: '/ws' });
wss.on('connection', (ws, req) => {
  const key = keyOf(req.headers.authorization);
  ws.on('message', (data) => {
    const frame = JSON.parse(String(data)) as { type: string };
    if (frame.type === 'subscribe') {
      entry(key).ws = ws;
      ws.send(JSON.stringify({ type: 'subscribed' }));
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  const scheme = certFile ? 'https' : 'http';
  process.stdout.write(`raw listening on ${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
