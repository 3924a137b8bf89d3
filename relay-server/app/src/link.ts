/**
 * The app's WebSocket to the relay: authenticated with the device token as a subprotocol (never in the URL),
 * subscribed as this device, checked with an app-level ping (a browser cannot see WebSocket pings, and a socket
 * left half-open by a phone's sleep looks open until something is sent), and reopened by itself with backoff and
 * jitter, at once when the phone comes back online, to the foreground, or into focus, and on the Reconnect button.
 */
import { backoffDelay, RELAY_BACKOFF } from '../../../core/backoff.js';
import type { ClientFrame, RelayFrame } from '../../../core/protocol/index.js';

/** CLOSE.unauthorized / forbidden in core/protocol/frames.ts (not imported: that module brings zod into the first load). */
const AUTH_CLOSE_CODES = new Set([4401, 4403]);

/**
 * A frame from the relay: JSON with a string `type`. Deliberately light (the schemas live with zod, loaded later):
 * what a frame carries is checked where it is used, and anything sealed is checked by `open`.
 */
function parseRelayFrame(text: string): RelayFrame | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string'
      ? (value as RelayFrame)
      : null;
  } catch {
    return null;
  }
}

export type LinkState = 'online' | 'connecting' | 'offline';

/** How often a visible page checks the socket, and how long an answer may take. */
export const PING_EVERY_MS = 20_000;
export const PONG_WITHIN_MS = 5_000;
/** A quick check when the page comes back (after sleep a socket may be dead without knowing it). */
const WAKE_PONG_WITHIN_MS = 3_000;
/** A socket that has not said `subscribed` by then is given up. */
const OPEN_WITHIN_MS = 10_000;

export interface LinkOptions {
  url: string;
  token: string;
  deviceId: string;
  onFrame(frame: RelayFrame): void;
  onState(state: LinkState): void;
  /** Each time the link is subscribed (first time and after every reconnect): refresh what may have been missed. */
  onSubscribed(): void;
  /** The socket failed to open; resolves true when the token was refused (the link then stops). */
  checkToken(): Promise<boolean>;
  onUnauthorized(): void;
}

export class Link {
  state: LinkState = 'connecting';
  /** When the next attempt starts, while waiting (for "retrying in 8 s"). */
  retryAt: number | null = null;
  private ws: WebSocket | null = null;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private pingTimer: ReturnType<typeof setInterval> | null = null;
  private pongTimer: ReturnType<typeof setTimeout> | null = null;
  private openTimer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  private readonly opts: LinkOptions;

  constructor(opts: LinkOptions) {
    this.opts = opts;
    const wake = () => this.wake();
    window.addEventListener('online', wake);
    window.addEventListener('focus', wake);
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible') wake();
    });
    window.addEventListener('offline', () => {
      if (this.state !== 'online') this.setState('offline');
    });
  }

  start(): void {
    this.open();
  }

  /** The Reconnect button: drop whatever socket there is and open a new one now. */
  reconnect(): void {
    if (this.stopped) return;
    this.attempt = 0;
    this.drop();
    this.open();
  }

  stop(): void {
    this.stopped = true;
    this.drop();
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }

  /** Send a frame on a subscribed socket; false when there is none (the caller keeps what it had to send). */
  send(frame: ClientFrame): boolean {
    if (this.state !== 'online' || this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  /** The page came back: check a socket that claims to be open, or try at once if there is none. */
  private wake(): void {
    if (this.stopped) return;
    if (this.state === 'online') this.ping(WAKE_PONG_WITHIN_MS);
    else this.reconnect();
  }

  private setState(state: LinkState): void {
    if (state !== 'offline') this.retryAt = null;
    this.state = state;
    this.opts.onState(state);
  }

  private open(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.setState('connecting');
    let ws: WebSocket;
    try {
      ws = new WebSocket(this.opts.url, ['svc.v1', `bearer.${this.opts.token}`]);
    } catch {
      this.retry(false);
      return;
    }
    this.ws = ws;
    let subscribed = false;
    this.openTimer = setTimeout(() => {
      if (this.ws === ws && !subscribed) {
        this.drop();
        this.retry(false);
      }
    }, OPEN_WITHIN_MS);
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: 'subscribe', role: 'app', deviceId: this.opts.deviceId } satisfies ClientFrame));
    };
    ws.onmessage = (event) => {
      if (this.ws !== ws || typeof event.data !== 'string') return;
      const frame = parseRelayFrame(event.data);
      if (!frame) return;
      if (frame.type === 'pong') {
        if (this.pongTimer) clearTimeout(this.pongTimer);
        this.pongTimer = null;
        return;
      }
      if (frame.type === 'subscribed' && !subscribed) {
        subscribed = true;
        if (this.openTimer) clearTimeout(this.openTimer);
        this.attempt = 0;
        this.setState('online');
        this.pingTimer = setInterval(() => {
          if (document.visibilityState === 'visible') this.ping(PONG_WITHIN_MS);
        }, PING_EVERY_MS);
        this.opts.onSubscribed();
        return;
      }
      this.opts.onFrame(frame);
    };
    ws.onclose = (event) => {
      if (this.ws !== ws) return;
      this.drop();
      if (AUTH_CLOSE_CODES.has(event.code)) {
        this.stopped = true;
        this.opts.onUnauthorized();
        return;
      }
      this.retry(subscribed);
    };
  }

  /** Ask for a pong; none within `withinMs` means the socket is dead although it looks open. */
  private ping(withinMs: number): void {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN || this.pongTimer) return;
    this.ws.send(JSON.stringify({ type: 'ping', t: Date.now() } satisfies ClientFrame));
    const ws = this.ws;
    this.pongTimer = setTimeout(() => {
      this.pongTimer = null;
      if (this.ws !== ws) return;
      this.drop();
      this.retry(true);
    }, withinMs);
  }

  /** Forget the current socket without waiting for its close (a half-open one may never close). */
  private drop(): void {
    for (const t of [this.openTimer, this.pongTimer]) if (t) clearTimeout(t);
    if (this.pingTimer) clearInterval(this.pingTimer);
    this.openTimer = this.pongTimer = this.pingTimer = null;
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      try {
        ws.close();
      } catch {}
    }
  }

  private retry(wasOnline: boolean): void {
    if (this.stopped) return;
    // A socket that was fine a moment ago (relay restart, sleep) gets one try at once; then backoff.
    const delay = wasOnline && this.attempt === 0 ? 250 : backoffDelay(this.attempt, RELAY_BACKOFF, Math.random());
    this.attempt++;
    this.retryAt = Date.now() + delay;
    this.setState(wasOnline && delay < 1000 ? 'connecting' : 'offline');
    this.retryTimer = setTimeout(() => this.open(), delay);
    if (!wasOnline) {
      // An upgrade refused for a bad token looks like any other failure to a browser: ask over HTTP.
      this.opts
        .checkToken()
        .then((refused) => {
          if (refused && !this.stopped) {
            this.stop();
            this.opts.onUnauthorized();
          }
        })
        .catch(() => {});
    }
  }
}
