import { request } from '../api.js';
import { wipe } from '../db.js';
import { acceptKey, type KeyView } from '../device.js';
import { h, replace } from '../dom.js';
import type { App } from '../state.js';
import { notificationsSection } from './notifications.js';
import type { Screen } from './screen.js';

const crypto = () => import('../crypto.js');
const codes = new Map<string, Promise<string>>();
function cachedCode(a: string, b: string): Promise<string> {
  const key = `${a}|${b}`;
  let code = codes.get(key);
  if (!code) {
    code = crypto().then((c) => c.safetyCode(a, b));
    codes.set(key, code);
  }
  return code;
}

function later(el: HTMLElement, value: Promise<string>): HTMLElement {
  value.then(
    (text) => {
      el.textContent = text;
    },
    () => {
      el.textContent = 'unavailable';
    },
  );
  return el;
}

function computerKey(app: App, key: KeyView): HTMLElement {
  const computer = key.hookId
    ? app.computers.find((c) => c.hookId === key.hookId)
    : app.computers.find((c) => c.deviceId === key.deviceId);
  const title = computer?.name ?? key.name;
  const warning = key.movedFrom
    ? `The relay now says ${title} is another device (${key.deviceId}; it was ${key.movedFrom}). Nothing is sent to it until you compare the new code with the computer and accept it.`
    : `The relay now lists a different key for ${title}. Nothing is sent to it until you compare the new code with the computer and accept it.`;
  return h(
    'li',
    { class: `key-card${key.changed ? ' changed' : ''}` },
    h('h3', {}, title),
    h('p', { class: 'muted' }, 'Safety code (compare with ', h('code', {}, 'svc devices'), ' on that computer):'),
    key.pinned
      ? later(
          h('p', { class: 'safety-code', 'aria-label': `safety code with ${title}` }, '…'),
          cachedCode(app.device.publicKeyText, key.pinned),
        )
      : null,
    key.changed
      ? h(
          'div',
          { class: 'warning', role: 'alert' },
          h('p', {}, warning),
          h(
            'p',
            {},
            'New code: ',
            later(
              h('span', { class: 'safety-code', 'aria-label': `new safety code with ${title}` }, '…'),
              cachedCode(app.device.publicKeyText, key.listed),
            ),
          ),
          h(
            'button',
            {
              type: 'button',
              onclick: async () => {
                await acceptKey(key.deviceId, key.listed, key.hookId);
                await app.refresh();
              },
            },
            key.movedFrom ? 'The codes match: accept the new device' : 'The codes match: accept the new key',
          ),
        )
      : null,
  );
}

export function deviceScreen(app: App): Screen {
  const body = h('div');
  // Kept across redraws: it asks the browser for its push state (views/notifications.ts).
  const notifications = notificationsSection(app);
  const el = h(
    'section',
    { class: 'screen device', 'aria-labelledby': 'device-title' },
    h('h2', { id: 'device-title' }, 'This phone'),
    body,
  );
  const update = () => {
    // A computer the relay moved to another device shows as that alarm only, not also as a plain card of the device.
    const movedTo = new Set([...app.moved.values()].map((k) => k.deviceId));
    const keys = [...app.moved.values(), ...[...app.keys.values()].filter((k) => !movedTo.has(k.deviceId))];
    replace(
      body,
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Name'),
        h('dd', {}, app.device.name),
        h('dt', {}, 'Device'),
        h('dd', {}, h('code', {}, app.device.deviceId)),
        h('dt', {}, 'Key fingerprint'),
        h(
          'dd',
          {},
          later(
            h('code', {}, '…'),
            crypto().then((c) => c.fingerprint(app.device.publicKeyText)),
          ),
        ),
        h('dt', {}, 'Paired'),
        h('dd', {}, new Date(app.device.pairedAt).toLocaleString()),
      ),
      h(
        'p',
        { class: 'muted' },
        'Messages, screens and keys are encrypted on this phone for one computer at a time; the relay only carries them.',
      ),
      h('h2', {}, 'Computers'),
      keys.length
        ? h(
            'ul',
            { class: 'key-list' },
            keys.map((k) => computerKey(app, k)),
          )
        : h('p', { class: 'empty' }, 'No computer has a key yet.'),
      notifications,
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          onclick: async () => {
            if (!confirm('Unpair this phone? It forgets its key and stops receiving anything.')) return;
            try {
              await request('DeviceDeleteResponse', 'DELETE', `/devices/${encodeURIComponent(app.device.deviceId)}`, {
                token: app.device.token,
              });
            } catch {}
            app.link.stop();
            await wipe();
            location.hash = '#/';
            location.reload();
          },
        },
        'Unpair this phone',
      ),
    );
  };
  update();
  let last = '';
  return {
    el,
    title: 'Device',
    back: '#/',
    update: () => {
      const key = JSON.stringify([...app.keys.values(), ...app.moved.values()]);
      if (key !== last) {
        last = key;
        update();
      }
    },
  };
}
