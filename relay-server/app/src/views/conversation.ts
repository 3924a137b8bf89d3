/**
 * A session as a conversation (issue 30 item 1; spec 4.11.1, 4.12): the person's prompts and the agent's replies in
 * order, replies in Markdown (markdown.ts: sanitised, nothing runs), each tool as one line (its command's first line
 * or the file, relative to the project, lines changed, outcome), the newest to-do list, and the messages this phone
 * sent with what became of each: at the turn the agent's transcript shows for it, or after the last turn until then.
 * Drawn from the sealed history chunks the listener uploads (`GET /history`, newest page first) and kept live by the
 * `history.chunk` frames that follow. A chunk sealed before this phone was paired does not open here, by design:
 * it is counted, not shown. For agents with no timeline, the conversation is the messages sent.
 */

import type { RelayFrame } from '../../../../core/protocol/index.js';
import {
  type HistoryItem,
  placeMessages,
  TIMELINE_AGENTS,
  type TimelineTurn,
  timeline,
} from '../../../../core/transcripts/history.js';
import { parseBody, RelayError, request } from '../api.js';
import { openFrom } from '../crypto.js';
import type { Message } from '../db.js';
import { h, replace } from '../dom.js';
import type { App } from '../state.js';

type Markdown = typeof import('../markdown.js');
let markdown: Markdown | null = null;
let loadingMarkdown: Promise<Markdown> | null = null;

/** Rendered replies by text: a redraw (a new chunk, a message's state) does not parse them again. */
const rendered = new Map<string, DocumentFragment>();
const MAX_RENDERED = 200;

function replyBody(text: string, redraw: () => void): Node {
  if (!markdown) {
    // one load for every reply; a failed one (offline before the service worker had it) is tried at the next draw
    loadingMarkdown ??= import('../markdown.js').then(
      (m) => (markdown = m),
      (error: unknown) => {
        loadingMarkdown = null;
        throw error;
      },
    );
    loadingMarkdown.then(redraw, () => {});
    return h('p', { class: 'plain' }, text);
  }
  let fragment = rendered.get(text);
  if (!fragment) {
    fragment = markdown.renderMarkdown(text);
    if (rendered.size >= MAX_RENDERED) rendered.delete(rendered.keys().next().value!);
    rendered.set(text, fragment);
  }
  return fragment.cloneNode(true);
}

const clock = (at: number) => new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

function toolLine(step: TimelineTurn['steps'][number] & { kind: 'tool' }): HTMLElement {
  const outcome = step.ok === null ? 'running' : step.ok ? 'done' : 'failed';
  return h(
    'li',
    { class: `step tool tool-${outcome}` },
    h('span', { class: 'tool-mark', 'aria-label': outcome, role: 'img' }, step.ok === null ? '…' : step.ok ? '✓' : '✗'),
    ' ',
    h('span', { class: 'tool-name' }, step.name),
    step.target ? [' ', h('code', { class: 'tool-target', title: step.target }, step.target)] : null,
    step.lines !== undefined
      ? [' ', h('span', { class: 'tool-lines' }, `· ${step.lines} line${step.lines === 1 ? '' : 's'}`)]
      : null,
  );
}

export interface ConversationDeps {
  /** What became of a message this phone sent, in words. */
  status(m: Message): string;
  /** The messages this phone sent to the session, oldest first. */
  messages(): Message[];
  /** The person cancels a message not sent yet. */
  cancel(m: Message): void;
  /**
   * What was asked and answered in this session while the app watched (the agent's questions, approval cards),
   * oldest first: each is placed after the turn that was the newest when it was first seen, where it happened.
   */
  events?(): ConversationEvent[];
}

/** A question or an approval card that was answered (or ran out): a line in the conversation. */
export interface ConversationEvent {
  id: string;
  /** `answered`, `expired`, `approved`… what the line's mark says. */
  state: string;
  label: string;
  text: string;
}

/**
 * Where each answered question or card goes, for as long as the app runs (leaving the screen and coming back keeps
 * it): the newest history chunk there was when it was first seen; it is placed after the turn that chunk ends in.
 */
const anchorChunks = new Map<string, number>();

