/**
 * Watch: the pane live, from sealed `pane.frame`s only, with the keys a phone lacks. The watch is a lease: renewed
 * while the page is visible, stopped when it is hidden or left, asked again after a reconnect. When the computer goes
 * away the last screen stays, under a banner that says so; it is asked for again when the computer is back, and
 * keys pressed meanwhile are refused at once (docs/protocol.md "Live panes").
 */

import { type PaneZoom, parsePaneZoom, stepPaneZoom } from '../../../../core/panes/frames.js';
import { FrameBody, type KeysBody, type WatchBody } from '../../../../core/protocol/bodies.js';
import { computerAway, type RelayFrame } from '../../../../core/protocol/index.js';
import { paneStatusText, refusalText } from '../../../../core/protocol/refusalText.js';
import { openFrom, sealFor } from '../crypto.js';
import { nextSeq } from '../db.js';
import { unopenedText } from '../device.js';
import { h, replace } from '../dom.js';
import { findSession } from '../inventory.js';
import type { App } from '../state.js';
import { createTerminal, type PaneTerminal } from '../terminal.js';
import { watchFingerprint } from './approval.js';
import type { Screen } from './screen.js';
import { composer } from './session.js';

/** How long one watch request lasts, and how often a visible page renews it. */
export const LEASE_MS = 30_000;
export const RENEW_MS = 10_000;

/** The keys a phone keyboard lacks, by the names the listener accepts (core/panes/keys.ts). */
export const KEY_BUTTONS = [
  { key: 'Escape', label: 'Esc', name: 'Escape' },
  { key: 'Tab', label: 'Tab', name: 'Tab' },
  { key: 'Up', label: '↑', name: 'Up arrow' },
  { key: 'Down', label: '↓', name: 'Down arrow' },
  { key: 'Left', label: '←', name: 'Left arrow' },
  { key: 'Right', label: '→', name: 'Right arrow' },
  { key: 'C-c', label: 'Ctrl-C', name: 'Control C' },
  { key: 'Enter', label: 'Enter', name: 'Enter' },
] as const;

/** Where this phone keeps its Watch zoom (per device: each browser keeps its own). */
const ZOOM_KEY = 'svc.paneZoom';

function storedZoom(): PaneZoom {
  try {
    return parsePaneZoom(localStorage.getItem(ZOOM_KEY));
  } catch {
    return parsePaneZoom(null); // storage blocked: the readable default, not remembered
  }
}

function keepZoom(zoom: PaneZoom): void {
  try {
    localStorage.setItem(ZOOM_KEY, String(zoom));
  } catch {
    // not remembered; it still applies to this screen
  }
}

