/**
 * When each device was last seen: its own token reaching the relay (a request, a WebSocket opening or closing),
 * for `GET /devices` and so `svc verify` ("Pixel, seen 3 min ago"). Kept to the minute: one write per device a
 * minute at most, whatever its traffic; a WebSocket's opening and closing are always kept (a phone that holds one
 * open for hours is seen until it closes). A failed write is logged and never fails the request.
 */
import type { Log } from './log.js';
import type { KeyRecord, Store } from './store.js';

export const SEEN_EVERY_MS = 60_000;
/** Devices remembered at most; past it the memory starts again (a write each, once). */
const REMEMBERED = 10_000;

export class DeviceSeen {
  private readonly last = new Map<string, number>();

  constructor(
    private readonly store: Pick<Store, 'deviceSeen'>,
    private readonly log: Pick<Log, 'warn'>,
    private readonly now: () => number,
  ) {}

  /** `key` reached the relay now; `always` keeps it even within the minute. Keys of no device are not kept. */
  seen(key: Pick<KeyRecord, 'deviceId'>, always = false): void {
    const id = key.deviceId;
    if (!id) return;
    const at = this.now();
    const before = this.last.get(id);
    if (!always && before !== undefined && at - before < SEEN_EVERY_MS) return;
    if (this.last.size >= REMEMBERED) this.last.clear();
    this.last.set(id, at);
    this.store.deviceSeen(id, at).catch((error: unknown) => {
      this.log.warn(
        `device ${id}: when it was last seen was not kept: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
  }
}
