/**
 * What a frame handler is given (relay-server/frames.ts and the handlers of asks and history): kept apart from the
 * handlers so they import it without importing each other.
 */
import type { AskBook } from './asks/book.js';
import type { Bus } from './bus.js';
import type { Connection } from './connection.js';
import type { Log } from './log.js';
import type { WebPush } from './push/webPush.js';
import type { Pushes } from './pushes.js';
import type { Store } from './store.js';

export interface FrameContext {
  store: Store;
  bus: Bus;
  pushes: Pushes;
  log: Log;
  now: () => number;
  replayWindowMs: number;
  /** Make conn the listener of its hookId in this hub (the bus then tells every hub to drop older ones). */
  claimListener(conn: Connection): void;
  /** Whether a listener of hookId is subscribed (pane requests to an offline computer are answered at once). */
  isOnline(hookId: string): boolean;
  /** The asks waiting, in memory (relay-server/asks/). */
  asks: AskBook;
  /** Web Push for asks and notifications; null when off. */
  webPush: WebPush | null;
  watchedLive(accountId: string, deviceId: string, computer: string, session: string): boolean;
  /** How many app connections of the account, subscribed as a device, this instance holds. */
  appsOnline(accountId: string): number;
}
