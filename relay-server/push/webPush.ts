/**
 * Web Push from the relay to the installed app (docs/notifications.md), with the `web-push` library. The VAPID key
 * pair and the subscriptions (per device: endpoint and keys, which are not secrets of a person but would let anyone
 * push to the phone, and the events it wants) are kept in the Store, so every relay instance on one database signs
 * with the same key and knows every phone (docs/relay-scale.md). A relay that kept them as files in its data dir
 * (`vapid.json`, `push-subscriptions.json`) hands them over to the store once at start: the key it had stays the
 * key (a phone's subscription is bound to it) and the subscriptions file is renamed `….imported`.
 * One push per device and session per PUSH_BATCH_MS. Payloads carry only the envelope the listener sealed
 * (core/notify/push.ts): the push service and the relay cannot read them.
 */
import { existsSync, readFileSync, renameSync } from 'node:fs';
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
import type { PushSubscriptionRecord, Store } from '../store.js';

const Vapid = z.object({ publicKey: z.string(), privateKey: z.string() });
/** The subscriptions file of a relay from before they were kept in the store. */
const OldSubscriptions = z.object({
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

export interface WebPushOptions {
  store: Store;
  /** Where an older relay kept its VAPID keys and subscriptions as files, handed over to the store once. */
  dataDir?: string;
  log: Log;
  /** VAPID subject: a mailto: or https: contact for the push services. */
  subject?: string;
  batchMs?: number;
  /** For tests: the HTTPS agent that reaches a loopback push endpoint with its own certificate. */
  agent?: Agent;
}

/** The VAPID keys in the store: the ones there, else this relay's old `vapid.json`, else a new pair. */
async function vapidKeys(store: Store, dataDir: string | undefined): Promise<z.infer<typeof Vapid>> {
  const file = dataDir ? join(dataDir, 'vapid.json') : null;
  const candidate =
    file && existsSync(file) ? Vapid.parse(JSON.parse(readFileSync(file, 'utf8'))) : webpush.generateVAPIDKeys();
  return Vapid.parse(JSON.parse(await store.relaySetting('vapid', JSON.stringify(candidate))));
}

/** Subscriptions from an older relay's file, into the store once. */
async function importOldSubscriptions(store: Store, dataDir: string | undefined, log: Log): Promise<void> {
  const file = dataDir ? join(dataDir, 'push-subscriptions.json') : null;
  if (!file || !existsSync(file)) return;
  try {
    const old = OldSubscriptions.parse(JSON.parse(readFileSync(file, 'utf8')));
    for (const [deviceId, d] of Object.entries(old.devices))
      await store.putPushSubscription({
        deviceId,
        accountId: d.accountId,
        endpoint: d.endpoint,
        ...d.keys,
        events: d.events,
      });
    renameSync(file, `${file}.imported`);
    log.info(`web push: ${Object.keys(old.devices).length} subscription(s) from ${file} moved into the store`);
  } catch (error) {
    log.warn(`web push: ignoring ${file}: ${describeError(error)}`);
  }
}

export class WebPush {
  readonly publicKey: string;
  private readonly privateKey: string;
  private readonly batches = new Map<
    string,
    { event: PushEvent; count: number; timer: NodeJS.Timeout; sub: PushSubscriptionRecord }
  >();
  private readonly opts: WebPushOptions;
  /** Sends in flight, so close() can wait for them. */
  private readonly inflight = new Set<Promise<void>>();

  private constructor(opts: WebPushOptions, vapid: z.infer<typeof Vapid>) {
    this.opts = opts;
    this.publicKey = vapid.publicKey;
    this.privateKey = vapid.privateKey;
  }

  static async open(opts: WebPushOptions): Promise<WebPush> {
    const vapid = await vapidKeys(opts.store, opts.dataDir);
    await importOldSubscriptions(opts.store, opts.dataDir, opts.log);
    return new WebPush(opts, vapid);
  }

  async subscribe(accountId: string, request: PushSubscribeRequest): Promise<void> {
    await this.opts.store.putPushSubscription({
      deviceId: request.deviceId,
      accountId,
      endpoint: request.subscription.endpoint,
      ...request.subscription.keys,
      events: request.events ?? [...NOTIFY_EVENTS],
    });
  }

  unsubscribe(deviceId: string): Promise<boolean> {
    return this.opts.store.deletePushSubscription(deviceId);
  }

  async events(deviceId: string): Promise<NotifyEvent[] | null> {
    return ((await this.opts.store.getPushSubscription(deviceId))?.events as NotifyEvent[] | undefined) ?? null;
  }

  /**
   * An event for the account's devices. The first for a device and session is pushed at once; the ones that follow
   * within the batching window are held, and the latest of them goes out when the window closes, with their count.
   */
  notify(accountId: string, event: PushEvent, watchedLive: (deviceId: string) => boolean): void {
    const noting = this.opts.store
      .listPushSubscriptions(accountId)
      .then((subs) => {
        for (const sub of subs) {
          if (!wantsPush(sub.events as NotifyEvent[], event.kind, watchedLive(sub.deviceId))) continue;
          const key = `${sub.deviceId}/${event.computer}/${event.session}`;
          const batch = this.batches.get(key);
          if (batch) {
            batch.event = event;
            batch.count++;
            continue;
          }
          this.send(sub, event, 1);
          const timer = setTimeout(() => this.closeWindow(key), this.opts.batchMs ?? PUSH_BATCH_MS);
          timer.unref();
          this.batches.set(key, { event, count: 0, timer, sub });
        }
      })
      .catch((error) => this.opts.log.error(`web push: could not read the subscriptions: ${describeError(error)}`))
      .finally(() => this.inflight.delete(noting));
    this.inflight.add(noting);
  }

  private closeWindow(key: string): void {
    const batch = this.batches.get(key);
    this.batches.delete(key);
    if (batch && batch.count > 0) this.send(batch.sub, batch.event, batch.count);
  }

  private send(sub: PushSubscriptionRecord, event: PushEvent, count: number): void {
    const { deviceId } = sub;
    const payload = JSON.stringify(pushPayload(event, count));
    const keys = { p256dh: sub.p256dh, auth: sub.auth };
    const sending = webpush
      .sendNotification({ endpoint: sub.endpoint, keys }, payload, {
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
            return this.unsubscribe(deviceId).then(() => {});
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
}
