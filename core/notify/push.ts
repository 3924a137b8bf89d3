/**
 * Web Push decisions (docs/notifications.md), pure: which events a device wants, what a push carries, how events
 * for one session within a few seconds become one push. The relay sends (relay-server/push/); the service worker
 * opens (relay-server/app/src/sw.ts).
 */
import { z } from 'zod/v3';

export const NOTIFY_EVENTS = ['ask', 'notify', 'approval', 'turn', 'schedule'] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];
/** After a push for a device and session, the events within this long become one more push (the latest, with a count). */
export const PUSH_BATCH_MS = 3_000;
/** A Web Push payload must stay under 4 KiB once encrypted; larger envelopes are left out of the push. */
export const MAX_PUSH_ENVELOPE_CHARS = 3_000;

export const PushSubscribeRequest = z.strictObject({
  /** The device this subscription is for (a device token may only name its own). */
  deviceId: z.string().min(1).max(128),
  subscription: z.object({
    endpoint: z.string().url().max(2048),
    keys: z.object({ p256dh: z.string().min(1).max(256), auth: z.string().min(1).max(64) }),
  }),
  /** Which events notify this device (the Device screen); all when absent. */
  events: z.array(z.enum(NOTIFY_EVENTS)).max(NOTIFY_EVENTS.length).optional(),
});
export type PushSubscribeRequest = z.infer<typeof PushSubscribeRequest>;

/** `GET /push/vapid`: the relay's VAPID public key (base64url), for `pushManager.subscribe`. */
export const VapidKeyResponse = z.object({ publicKey: z.string().min(1) });
/** `POST /push/subscriptions`: the device and the events it is now told of. */
export const PushSubscribeResponse = z.object({ deviceId: z.string(), events: z.array(z.enum(NOTIFY_EVENTS)) });
/** `DELETE /push/subscriptions/<deviceId>`: whether the device had a subscription. */
export const PushUnsubscribeResponse = z.object({ deviceId: z.string(), deleted: z.boolean() });

/** The phone's inbox keeps this many notifications (`GET /notifications`), the newest. */
export const INBOX_PAGE = 100;

/**
 * `GET /notifications`: the account's notifications as the relay keeps them (svc_notify and the listeners' notices),
 * newest first: routing outside, the words sealed inside `envelope` (purpose `notify`), `at` the relay's clock.
 */
export const InboxPage = z.object({
  notifications: z
    .array(
      z.object({
        computer: z.string(),
        id: z.string().max(64),
        session: z.string().max(128),
        kind: z.enum(NOTIFY_EVENTS),
        envelope: z.record(z.string(), z.unknown()),
        at: z.number().finite(),
      }),
    )
    .max(INBOX_PAGE),
});
export type InboxPage = z.infer<typeof InboxPage>;

/** What became of one event's pushes: subscriptions of the account, those that wanted it, those the service took. */
export interface PushOutcome {
  subscribed: number;
  wanted: number;
  accepted: number;
}

/**
 * Whether a phone got a notification: an app of the account was connected here (it got the frame), or the push
 * service took a push for a subscribed device. Otherwise why not, in words; the inbox keeps it either way.
 */
export function deliveredNote(
  appsOnline: number,
  pushed: PushOutcome | null,
): { delivered: true } | { delivered: false; reason: string } {
  if (appsOnline > 0 || (pushed?.accepted ?? 0) > 0) return { delivered: true };
  const closed = 'no phone has the app open';
  if (pushed === null) return { delivered: false, reason: `${closed}, and the push service has not answered yet` };
  if (pushed.subscribed === 0) return { delivered: false, reason: `${closed}, and none has notifications on` };
  if (pushed.wanted === 0) return { delivered: false, reason: `${closed}, and none wants this kind of notification` };
  return { delivered: false, reason: `${closed}, and the push service did not take it` };
}

/**
 * What a push carries: only routing and the envelope sealed for the device (with the others the listener sealed
 * for). The session's name and every word are inside the envelope; the push service sees ciphertext of this, and
 * the relay, which builds it, sees only what it already routes.
 */
export const PushPayload = z.strictObject({
  v: z.literal(1),
  computer: z.string(),
  kind: z.enum(NOTIFY_EVENTS),
  id: z.string(),
  /** Events folded into this push (PUSH_BATCH_MS). */
  count: z.number().int().safe().positive(),
  /** Purpose `ask.question` for an ask, `notify` otherwise; absent when it was too large for a push. */
  envelope: z.record(z.string(), z.unknown()).optional(),
});
export type PushPayload = z.infer<typeof PushPayload>;

export interface PushEvent {
  computer: string;
  session: string;
  kind: NotifyEvent;
  id: string;
  envelope: Record<string, unknown>;
}

/** Whether a device gets a push for an event: it chose the kind, and nobody watches that session live on it. */
export function wantsPush(
  events: readonly NotifyEvent[] | undefined,
  kind: NotifyEvent,
  watchedLive: boolean,
): boolean {
  if (watchedLive) return false;
  return (events ?? NOTIFY_EVENTS).includes(kind);
}

/** The payload for the latest event of a batch. */
export function pushPayload(event: PushEvent, count: number): PushPayload {
  const small = JSON.stringify(event.envelope).length <= MAX_PUSH_ENVELOPE_CHARS;
  return {
    v: 1,
    computer: event.computer,
    kind: event.kind,
    id: event.id,
    count,
    ...(small ? { envelope: event.envelope } : {}),
  };
}

/** The notification tag of a session: a newer notification replaces the older one on the phone. */
export { sessionTag } from './tag.js';
