/**
 * "Needs you", at the top of Agents: the questions agents asked (`svc_ask`, with the choices as buttons and a
 * free-text answer, then answered / expired), the sessions waiting for an approval, and the latest notifications.
 * Cards are kept by id between renders, so an answer being typed survives the list updating around it.
 */
import { type AskView, asksOf } from '../asks.js';
import { h, replace } from '../dom.js';
import { computerViews, findSession, type SessionCard } from '../inventory.js';
import type { App } from '../state.js';
import type { ConversationEvent } from './conversation.js';
import { sessionHref } from './hrefs.js';

const STATE_TEXT: Record<AskView['state'], string> = {
  waiting: 'Waiting for you',
  sending: 'Sending…',
  answered: 'Answered',
  expired: 'Expired',
};

function clock(at: number): string {
  return new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

export function askCard(app: App, ask: AskView): { el: HTMLElement; update(): void } {
  const status = h('span', { class: 'ask-state' });
  const text = h('p', { class: 'ask-question' });
  const buttons = h('div', { class: 'ask-choices' });
  const input = h('input', {
    type: 'text',
    class: 'ask-input',
    'aria-label': `Your answer to ${ask.session}`,
    placeholder: 'Type an answer',
    maxlength: 8000,
  });
  const send = h('button', { type: 'submit', class: 'button' }, 'Answer');
  const remote = h('input', { type: 'checkbox', class: 'ask-remote' });
  const remoteLabel = h('label', { class: 'ask-remote-label' }, remote, ' Keep driving from the phone');
  const form = h(
    'form',
    {
      class: 'ask-form',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const value = input.value.trim();
        if (value) void asksOf(app).answer(ask, value, undefined, remote.checked);
      },
    },
    input,
    send,
  );
  const problem = h('p', { class: 'ask-problem', role: 'alert' });
  const meta = h('span', { class: 'muted' });
  const where = h('a', { class: 'ask-session', href: sessionHref(ask.computer, ask.session) }, ask.session);
  const el = h(
    'li',
    { class: 'ask-card', 'data-ask': ask.id, 'aria-label': `question from ${ask.session}` },
    h('div', { class: 'ask-head' }, where, status, meta),
    text,
    buttons,
    form,
    remoteLabel,
    problem,
  );
  let choicesDrawn = -1;
  const update = () => {
    const open = ask.state === 'waiting';
    el.dataset.state = ask.state;
    // the session's label (`proj · Claude Code`), as the agents list names it; its tmux name until it is known
    where.textContent = findSession(app.computers, ask.computer, ask.session)?.card.label ?? ask.session;
    status.textContent = STATE_TEXT[ask.state];
    meta.textContent = open ? ` · until ${clock(ask.endsAt)}` : ask.answer ? ` · “${ask.answer}”` : '';
    text.textContent = ask.question ?? 'Opening the question…';
    if (choicesDrawn !== ask.choices.length) {
      choicesDrawn = ask.choices.length;
      replace(
        buttons,
        ask.choices.map((choice, i) =>
          h(
            'button',
            {
              type: 'button',
              class: 'button choice',
              onclick: () => void asksOf(app).answer(ask, '', i, remote.checked),
            },
            choice,
          ),
        ),
      );
    }
    for (const b of [...buttons.querySelectorAll('button'), send, input]) {
      (b as HTMLButtonElement | HTMLInputElement).disabled = !open || ask.question === null;
    }
    form.hidden = !open;
    remoteLabel.hidden = !open;
    buttons.hidden = !open || ask.choices.length === 0;
    problem.textContent = ask.problem ?? '';
    problem.hidden = !ask.problem;
  };
  update();
  return { el, update };
}

type Card = { el: HTMLElement; update(): void };

