/**
 * startRelay: one port for the HTTP routes and the WebSocket upgrade, a store, a bus, and the sweeper that expires
 * pushes no listener received in time.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type BucketConfig, RELAY_HTTP_BUCKET, RELAY_WS_BUCKET } from '../core/tokenBucket.js';
import { type Bus, InProcessBus } from './bus.js';
import { Hub } from './hub.js';
import { defaultLog, describeError, type Log } from './log.js';
import { Pushes } from './pushes.js';
import { KeyedBuckets } from './rateLimit.js';
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
  /** A push older than this is never handed to a listener: replay expires it, the sweeper expires it if pending. */
  replayWindowMs?: number;
  pingIntervalMs?: number;
  /** How often the sweeper looks for pending pushes past the replay window (default: a quarter of it, 100 ms–10 s). */
  sweepIntervalMs?: number;
  /** Given stores and buses belong to the caller: close() leaves them open. */
  store?: Store;
  bus?: Bus;
  log?: Log;
  /** The relay's clock (epoch ms) for push times and ages; tests move it. */
  now?: () => number;
  httpBucket?: BucketConfig;
  wsBucket?: BucketConfig;
  /** The built phone app to serve at `/`; default: `SVC_APP_DIR` or `dist/app` (null: a page says to build it). */
  appDir?: string | null;
}

export interface Relay {
  /** http://host:port, no trailing slash. */
  url: string;
  /** ws://host:port/ws */
  wsUrl: string;
  port: number;
  /** Close connections, the server, and the store and bus it opened. Idempotent. */
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
  const bus = options.bus ?? new InProcessBus((error) => log.error(`bus handler failed: ${describeError(error)}`));
  const pushes = new Pushes({ store, bus, log, now, replayWindowMs });
  const httpBuckets = new KeyedBuckets(options.httpBucket ?? RELAY_HTTP_BUCKET, now);
  const hub = new Hub({
    store,
    bus,
    pushes,
    log,
    now,
    replayWindowMs,
    pingIntervalMs,
    httpBuckets,
    wsBucket: options.wsBucket ?? RELAY_WS_BUCKET,
  });
  const server = createServer(
    createRequestHandler({
      store,
      bus,
      pushes,
      presence: hub,
      httpBuckets,
      log,
      now,
      appDir: options.appDir === undefined ? findAppDir() : options.appDir,
    }),
  );
  server.headersTimeout = 20_000;
  server.requestTimeout = 30_000;
  server.on('upgrade', (req, socket, head) => hub.handleUpgrade(req, socket, head));

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

  const releaseOwned = async () => {
    clearInterval(sweeper);
    await sweeping;
    if (!options.bus) await bus.close();
    if (!options.store) await store.close();
  };

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? DEFAULT_PORT, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await hub.close();
    await releaseOwned();
    throw error;
  }
  server.on('error', (error) => log.error(`http server error: ${describeError(error)}`));

  const port = (server.address() as AddressInfo).port;
  const url = `http://${hostForUrl(host)}:${port}`;
  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      clearInterval(sweeper);
      const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await hub.close();
      await serverClosed;
      await releaseOwned();
    })();
    return closing;
  };
  return { url, wsUrl: `ws://${hostForUrl(host)}:${port}/ws`, port, close };
}