export function watchScreen(app: App, hookId: string, name: string): Screen {
  const found0 = findSession(app.computers, hookId, name);
  const viewOnly = found0?.card.viewOnly ?? false;
  const status = h(
    'p',
    { class: 'watch-status', role: 'status', 'aria-live': 'polite' },
    'Asking the computer for the screen…',
  );
  const away = h('p', { class: 'watch-away', role: 'alert', hidden: true, 'data-testid': 'computer-away' });
  const screen = h('div', { class: 'terminal', 'aria-label': 'Live screen of the session', role: 'img' });
  // it scrolls sideways at a readable size: reachable from the keyboard too (WCAG 2.1.1)
  const wrap = h('div', { class: 'terminal-wrap', tabindex: 0, role: 'group', 'aria-label': 'Screen' }, screen);
  // Text size: readable by default (the pane scrolls sideways), or the whole width at a small size; kept per device.
  let zoom = storedZoom();
  const sizeLabel = h('span', { class: 'zoom-size', 'aria-live': 'polite', 'data-testid': 'zoom-size' });
  const fitButton = h(
    'button',
    { type: 'button', class: 'zoom-fit', onclick: () => setZoom(zoom === 'fit' ? parsePaneZoom(null) : 'fit') },
    'Fit width',
  );
  const zoomRow = h(
    'div',
    { class: 'zoom', role: 'group', 'aria-label': 'Text size' },
    h(
      'button',
      { type: 'button', 'aria-label': 'A− Smaller text', onclick: () => setZoom(stepPaneZoom(zoom, fitted(), -1)) },
      'A−',
    ),
    sizeLabel,
    h(
      'button',
      { type: 'button', 'aria-label': 'A+ Larger text', onclick: () => setZoom(stepPaneZoom(zoom, fitted(), 1)) },
      'A+',
    ),
    fitButton,
  );
  const fitted = () => term?.fittedSize() ?? 7;
  function showZoom(): void {
    sizeLabel.textContent = zoom === 'fit' ? 'Fit' : `${zoom} px`;
    fitButton.setAttribute('aria-pressed', String(zoom === 'fit'));
  }
  function setZoom(next: PaneZoom): void {
    zoom = next;
    keepZoom(zoom);
    term?.setZoom(zoom);
    showZoom();
    // the prompt is at the bottom: a new size keeps it in view, unless the person had scrolled up to read
    requestAnimationFrame(() => {
      if (follow) wrap.scrollTop = wrap.scrollHeight;
    });
  }
  showZoom();
  const mirror = h('pre', { class: 'visually-hidden', 'aria-live': 'off', 'data-testid': 'screen-text' });
  const keyResult = h('p', { class: 'key-result', role: 'status', 'aria-live': 'polite' });
  const sentKeys = new Map<number, string>();
  const keyRow = viewOnly
    ? null
    : h(
        'div',
        { class: 'keys', role: 'toolbar', 'aria-label': 'Keys' },
        KEY_BUTTONS.map((k) =>
          h(
            'button',
            {
              type: 'button',
              class: 'key',
              // what the button shows, then what it is (a name must hold the visible text: WCAG 2.5.3)
              'aria-label': k.label === k.name ? undefined : `${k.label} (${k.name})`,
              onclick: () => void sendKey(k.key, k.label),
            },
            k.label,
          ),
        ),
      );
  const compose = viewOnly ? null : composer(app, hookId, name, { compact: true });
  const el = h(
    'section',
    { class: 'screen watch' },
    status,
    away,
    zoomRow,
    wrap,
    mirror,
    keyRow,
    keyResult,
    compose?.form ?? h('p', { class: 'note' }, 'Subagents are view-only: no keys, no messages.'),
  );

  let term: PaneTerminal | null = null;
  let renewTimer: ReturnType<typeof setInterval> | null = null;
  let disposed = false;
  let lastFrameSeq = -1;
  const pendingFrames: FrameBody[] = [];

  const setStatus = (text: string) => {
    status.textContent = text;
  };

  const computerName = () => app.computers.find((c) => c.hookId === hookId)?.name ?? 'The computer';
  /** The computer went away while watched: the last screen stays, marked as such, until frames come again. */
  let isAway = false;
  function setAway(value: boolean): void {
    isAway = value;
    away.hidden = !value;
    if (!value) return;
    away.textContent = term?.text()
      ? `${computerName()} went offline — the screen below is the last one seen. It comes back by itself.`
      : `${computerName()} is offline — the screen appears when it is back.`;
    setStatus(`Waiting for ${computerName()}…`);
  }

  async function askWatch(): Promise<void> {
    if (disposed || document.visibilityState !== 'visible') return;
    try {
      const body: WatchBody = { session: name, seq: await nextSeq('pane.watch'), leaseMs: LEASE_MS };
      const envelope = await sealFor(app.device, app.keyFor(hookId), 'pane.watch', body);
      if (!app.link.send({ type: 'pane.watch', computer: hookId, session: name, envelope: envelope as never })) {
        setStatus('Offline: the screen comes back when the relay can be reached.');
      }
    } catch (error) {
      setStatus(`Cannot watch: ${(error as Error).message}.`);
    }
  }

  function stopWatch(): void {
    app.link.send({ type: 'pane.stop', computer: hookId, session: name });
  }

  function startRenewing(): void {
    if (renewTimer) clearInterval(renewTimer);
    void askWatch();
    renewTimer = setInterval(() => void askWatch(), RENEW_MS);
  }

  async function sendKey(key: string, label: string): Promise<void> {
    // Never kept for later: typed once the computer is back, a key would land on a screen nobody has seen.
    if (isAway) {
      keyResult.textContent = `${label}: ${refusalText('computer_offline').replace(/^Not typed: /, 'not typed: ')}`;
      return;
    }
    try {
      const seq = await nextSeq('pane.keys');
      // the approval prompt this screen shows, if any: keys into a prompt other than the one seen are refused
      const fingerprint = watchFingerprint(findSession(app.computers, hookId, name)?.record, term?.text() ?? '');
      const body: KeysBody = { session: name, seq, keys: [key], ...(fingerprint ? { fingerprint } : {}) };
      const envelope = await sealFor(app.device, app.keyFor(hookId), 'pane.keys', body);
      sentKeys.set(seq, label);
      keyResult.textContent = app.link.send({
        type: 'pane.keys',
        computer: hookId,
        session: name,
        envelope: envelope as never,
      })
        ? `${label}: sending…`
        : `${label}: not sent, the relay cannot be reached.`;
    } catch (error) {
      keyResult.textContent = `${label}: not sent: ${(error as Error).message}.`;
    }
  }

  async function onPaneFrame(frame: Extract<RelayFrame, { type: 'pane.frame' }>): Promise<void> {
    const key = app.keyFor(hookId);
    if (!key) return;
    let body: FrameBody;
    try {
      const parsed = FrameBody.safeParse(await openFrom(app.device, key, 'pane.frame', frame.envelope));
      if (!parsed.success || parsed.data.session !== name || parsed.data.frameSeq !== frame.frameSeq) return;
      body = parsed.data;
    } catch (error) {
      setStatus(`${unopenedText('A screen update', error)} It was dropped.`);
      return;
    }
    if (body.frameSeq <= lastFrameSeq && !body.full) return;
    lastFrameSeq = body.frameSeq;
    if (isAway) setAway(false);
    if (!term) {
      pendingFrames.push(body);
      return;
    }
    draw(body);
  }

  // Agents keep their prompt at the bottom: follow it, unless the person scrolled up to read.
  let follow = true;
  wrap.addEventListener('scroll', () => {
    follow = wrap.scrollTop + wrap.clientHeight >= wrap.scrollHeight - 24;
  });

  function draw(body: FrameBody): void {
    if (!term) return;
    if (!term.draw(body)) void askWatch();
    if (follow) wrap.scrollTop = wrap.scrollHeight;
    mirror.textContent = term.text();
    setStatus(paneStatusText('streaming', null));
  }

  const offFrames = app.onFrames((frame) => {
    if (disposed) return;
    if (frame.type === 'pane.frame' && frame.computer === hookId && frame.session === name) void onPaneFrame(frame);
    else if (frame.type === 'pane.status' && frame.computer === hookId && frame.session === name) {
      if (computerAway(frame.state, frame.code)) setAway(true);
      else {
        if (frame.state === 'streaming') setAway(false);
        if (frame.state !== 'streaming' || !term?.text()) setStatus(paneStatusText(frame.state, frame.code));
      }
    } else if (frame.type === 'computers.changed' && frame.computer === hookId && isAway) {
      // It came back (or this is the news of its going): ask now rather than at the next renewal. An answer that it
      // is still offline changes nothing.
      void askWatch();
    } else if (frame.type === 'keys.result' && frame.computer === hookId && frame.session === name) {
      const label = (frame.seq !== null && sentKeys.get(frame.seq)) || 'Key';
      keyResult.textContent =
        frame.state === 'typed'
          ? `${label}: typed`
          : `${label}: ${refusalText(frame.code).replace(/^Not typed: /, 'not typed: ')}`;
    } else if (frame.type === 'error' && frame.code === 'unknown_computer') {
      setStatus('The relay does not know this computer.');
    }
  });

  const onVisibility = () => {
    if (document.visibilityState === 'visible') startRenewing();
    else {
      if (renewTimer) clearInterval(renewTimer);
      renewTimer = null;
      stopWatch();
    }
  };
  document.addEventListener('visibilitychange', onVisibility);

  // After the element is in the page: xterm measures its font when it opens.
  requestAnimationFrame(() => {
    if (disposed) return;
    term = createTerminal(screen, zoom);
    for (const body of pendingFrames.splice(0)) draw(body);
  });

  let wasOnline = app.linkState === 'online';
  const update = () => {
    const online = app.linkState === 'online';
    if (online && !wasOnline) startRenewing();
    if (!online && wasOnline) setStatus('Offline: the screen comes back when the relay can be reached.');
    wasOnline = online;
    compose?.update();
  };
  startRenewing();

  return {
    el,
    title: found0?.card.label ?? name,
    back: `#/s/${encodeURIComponent(hookId)}/${encodeURIComponent(name)}`,
    update,
    dispose() {
      disposed = true;
      offFrames();
      document.removeEventListener('visibilitychange', onVisibility);
      if (renewTimer) clearInterval(renewTimer);
      stopWatch();
      term?.dispose();
      replace(screen);
    },
  };
}
