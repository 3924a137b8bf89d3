/**
 * The floor for `bench/relay.ts`: a minimal `ws` + `http` server doing the relay's routing for the benchmark and
 * nothing else — no storage, no auth beyond a map lookup by key, no limits, no replay. `POST /computers` answers a
 * hook id, a WebSocket that says `subscribe` is the key's listener, `POST /pushes/send` numbers the push per key and
 * writes `push.new` to that listener. Run as its own process so its CPU is its own: prints `raw listening on <url>`.
 */
import { createServer } from 'node:http';
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

const server = createServer((req, res) => {
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
});
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
  process.stdout.write(`raw listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
