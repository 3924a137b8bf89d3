/**
 * One session: what it is, the messages sent to it and what became of each, and the message box. The box keeps
 * its text (and a draft in IndexedDB) until the relay has taken the message.
 */
import { AGENT_STATE_TEXT, ago, pushStateText } from '../../../../core/protocol/refusalText.js';
import { EXIT_COMMANDS } from '../../../../core/sessions/control.js';
import { deleteKv, getKv, type Message, setKv } from '../db.js';
import { SealRefused } from '../device.js';
import { h, replace } from '../dom.js';
import { findSession } from '../inventory.js';
import type { App } from '../state.js';
import { approvalCard } from './approval.js';
import { askingButton, sendControl } from './control.js';
import { filesSection } from './files.js';
import { scheduleForm } from './schedules.js';
import type { Screen } from './screen.js';
import { timelineSection } from './timeline.js';

const LOCAL_CODES: Record<string, string> = {
  never_sent:
    'Not sent: the phone was offline for more than 2 minutes, and old messages are never sent late. Send it again.',
  cancelled: 'Cancelled; not sent.',
  unknown_computer: 'Not sent: the relay does not know this computer any more.',
  bad_request: 'Not sent: the relay refused the message as malformed.',
  forbidden: 'Not sent: this phone may not send messages.',
  unauthorized: 'Not sent: this phone is no longer paired.',
};

export function messageStatus(m: Message): string {
  if (m.code && LOCAL_CODES[m.code]) return LOCAL_CODES[m.code]!;
  return pushStateText(m.state, m.code);
}

function messageItem(app: App, m: Message): HTMLElement {
  const tone = m.state === 'injected' ? 'ok' : m.state === 'refused' || m.state === 'expired' ? 'bad' : 'wait';
  const time = new Date(m.createdAt).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return h(
    'li',
    { class: `message tone-${tone}`, 'data-state': m.state },
    h('p', { class: 'message-text' }, m.text),
    h(
      'p',
      { class: 'message-status' },
      h('span', { class: 'status-text' }, messageStatus(m)),
      h('span', { class: 'muted' }, ` · ${time}`),
      m.state === 'unsent'
        ? h('button', { type: 'button', class: 'link-button', onclick: () => void app.cancel(m.clientId) }, 'Cancel')
        : null,
    ),
  );
}

/** The message box and Send, for one session; used by the session and the watch screens. */
export function composer(app: App, hookId: string, name: string, opts: { compact?: boolean } = {}) {
  const draftKey = `draft:${hookId}/${name}`;
  const box = h('textarea', {
    id: `message-${opts.compact ? 'w' : 's'}`,
    class: 'message-box',
    rows: opts.compact ? 1 : 3,
    'aria-label': 'Message',
    placeholder: 'Message',
    autocomplete: 'off',
    enterkeyhint: 'send',
  });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Send');
  const note = h('p', { class: 'composer-note', role: 'status', 'aria-live': 'polite' });
  const form = h('form', { class: `composer${opts.compact ? ' compact' : ''}` }, box, button, note);
  void getKv<string>(draftKey).then((draft) => {
    if (draft && !box.value) box.value = draft;
  });
  let saveTimer: ReturnType<typeof setTimeout> | null = null;
  box.addEventListener('input', () => {
    if (saveTimer) clearTimeout(saveTimer);
    saveTimer = setTimeout(() => void (box.value ? setKv(draftKey, box.value) : deleteKv(draftKey)), 300);
  });
  // Enter sends on a desktop keyboard; Shift+Enter is a new line.
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && matchMedia('(pointer: fine)').matches) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  // The message this box is waiting on, by clientId: set once it is in the outbox (never before, so an update that
  // runs while it is being sealed cannot mistake "not queued yet" for "taken"). A box made anew (the person came
  // back to this screen) picks up the session's message still waiting, if its text is what the box shows.
  let sending: string | null = null;
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = box.value;
    if (!text.trim() || sending !== null || app.unsentFor(hookId, name)) return;
    await setKv(draftKey, text);
    try {
      sending = (await app.send(hookId, name, text)).clientId;
      note.textContent = '';
    } catch (error) {
      note.textContent =
        error instanceof SealRefused ? `Not sent: ${error.message}.` : `Not sent: ${(error as Error).message}`;
    }
    update();
  });
  const update = () => {
    const pending = app.unsentFor(hookId, name);
    if (sending === null && pending && pending.text === box.value) sending = pending.clientId;
    const sent = sending === null ? undefined : app.messages.find((m) => m.clientId === sending);
    // The relay took it (or it ended without being taken): the box is emptied only when it was taken, and only if
    // the person has not typed something else since.
    if (sent && sent.state !== 'unsent' && sent.state !== 'sending') {
      if (sent.pushId !== null && box.value === sent.text) {
        box.value = '';
        void deleteKv(draftKey);
      }
      sending = null;
    }
    button.disabled = pending !== undefined;
    button.textContent = pending?.state === 'sending' ? 'Sending…' : pending ? 'Waiting…' : 'Send';
    if (pending?.state === 'unsent') note.textContent = 'Not sent yet: it goes as soon as the relay can be reached.';
    else if (!pending && note.textContent?.startsWith('Not sent yet')) note.textContent = '';
  };
  update();
  return { form, update, box };
}

