/**
 * startRelay: one port for the HTTP routes and the WebSocket upgrade, a store, a bus, and the sweeper that expires
 * pushes no listener received in time. With `tls`, a second (HTTPS) port serves the same routes and upgrades.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { http, https } from '../actors/nodeHttp.js';
import { plainHttpAnswer } from '../core/relay/certificate.js';
import { clientAddress, type TrustedProxies, trustedProxies } from '../core/relay/clientAddress.js';
import {
  type BucketConfig,
  RELAY_HTTP_BUCKET,
  RELAY_REFUSED_BUCKET,
  RELAY_RESULT_BUCKET,
  RELAY_WS_BUCKET,
} from '../core/tokenBucket.js';
import { type Bus, InProcessBus } from './bus.js';
import { DeviceSeen } from './deviceSeen.js';
import { Hub } from './hub.js';
import { defaultLog, describeError, type Log } from './log.js';
import { WebPush } from './push/webPush.js';
import { Pushes, STRANDED_CHECK_MS } from './pushes.js';
import { LocalKeyLimiter, RefusalLimiter } from './rateLimit.js';
import { createRequestHandler } from './routes.js';
import { openSqliteStore } from './sqliteStore.js';
import { findAppDir } from './static.js';
import type { Store } from './store.js';

export const DEFAULT_PORT = 8787;
export const DEFAULT_REPLAY_WINDOW_MS = 120_000;
export const DEFAULT_PING_INTERVAL_MS = 25_000;

export interface RelayOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Where `relay.db` lives; needed unless `store` is given. */
  dataDir?: string;
  /** Web Push settings (batching, a test's HTTPS agent); Web Push is on whenever there is a dataDir. */
  webPush?: Partial<Omit<import('./push/webPush.js').WebPushOptions, 'store' | 'dataDir' | 'log'>>;
  /** A push older than this is never handed to a listener: replay expires it, the sweeper expires it if pending. */
  replayWindowMs?: number;
  pingIntervalMs?: number;
  /** How often the sweeper looks for pending pushes past the replay window (default: a quarter of it, 100 ms–10 s). */
  sweepIntervalMs?: number;
  /** How often pushes the bus did not bring are looked for in the store (default `STRANDED_CHECK_MS`). */
  strandedCheckMs?: number;
  /** Given stores and buses belong to the caller: close() leaves them open. */
  store?: Store;
  bus?: Bus;
  log?: Log;
  /** The relay's clock (epoch ms) for push times and ages; tests move it. */
  now?: () => number;
  httpBucket?: BucketConfig;
  wsBucket?: BucketConfig;
  resultBucket?: BucketConfig;
  /** Retention limits per account (relay-server/pushes.ts MAX_OPEN_PUSH_BYTES, KEEP_FINAL_PUSHES). */
  maxOpenPushBytes?: number;
  keepFinalPushes?: number;
  /** Refused requests without a valid key, per client address. */
  refusedBucket?: BucketConfig;
  /** The built phone app to serve at `/`; default: `SVC_APP_DIR` or `dist/app` (null: a page says to build it). */
  appDir?: string | null;
  /**
   * Also listen with HTTPS (same routes, same WebSocket hub) on this address, e.g. the LAN address a phone reaches;
   * `key` and `cert` are PEM text. Port 0 picks a free port. Without them the port is taken at once (a port in use
   * is said at start) and handshakes fail until the first `setCertificate` (a certificate still to be got over ACME).
   */
  tls?: { host: string; port: number; key?: string; cert?: string };
  /**
   * HTTPS is the relay's address: the plain-HTTP port answers ACME's HTTP-01 challenges and redirects everything else
   * to HTTPS (`domain`, or the request's host, on the TLS port), and takes no WebSocket.
   */
  httpsOnly?: { domain?: string; challenge(token: string): string | undefined };
  /**
   * The reverse proxies whose `X-Forwarded-For`/`Forwarded` name the client (`--trust-proxy`); without them the
   * headers are ignored and the socket's address is the client's.
   */
  trustProxy?: TrustedProxies;
}

