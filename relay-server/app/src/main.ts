/**
 * The phone app: pairing from a `#pair=<code>` link, then Agents, a session's messages, Watch and Device screens
 * behind hash routes, with the connection always in view.
 */
import { PAIR_FRAGMENT_RE } from '../../../core/devices/pairingProof.js';
import { ago } from '../../../core/protocol/refusalText.js';
import { asksOf } from './asks.js';
import { type DeviceRecord, setKv } from './db.js';
import { loadDevice } from './device.js';
import { h, ICONS, icon, replace } from './dom.js';
import { App } from './state.js';
import { agentsScreen } from './views/agents.js';
import { deviceScreen } from './views/device.js';
import { sessionHref } from './views/hrefs.js';
import { newSessionScreen } from './views/newSession.js';
import { OFFER_KEY } from './views/notifications.js';
import type { Screen } from './views/screen.js';
import { sessionScreen } from './views/session.js';

const root = document.getElementById('app')!;

function page(title: string, ...body: (Node | string)[]): void {
  document.title = `svc · ${title}`;
  replace(
    root,
    h(
      'header',
      { class: 'bar' },
      h('span', { class: 'brand', 'aria-hidden': 'true' }, '›_'),
      h('h1', { class: 'title' }, title),
    ),
    h('main', { id: 'main', class: 'page' }, ...body),
  );
}

function howToPair(): HTMLElement {
  return h(
    'ol',
    { class: 'steps' },
    h('li', {}, 'On your computer, run ', h('code', {}, 'svc pair'), ' (', h('code', {}, 'svc up'), ' prints it too).'),
    h('li', {}, 'Open the link it prints on this phone, or scan its QR code with the camera.'),
    h('li', {}, 'Compare the safety code on the Device screen with ', h('code', {}, 'svc devices'), '.'),
  );
}

function notPairedPage(): void {
  page(
    'Pair this phone',
    h(
      'section',
      { class: 'pair' },
      h('p', { class: 'lead' }, 'This phone is not paired with a computer yet.'),
      howToPair(),
      h('p', { class: 'muted' }, 'The link works once and for ten minutes. No key is typed anywhere.'),
    ),
  );
}

const PAIR_FAILURES = {
  used: ['This pairing link was already used', 'Each link pairs one phone, once. Run `svc pair` again for a new one.'],
  expired: ['This pairing link has expired', 'Links work for ten minutes. Run `svc pair` again for a new one.'],
  invalid: ['This pairing link is not valid', 'Check that the whole link was opened, or run `svc pair` again.'],
  error: ['Pairing did not finish', 'The relay could not be reached. Check the connection and open the link again.'],
} as const;

async function pairWith(code: string, secret: string | undefined): Promise<DeviceRecord | null> {
  page('Pairing…', h('p', { class: 'lead', role: 'status' }, 'Making this phone’s key and pairing it…'));
  const { pair } = await import('./crypto.js');
  const outcome = await pair(code, secret);
  if (outcome.ok) {
    // the Agents screen offers notifications once, right after pairing (views/notifications.ts)
    await setKv(OFFER_KEY, true).catch(() => {});
    return outcome.device;
  }
  const [title, hint] = PAIR_FAILURES[outcome.reason];
  const parts = hint.split('`');
  page(
    'Pairing',
    h(
      'section',
      { class: 'pair pair-failed', role: 'alert' },
      h('p', { class: 'lead' }, `${title}.`),
      h('p', {}, ...parts.map((p, i) => (i % 2 ? h('code', {}, p) : p))),
      outcome.reason === 'error' ? h('p', { class: 'muted' }, outcome.message) : null,
    ),
  );
  return null;
}

// ---------------------------------------------------------------------------
// The paired app

function route(app: App): Screen {
  const hash = location.hash || '#/';
  const m = /^#\/([sw])\/([^/]+)\/([^/]+)$/.exec(hash);
  if (m) {
    const hookId = decodeURIComponent(m[2]!);
    const name = decodeURIComponent(m[3]!);
    return m[1] === 's' ? sessionScreen(app, hookId, name) : lazyScreen(app, hookId, name);
  }
  if (hash === '#/device') return deviceScreen(app);
  const n = /^#\/new\/([^/]+)$/.exec(hash);
  if (n) return newSessionScreen(app, decodeURIComponent(n[1]!));
  return agentsScreen(app);
}

/** The Watch screen and the terminal renderer arrive in their own chunk, the first time a pane is watched. */
function lazyScreen(app: App, hookId: string, name: string): Screen {
  const el = h(
    'section',
    { class: 'screen watch' },
    h('p', { class: 'watch-status', role: 'status' }, 'Loading the terminal…'),
  );
  let inner: Screen | null = null;
  let gone = false;
  const screen: Screen = {
    el,
    title: name,
    back: sessionHref(hookId, name),
    update: () => inner?.update(),
    dispose: () => {
      gone = true;
      inner?.dispose?.();
    },
  };
  import('./views/watch.js').then(
    ({ watchScreen }) => {
      if (gone) return;
      inner = watchScreen(app, hookId, name);
      el.replaceWith(inner.el);
      screen.el = inner.el;
      document.querySelector('.bar .title')!.textContent = inner.title;
    },
    () => {
      el.textContent = 'The terminal could not be loaded. Check the connection and open Watch again.';
    },
  );
  return screen;
}

