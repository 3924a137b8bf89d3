/**
 * The inbox, at the foot of Agents (issue 30 item 5): every notification the relay kept for this account (svc_notify
 * and the listeners' notices), newest first, opened on the phone; so nothing is lost while the app was closed or
 * notifications were off. The relay holds them sealed (`GET /notifications`, relay-server/routes.ts).
 */
import { asksOf } from '../asks.js';
import { h, replaceChanged } from '../dom.js';
import type { App } from '../state.js';
import { sessionHref } from './hrefs.js';

/** `14:32`, or `Tue 14:32` before today. */
function when(at: number): string {
  const d = new Date(at);
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return d.toDateString() === new Date().toDateString()
    ? time
    : `${d.toLocaleDateString([], { weekday: 'short', day: 'numeric', month: 'short' })} ${time}`;
}

export function inboxSection(app: App): { el: HTMLElement; update(): void } {
  const summary = h('summary', {}, 'Notifications');
  const list = h('ul', { class: 'inbox-list', 'aria-label': 'Notifications' });
  const el = h('details', { class: 'inbox' }, summary, list);
  const update = () => {
    const notes = asksOf(app).notes;
    el.hidden = notes.length === 0;
    summary.textContent = `Notifications (${notes.length})`;
    replaceChanged(
      list,
      notes.map((n) =>
        h(
          'li',
          { class: 'inbox-item', 'data-note': n.id },
          h('a', { class: 'inbox-title', href: sessionHref(n.computer, n.session) }, n.title ?? n.session),
          h('p', { class: 'inbox-message' }, n.message ?? n.problem ?? 'Opening…'),
          h('span', { class: 'muted' }, `${n.session} · ${when(n.at)}`),
        ),
      ),
    );
  };
  update();
  return { el, update };
}
