/**
 * A real relay for tests: 127.0.0.1, port 0, a temp data dir, one account created. Also a small WebSocket client
 * that records frames and waits for them, and a bounded poll.
 *
 *   const relay = await startTestRelay();
 *   // relay.url, relay.wsUrl, relay.apiKey (push:read + push:write), relay.accountId, relay.dataDir
 *   await relay.restart(); // same port, same data dir: "relay restarted under a connected listener"
 *   await relay.restart({ downMs: 5_000 }); // … after being down for five seconds
 *   await relay.close();   // also removes the temp dir
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import type { RelayFrame, Scope } from '../../core/protocol/index.js';
import type { BucketConfig } from '../../core/tokenBucket.js';
import { createAccount as createAccountIn, createApiKey } from '../../relay-server/accounts.js';
import type { Log } from '../../relay-server/log.js';
import { type Relay, startRelay } from '../../relay-server/server.js';
import { openSqliteStore } from '../../relay-server/sqliteStore.js';

export interface TestRelayOptions {
  replayWindowMs?: number;
  pingIntervalMs?: number;
  sweepIntervalMs?: number;
  httpBucket?: BucketConfig;
  wsBucket?: BucketConfig;
  maxOpenPushBytes?: number;
  keepFinalPushes?: number;
  refusedBucket?: BucketConfig;
  /** The relay's clock; kept across restart. */
  now?: () => number;
  /** Default: lines are kept in `logs` (and printed when SVC_TEST_RELAY_LOG=1). */
  log?: Log;
  /** Web Push settings (relay-server/push/webPush.ts): batching, an HTTPS agent for a loopback push endpoint. */
  webPush?: Parameters<typeof startRelay>[0]['webPush'];
}

export interface TestRelay {
  url: string;
  wsUrl: string;
  /** A key of the account with push:read and push:write. */
  apiKey: string;
  accountId: string;
  dataDir: string;
  port: number;
  /** Every line the relay logged, as `level: message`. */
  logs: string[];
  /** Stop the relay and remove the temp dir. Idempotent. */
  close(): Promise<void>;
  /** Stop the relay and start it again on the same port and data dir. */
  restart(opts?: { downMs?: number }): Promise<void>;
  /** Another key of the account, with these scopes. */
  createKey(scopes: Scope[]): Promise<string>;
  /** Another account of the same relay. */
  createAccount(): Promise<{ accountId: string; apiKey: string }>;
}

function collectingLog(logs: string[]): Log {
  const line = (level: string) => (msg: string) => {
    logs.push(`${level}: ${msg}`);
    if (process.env.SVC_TEST_RELAY_LOG) process.stderr.write(`[relay] ${level}: ${msg}\n`);
  };
  return { info: line('info'), warn: line('warn'), error: line('error') };
}