/**
 * Spec 4.13.5: agents without a prompt hook (A6 Cursor's terminal agent, A7 Hermes) are asked once per session, in
 * one line, to end every response with svc_ask, so the conversation can go on from the phone. Offered until sent.
 */
export const ASK_LOOP_LINE =
  'From now on, end every response with a call to the svc_ask tool: a short question I can answer from my phone.';
const ASK_LOOP_AGENTS = new Set(['A6', 'A7']);

function askLoopOffer(
  agentId: string | undefined,
  compose: { box: HTMLTextAreaElement } | null,
  sent: boolean,
): HTMLElement | null {
  // the registry id (`@svc-agent`), not the name the listener shows ("Cursor Agent")
  if (!compose || sent || !agentId || !ASK_LOOP_AGENTS.has(agentId)) return null;
  return h(
    'p',
    { class: 'note ask-loop' },
    'This agent has no hook that tells it you are on the phone. ',
    h(
      'button',
      {
        type: 'button',
        class: 'button secondary',
        onclick: () => {
          compose.box.value = ASK_LOOP_LINE;
          compose.box.focus();
        },
      },
      'Ask it to end answers with a question',
    ),
  );
}

/** The control buttons of a session: each asks first (views/control.ts). */
export function controlButtons(
  app: App,
  hookId: string,
  name: string,
  mode: 'live' | 'past' | 'none',
  agent: string | undefined,
  resumable: boolean | undefined,
  status: HTMLElement,
): (HTMLElement | null)[] {
  const run = (action: Parameters<typeof sendControl>[3]) => () => sendControl(app, hookId, name, action);
  if (mode === 'live') {
    const exit = agent ? EXIT_COMMANDS[agent] : undefined;
    return [
      exit
        ? askingButton({
            label: 'End session',
            question: `End ${name}? svc types ${exit} into it, as you would at the keyboard.`,
            confirm: 'End it',
            run: run('end'),
            status,
          })
        : null,
      askingButton({
        label: 'Force end',
        question: `Kill the tmux session ${name}? Whatever runs in it stops at once, unsaved work is lost.`,
        confirm: 'Kill it',
        danger: true,
        run: run('kill'),
        status,
      }),
    ];
  }
  if (mode === 'past') {
    return [
      resumable
        ? askingButton({
            label: 'Resume',
            question: `Resume ${name} with the agent's own resume, in a new tmux session?`,
            confirm: 'Resume it',
            run: run('resume'),
            status,
          })
        : h('span', { class: 'muted' }, 'svc cannot resume this agent’s sessions. '),
      askingButton({
        label: 'Forget',
        question: `Forget ${name}? It goes from this list; the agent's own files stay.`,
        confirm: 'Forget it',
        run: run('forget'),
        status,
      }),
    ];
  }
  return [];
}

