/**
 * Web Push from the relay to the installed app (docs/notifications.md), with the `web-push` library: VAPID keys
 * made on first start and kept in the data dir (`vapid.json`, 0600), subscriptions kept per device in
 * `push-subscriptions.json` (0600: endpoints and their keys, which are not secrets of a person but would let anyone
 * push to the phone), and one push per device and session per PUSH_BATCH_MS. Payloads carry only the envelope
 * the listener sealed (core/notify/push.ts): the push service and the relay cannot read them.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Agent } from 'node:https';
import { join } from 'node:path';
import webpush from 'web-push';
import { z } from 'zod';
import {
  NOTIFY_EVENTS,
  type NotifyEvent,
  PUSH_BATCH_MS,
  type PushEvent,
  type PushSubscribeRequest,
  pushPayload,
  wantsPush,
} from '../../core/notify/push.js';
import { describeError, type Log } from '../log.js';

const Vapid = z.object({ publicKey: z.string(), privateKey: z.string() });
const Subscriptions = z.object({
  version: z.literal(1),
  devices: z.record(
    z.string(),
    z.object({
      accountId: z.string(),
      endpoint: z.string(),
      keys: z.object({ p256dh: z.string(), auth: z.string() }),
      events: z.array(z.enum(NOTIFY_EVENTS)),
    }),
  ),
});
type Subscriptions = z.infer<typeof Subscriptions>;

function writePrivate(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** The relay's VAPID key pair: read from the data dir, or made and written there on first start. */
export function loadOrCreateVapid(dataDir: string): z.infer<typeof Vapid> {
  const path = join(dataDir, 'vapid.json');
  if (existsSync(path)) return Vapid.parse(JSON.parse(readFileSync(path, 'utf8')));
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const keys = webpush.generateVAPIDKeys();
  writePrivate(path, `${JSON.stringify(keys)}\n`);
  return keys;
}

export interface WebPushOptions {
  dataDir: string;
  log: Log;
  /** VAPID subject: a mailto: or https: contact for the push services. */
  subject?: string;
  batchMs?: number;
  /** For tests: the HTTPS agent that reaches a loopback push endpoint with its own certificate. */
  agent?: Agent;
}

export class WebPush {
  readonly publicKey: string;
  private readonly privateKey: string;
  private readonly path: string;
  private subs: Subscriptions;
  private readonly batches = new Map<string, { event: PushEvent; count: number; timer: NodeJS.Timeout }>();
  private readonly opts: WebPushOptions;
  /** Sends in flight, so close() can wait for them. */
  private readonly inflight = new Set<Promise<void>>();

  constructor(opts: WebPushOptions) {
    this.opts = opts;
    const vapid = loadOrCreateVapid(opts.dataDir);
    this.publicKey = vapid.publicKey;
    this.privateKey = vapid.privateKey;
    this.path = join(opts.dataDir, 'push-subscriptions.json');
    this.subs = { version: 1, devices: {} };
    try {
      if (existsSync(this.path)) this.subs = Subscriptions.parse(JSON.parse(readFileSync(this.path, 'utf8')));
    } catch (error) {
      opts.log.warn(`ignoring ${this.path}: ${describeError(error)}`);
    }
  }

  subscribe(accountId: string, request: PushSubscribeRequest): void {
    this.subs.devices[request.deviceId] = {
      accountId,
      endpoint: request.subscription.endpoint,
      keys: request.subscription.keys,
      events: request.events ?? [...NOTIFY_EVENTS],
    };
    this.save();
  }

  unsubscribe(deviceId: string): boolean {
    if (!this.subs.devices[deviceId]) return false;
    delete this.subs.devices[deviceId];
    this.save();
    return true;
  }

  events(deviceId: string): NotifyEvent[] | null {
    return this.subs.devices[deviceId]?.events ?? null;
  }

  /**
   * An event for the account's devices. The first for a device and session is pushed at once; the ones that follow
   * within the batching window are held, and the latest of them goes out when the window closes, with their count.
   */
  notify(accountId: string, event: PushEvent, watchedLive: (deviceId: string) => boolean): void {
    for (const [deviceId, sub] of Object.entries(this.subs.devices)) {
      if (sub.accountId !== accountId) continue;
      if (!wantsPush(sub.events, event.kind, watchedLive(deviceId))) continue;
      const key = `${deviceId}/${event.computer}/${event.session}`;
      const batch = this.batches.get(key);
      if (batch) {
        batch.event = event;
        batch.count++;
        continue;
      }
      this.send(deviceId, event, 1);
      const timer = setTimeout(() => this.closeWindow(key, deviceId), this.opts.batchMs ?? PUSH_BATCH_MS);
      timer.unref();
      this.batches.set(key, { event, count: 0, timer });
    }
  }

  private closeWindow(key: string, deviceId: string): void {
    const batch = this.batches.get(key);
    this.batches.delete(key);
    if (batch && batch.count > 0) this.send(deviceId, batch.event, batch.count);
  }

  private send(deviceId: string, event: PushEvent, count: number): void {
    const sub = this.subs.devices[deviceId];
    if (!sub) return;
    const payload = JSON.stringify(pushPayload(event, count));
    const sending = webpush
      .sendNotification({ endpoint: sub.endpoint, keys: sub.keys }, payload, {
        vapidDetails: {
          subject: this.opts.subject ?? 'mailto:svc-relay@localhost',
          publicKey: this.publicKey,
          privateKey: this.privateKey,
        },
        TTL: 600,
        urgency: 'high',
        ...(this.opts.agent ? { agent: this.opts.agent } : {}),
      })
      .then(
        (res) => this.opts.log.info(`web push ${event.kind} to ${deviceId}: ${res.statusCode}`),
        (error: { statusCode?: number }) => {
          if (error.statusCode === 404 || error.statusCode === 410) {
            this.opts.log.info(`web push subscription of ${deviceId} is gone (${error.statusCode}); dropped`);
            this.unsubscribe(deviceId);
          } else this.opts.log.warn(`web push to ${deviceId} failed: ${error.statusCode ?? describeError(error)}`);
        },
      )
      .finally(() => this.inflight.delete(sending));
    this.inflight.add(sending);
  }

  async close(): Promise<void> {
    for (const b of this.batches.values()) clearTimeout(b.timer);
    this.batches.clear();
    await Promise.all([...this.inflight]);
  }

  private save(): void {
    try {
      writePrivate(this.path, `${JSON.stringify(this.subs)}\n`);
    } catch (error) {
      this.opts.log.error(`could not save ${this.path}: ${describeError(error)}`);
    }
  }
}
