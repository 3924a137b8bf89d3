import { request } from '../api.js';
import { getKv, setKv } from '../db.js';
import { h, replace } from '../dom.js';
import type { App } from '../state.js';

const EVENTS = [
  ['ask', 'A question from an agent'],
  ['notify', 'A message from an agent (svc_notify)'],
  ['approval', 'A session waits for an approval'],
  ['turn', 'An agent finished its turn'],
  ['schedule', 'A scheduled run was skipped or missed'],
] as const;
type EventName = (typeof EVENTS)[number][0];

function keyBytes(b64url: string): Uint8Array<ArrayBuffer> {
  const b64 = b64url.replace(/-/g, '+').replace(/_/g, '/');
  const raw = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

export function notificationsSection(app: App): HTMLElement {
  const status = h('p', { class: 'muted', role: 'status' });
  const boxes = h('div', { class: 'push-events' });
  const button = h('button', { type: 'button', class: 'button' });
  const el = h('section', { class: 'notifications' }, h('h2', {}, 'Notifications'), status, boxes, button);
  const supported = 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;

  const current = async () => {
    const reg = await navigator.serviceWorker.ready;
    return reg.pushManager.getSubscription();
  };
  const chosen = async (): Promise<EventName[]> =>
    (await getKv<EventName[]>('pushEvents')) ?? EVENTS.map(([name]) => name);

  const register = async (sub: PushSubscription) => {
    await request('PushSubscribeResponse', 'POST', '/push/subscriptions', {
      token: app.device.token,
      body: { deviceId: app.device.deviceId, subscription: sub.toJSON(), events: await chosen() },
    });
  };

  const draw = async () => {
    if (!supported) {
      status.textContent = 'This browser cannot receive notifications here. Everything still shows in the app.';
      button.hidden = true;
      return;
    }
    const events = await chosen();
    replace(
      boxes,
      EVENTS.map(([name, label]) =>
        h(
          'label',
          { class: 'push-event' },
          h('input', {
            type: 'checkbox',
            name,
            ...(events.includes(name) ? { checked: true } : {}),
            onchange: async (e: Event) => {
              const on = (e.target as HTMLInputElement).checked;
              const next = on ? [...new Set([...events, name])] : events.filter((x) => x !== name);
              await setKv('pushEvents', next);
              const sub = await current();
              if (sub) await register(sub).catch(() => {});
              void draw();
            },
          }),
          ` ${label}`,
        ),
      ),
    );
    const sub = await current().catch(() => null);
    if (Notification.permission === 'denied') {
      status.textContent = 'Notifications are blocked for this app in the browser settings.';
      button.hidden = true;
      return;
    }
    status.textContent = sub
      ? 'On: this phone is told when the events below happen (the relay cannot read them).'
      : 'Off. Add the app to your home screen, then turn them on.';
    button.hidden = false;
    button.textContent = sub ? 'Turn notifications off' : 'Turn notifications on';
    button.onclick = async () => {
      try {
        if (sub) {
          await sub.unsubscribe();
          await request(
            'PushUnsubscribeResponse',
            'DELETE',
            `/push/subscriptions/${encodeURIComponent(app.device.deviceId)}`,
            {
              token: app.device.token,
            },
          ).catch(() => {});
        } else {
          if ((await Notification.requestPermission()) !== 'granted') return void draw();
          const { publicKey } = await request('VapidKeyResponse', 'GET', '/push/vapid', { token: app.device.token });
          const reg = await navigator.serviceWorker.ready;
          const made = await reg.pushManager.subscribe({
            userVisibleOnly: true,
            applicationServerKey: keyBytes(publicKey),
          });
          await register(made);
        }
      } catch (error) {
        status.textContent = `Could not change notifications: ${(error as Error).message}`;
        return;
      }
      void draw();
    };
  };
  void draw();
  return el;
}
