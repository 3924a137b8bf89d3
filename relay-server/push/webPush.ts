/**
 * Web Push from the relay to the installed app (docs/notifications.md), with the `web-push` library. The VAPID key
 * pair and the subscriptions (per device: endpoint and keys, which are not secrets of a person but would let anyone
 * push to the phone, and the events it wants) are kept in the Store, so every relay instance on one database signs
 * with the same key and knows every phone (docs/relay-scale.md). A relay that kept them as files in its data dir
 * (`vapid.json`, `push-subscriptions.json`) hands them over to the store once at start: the key it had stays the
 * key (a phone's subscription is bound to it) and the subscriptions file is renamed `….imported`.
 * One push per device and session per PUSH_BATCH_MS. Payloads carry only the envelope the listener sealed
 * (core/notify/push.ts): the push service and the relay cannot read them.
 *
 * A device names where its pushes go, so the relay is careful where it connects (docs/security.md): only `https:`
 * endpoints on public addresses (or hosts the operator named in `--push-hosts`), checked when a device subscribes
 * and again at every connect; each send is bounded in time and in the answer it reads (push/transport.ts); at most
 * `MAX_SENDS_PER_DEVICE` at once per device; and a subscription that fails `MAX_FAILURES` times in a row, that
 * resolves to a private address, or that its service says is gone, is dropped.
 */
import { lookup } from 'node:dns/promises';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import type { Agent } from 'node:https';
import { isIP } from 'node:net';
import { join } from 'node:path';
import webpush from 'web-push';
import { z } from 'zod/v3';
import { checkPushEndpoint, isPublicAddress } from '../../core/notify/endpoint.js';
import {
  NOTIFY_EVENTS,
  type NotifyEvent,
  PUSH_BATCH_MS,
  type PushEvent,
  type PushOutcome,
  type PushSubscribeRequest,
  pushPayload,
  wantsPush,
} from '../../core/notify/push.js';
import { describeError, type Log } from '../log.js';
import type { PushSubscriptionRecord, Store } from '../store.js';
import { PushFailed, sendPushRequest } from './transport.js';

