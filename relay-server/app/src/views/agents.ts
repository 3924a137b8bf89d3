/** "Active Agents": computers and their live sessions, what needs a person first. */
import { ago } from '../../../../core/protocol/refusalText.js';
import { asksOf } from '../asks.js';
import { h, replaceChanged } from '../dom.js';
import { computerViews, type ListItem, type SessionCard } from '../inventory.js';
import type { App } from '../state.js';
import { newSessionHref, sessionHref } from './hrefs.js';
import { inboxSection } from './inbox.js';
import { needsYouSection } from './needsYou.js';
import { notificationsOffer } from './notifications.js';
import { schedulesList } from './schedules.js';
import type { Screen } from './screen.js';

/** The sessions with a question waiting for the person, as `<hookId>/<name>`. */
export function waitingAsks(app: App): Asking {
  return new Set(
    asksOf(app)
      .list()
      .filter((a) => a.state === 'waiting')
      .map((a) => `${a.computer}/${a.session}`),
  );
}

/** Sessions with a question waiting for the person (`<hookId>/<name>`): they read "asking". */
type Asking = ReadonlySet<string>;

function badges(card: SessionCard, asking: boolean) {
  const tags = [
    asking
      ? h('span', { class: 'state state-asking' }, 'asking')
      : h('span', { class: `state state-${card.state}` }, card.stateText),
    h('span', { class: 'tag' }, card.attached ? 'attached' : 'detached'),
    card.shell ? h('span', { class: 'tag tag-shell' }, 'shell') : null,
    card.viewOnly ? h('span', { class: 'tag' }, 'view-only') : null,
    card.remote
      ? h('span', { class: 'tag tag-remote', title: 'driven from the phone: answers end with a question' }, 'REMOTE')
      : null,
  ].filter((t) => t !== null);
  // spaces between the tags: the row's text reads as words (its accessible name holds them: WCAG 2.5.3)
  return h(
    'span',
    { class: 'badges' },
    tags.flatMap((t, i) => (i === 0 ? [t] : [' ', t])),
  );
}

function sessionRow(hookId: string, card: SessionCard, asking: Asking): HTMLElement {
  const asks = asking.has(`${hookId}/${card.name}`);
  return h(
    'li',
    { class: `session${card.state === 'awaiting_approval' || asks ? ' attention' : ''}` },
    h(
      'a',
      {
        class: 'session-link',
        href: sessionHref(hookId, card.name),
        // what the row shows, in its order (a name must hold the visible text: WCAG 2.5.3)
        'aria-label': [
          card.label,
          card.name !== card.label ? card.name : null,
          asks ? 'asking' : card.stateText,
          card.attached ? 'attached' : 'detached',
          card.shell ? 'shell' : null,
          card.viewOnly ? 'view-only' : null,
          card.remote ? 'REMOTE' : null,
        ]
          .filter(Boolean)
          .join(', '),
      },
      h('span', { class: 'label' }, card.label),
      ' ',
      card.name !== card.label ? [h('span', { class: 'name' }, card.name), ' '] : null,
      badges(card, asks),
    ),
    card.children.length > 0
      ? h(
          'ul',
          { class: 'children', 'aria-label': `subagents of ${card.label}` },
          card.children.map((c) => sessionRow(hookId, c, asking)),
        )
      : null,
  );
}

function item(hookId: string, it: ListItem, asking: Asking): HTMLElement {
  if (it.kind === 'session') return sessionRow(hookId, it, asking);
  return h(
    'li',
    { class: 'group' },
    h('div', { class: 'group-name' }, it.name, h('span', { class: 'muted' }, ' · worktrees')),
    h(
      'ul',
      { class: 'sessions' },
      it.sessions.map((s) => sessionRow(hookId, s, asking)),
    ),
  );
}

export function agentsScreen(app: App): Screen {
  const list = h('div', { class: 'computers' });
  // Questions, approvals and notifications first (views/needsYou.ts).
  const needs = needsYouSection(app);
  const offer = notificationsOffer(app);
  const inbox = inboxSection(app);
  const el = h(
    'section',
    { class: 'screen agents', 'aria-labelledby': 'agents-title' },
    offer.el,
    needs.el,
    h('h2', { id: 'agents-title', class: 'visually-hidden' }, 'Active agents'),
    list,
    inbox.el,
  );
  const update = () => {
    offer.update();
    needs.update();
    inbox.update();
    const views = computerViews(app.computers);
    const asking = waitingAsks(app);
    // While the phone is offline, what the list says about each computer is only what was last seen.
    const live = app.linkState === 'online';
    if (app.inventoryAt === null) {
      replaceChanged(
        list,
        h(
          'p',
          { class: 'empty' },
          app.inventoryError ? `Could not load the agents: ${app.inventoryError}` : 'Loading the agents…',
        ),
      );
      return;
    }
    if (views.length === 0) {
      replaceChanged(
        list,
        h(
          'div',
          { class: 'empty' },
          h('p', {}, 'No computer yet.'),
          h('p', {}, 'Run ', h('code', {}, 'svc up'), ' (or ', h('code', {}, 'svc login'), ') on a computer.'),
        ),
      );
      return;
    }
    replaceChanged(
      list,
      views.map((c) =>
        h(
          'section',
          { class: `computer${c.online ? '' : ' is-offline'}`, 'aria-label': `computer ${c.name}` },
          h(
            'h3',
            { class: 'computer-name' },
            h('span', { class: `dot ${c.online && live ? 'dot-online' : 'dot-offline'}`, 'aria-hidden': 'true' }),
            c.name,
            h(
              'span',
              { class: 'muted' },
              !live
                ? ` · ${c.online ? 'was online' : 'was offline'} when last seen`
                : c.online
                  ? ' · online'
                  : ` · offline${c.lastSeenAt ? `, seen ${ago(Date.now() - c.lastSeenAt)}` : ''}`,
            ),
            c.attention > 0 ? h('span', { class: 'attention-count' }, `${c.attention} waiting`) : null,
          ),
          c.online && live
            ? h('a', { class: 'button secondary new-session-link', href: newSessionHref(c.hookId) }, 'New session')
            : null,
          c.items.length > 0
            ? h(
                'ul',
                { class: 'sessions' },
                c.items.map((it) => item(c.hookId, it, asking)),
              )
            : h('p', { class: 'empty' }, 'No sessions. Start one here, or with ', h('code', {}, 'svc cc'), '.'),
          c.past.length > 0
            ? h(
                'details',
                { class: 'past' },
                h('summary', {}, `Past sessions (${c.past.length})`),
                h(
                  'ul',
                  { class: 'sessions', 'aria-label': `past sessions of ${c.name}` },
                  c.past.map((p) =>
                    h(
                      'li',
                      { class: 'session past' },
                      h(
                        'a',
                        { class: 'session-link', href: sessionHref(c.hookId, p.name) },
                        h('span', { class: 'label' }, p.label),
                        h('span', { class: 'name' }, p.name),
                        h(
                          'span',
                          { class: 'badges' },
                          h('span', { class: 'tag' }, `ended ${ago(Date.now() - p.ended * 1000)}`),
                          p.resumable ? h('span', { class: 'tag' }, 'resumable') : null,
                        ),
                      ),
                    ),
                  ),
                ),
              )
            : null,
          schedulesList(app, c.hookId, c.name),
        ),
      ),
    );
  };
  update();
  return { el, title: 'Agents', update };
}
