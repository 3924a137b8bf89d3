/**
 * The service worker's side of Web Push (docs/notifications.md): a push carries only an envelope the listener
 * sealed; it is opened here with this phone's device key (IndexedDB) and the computer's key pinned by the app, and
 * shown as a notification named after the session, tagged per session so a newer one replaces the older. A click
 * opens that session in the app. A push that does not open still shows, without its words.
 */
/// <reference lib="webworker" />
import { sessionTag } from '../../../../core/notify/tag.js';
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

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The fields of a push's data this worker reads (core/notify/push.ts PushPayload), checked by hand: the worker
 * carries no schema library (issue 30: sw.js at most 25 KB gzip). Null when it is not a push of ours.
 */
export function readPushPayload(
  data: unknown,
): { computer: string; kind: string; count: number; envelope?: Record<string, unknown> } | null {
  if (!isRecord(data) || data.v !== 1 || typeof data.computer !== 'string' || typeof data.kind !== 'string')
    return null;
  if (!Object.hasOwn(KIND_TEXT, data.kind) && data.kind !== 'schedule') return null;
  const count = typeof data.count === 'number' && Number.isInteger(data.count) && data.count > 0 ? data.count : 1;
  return {
    computer: data.computer,
    kind: data.kind,
    count,
    ...(isRecord(data.envelope) ? { envelope: data.envelope } : {}),
  };
}

/** The words of an opened question or notification (core/mcp/ask.ts QuestionBody, NotifyBody), or null. */
export function readPushBody(text: string): { session: string; words: string; title?: string } | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isRecord(body) || typeof body.session !== 'string' || body.session === '') return null;
  const words = typeof body.question === 'string' ? body.question : body.message;
  if (typeof words !== 'string') return null;
  return {
    session: body.session,
    words,
    ...(typeof body.title === 'string' && body.title ? { title: body.title } : {}),
  };
}

/** What to show for a push's data (a JSON text). */
export async function notificationFor(data: string): Promise<Shown> {
  let payload: ReturnType<typeof readPushPayload>;
  try {
    payload = readPushPayload(JSON.parse(data));
  } catch {
    payload = null;
  }
  if (!payload) return { title: 'svc', options: { body: 'An agent needs you.', tag: 'svc', data: { url: '/' } } };
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
    const body = readPushBody(text);
    if (!body) return fallback;
    const { session, words } = body;
    const more = payload.count > 1 ? ` (+${payload.count - 1} more)` : '';
    const title = body.title ? `${session}: ${body.title}` : `${session} ${KIND_TEXT[payload.kind] ?? 'needs you'}`;
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