export interface Relay {
  /** http://host:port, no trailing slash. */
  url: string;
  /** ws://host:port/ws */
  wsUrl: string;
  port: number;
  /** https://host:port of the TLS server, when `tls` was given. */
  tlsUrl?: string;
  /** Its port. */
  tlsPort?: number;
  /**
   * Serve this certificate (PEM) from now on: new connections get it, open ones (WebSockets) keep theirs. Throws,
   * serving the old one still, when key and certificate do not make a pair.
   */
  setCertificate(key: string, cert: string): Promise<void>;
  /** Close connections, the servers, and the store and bus it opened. Idempotent. */
  close(): Promise<void>;
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

export async function startRelay(options: RelayOptions): Promise<Relay> {
  const host = options.host ?? '127.0.0.1';
  const replayWindowMs = options.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS;
  const pingIntervalMs = options.pingIntervalMs ?? DEFAULT_PING_INTERVAL_MS;
  const sweepIntervalMs = options.sweepIntervalMs ?? Math.min(10_000, Math.max(100, Math.floor(replayWindowMs / 4)));
  const log = options.log ?? defaultLog();
  const now = options.now ?? Date.now;
  if (!options.store && !options.dataDir) throw new Error('startRelay needs a dataDir or a store');
  const store = options.store ?? openSqliteStore(options.dataDir as string);
  const bus: Bus = options.bus ?? new InProcessBus((error) => log.error(`bus handler failed: ${describeError(error)}`));
  const pushes = new Pushes({
    store,
    bus,
    log,
    now,
    replayWindowMs,
    maxOpenPushBytes: options.maxOpenPushBytes,
    keepFinalPushes: options.keepFinalPushes,
  });
  // per key: shared by every instance when the bus is (Redis), else this process's own buckets
  const httpBucket = options.httpBucket ?? RELAY_HTTP_BUCKET;
  const httpBuckets = bus.keyLimiter?.(httpBucket, log, now) ?? new LocalKeyLimiter(httpBucket, now);
  // Web Push: its VAPID keys and the subscriptions live in the store, shared by every instance (relay-server/push/)
  const webPush = await WebPush.open({
    store,
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    log,
    ...(options.webPush ?? {}),
  });
  const refusals = new RefusalLimiter(options.refusedBucket ?? RELAY_REFUSED_BUCKET, log, now);
  const trusted = options.trustProxy ?? trustedProxies(undefined);
  if (trusted.list.length > 0)
    log.info(`client addresses from X-Forwarded-For/Forwarded of ${trusted.list.join(', ')}`);
  const clientOf = (req: IncomingMessage) => clientAddress(req.socket.remoteAddress, req.headers, trusted);
  const seen = new DeviceSeen(store, log, now);
  const hub = new Hub({
    seen,
    webPush,
    store,
    bus,
    pushes,
    log,
    now,
    replayWindowMs,
    pingIntervalMs,
    httpBuckets,
    refusals,
    clientOf,
    wsBucket: options.wsBucket ?? RELAY_WS_BUCKET,
    resultBucket: options.resultBucket ?? RELAY_RESULT_BUCKET,
  });
  const handler = createRequestHandler({
    store,
    bus,
    pushes,
    presence: hub,
    httpBuckets,
    refusals,
    clientOf,
    log,
    now,
    appDir: options.appDir === undefined ? findAppDir() : options.appDir,
    webPush,
    seen,
  });
  const plainHandler = options.httpsOnly
    ? redirectToHttps(
        options.httpsOnly,
        () => (tlsServer?.address() as AddressInfo | null)?.port ?? options.tls?.port ?? 443,
        log,
      )
    : handler;
  const servers: Server[] = [http.createServer(plainHandler)];
  const tlsOptions = options.tls;
  if (tlsOptions)
    servers.push(
      https.createServer(
        tlsOptions.key && tlsOptions.cert ? { key: tlsOptions.key, cert: tlsOptions.cert } : {},
        handler,
      ),
    );
  for (const each of servers) {
    each.headersTimeout = 20_000;
    each.requestTimeout = 30_000;
    each.on('upgrade', (req, socket, head) => {
      if (each instanceof https.Server || !options.httpsOnly) return hub.handleUpgrade(req, socket, head);
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n'); // wss:// only
    });
  }
  const [server, tlsServer] = servers as [Server, HttpsServer | undefined];

  let sweeping: Promise<void> | null = null;
  const sweeper = setInterval(() => {
    sweeping ??= pushes
      .sweep()
      .then(() => {})
      .catch((error: unknown) => log.error(`sweeper failed: ${describeError(error)}`))
      .finally(() => {
        sweeping = null;
      });
  }, sweepIntervalMs);
  sweeper.unref();
  // the store is the truth, the bus a shortcut: pushes it did not bring are delivered from the store
  let rescuing: Promise<void> | null = null;
  const rescue = () => {
    rescuing ??= hub
      .deliverStranded()
      .then(() => {})
      .catch((error: unknown) => log.error(`delivering stranded pushes failed: ${describeError(error)}`))
      .finally(() => {
        rescuing = null;
      });
  };
  const rescuer = setInterval(rescue, options.strandedCheckMs ?? STRANDED_CHECK_MS);
  rescuer.unref();
  const offBusBack = bus.onReconnect?.(rescue);

  const releaseOwned = async () => {
    clearInterval(sweeper);
    clearInterval(rescuer);
    offBusBack?.();
    await sweeping;
    await rescuing;
    if (!options.bus) await bus.close();
    await webPush?.close();
    if (!options.store) await store.close();
  };

  const listen = (each: Server, port: number, at: string) =>
    new Promise<void>((resolve, reject) => {
      each.once('error', reject);
      each.listen(port, at, () => {
        each.off('error', reject);
        resolve();
      });
    });
  const closeServers = () => {
    const closed = servers.map((each) =>
      each.listening ? new Promise<void>((resolve) => each.close(() => resolve())) : Promise.resolve(),
    );
    for (const each of servers) each.closeAllConnections();
    return Promise.all(closed);
  };
  try {
    await listen(server, options.port ?? DEFAULT_PORT, host);
    if (tlsServer && tlsOptions) await listen(tlsServer, tlsOptions.port, tlsOptions.host);
  } catch (error) {
    await closeServers();
    await hub.close();
    await releaseOwned();
    throw error;
  }
  server.on('error', (error) => log.error(`http server error: ${describeError(error)}`));
  tlsServer?.on('error', (error) => log.error(`https server error: ${describeError(error)}`));

  const port = (server.address() as AddressInfo).port;
  const url = `http://${hostForUrl(host)}:${port}`;
  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      clearInterval(sweeper);
      const serversClosed = closeServers();
      await hub.close();
      await serversClosed;
      await releaseOwned();
    })();
    return closing;
  };
  const setCertificate = async (key: string, cert: string) => {
    if (!tlsServer) throw new Error('this relay has no HTTPS server');
    tlsServer.setSecureContext({ key, cert }); // throws on a key that is not the certificate's
  };
  const relay: Relay = { url, wsUrl: `ws://${hostForUrl(host)}:${port}/ws`, port, close, setCertificate };
  if (tlsServer && tlsOptions) {
    relay.tlsPort = (tlsServer.address() as AddressInfo).port;
    relay.tlsUrl = `https://${hostForUrl(tlsOptions.host)}:${relay.tlsPort}`;
  }
  return relay;
}

/** The plain-HTTP port of a relay whose address is HTTPS: ACME challenges, else a redirect (core/relay/certificate.ts). */
function redirectToHttps(
  https: NonNullable<RelayOptions['httpsOnly']>,
  tlsPort: () => number,
  log: Log,
): (req: IncomingMessage, res: import('node:http').ServerResponse) => void {
  return (req, res) => {
    const answer = plainHttpAnswer(
      req.url ?? '/',
      req.headers.host,
      { domain: https.domain, port: tlsPort() },
      https.challenge,
    );
    if (answer.status === 308) {
      try {
        res.writeHead(308, { location: answer.location, 'content-length': 0 }).end();
      } catch {
        res.writeHead(400, { 'content-length': 0 }).end(); // a path Node will not put in a header
      }
      return;
    }
    if (answer.status === 200) log.info(`answered an ACME challenge for ${req.socket.remoteAddress}`);
    res.writeHead(answer.status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    res.end(answer.body);
  };
}
