/**
 * A small HTTP proxy on loopback for the proxy tests: CONNECT tunnels (what the WebSocket and the HTTP requests ask
 * for) and plain forwarded requests, each recorded as the `host:port` it was for.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';

export interface TestProxy {
  url: string;
  /** `host:port` of every tunnel or request, in order. */
  seen: string[];
  close(): Promise<void>;
}

export async function startTestProxy(): Promise<TestProxy> {
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const target = new URL(req.url ?? '/');
    seen.push(target.host);
    const out = request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.writeHead(502).end());
    req.pipe(out);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('connect', (req, client, head) => {
    const [host, port] = (req.url ?? '').split(':');
    seen.push(req.url ?? '');
    const upstream = connect(Number(port), host!, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