/** The cards of `asks`, updated, each made once and kept by id between renders (an answer being typed survives). */
function keptCards(app: App, cards: Map<string, Card>, asks: readonly AskView[]): HTMLElement[] {
  const keyOf = (a: AskView) => `${a.computer}/${a.id}`;
  const shown = asks.map((ask) => {
    let card = cards.get(keyOf(ask));
    if (!card) {
      card = askCard(app, ask);
      cards.set(keyOf(ask), card);
    }
    card.update();
    return card.el;
  });
  const keys = new Set(asks.map(keyOf));
  for (const key of [...cards.keys()]) if (!keys.has(key)) cards.delete(key);
  return shown;
}

/**
 * The questions of one session, at the bottom of its screen: a card while one waits for the person (or the answer
 * is on its way), then folded to one line with the answer.
 */
export function sessionAsks(app: App, hookId: string, name: string) {
  const cards = new Map<string, Card>();
  const el = h('ul', { class: 'ask-list session-asks', 'aria-label': 'Questions' });
  const update = () => {
    const open = asksOf(app)
      .list()
      .filter((a) => a.computer === hookId && a.session === name)
      .filter((a) => a.state === 'waiting' || a.state === 'sending');
    const shown = keptCards(app, cards, open);
    // redrawn only when what is listed changed: an answer being typed keeps its focus; an answered one folds away
    // into the conversation (askEvents)
    const key = JSON.stringify(open.map((a) => a.id));
    if (key !== drawn) {
      drawn = key;
      replace(el, shown);
    }
    el.hidden = shown.length === 0;
  };
  let drawn = '';
  update();
  return { el, update, dispose: () => {} };
}

/** The session's questions that were answered or ran out, oldest first: lines of its conversation. */
export function askEvents(app: App, hookId: string, name: string): ConversationEvent[] {
  return asksOf(app)
    .ended()
    .filter((a) => a.computer === hookId && a.session === name)
    .map((a) => ({
      id: `ask-${a.id}`,
      state: a.state,
      label: STATE_TEXT[a.state],
      text: `${a.question ?? ''}${a.answer ? ` · “${a.answer}”` : ''}`,
    }));
}

export function needsYouSection(app: App): { el: HTMLElement; update(): void } {
  const cards = new Map<string, Card>();
  const askList = h('ul', { class: 'ask-list' });
  const others = h('ul', { class: 'needs-list' });
  const el = h(
    'section',
    { class: 'needs-you', 'aria-labelledby': 'needs-you-title' },
    h('h2', { id: 'needs-you-title', class: 'needs-title' }, 'Needs you'),
    askList,
    others,
  );
  const update = () => {
    const asks = asksOf(app);
    const list = asks.list();
    const shown = keptCards(app, cards, list);
    // Re-append only when the order changed: an input keeps its focus.
    const current = [...askList.children];
    if (current.length !== shown.length || current.some((c, i) => c !== shown[i])) replace(askList, shown);

    const approvals: { hookId: string; card: SessionCard }[] = [];
    for (const c of computerViews(app.computers)) {
      for (const it of c.items) {
        const sessions = it.kind === 'session' ? [it] : it.sessions;
        for (const s of sessions) if (s.state === 'awaiting_approval') approvals.push({ hookId: c.hookId, card: s });
      }
    }
    replace(
      others,
      approvals.map(({ hookId, card }) =>
        h(
          'li',
          { class: 'needs-item' },
          h('a', { href: sessionHref(hookId, card.name) }, card.label),
          h('span', { class: 'muted' }, ' · waiting for an approval'),
        ),
      ),
      asks.notes
        .filter((n) => n.live)
        .slice(0, 3)
        .map((n) =>
          h(
            'li',
            { class: 'needs-item', 'data-note': n.id },
            h('a', { href: sessionHref(n.computer, n.session) }, n.title ?? n.session),
            h('span', { class: 'muted' }, ` · ${n.message ?? n.problem ?? 'a notification'} · ${clock(n.at)}`),
          ),
        ),
    );
    el.hidden = list.length === 0 && approvals.length === 0 && !asks.notes.some((n) => n.live);
  };
  update();
  return { el, update };
}