/** Sends at once to one device; more are skipped (a push is a nudge, and the batching keeps the latest). */
export const MAX_SENDS_PER_DEVICE = 2;
/** Failed sends in a row after which a subscription is dropped (the app subscribes again when it opens). */
export const MAX_FAILURES = 3;

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
  /** `--push-hosts`: the only hosts pushes go to (a host named exactly may be on a private address); null: any
   *  host on a public address. */
  pushHosts?: readonly string[] | null;
  /** Connect and whole-answer timeouts of one send (push/transport.ts has the defaults). */
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
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
    {
      event: PushEvent;
      count: number;
      timer: NodeJS.Timeout;
      sub: PushSubscriptionRecord;
      /** The held events' callers, told whether the push service took the push that carries them. */
      waiters: ((accepted: boolean) => void)[];
    }
  >();
  private readonly opts: WebPushOptions;
  /** Sends in flight, so close() can wait for them. */
  private readonly inflight = new Set<Promise<unknown>>();
  /** Sends in flight per device. */
  private readonly sending = new Map<string, number>();
  /** Failed sends in a row per device. */
  private readonly failures = new Map<string, number>();
  private readonly stopping = new AbortController();

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

  /**
   * Why the relay will not send to `endpoint` (a sentence), or null: not an `https:` URL, not an allowed host, or a
   * host whose addresses are not all public (unless named in `--push-hosts`).
   */
  async endpointProblem(endpoint: string): Promise<string | null> {
    const checked = checkPushEndpoint(endpoint, this.opts.pushHosts ?? null);
    if (!checked.ok) return checked.message;
    if (checked.named || isIP(checked.host) !== 0) return null;
    let addresses: { address: string }[];
    try {
      addresses = await lookup(checked.host, { all: true });
    } catch {
      return `${checked.host} does not resolve`;
    }
    const bad = addresses.find((a) => !isPublicAddress(a.address));
    return bad ? `${checked.host} resolves to ${bad.address}, not a public address` : null;
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
  notify(accountId: string, event: PushEvent, watchedLive: (deviceId: string) => boolean): Promise<PushOutcome> {
    const noting = this.opts.store
      .listPushSubscriptions(accountId)
      .then(async (subs) => {
        const sends: Promise<boolean>[] = [];
        for (const sub of subs) {
          if (!wantsPush(sub.events as NotifyEvent[], event.kind, watchedLive(sub.deviceId))) continue;
          const key = `${sub.deviceId}/${event.computer}/${event.session}`;
          const batch = this.batches.get(key);
          if (batch) {
            batch.event = event;
            batch.count++;
            sends.push(new Promise((resolve) => batch.waiters.push(resolve)));
            continue;
          }
          sends.push(this.send(sub, event, 1));
          const timer = setTimeout(() => this.closeWindow(key), this.opts.batchMs ?? PUSH_BATCH_MS);
          timer.unref();
          this.batches.set(key, { event, count: 0, timer, sub, waiters: [] });
        }
        const accepted = (await Promise.all(sends)).filter(Boolean).length;
        return { subscribed: subs.length, wanted: sends.length, accepted };
      })
      .catch((error) => {
        this.opts.log.error(`web push: could not read the subscriptions: ${describeError(error)}`);
        return { subscribed: 0, wanted: 0, accepted: 0 };
      })
      .finally(() => this.inflight.delete(noting));
    this.inflight.add(noting);
    return noting;
  }

  private closeWindow(key: string): void {
    const batch = this.batches.get(key);
    this.batches.delete(key);
    if (!batch || batch.count === 0) return;
    const sent = this.send(batch.sub, batch.event, batch.count);
    for (const tell of batch.waiters) void sent.then(tell);
  }

  /** One push; resolves true when the push service took it. */
  private send(sub: PushSubscriptionRecord, event: PushEvent, count: number): Promise<boolean> {
    const { deviceId } = sub;
    const busy = this.sending.get(deviceId) ?? 0;
    if (busy >= MAX_SENDS_PER_DEVICE) {
      this.opts.log.warn(`web push ${event.kind} to ${deviceId} skipped: ${busy} sends to it still open`);
      return Promise.resolve(false);
    }
    const checked = checkPushEndpoint(sub.endpoint, this.opts.pushHosts ?? null);
    if (!checked.ok) {
      this.opts.log.warn(`web push subscription of ${deviceId} dropped: ${checked.message}`);
      void this.unsubscribe(deviceId).catch(() => {});
      return Promise.resolve(false);
    }
    let details: ReturnType<typeof webpush.generateRequestDetails>;
    try {
      details = webpush.generateRequestDetails(
        { endpoint: sub.endpoint, keys: { p256dh: sub.p256dh, auth: sub.auth } },
        JSON.stringify(pushPayload(event, count)),
        {
          vapidDetails: {
            subject: this.opts.subject ?? 'mailto:svc-relay@localhost',
            publicKey: this.publicKey,
            privateKey: this.privateKey,
          },
          TTL: 600,
          urgency: 'high',
        },
      );
    } catch (error) {
      // a subscription whose keys do not encrypt (malformed): this device fails, the others are still pushed
      void this.failed(deviceId, new PushFailed('network', `cannot encrypt for it: ${describeError(error)}`));
      return Promise.resolve(false);
    }
    this.sending.set(deviceId, busy + 1);
    const sending = sendPushRequest(
      { endpoint: details.endpoint, method: details.method, headers: details.headers, body: details.body },
      {
        named: checked.named,
        agent: this.opts.agent,
        signal: this.stopping.signal,
        ...(this.opts.connectTimeoutMs ? { connectTimeoutMs: this.opts.connectTimeoutMs } : {}),
        ...(this.opts.totalTimeoutMs ? { totalTimeoutMs: this.opts.totalTimeoutMs } : {}),
      },
    )
      .then(
        (status) => {
          this.failures.delete(deviceId);
          this.opts.log.info(`web push ${event.kind} to ${deviceId}: ${status}`);
          return true;
        },
        async (error: unknown) => {
          await this.failed(deviceId, error);
          return false;
        },
      )
      .finally(() => {
        const left = (this.sending.get(deviceId) ?? 1) - 1;
        if (left > 0) this.sending.set(deviceId, left);
        else this.sending.delete(deviceId);
        this.inflight.delete(sending);
      });
    this.inflight.add(sending);
    return sending;
  }

  /** A send failed: a subscription that is gone, points somewhere private, or fails again and again is dropped. */
  private async failed(deviceId: string, error: unknown): Promise<void> {
    const e = error instanceof PushFailed ? error : new PushFailed('network', describeError(error));
    if (e.reason === 'aborted') return;
    const gone = e.statusCode === 404 || e.statusCode === 410;
    const failures = (this.failures.get(deviceId) ?? 0) + 1;
    this.failures.set(deviceId, failures);
    this.opts.log.warn(`web push to ${deviceId} failed (${e.reason}): ${e.message}`);
    if (!gone && e.reason !== 'address' && failures < MAX_FAILURES) return;
    this.failures.delete(deviceId);
    const why = gone ? `gone (${e.statusCode})` : e.reason === 'address' ? e.message : `${failures} failures in a row`;
    this.opts.log.warn(`web push subscription of ${deviceId} dropped: ${why}`);
    await this.unsubscribe(deviceId).catch((err) =>
      this.opts.log.error(`web push: could not drop the subscription of ${deviceId}: ${describeError(err)}`),
    );
  }

  async close(): Promise<void> {
    this.stopping.abort();
    for (const b of this.batches.values()) {
      clearTimeout(b.timer);
      // the events held for the window are not pushed now: their callers are told so, none waits for ever
      for (const tell of b.waiters) tell(false);
    }
    this.batches.clear();
    await Promise.all([...this.inflight]);
  }
}
