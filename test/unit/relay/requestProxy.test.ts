/**
 * The CLI's and the listener's requests to the relay through a proxy (actors/relay/request.ts with the CONNECT tunnel
 * of actors/relay/proxy.ts), against a real proxy and a real server on loopback: the request goes through the tunnel
 * with the proxy's credentials, and a proxy that never answers does not hold a call past its time.
 */
import type { Server } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { http } from '../../../actors/nodeHttp.js';
import { RelayError, relayJson } from '../../../actors/relay/http.js';
import { useProxySettings } from '../../../actors/relay/proxy.js';
import { DeviceListResponse } from '../../../core/protocol/index.js';
import { startTestProxy, type TestProxy } from '../../helpers/proxy.js';

let relay: Server | null = null;
let proxy: TestProxy | null = null;
const closers: (() => void)[] = [];

afterEach(async () => {
  useProxySettings({});
  for (const close of closers.splice(0)) close();
  await proxy?.close();
  proxy = null;
  relay?.closeAllConnections();
  await new Promise((resolve) => relay?.close(resolve) ?? resolve(null));
  relay = null;
});

/** A relay that answers every request with an empty device list, and what it was asked. */
async function startRelay(): Promise<{ url: string; asked: string[] }> {
  const asked: string[] = [];
  relay = http.createServer((req, res) => {
    asked.push(`${req.method} ${req.url} ${req.headers.authorization}`);
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"devices":[]}');
  });
  await new Promise<void>((resolve) => relay!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(relay.address() as { port: number }).port}`, asked };
}

// `noProxy` names some other host, so that a NO_PROXY of the machine's environment does not send these direct
const through = (url: string) => useProxySettings({ httpProxy: url, noProxy: 'elsewhere.invalid' });

it('goes through the proxy as a CONNECT tunnel, and the relay gets the request with its key', async () => {
  const { url, asked } = await startRelay();
  proxy = await startTestProxy();
  through(proxy.url);
  const answer = await relayJson(DeviceListResponse, url, 'sk_key', 'GET', '/devices');
  expect(answer).toEqual({ devices: [] });
  expect(proxy.seen).toEqual([new URL(url).host]);
  expect(asked).toEqual(['GET /devices Bearer sk_key']);
});

it('a proxy that takes the connection and never answers: unreachable when the time is up, its connection closed', async () => {
  const { url, asked } = await startRelay();
  const held = new Set<Socket>();
  let closed = 0;
  const silent = createServer((socket) => {
    held.add(socket);
    socket.resume(); // reads the CONNECT, and so sees the other side close
    socket.on('close', () => closed++);
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    for (const socket of held) socket.destroy();
    silent.close();
  });
  through(`http://127.0.0.1:${(silent.address() as { port: number }).port}`);

  // before the fix it waited for the proxy for ever (the test's own time-out failed it)
  const error = await relayJson(DeviceListResponse, url, 'sk_key', 'GET', '/devices', undefined, 300).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RelayError);
  expect(error).toMatchObject({ status: 0, code: 'unreachable' });
  expect(held.size).toBe(1);
  await expect.poll(() => closed).toBe(1);
  expect(asked).toEqual([]);
});