export function conversationSection(
  app: App,
  hookId: string,
  name: string,
  agent: string | undefined,
  deps: ConversationDeps,
) {
  const el = h('section', { class: 'conversation', 'aria-label': 'Conversation' });
  const supported = agent !== undefined && TIMELINE_AGENTS.has(agent);
  /** Opened chunks by relay id. */
  const chunks = new Map<number, { seq: number; reset: boolean; items: HistoryItem[] }>();
  /** Chunks that do not open here (sealed before this phone was paired), by relay id: counted once each. */
  const unopened = new Set<number>();
  let todosOpen = false;
  let disposed = false;
  let problem: string | null = null;
  /** The oldest chunk loaded, when the relay has older ones (a page at a time). */
  let older: number | null = null;
  /** The person asked for earlier pages: a reload of the newest page keeps where they got to. */
  let pagedBack = false;

  let loaded = !supported;
  let shown = '';

  const open = async (id: number, envelope: unknown) => {
    if (chunks.has(id) || unopened.has(id)) return;
    const key = app.keyFor(hookId);
    let opened: unknown;
    try {
      if (!key) throw new Error('no key');
      opened = await openFrom(app.device, key, 'history.chunk', envelope);
    } catch {
      unopened.add(id);
      return;
    }
    // the schemas not loaded (offline) is no reason to call it sealed before: it is tried again at the next load
    const body = await parseBody('HistoryChunkBody', opened).catch((error: unknown) =>
      error instanceof RelayError ? null : undefined,
    );
    if (body === null) return;
    if (body === undefined || body.session !== name) unopened.add(id);
    else chunks.set(id, { seq: body.seq, reset: body.reset, items: body.items });
  };

  const sent = (m: Message) => {
    const tone = m.state === 'injected' ? 'ok' : m.state === 'refused' || m.state === 'expired' ? 'bad' : 'wait';
    return h(
      'p',
      { class: `message-status tone-${tone}` },
      h('span', { class: 'status-text' }, deps.status(m)),
      h('span', { class: 'muted' }, ` · ${clock(m.createdAt)}`),
      m.state === 'unsent'
        ? h('button', { type: 'button', class: 'link-button', onclick: () => deps.cancel(m) }, 'Cancel')
        : null,
    );
  };

  const draw = () => {
    if (disposed) return;
    const ids = [...chunks.keys()].sort((a, b) => a - b);
    /** The items of the chunks up to relay id `last` (a chunk that resets drops what came before it). */
    const itemsThrough = (last: number) => {
      let out: HistoryItem[] = [];
      for (const id of ids) {
        if (id > last) break;
        const c = chunks.get(id)!;
        if (c.reset) out = [];
        out.push(...c.items);
      }
      return out;
    };
    const items = itemsThrough(Number.POSITIVE_INFINITY);
    const { turns, todos } = timeline(items);
    const mine = deps.messages().slice(-30);
    const events = deps.events?.() ?? [];
    // anchored to the newest chunk once the history is in (before, the turns are not known yet: placed after the
    // newest meanwhile); by chunk, not by turn, so earlier pages loaded later do not move it
    if (loaded || !supported)
      for (const e of events) {
        const key = `${hookId}/${name}/${e.id}`;
        if (!anchorChunks.has(key)) anchorChunks.set(key, ids.at(-1) ?? -1);
      }
    const anchorOf = (e: ConversationEvent): number => {
      const chunk = anchorChunks.get(`${hookId}/${name}/${e.id}`);
      if (chunk === undefined) return turns.length - 1;
      return chunk < 0 ? -1 : timeline(itemsThrough(chunk)).turns.length - 1;
    };
    const key = JSON.stringify([
      events.map((e) => [e.id, e.state, e.text]),
      ids,
      unopened.size,
      problem,
      older,
      loaded,
      markdown !== null,
      mine.map((m) => [m.clientId, m.state, m.code]),
    ]);
    if (key === shown) return;
    shown = key;
    const places = placeMessages(
      turns.map((t) => t.prompt),
      mine.map((m) => ({ text: m.text, typed: m.state === 'injected' })),
    );
    const atTurn = new Map<number, Message>();
    const after: Message[] = [];
    mine.forEach((m, i) => {
      const at = places[i];
      if (at === null || at === undefined) after.push(m);
      else atTurn.set(at, m);
    });
    const eventsAt = new Map<number, ConversationEvent[]>();
    for (const e of events) {
      const at = Math.min(anchorOf(e), turns.length - 1);
      eventsAt.set(at, [...(eventsAt.get(at) ?? []), e]);
    }
    const eventList = (at: number) => {
      const list = eventsAt.get(at);
      return list
        ? h(
            'ul',
            { class: 'turn-events', 'aria-label': 'Asked and answered' },
            list.map((e) =>
              h(
                'li',
                { class: 'turn-event', 'data-state': e.state },
                h('span', { class: 'muted' }, e.label),
                ' ',
                e.text,
              ),
            ),
          )
        : null;
    };
    const redraw = () => draw();
    replace(
      el,
      older !== null
        ? h(
            'button',
            { type: 'button', class: 'button secondary earlier', onclick: () => void load(older!) },
            'Show earlier',
          )
        : null,
      unopened.size > 0
        ? h('p', { class: 'muted' }, `${unopened.size} earlier part(s) were sealed before this phone was paired.`)
        : null,
      problem ? h('p', { class: 'muted' }, problem) : null,
      todos && todos.items.length > 0
        ? h(
            'details',
            {
              class: 'todos-box',
              open: todosOpen,
              ontoggle: (e: Event) => {
                todosOpen = (e.currentTarget as HTMLDetailsElement).open;
              },
            },
            h(
              'summary',
              {},
              `To-do · ${todos.items.filter((t) => t.status === 'completed').length} of ${todos.items.length} done`,
            ),
            h(
              'ul',
              { class: 'todos', 'aria-label': 'To-do list' },
              todos.items.map((t) =>
                h(
                  'li',
                  { class: `todo todo-${t.status}` },
                  t.status === 'completed' ? '☑ ' : t.status === 'in_progress' ? '▶ ' : '☐ ',
                  t.text,
                ),
              ),
            ),
          )
        : null,
      // before every turn when it came before any; an agent without a timeline has only what this phone sent: after it
      supported ? eventList(-1) : null,
      h(
        'ol',
        { class: 'turns', 'aria-label': 'Turns' },
        turns.map((turn, i) => {
          const message = atTurn.get(i);
          return h(
            'li',
            { class: 'turn' },
            turn.prompt !== null
              ? h(
                  'div',
                  message ? { class: 'bubble you message', 'data-state': message.state } : { class: 'bubble you' },
                  h('span', { class: 'visually-hidden' }, 'You:'),
                  h('p', { class: 'bubble-text' }, turn.prompt),
                  message ? sent(message) : null,
                )
              : null,
            h(
              'ul',
              { class: 'steps' },
              turn.steps.map((s) =>
                s.kind === 'tool'
                  ? toolLine(s)
                  : h(
                      'li',
                      { class: 'step bubble agent' },
                      h('span', { class: 'visually-hidden' }, 'Agent:'),
                      replyBody(s.text, redraw),
                    ),
              ),
            ),
            turn.tokens.input + turn.tokens.output > 0
              ? h('p', { class: 'tokens muted' }, `${turn.tokens.input} tokens in · ${turn.tokens.output} out`)
              : null,
            eventList(i),
          );
        }),
        after.map((m) =>
          h(
            'li',
            { class: 'turn' },
            h(
              'div',
              { class: 'bubble you message', 'data-state': m.state },
              h('span', { class: 'visually-hidden' }, 'You:'),
              h('p', { class: 'bubble-text' }, m.text),
              sent(m),
            ),
          ),
        ),
      ),
      supported ? null : eventList(-1),
      turns.length === 0 && after.length === 0 && events.length === 0
        ? h(
            'p',
            { class: 'muted empty' },
            !loaded
              ? 'Loading the conversation…'
              : supported
                ? 'Nothing yet: write below, or start the agent at the keyboard; its turns show here as it works.'
                : 'No messages sent from this phone yet. This agent’s own turns are not read by svc: Watch shows its screen.',
          )
        : null,
    );
    // a conversation reads from the bottom: keep it there while the person has not scrolled up
    onDrawn();
  };

  let stuck = true;
  const onDrawn = () => {
    if (stuck)
      requestAnimationFrame(() => {
        if (!disposed) window.scrollTo({ top: document.documentElement.scrollHeight });
      });
  };
  const onScroll = () => {
    stuck = window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
  };
  window.addEventListener('scroll', onScroll, { passive: true });

  const load = async (before?: number) => {
    try {
      const q = `computer=${encodeURIComponent(hookId)}&session=${encodeURIComponent(name)}&limit=200${before ? `&before=${before}` : ''}`;
      const page = await request('HistoryPage', 'GET', `/history?${q}`, { token: app.device.token });
      for (const c of page.chunks) await open(c.id, c.envelope);
      if (before !== undefined) {
        pagedBack = true;
        stuck = false;
      }
      if (before !== undefined || !pagedBack) older = page.more ? (page.chunks.at(-1)?.id ?? null) : null;
      problem = null;
    } catch (error) {
      problem = `Could not load the history: ${(error as Error).message}`;
    }
    loaded = true;
    draw();
  };

  const off = app.onFrames((frame: RelayFrame) => {
    if (frame.type !== 'history.chunk' || frame.computer !== hookId || frame.session !== name) return;
    void open(frame.id, frame.envelope).then(() => draw());
  });
  // chunks stored while the link was down came as no frame: read the newest page again (known ones are skipped)
  const offSubscribed = supported ? app.onSubscribed(() => void load()) : () => {};
  draw();
  if (supported) void load();
  return {
    el,
    update: () => draw(),
    dispose: () => {
      disposed = true;
      off();
      offSubscribed();
      window.removeEventListener('scroll', onScroll);
    },
  };
}