function runApp(app: App): void {
  const back = h('a', { class: 'back', href: '#/', 'aria-label': 'Back' }, icon(ICONS.back));
  const title = h('h1', { class: 'title' });
  const deviceLink = h(
    'a',
    { class: 'icon-link', href: '#/device', 'aria-label': 'Device and safety codes' },
    icon(ICONS.shield),
  );
  const dot = h('span', { class: 'dot', 'aria-hidden': 'true' });
  const connText = h('span', { class: 'conn-text' });
  const reconnect = h(
    'button',
    { type: 'button', class: 'reconnect', onclick: () => app.link.reconnect() },
    icon(ICONS.reconnect),
    'Reconnect',
  );
  const conn = h(
    'div',
    { class: 'conn', role: 'status', 'aria-live': 'polite', 'aria-label': 'Connection' },
    dot,
    connText,
  );
  const strip = h('div', { class: 'strip' }, conn, reconnect);
  // Focus moves here on each screen change, so a keyboard or screen reader starts at the new content.
  const main = h('main', { id: 'main', tabindex: -1 });
  replace(root, h('header', { class: 'bar' }, back, title, deviceLink), strip, main);

  let screen: Screen | null = null;
  const show = () => {
    screen?.dispose?.();
    screen = route(app);
    replace(main, screen.el);
    title.textContent = screen.title;
    document.title = `svc · ${screen.title}`;
    back.hidden = !screen.back;
    if (screen.back) back.setAttribute('href', screen.back);
    deviceLink.hidden = screen.title === 'Device';
    updateStrip();
    main.focus({ preventScroll: true });
  };

  const updateStrip = () => {
    const state = app.revoked ? 'offline' : app.linkState;
    strip.dataset.state = state;
    let text: string;
    if (app.revoked) text = 'This phone was unpaired. Pair it again with `svc pair`.';
    else if (state === 'online') text = 'Online';
    else if (state === 'connecting') text = 'Connecting…';
    else {
      const retry = app.link.retryAt ? Math.max(1, Math.round((app.link.retryAt - Date.now()) / 1000)) : null;
      const seen = app.inventoryAt ? ` · agents as last seen ${ago(Date.now() - app.inventoryAt)}` : '';
      text = `Offline${retry ? `, retrying in ${retry} s` : ''}${seen}`;
    }
    connText.textContent = text;
    // a way to try now, only while there is something to try: offline, not online or already connecting
    reconnect.hidden = app.revoked || state !== 'offline';
  };

  app.subscribe(() => {
    updateStrip();
    screen?.update();
  });
  // The strip counts down and "last seen" ages while nothing else happens.
  setInterval(() => {
    updateStrip();
    if (app.linkState !== 'online') screen?.update();
  }, 1000);
  window.addEventListener('hashchange', show);
  show();
}

/** The device store (IndexedDB) did not open: private browsing, blocked site data, a full disk. */
function storageFailedPage(error: unknown): void {
  const reason = error instanceof Error || error instanceof DOMException ? error.message : String(error);
  page(
    'Storage unavailable',
    h(
      'section',
      { class: 'pair-failed', role: 'alert' },
      h(
        'p',
        { class: 'lead' },
        'svc cannot open its storage on this phone, so it cannot keep its key or your messages.',
      ),
      h(
        'p',
        {},
        'The browser refused IndexedDB. Private browsing and blocked site data do this: allow this site to keep data (or leave private browsing) and reload.',
      ),
      h('p', { class: 'muted', 'data-testid': 'storage-error' }, `The browser said: ${reason || 'no reason given'}`),
    ),
  );
}

async function boot(): Promise<void> {
  // A pairing link opened in a tab that already shows the app only changes the fragment: start over with it.
  window.addEventListener('hashchange', () => {
    if (PAIR_FRAGMENT_RE.test(location.hash)) location.reload();
  });
  if (!window.isSecureContext || !globalThis.crypto?.subtle) {
    page(
      'HTTPS needed',
      h(
        'p',
        { class: 'lead' },
        'This page must be opened over HTTPS (or on localhost): the browser only makes and keeps keys on secure pages.',
      ),
    );
    return;
  }
  if ('serviceWorker' in navigator) navigator.serviceWorker.register('/sw.js').catch(() => {});

  let device: DeviceRecord | undefined;
  try {
    device = await loadDevice();
  } catch (error) {
    storageFailedPage(error);
    return;
  }
  const [, code, secret] = PAIR_FRAGMENT_RE.exec(location.hash) ?? [];
  if (code) {
    // The code leaves the address bar and the history at once: it works once, but nobody needs to see it.
    history.replaceState(null, '', `${location.pathname}#/`);
    if (device) {
      page(
        'Already paired',
        h('p', { class: 'lead' }, 'This phone is already paired.'),
        h('p', {}, h('a', { href: '#/', onclick: () => location.reload() }, 'Open the agents')),
      );
      return;
    }
    device = (await pairWith(code, secret)) ?? undefined;
    if (!device) return;
  }
  if (!device) {
    notPairedPage();
    return;
  }
  const app = new App(device);
  asksOf(app); // svc_ask questions arrive from the first subscribe on, whatever screen is shown
  runApp(app);
  await app.start();
  // Sealing (and zod) is needed at the first Send or Watch: fetch it while the person reads the list.
  setTimeout(() => void import('./crypto.js').catch(() => {}), 1_000);
}

boot().catch((error: unknown) => {
  page(
    'svc could not start',
    h('p', { class: 'lead', role: 'alert' }, `Something went wrong: ${String(error)}. Reload to try again.`),
  );
});
