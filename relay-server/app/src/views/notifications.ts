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

const pushSupported = () => 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;

const chosenEvents = async (): Promise<EventName[]> =>
  (await getKv<EventName[]>('pushEvents')) ?? EVENTS.map(([name]) => name);

async function registerPush(app: App, sub: PushSubscription): Promise<void> {
  await request('PushSubscribeResponse', 'POST', '/push/subscriptions', {
    token: app.device.token,
    body: { deviceId: app.device.deviceId, subscription: sub.toJSON(), events: await chosenEvents() },
  });
}

/** Asks the browser, subscribes with the relay's key and tells the relay; false when the person said no. */
export async function turnNotificationsOn(app: App): Promise<boolean> {
  if ((await Notification.requestPermission()) !== 'granted') return false;
  const { publicKey } = await request('VapidKeyResponse', 'GET', '/push/vapid', { token: app.device.token });
  const reg = await navigator.serviceWorker.ready;
  const made = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey) });
  await registerPush(app, made);
  return true;
}

/** Set at pairing: the Agents screen offers notifications once, until taken or put off. */
export const OFFER_KEY = 'offerNotifications';

/**
 * Right after pairing (issue 30 item 5): turn notifications on, with the steps to add the app to the home screen
 * first where the phone needs that (iOS lets only a home-screen app be told; Android installs it from the menu).
 * Gone once on, or after "Not now".
 */
export function notificationsOffer(app: App): { el: HTMLElement; update(): void } {
  const el = h('section', { class: 'notify-offer', 'aria-labelledby': 'notify-offer-title', hidden: true });
  const installed = matchMedia('(display-mode: standalone)').matches;
  const status = h('p', { class: 'muted', role: 'status' });
  // hidden once the choice is stored, so that a reload right after it does not bring the offer back
  const close = async () => {
    await setKv(OFFER_KEY, false).catch(() => {});
    el.hidden = true;
  };
  // a browser tab without push (iOS Safari before the app is on the home screen) gets the steps, not the button
  const canPush = pushSupported();
  replace(
    el,
    h('h2', { id: 'notify-offer-title' }, 'Notifications on this phone'),
    h(
      'p',
      {},
      'Be told when an agent asks, waits for an approval or finishes, even while the app is closed. The relay cannot read them.',
    ),
    installed
      ? null
      : h(
          'details',
          { class: 'install-steps' },
          h('summary', {}, 'First, add svc to the home screen'),
          h(
            'ul',
            {},
            h(
              'li',
              {},
              h('strong', {}, 'iPhone, iPad: '),
              'in Safari tap Share, then Add to Home Screen; open svc from there (iOS 16.4 or later tells only home-screen apps).',
            ),
            h(
              'li',
              {},
              h('strong', {}, 'Android: '),
              'in Chrome open the ⋮ menu, then Install app (or Add to Home screen).',
            ),
          ),
        ),
    h(
      'div',
      { class: 'offer-actions' },
      h(
        'button',
        {
          hidden: !canPush,
          type: 'button',
          class: 'button primary',
          onclick: async () => {
            try {
              if (await turnNotificationsOn(app)) return close();
              status.textContent = 'Not turned on: the browser said no. You can turn them on later under Device.';
            } catch (error) {
              status.textContent = `Could not turn notifications on: ${(error as Error).message}`;
            }
          },
        },
        'Turn notifications on',
      ),
      h('button', { type: 'button', class: 'button secondary', onclick: close }, 'Not now'),
    ),
    status,
  );
  let checked = false;
  const update = () => {
    if (checked) return;
    checked = true;
    void (async () => {
      if ((await getKv<boolean>(OFFER_KEY)) !== true) return;
      if (!canPush) {
        // nothing to turn on here: only the way to where it can be, when there is one
        if (!installed) el.hidden = false;
        return;
      }
      const reg = await navigator.serviceWorker.ready;
      if (await reg.pushManager.getSubscription()) return close();
      el.hidden = false;
    })().catch(() => {});
  };
  return { el, update };
}

export function notificationsSection(app: App): HTMLElement {
  const status = h('p', { class: 'muted', role: 'status' });
  const boxes = h('div', { class: 'push-events' });
  const button = h('button', { type: 'button', class: 'button' });
  const el = h('section', { class: 'notifications' }, h('h2', {}, 'Notifications'), status, boxes, button);
  const supported = pushSupported();

  const current = async () => {
    const reg = await navigator.serviceWorker.ready;
    return reg.pushManager.getSubscription();
  };
  const chosen = chosenEvents;
  const register = (sub: PushSubscription) => registerPush(app, sub);

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
        } else if (!(await turnNotificationsOn(app))) return void draw();
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
