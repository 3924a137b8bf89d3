/**
 * The service worker's side of Web Push (docs/notifications.md): a push carries only an envelope the listener
 * sealed; it is opened here with this phone's device key (IndexedDB) and the computer's key pinned by the app, and
 * shown as a notification named after the session, tagged per session so a newer one replaces the older. A click
 * opens that session in the app. A push that does not open still shows, without its words.
 */
/// <reference lib="webworker" />
import { type NotifyBody, NotifyBody as NotifyBodySchema, QuestionBody } from '../../../../core/mcp/ask.js';
import { PushPayload, sessionTag } from '../../../../core/notify/push.js';
import { importPublicKey } from '../../../../core/seal/keys.js';
import { openText } from '../../../../core/seal/seal.js';
import { type DeviceRecord, getKv } from '../db.js';

interface Shown {
  title: string;
  options: NotificationOptions & { renotify?: boolean };
}

const KIND_TEXT: Record<string, string> = {
  ask: 'asks you',
  notify: 'says',
  approval: 'waits for an approval',
  turn: 'finished its turn',
};

/** The session's page in the app. */
export const sessionUrl = (computer: string, session: string) =>
  `/#/s/${encodeURIComponent(computer)}/${encodeURIComponent(session)}`;

/** What to show for a push's data (a JSON text). */
export async function notificationFor(data: string): Promise<Shown> {
  let payload: PushPayload;
  try {
    payload = PushPayload.parse(JSON.parse(data));
  } catch {
    return { title: 'svc', options: { body: 'An agent needs you.', tag: 'svc', data: { url: '/' } } };
  }
  const fallback: Shown = {
    title: 'svc',
    options: { body: 'An agent needs you.', tag: `svc:${payload.computer}`, data: { url: '/' } },
  };
  if (!payload.envelope) return fallback;
  try {
    const device = await getKv<DeviceRecord>('device');
    const inventory = await getKv<{ computers: { hookId: string; deviceId?: string | null }[] }>('inventory');
    const pins = (await getKv<Record<string, string>>('pins')) ?? {};
    const computerDevice = inventory?.computers.find((c) => c.hookId === payload.computer)?.deviceId;
    const pinned = computerDevice ? pins[computerDevice] : undefined;
    if (!device || !pinned) return fallback;
    const purpose = payload.kind === 'ask' ? 'ask.question' : 'notify';
    const text = await openText({
      envelope: payload.envelope,
      purpose,
      me: { id: device.deviceId, privateKey: device.privateKey },
      senderPublicKey: await importPublicKey(pinned),
    });
    const body =
      payload.kind === 'ask' ? QuestionBody.parse(JSON.parse(text)) : NotifyBodySchema.parse(JSON.parse(text));
    const session = body.session;
    const words = 'question' in body ? body.question : (body as NotifyBody).message;
    const more = payload.count > 1 ? ` (+${payload.count - 1} more)` : '';
    const title = 'title' in body && body.title ? `${session}: ${body.title}` : `${session} ${KIND_TEXT[payload.kind]}`;
    return {
      title,
      options: {
        body: `${words}${more}`,
        tag: sessionTag(payload.computer, session),
        renotify: true,
        data: { url: sessionUrl(payload.computer, session) },
      },
    };
  } catch {
    return fallback;
  }
}

/** Wire the push and click handlers into the service worker. */
export function handlePushes(sw: ServiceWorkerGlobalScope): void {
  sw.addEventListener('push', (event) => {
    const data = event.data?.text() ?? '';
    event.waitUntil(notificationFor(data).then((n) => sw.registration.showNotification(n.title, n.options)));
  });
  sw.addEventListener('notificationclick', (event) => {
    event.notification.close();
    const url = new URL((event.notification.data as { url?: string } | null)?.url ?? '/', sw.location.origin).href;
    event.waitUntil(
      sw.clients.matchAll({ type: 'window', includeUncontrolled: true }).then(async (list) => {
        const open = list[0] as WindowClient | undefined;
        if (open) {
          await open.navigate(url).catch(() => null);
          await open.focus();
          return;
        }
        await sw.clients.openWindow(url);
      }),
    );
  });
}
