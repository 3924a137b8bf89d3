/** "Active Agents": computers and their live sessions, what needs a person first. */
import { AGENT_STATE_TEXT, ago } from '../../../../core/protocol/refusalText.js';
import { h, replaceChanged } from '../dom.js';
import { computerViews, type ListItem, type SessionCard } from '../inventory.js';
import type { App } from '../state.js';
import { needsYouSection } from './needsYou.js';
import { schedulesList } from './schedules.js';
import type { Screen } from './screen.js';

export function sessionHref(hookId: string, name: string): string {
  return `#/s/${encodeURIComponent(hookId)}/${encodeURIComponent(name)}`;
}

function badges(card: SessionCard) {
  return h(
    'span',
    { class: 'badges' },
    h('span', { class: `state state-${card.state}` }, AGENT_STATE_TEXT[card.state]),
    h('span', { class: 'tag' }, card.attached ? 'attached' : 'detached'),
    card.shell ? h('span', { class: 'tag tag-shell' }, 'shell') : null,
    card.viewOnly ? h('span', { class: 'tag' }, 'view-only') : null,
    card.remote
      ? h('span', { class: 'tag tag-remote', title: 'driven from the phone: answers end with a question' }, 'REMOTE')
      : null,
  );
}

function sessionRow(hookId: string, card: SessionCard): HTMLElement {
  const kind = card.viewOnly ? 'subagent' : card.shell ? 'shell session' : 'session';
  return h(
    'li',
    { class: `session${card.state === 'awaiting_approval' ? ' attention' : ''}` },
    h(
      'a',
      {
        class: 'session-link',
        href: sessionHref(hookId, card.name),
        'aria-label': `${card.label}, ${kind}, ${AGENT_STATE_TEXT[card.state]}, ${card.attached ? 'attached' : 'detached'}${card.remote ? ', REMOTE' : ''}`,
      },
      h('span', { class: 'label' }, card.label),
      h('span', { class: 'name' }, card.name),
      badges(card),
    ),
    card.children.length > 0
      ? h(
          'ul',
          { class: 'children', 'aria-label': `subagents of ${card.label}` },
          card.children.map((c) => sessionRow(hookId, c)),
        )
      : null,
  );
}

function item(hookId: string, it: ListItem): HTMLElement {
  if (it.kind === 'session') return sessionRow(hookId, it);
  return h(
    'li',
    { class: 'group' },
    h('div', { class: 'group-name' }, it.name, h('span', { class: 'muted' }, ' · worktrees')),
    h(
      'ul',
      { class: 'sessions' },
      it.sessions.map((s) => sessionRow(hookId, s)),
    ),
  );
}

export function agentsScreen(app: App): Screen {
  const list = h('div', { class: 'computers' });
  // Questions, approvals and notifications first (views/needsYou.ts).
  const needs = needsYouSection(app);
  const el = h(
    'section',
    { class: 'screen agents', 'aria-labelledby': 'agents-title' },
    needs.el,
    h('h2', { id: 'agents-title', class: 'visually-hidden' }, 'Active agents'),
    list,
  );
  const update = () => {
    needs.update();
    const views = computerViews(app.computers);
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
          c.items.length > 0
            ? h(
                'ul',
                { class: 'sessions' },
                c.items.map((it) => item(c.hookId, it)),
              )
            : h('p', { class: 'empty' }, 'No sessions. Start one with ', h('code', {}, 'svc cc'), '.'),
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