export function sessionScreen(app: App, hookId: string, name: string): Screen {
  const head = h('div', { class: 'session-head' });
  const list = h('ol', { class: 'messages', 'aria-label': 'Messages sent' });
  const found0 = findSession(app.computers, hookId, name);
  const viewOnly = found0?.card.viewOnly ?? false;
  const compose = viewOnly ? null : composer(app, hookId, name);
  const approval = viewOnly ? null : approvalCard(app, hookId, name);
  const controls = h('div', { class: 'session-controls', 'aria-label': 'Session control' });
  const controlStatus = h('p', { class: 'control-status', role: 'status' });
  // what the agent did (spec 4.11.1, 4.12): its timeline, from the sealed history, once the session is known
  const historyBox = h('div', {});
  let history: ReturnType<typeof timelineSection> | null = null;
  let controlsFor: string | null = null;
  const el = h(
    'section',
    { class: 'screen session' },
    head,
    approval?.el,
    controls,
    controlStatus,
    historyBox,
    list,
    compose
      ? compose.form
      : h('p', { class: 'note' }, 'Subagents are view-only: watch them here, write to the parent session.'),
  );
  let shown = '';
  const update = () => {
    const found = findSession(app.computers, hookId, name);
    const card = found?.card;
    if (!history && found && !found.record.shell) {
      history = timelineSection(app, hookId, name, found.record.meta?.agent);
      // the project's files (spec 4.11.3), for a running session
      replace(historyBox, history.el, found.record.ended === undefined ? filesSection(app, hookId, name) : null);
    }
    replace(
      head,
      h('h2', { class: 'session-title' }, card?.label ?? name),
      h(
        'p',
        { class: 'session-meta' },
        found?.record.ended !== undefined
          ? h('span', { class: 'state' }, `ended ${ago(Date.now() - found.record.ended * 1000)}`)
          : card
            ? h('span', { class: `state state-${card.state}` }, AGENT_STATE_TEXT[card.state])
            : h('span', { class: 'state' }, 'not in the inventory'),
        card ? ` ${card.attached ? 'attached' : 'detached'}` : null,
        card?.shell ? ' · shell session' : null,
        card?.remote ? h('span', { class: 'tag tag-remote' }, 'REMOTE') : null,
        found ? ` · ${found.computer.name}` : null,
      ),
      h('a', { class: 'button', href: `#/w/${encodeURIComponent(hookId)}/${encodeURIComponent(name)}` }, 'Watch'),
      askLoopOffer(
        found?.record.meta?.kind === 'agent' ? found.record.meta.agent : undefined,
        compose,
        app.messages.some((m) => m.computer === hookId && m.session === name && m.text === ASK_LOOP_LINE),
      ),
    );
    const mine = app.messages.filter((m) => m.computer === hookId && m.session === name).slice(-30);
    const key = JSON.stringify(mine.map((m) => [m.clientId, m.state, m.code]));
    if (key !== shown) {
      shown = key;
      replace(
        list,
        mine.length
          ? mine.map((m) => messageItem(app, m))
          : h('li', { class: 'empty' }, 'No messages sent from this phone yet.'),
      );
    }
    compose?.update();
    approval?.update();
    // End and force end for a running session, resume and forget for a past one; none for a subagent (spec 4.14)
    const mode = !found || viewOnly ? 'none' : found.record.ended !== undefined ? 'past' : 'live';
    if (mode !== controlsFor) {
      controlsFor = mode;
      const agent = found?.record.meta?.kind === 'agent' ? found.record.meta.agent : undefined;
      replace(
        controls,
        controlButtons(app, hookId, name, mode, found?.record.meta?.agent, found?.record.resumable, controlStatus),
        // an agent session this computer ran can be scheduled to start again (spec 4.8.9)
        mode !== 'none' && agent ? scheduleForm(app, hookId, name, agent) : null,
      );
    }
  };
  update();
  return {
    el,
    title: found0?.card.label ?? name,
    back: '#/',
    update,
    dispose: () => {
      approval?.dispose();
      history?.dispose();
    },
  };
}
