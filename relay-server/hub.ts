/**
 * The WebSocket side of the relay: authenticates upgrades on `/ws`, keeps each connection alive with ping/pong,
 * rate-limits its frames, and turns bus events into frames for the connections of that account.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, type WebSocket, WebSocketServer } from 'ws';
import { CLOSE, computerAway, type HttpErrorCode, MAX_WS_FRAME_BYTES } from '../core/protocol/index.js';
import { type BucketConfig, takeToken } from '../core/tokenBucket.js';
import { AskBook } from './asks/book.js';
import { APP_PROTOCOL, authenticate, authorizationFromProtocols } from './auth.js';
import { type Bus, type BusEvent, PRESENCE_BEAT_MS } from './bus.js';
import { Connection, watchKey } from './connection.js';
import type { DeviceSeen } from './deviceSeen.js';
import type { FrameContext } from './frameContext.js';
import { handleText } from './frames.js';
import { describeError, type Log } from './log.js';
import type { WebPush } from './push/webPush.js';
import { type Pushes, toWirePush } from './pushes.js';
import type { KeyLimiter, RefusalLimiter } from './rateLimit.js';
import type { Presence } from './routes.js';
import type { KeyRecord, Store } from './store.js';

export const WS_PATH = '/ws';
/** How long close() waits for clients to answer the close frame before cutting them off. */
const CLOSE_GRACE_MS = 1_000;

export interface HubOptions {
  store: Store;
  bus: Bus;
  pushes: Pushes;
  log: Log;
  now: () => number;
  replayWindowMs: number;
  pingIntervalMs: number;
  /** Upgrades spend a token of the key's HTTP bucket, so a reconnect storm is limited like requests are. */
  httpBuckets: KeyLimiter;
  /** Upgrades refused without a valid key spend from their address's bucket, like HTTP requests. */
  refusals: RefusalLimiter;
  /** The client's address: the socket's, or a trusted proxy's word for it (core/relay/clientAddress.ts). */
  clientOf: (req: IncomingMessage) => string;
  wsBucket: BucketConfig;
  /** Web Push for asks and notifications (relay-server/push/). */
  webPush?: WebPush | null;
  /** A listener's push.result frames spend from this when its frame bucket is empty (RELAY_RESULT_BUCKET). */
  resultBucket: BucketConfig;
  /** When each device was last seen (relay-server/deviceSeen.ts): its sockets' opening and closing; absent: not kept. */
  seen?: DeviceSeen;
}

interface AccountGroup {
  connections: Set<Connection>;
  unsubscribe: () => void;
}