export async function startTestRelay(options: TestRelayOptions = {}): Promise<TestRelay> {
  const root = await mkdtemp(join(tmpdir(), 'svc-relay-'));
  const dataDir = join(root, 'relay');
  const logs: string[] = [];
  const log = options.log ?? collectingLog(logs);

  const withStore = async <T>(fn: (store: ReturnType<typeof openSqliteStore>) => Promise<T>): Promise<T> => {
    const store = openSqliteStore(dataDir);
    try {
      return await fn(store);
    } finally {
      await store.close();
    }
  };
  const first = await withStore((store) => createAccountIn(store));

  const start = (port: number) =>
    startRelay({
      host: '127.0.0.1',
      port,
      dataDir,
      log,
      replayWindowMs: options.replayWindowMs,
      pingIntervalMs: options.pingIntervalMs,
      sweepIntervalMs: options.sweepIntervalMs,
      httpBucket: options.httpBucket,
      wsBucket: options.wsBucket,
      maxOpenPushBytes: options.maxOpenPushBytes,
      keepFinalPushes: options.keepFinalPushes,
      refusedBucket: options.refusedBucket,
      now: options.now,
      webPush: options.webPush,
    });

  let relay: Relay | null = await start(0);
  const port = relay.port;
  let closed = false;

  const handle: TestRelay = {
    url: relay.url,
    wsUrl: relay.wsUrl,
    apiKey: first.apiKey,
    accountId: first.accountId,
    dataDir,
    port,
    logs,
    async close() {
      if (closed) return;
      closed = true;
      await relay?.close();
      relay = null;
      await rm(root, { recursive: true, force: true });
    },
    async restart({ downMs = 0 } = {}) {
      if (closed) throw new Error('restart after close');
      await relay?.close();
      relay = null;
      // Down for a while (what a client sees as "offline"), when asked.
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      // The port was just released; another process taking it in between is possible but rare, so retry briefly.
      for (let attempt = 0; ; attempt++) {
        try {
          relay = await start(port);
          return;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 20) throw error;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    },
    createKey: (scopes) => withStore((store) => createApiKey(store, first.accountId, scopes)).then((k) => k.apiKey),
    createAccount: () =>
      withStore((store) => createAccountIn(store)).then((a) => ({ accountId: a.accountId, apiKey: a.apiKey })),
  };
  return handle;
}

export interface ApiAnswer {
  status: number;
  headers: Headers;
  /** The parsed JSON body, or null when there was none or it was not JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: tests read the answer's fields directly; their assertions check them
  json: any;
}

/** One HTTP request to the relay, the way a client would send it: the key in the Authorization header only. */
export async function api(
  baseUrl: string,
  method: string,
  path: string,
  { key, body, rawBody }: { key?: string | null; body?: unknown; rawBody?: string } = {},
): Promise<ApiAnswer> {
  const headers: Record<string, string> = {};
  if (key) headers.Authorization = `Bearer ${key}`;
  let payload: string | undefined = rawBody;
  if (body !== undefined) payload = JSON.stringify(body);
  if (payload !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body: payload, redirect: 'manual' });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  return { status: res.status, headers: res.headers, json };
}

/** `POST /pushes/send` of an `agent.command` for `session`; resolves to the push id. */
export async function sendPush(
  relay: Pick<TestRelay, 'url' | 'apiKey'>,
  session: string,
  body: string,
  extra: Record<string, unknown> = {},
): Promise<number> {
  const res = await api(relay.url, 'POST', '/pushes/send', {
    key: relay.apiKey,
    body: { type: 'agent.command', agentSessionName: session, body, ...extra },
  });
  if (res.status !== 200) throw new Error(`POST /pushes/send: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json.id as number;
}

/**
 * GET /pushes/<id> as a polite client: the relay limits each key's HTTP requests (core/tokenBucket.ts
 * RELAY_HTTP_BUCKET, 60 at once and 30 a second), and tests that poll share the key they send with, so a 429 is
 * waited out (Retry-After) rather than read as an answer. Any other status than 200 throws, saying what came back.
 */
export async function pushStatus(
  relay: Pick<TestRelay, 'url' | 'apiKey'>,
  id: number,
  { timeoutMs = 15_000 }: { timeoutMs?: number } = {},
): Promise<ApiAnswer['json']> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api(relay.url, 'GET', `/pushes/${id}`, { key: relay.apiKey });
    if (res.status === 200) return res.json;
    if (res.status !== 429 || Date.now() > deadline) {
      throw new Error(`GET /pushes/${id} answered ${res.status}: ${JSON.stringify(res.json)}`);
    }
    const seconds = Number(res.headers.get('retry-after')) || 1;
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  }
}

/** Poll GET /pushes/<id> (pushStatus, ten times a second) until the push is injected, refused or expired. */
export async function finalPush(relay: Pick<TestRelay, 'url' | 'apiKey'>, id: number, timeoutMs = 15_000) {
  return waitFor(
    async () => {
      const push = await pushStatus(relay, id, { timeoutMs });
      return ['injected', 'refused', 'expired'].includes(push.state) ? push : null;
    },
    { timeoutMs, intervalMs: 100, what: `push ${id} to settle` },
  );
}

/** Poll until `check` returns a truthy value (returned) or throw after timeoutMs. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 5_000, intervalMs = 20, what = 'condition' } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs}ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A WebSocket client of the relay that keeps every frame it receives. */
export class TestSocket {
  readonly ws: WebSocket;
  readonly frames: RelayFrame[] = [];
  /** Resolves with the close code and reason when the socket closes. */
  readonly closed: Promise<{ code: number; reason: string }>;
  private readonly taken = new Set<number>();

  private constructor(ws: WebSocket) {
    this.ws = ws;
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
    ws.on('message', (data) => {
      this.frames.push(JSON.parse(data.toString()) as RelayFrame);
    });
  }

  /** Open a socket with `Authorization: Bearer <apiKey>` (no header when apiKey is null). */
  static open(wsUrl: string, apiKey: string | null, options: WebSocket.ClientOptions = {}): Promise<TestSocket> {
    const headers: Record<string, string> = apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
    const ws = new WebSocket(wsUrl, { headers, followRedirects: false, ...options });
    const socket = new TestSocket(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(socket));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      ws.once('error', reject);
    });
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The first frame not yet returned by next() that matches, waiting for it if needed. */
  async next<K extends RelayFrame['type']>(
    type: K,
    match: (frame: Extract<RelayFrame, { type: K }>) => boolean = () => true,
    timeoutMs = 5_000,
  ): Promise<Extract<RelayFrame, { type: K }>> {
    const found = await waitFor(
      () => {
        for (let i = 0; i < this.frames.length; i++) {
          const frame = this.frames[i] as RelayFrame;
          if (this.taken.has(i)) continue;
          if (frame.type === type && match(frame as Extract<RelayFrame, { type: K }>)) {
            this.taken.add(i);
            return frame as Extract<RelayFrame, { type: K }>;
          }
        }
        return null;
      },
      { timeoutMs, what: `a ${type} frame` },
    );
    return found;
  }

  /** Frames of one type received so far. */
  all<K extends RelayFrame['type']>(type: K): Extract<RelayFrame, { type: K }>[] {
    return this.frames.filter((f): f is Extract<RelayFrame, { type: K }> => f.type === type);
  }

  /** Subscribe as the listener of hookId and wait for `subscribed`. */
  async subscribeListener(hookId: string, lastPushId = 0): Promise<Extract<RelayFrame, { type: 'subscribed' }>> {
    this.send({ type: 'subscribe', role: 'listener', hookId, lastPushId, version: '0.0.0-test' });
    return this.next('subscribed');
  }

  async subscribeApp(): Promise<Extract<RelayFrame, { type: 'subscribed' }>> {
    this.send({ type: 'subscribe', role: 'app' });
    return this.next('subscribed');
  }

  close(): Promise<{ code: number; reason: string }> {
    if (this.ws.readyState === WebSocket.CONNECTING || this.ws.readyState === WebSocket.OPEN) this.ws.close();
    return this.closed;
  }
}

/** Any well-formed envelope (purpose `pane.watch`): the relay routes it without opening it. */
export async function someEnvelope() {
  const { seal } = await import('../../core/seal/seal.js');
  const { exportPublicKey, generateDeviceKeys, importPublicKey } = await import('../../core/seal/keys.js');
  const keys = await generateDeviceKeys(false);
  return seal({
    purpose: 'pane.watch',
    from: { id: 'd_0000000000000001', privateKey: keys.privateKey },
    to: [{ id: 'c_0000000000000002', publicKey: await importPublicKey(await exportPublicKey(keys.publicKey)) }],
    plaintext: '{}',
  });
}