const STATUS_TEXT: Record<number, string> = {
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** Whether a listener's frame is a push.result (read only when its frame bucket is empty). */
function isPushResult(data: RawData): boolean {
  try {
    const raw = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    return (JSON.parse(raw.toString('utf8')) as { type?: unknown } | null)?.type === 'push.result';
  } catch {
    return false;
  }
}

/** Answer an upgrade request with a plain HTTP error and hang up. */
function refuseUpgrade(socket: Duplex, status: number, code: HttpErrorCode, message: string, extra = ''): void {
  const body = JSON.stringify({ error: { code, message } });
  socket.once('finish', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\nConnection: close\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`,
  );
}

export class Hub implements Presence {
  private readonly opts: HubOptions;
  private readonly wss = new WebSocketServer({
    noServer: true,
    maxPayload: MAX_WS_FRAME_BYTES,
    // Echo only svc.v1, never the bearer.<token> protocol the browser offered beside it.
    handleProtocols: (offered) => (offered.has(APP_PROTOCOL) ? APP_PROTOCOL : false),
  });
  private readonly accounts = new Map<string, AccountGroup>();
  /** The subscribed (or subscribing) listener of each computer on this hub. */
  private readonly listeners = new Map<string, Connection>();
  private readonly frameContext: FrameContext;
  private readonly asks = new AskBook();
  private closing: Promise<void> | null = null;
  /** The presence heartbeat, on a bus shared with other instances only. */
  private readonly beats: NodeJS.Timeout | null;
  /** Stops the shared bus's tap (asks of every account), when there is one. */
  private readonly untap: (() => void) | null;

  constructor(opts: HubOptions) {
    this.opts = opts;
    this.beats = opts.bus.onlineElsewhere ? setInterval(() => this.beat(), PRESENCE_BEAT_MS) : null;
    this.beats?.unref();
    // on a shared bus every instance keeps the asks of every account, for an app that connects to it later
    this.untap =
      opts.bus.tap?.((accountId, event) => {
        if (event.kind !== 'ask.toApps') return;
        const { frame } = event;
        if (frame.type === 'ask.new' || frame.type === 'ask.closed') this.asks.apply(accountId, frame, opts.now());
      }) ?? null;
    this.frameContext = {
      store: opts.store,
      bus: opts.bus,
      pushes: opts.pushes,
      log: opts.log,
      now: opts.now,
      replayWindowMs: opts.replayWindowMs,
      claimListener: (conn) => {
        if (conn.hookId) this.listeners.set(conn.hookId, conn);
      },
      isOnline: (hookId) => this.isOnline(hookId),
      asks: this.asks,
      webPush: opts.webPush ?? null,
      watchedLive: (accountId, deviceId, computer, session) => this.watchedLive(accountId, deviceId, computer, session),
      appsOnline: (accountId) => {
        const group = this.accounts.get(accountId);
        return group ? [...this.apps(group)].filter((c) => c.deviceId).length : 0;
      },
    };
  }

  /** Whether an app connection of `deviceId` watches that session live right now (no push for it then). */
  watchedLive(accountId: string, deviceId: string, computer: string, session: string): boolean {
    const group = this.accounts.get(accountId);
    if (!group) return false;
    for (const conn of this.apps(group)) {
      if (conn.deviceId === deviceId && conn.watching.has(watchKey(computer, session))) return true;
    }
    return false;
  }

  /** Connected here, or (on a bus shared by several instances) to another instance that said so recently. */
  isOnline(hookId: string): boolean {
    return this.listeners.get(hookId)?.phase === 'subscribed' || this.opts.bus.onlineElsewhere?.(hookId) === true;
  }

  /** On a shared bus: says which listeners this instance holds, per account, so the others know they are online. */
  private beat(): void {
    for (const [accountId, group] of this.accounts) {
      const hookIds = [...group.connections]
        .filter((c) => c.role === 'listener' && c.phase === 'subscribed' && c.hookId)
        .map((c) => c.hookId as string);
      if (hookIds.length > 0)
        void this.opts.bus.publish(accountId, { kind: 'listener.present', hookIds }).catch(() => {});
    }
  }

  /** The server's `upgrade` listener. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => {}); // a client hanging up mid-handshake is not our error
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path !== WS_PATH) this.refuse(socket, path, 404, 'not_found', `WebSocket endpoint is ${WS_PATH}`);
    else if (this.closing) this.refuse(socket, path, 503, 'unavailable', 'relay is shutting down');
    else {
      this.authorizeUpgrade(req, socket, head, path).catch((error: unknown) => {
        this.opts.log.error(`ws upgrade failed: ${describeError(error)}`);
        refuseUpgrade(socket, 500, 'internal', 'internal error; the relay logged it');
      });
    }
  }

  private async authorizeUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, path: string): Promise<void> {
    const header = req.headers.authorization ?? authorizationFromProtocols(req.headers['sec-websocket-protocol']);
    const auth = await authenticate(this.opts.store, header);
    if (this.closing || socket.destroyed) {
      this.refuse(socket, path, 503, 'unavailable', 'relay is shutting down');
      return;
    }
    if (!auth.ok) {
      const limit = this.opts.refusals.charge(this.opts.clientOf(req), `ws upgrade ${path}`);
      if (!limit.allowed) {
        const seconds = Math.max(1, Math.ceil(limit.retryAfterMs / 1000));
        const message = 'too many refused requests from this address';
        refuseUpgrade(socket, 429, 'rate_limited', message, `Retry-After: ${seconds}\r\n`);
        return;
      }
      this.refuse(socket, path, 401, 'unauthorized', 'send the API key as Authorization: Bearer <key>');
      return;
    }
    const limit = await this.opts.httpBuckets.take(auth.key.keyId);
    if (socket.destroyed) return;
    if (!limit.allowed) {
      const seconds = Math.max(1, Math.ceil(limit.retryAfterMs / 1000));
      this.refuse(socket, path, 429, 'rate_limited', 'too many requests for this key', `Retry-After: ${seconds}\r\n`);
      return;
    }
    if (auth.key.scopes.length === 0) {
      this.refuse(socket, path, 403, 'forbidden', 'this key has no scope');
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, auth.key));
  }

  private refuse(socket: Duplex, path: string, status: number, code: HttpErrorCode, message: string, extra = ''): void {
    this.opts.log.warn(`ws upgrade ${status} ${code} ${path}: ${message}`);
    refuseUpgrade(socket, status, code, message, extra);
  }

  private accept(ws: WebSocket, key: KeyRecord): void {
    const { log, bus } = this.opts;
    if (this.closing) {
      ws.close(CLOSE.goingAway, 'relay shutting down');
      return;
    }
    const conn = new Connection(ws, key, this.opts.wsBucket, this.opts.now(), this.opts.resultBucket);
    let group = this.accounts.get(key.accountId);
    if (!group) {
      const accountId = key.accountId;
      group = { connections: new Set(), unsubscribe: bus.subscribe(accountId, (e) => this.onBusEvent(accountId, e)) };
      this.accounts.set(accountId, group);
    }
    group.connections.add(conn);
    log.info(`ws ${conn.label} connected`);
    this.opts.seen?.seen(key, true);

    const heartbeat = setInterval(() => {
      if (!conn.alive) {
        log.warn(`ws ${conn.label} missed a pong; terminating`);
        ws.terminate();
        return;
      }
      conn.alive = false;
      ws.ping();
    }, this.opts.pingIntervalMs);
    heartbeat.unref();

    ws.on('pong', () => {
      conn.alive = true;
    });
    ws.on('message', (data, isBinary) => this.onMessage(conn, data, isBinary));
    ws.on('error', (error) => log.warn(`ws ${conn.label} error: ${error.message}`));
    ws.on('close', (code) => {
      clearInterval(heartbeat);
      this.opts.seen?.seen(key, true);
      this.drop(conn, code);
    });
  }

  /** Frames are handled one at a time, in arrival order; the bucket is charged on arrival. */
  private onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    const { log } = this.opts;
    const now = this.opts.now();
    const taken = takeToken(this.opts.wsBucket, conn.bucket, now);
    conn.bucket = taken.state;
    let allowed = taken.allowed;
    if (!allowed && conn.role === 'listener' && !isBinary && isPushResult(data)) {
      const result = takeToken(this.opts.resultBucket, conn.resultBucket, now);
      conn.resultBucket = result.state;
      allowed = result.allowed;
    }
    let work: () => Promise<void> | void;
    if (!allowed) {
      // One log line per run of refused frames, not one per frame: a flood must not flood the log too.
      if (conn.limitedRun++ === 0) log.warn(`ws rate_limited ${conn.label}: dropping frames`);
      const message = `too many frames; retry in ${taken.retryAfterMs}ms`;
      work = () => void conn.send({ type: 'error', code: 'rate_limited', message });
    } else {
      if (conn.limitedRun > 0) {
        log.warn(`ws rate_limited ${conn.label}: ${conn.limitedRun} frame(s) dropped`);
        conn.limitedRun = 0;
      }
      if (isBinary) {
        log.warn(`ws bad_frame from ${conn.label}: binary frame`);
        const message = 'binary frames are not accepted; send JSON text';
        work = () => void conn.send({ type: 'error', code: 'bad_frame', message });
      } else {
        const raw = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
        const text = raw.toString('utf8');
        work = () => handleText(this.frameContext, conn, text);
      }
    }
    conn.queue = conn.queue.then(work).catch((error: unknown) => {
      log.error(`ws frame from ${conn.label} failed: ${describeError(error)}`);
      conn.send({ type: 'error', code: 'internal', message: 'internal error; the relay logged it' });
    });
  }

  private onBusEvent(accountId: string, event: BusEvent): void {
    const group = this.accounts.get(accountId);
    if (!group) return;
    switch (event.kind) {
      case 'push.new': {
        let delivered = false;
        for (const conn of group.connections) {
          if (conn.role !== 'listener' || !conn.hookId) continue;
          if (event.targets !== null && !event.targets.includes(conn.hookId)) continue;
          if (conn.phase === 'subscribing') conn.held.push(event.push);
          else if (conn.phase === 'subscribed') {
            delivered =
              conn.send({ type: 'push.new', push: toWirePush(event.push, this.opts.now(), false) }) || delivered;
          }
        }
        if (delivered) {
          this.opts.pushes.markDelivered(accountId, event.push.id).catch((error: unknown) => {
            this.opts.log.error(`marking push ${accountId}/${event.push.id} delivered failed: ${describeError(error)}`);
          });
        }
        return;
      }
      case 'push.status':
        for (const conn of this.apps(group)) {
          conn.send({ type: 'push.status', id: event.id, state: event.state, code: event.code });
        }
        return;
      case 'computers.changed':
        for (const conn of this.apps(group)) conn.send({ type: 'computers.changed', computer: event.computer });
        return;
      case 'pane.toListener': {
        const listener = this.listeners.get(event.hookId);
        if (listener?.phase === 'subscribed' && listener.accountId === accountId) listener.send(event.frame);
        return;
      }
      case 'pane.toApp': {
        const { frame } = event;
        // A watch is over when the listener stops or refuses it, unless it is the computer that went away.
        const over =
          frame.type === 'pane.status' && frame.state !== 'streaming' && !computerAway(frame.state, frame.code);
        for (const conn of this.apps(group)) {
          const connection = 'connection' in frame ? frame.connection : undefined;
          const mine = frame.deviceId !== null ? conn.deviceId === frame.deviceId : conn.id === connection;
          if (!mine) continue;
          if (over) conn.watching.delete(watchKey(frame.computer, frame.session));
          conn.send(frame);
        }
        return;
      }
      case 'ask.toApps': {
        const { frame } = event;
        // (on a shared bus the tap keeps the book, for every account)
        if (!this.untap && (frame.type === 'ask.new' || frame.type === 'ask.closed'))
          this.asks.apply(accountId, frame, this.opts.now());
        for (const conn of this.apps(group)) {
          if (frame.type === 'ask.result') {
            const mine = frame.deviceId !== null ? conn.deviceId === frame.deviceId : conn.id === frame.connection;
            if (!mine) continue;
          }
          conn.send(frame);
        }
        return;
      }
      case 'history.toApps': {
        for (const conn of this.apps(group)) conn.send(event.frame);
        return;
      }
      case 'ask.toListener': {
        const listener = this.listeners.get(event.hookId);
        if (listener?.phase === 'subscribed' && listener.accountId === accountId) listener.send(event.frame);
        return;
      }
      case 'listener.offline': {
        let told = 0;
        for (const conn of this.apps(group)) {
          for (const { computer, session } of conn.watching.values()) {
            if (computer !== event.hookId) continue;
            const to = { computer, session, deviceId: conn.deviceId, connection: conn.id };
            if (conn.send({ type: 'pane.status', ...to, state: 'stopped', code: 'computer_offline' })) told++;
          }
        }
        if (told > 0) this.opts.log.info(`pane ${event.hookId}/* stopped (computer_offline) for ${told} watch(es)`);
        return;
      }
      case 'device.removed':
        for (const conn of group.connections) {
          if (conn.key.deviceId !== event.deviceId) continue;
          this.opts.log.warn(`ws 4401 ${conn.label}: its device ${event.deviceId} was removed`);
          conn.close(CLOSE.unauthorized, 'this device was removed; pair again');
        }
        return;
      case 'listener.subscribed':
        for (const conn of group.connections) {
          if (conn.role === 'listener' && conn.hookId === event.hookId && conn.id !== event.connectionId) {
            this.opts.log.warn(`ws 4409 ${conn.label}: replaced by a newer listener for ${event.hookId}`);
            conn.phase = 'closed';
            conn.close(CLOSE.replaced, 'replaced by a newer listener for this computer');
          }
        }
        return;
    }
  }

  /**
   * Pushes the bus did not bring (DESIGN.md "the store is the truth"): each stranded push (relay-server/pushes.ts)
   * whose listener is connected here is sent to it, as the bus would have, and marked delivered. A listener that
   * got it already (the bus was only slow) skips it by its id; none is typed twice. Returns how many went.
   */
  async deliverStranded(): Promise<number> {
    const { pushes, log, now } = this.opts;
    let delivered = 0;
    for (const push of await pushes.stranded()) {
      const group = this.accounts.get(push.accountId);
      if (!group || this.closing) continue;
      const listeners = [...group.connections].filter((c) => c.role === 'listener' && c.phase === 'subscribed');
      if (listeners.length === 0) continue;
      const targets = await pushes.targetsOf(push);
      let sent = false;
      for (const conn of listeners) {
        if (targets !== null && (!conn.hookId || !targets.includes(conn.hookId))) continue;
        sent = conn.send({ type: 'push.new', push: toWirePush(push, now(), false) }) || sent;
      }
      if (!sent) continue;
      delivered++;
      log.warn(`push ${push.accountId}/${push.id} delivered from the store: the bus did not bring it`);
      await pushes.markDelivered(push.accountId, push.id);
    }
    return delivered;
  }

  private *apps(group: AccountGroup): Iterable<Connection> {
    for (const conn of group.connections) if (conn.role === 'app' && conn.phase === 'subscribed') yield conn;
  }

  private drop(conn: Connection, code: number): void {
    const { log, store, bus, now } = this.opts;
    // A listener replaced by a newer one was marked closed already: its computer is not offline.
    const wasListening = conn.role === 'listener' && conn.phase === 'subscribed';
    conn.phase = 'closed';
    conn.held.length = 0;
    log.info(`ws ${conn.label} closed (${code})`);
    const group = this.accounts.get(conn.accountId);
    if (group) {
      group.connections.delete(conn);
      if (group.connections.size === 0) {
        group.unsubscribe();
        this.accounts.delete(conn.accountId);
      }
    }
    const hookId = conn.hookId;
    if (!hookId || this.listeners.get(hookId) !== conn) return;
    this.listeners.delete(hookId);
    if (this.closing) return;
    if (wasListening) {
      bus
        .publish(conn.accountId, { kind: 'listener.offline', hookId })
        .catch((error: unknown) => log.error(`telling apps ${hookId} is offline: ${describeError(error)}`));
    }
    store
      .touchComputer(hookId, now())
      .then(() => bus.publish(conn.accountId, { kind: 'computers.changed', computer: hookId }))
      .catch((error: unknown) => log.error(`listener ${hookId} going offline: ${describeError(error)}`));
  }

  /** Close every connection (1001) and stop accepting new ones. Idempotent. */
  close(): Promise<void> {
    if (!this.closing) this.closing = this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    if (this.beats) clearInterval(this.beats);
    this.untap?.();
    const sockets = [...this.wss.clients];
    const closed = sockets.map(
      (ws) =>
        new Promise<void>((resolve) => {
          if (ws.readyState === ws.CLOSED) return resolve();
          ws.once('close', () => resolve());
        }),
    );
    for (const ws of sockets) ws.close(CLOSE.goingAway, 'relay shutting down');
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_GRACE_MS);
    });
    await Promise.race([Promise.all(closed), grace]);
    clearTimeout(timer);
    for (const ws of sockets) ws.terminate();
    // Frames already being handled finish before the caller closes the store under them.
    const queues = [...this.accounts.values()].flatMap((g) => [...g.connections].map((c) => c.queue));
    await Promise.all(queues);
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}
