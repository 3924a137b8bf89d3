/**
 * One session: what it is, the conversation with the messages sent to it and what became of each, and the message
 * box. The box keeps its text (and a draft in IndexedDB) until the relay has taken the message.
 */
import { ago, pushStateText } from '../../../../core/protocol/refusalText.js';
import { EXIT_COMMANDS } from '../../../../core/sessions/control.js';
import { deleteKv, getKv, type Message, setKv } from '../db.js';
import { SealRefused } from '../device.js';
import { h, replace, replaceChanged } from '../dom.js';
import { findSession } from '../inventory.js';
import type { App } from '../state.js';
import { waitingAsks } from './agents.js';
import { approvalCard, cardEvents } from './approval.js';
import { askingButton, sendControl } from './control.js';
import { conversationSection } from './conversation.js';
import { filesSection, onFilePicked } from './files.js';
import { askEvents, sessionAsks } from './needsYou.js';
import { scheduleForm } from './schedules.js';
import type { Screen } from './screen.js';

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

/** Agents that read a file named `@path` in a prompt (Claude Code, Gemini CLI, opencode); the others get the path. */
const AT_PATH_AGENTS = new Set(['A1', 'A3', 'A5']);

/**
 * How a message names an attached file for `agent`: `@path` where the agent reads that, else the path itself (and
 * for a path with a space, which each agent escapes its own way: the path, which every agent can open).
 */
export function attachMention(agent: string | undefined, path: string): string {
  return agent && AT_PATH_AGENTS.has(agent) && !/\s/.test(path) ? `@${path}` : path;
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
  // Attach: the file goes to the computer (sealed, ~/Downloads/Svc), and where it landed goes into the message
  const picker = h('input', { type: 'file', class: 'attach-input', 'aria-label': 'Attach a file' }) as HTMLInputElement;
  const attach = h('label', { class: 'button secondary attach' }, 'Attach', picker);
  onFilePicked(picker, app, hookId, name, note, (savedAs) => {
    const mention = attachMention(findSession(app.computers, hookId, name)?.record.meta?.agent, savedAs);
    box.value = box.value && !/\s$/.test(box.value) ? `${box.value} ${mention} ` : `${box.value}${mention} `;
    box.dispatchEvent(new Event('input'));
    box.focus();
  });
  const form = h(
    'form',
    { class: `composer${opts.compact ? ' compact' : ''}` },
    opts.compact ? null : attach,
    box,
    button,
    note,
  );
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

/**
 * One session as a conversation: a head with its state and one menu (Watch, Files, Schedule, End, Force end), the
 * conversation (views/conversation.ts), and at the bottom, kept above the phone's keyboard, what waits for the
 * person (an approval card, the agent's questions) and the message box.
 */
export function sessionScreen(app: App, hookId: string, name: string): Screen {
  const titleEl = h('h2', { class: 'session-title' });
  const meta = h('p', { class: 'session-meta' });
  const offer = h('div', { class: 'session-offer' });
  const found0 = findSession(app.computers, hookId, name);
  const viewOnly = found0?.card.viewOnly ?? false;
  const compose = viewOnly ? null : composer(app, hookId, name);
  const approval = viewOnly ? null : approvalCard(app, hookId, name);
  const questions = sessionAsks(app, hookId, name);
  const controlStatus = h('p', { class: 'control-status', role: 'status' });
  // the menu: what is done to the session, out of the way of the conversation
  const menuId = `session-menu-${Math.random().toString(36).slice(2, 8)}`;
  const menuButton = h(
    'button',
    {
      type: 'button',
      class: 'icon-button menu-button',
      'aria-label': 'Session menu',
      'aria-expanded': 'false',
      'aria-controls': menuId,
    },
    '⋯',
  );
  const menu = h('div', { class: 'session-menu', id: menuId, role: 'group', 'aria-label': 'Session', hidden: true });
  const setMenu = (open: boolean) => {
    menu.hidden = !open;
    menuButton.setAttribute('aria-expanded', String(open));
  };
  menuButton.addEventListener('click', () => setMenu(menu.hidden));
  /** Files and Schedule open here, above the conversation, one at a time. */
  const panel = h('div', { class: 'session-panel', hidden: true });
  const showPanel = (content: HTMLElement | null) => {
    setMenu(false);
    replace(
      panel,
      content
        ? [content, h('button', { type: 'button', class: 'button secondary', onclick: () => showPanel(null) }, 'Close')]
        : [],
    );
    panel.hidden = content === null;
    if (content instanceof HTMLDetailsElement) content.open = true;
    if (content) panel.scrollIntoView({ block: 'nearest' });
  };
  const messages = () => app.messages.filter((m) => m.computer === hookId && m.session === name);
  /** When this screen first saw each answered question or card: their order in the conversation. */
  const seenAt = new Map<string, number>();
  let talk: ReturnType<typeof conversationSection> | null = null;
  let talkFor = '';
  const talkBox = h('div', { class: 'conversation-box' });
  let controlsFor: string | null = null;
  const pastControls = h('div', { class: 'session-controls', 'aria-label': 'Session control' });
  const foot = h(
    'div',
    { class: 'session-foot' },
    approval?.el,
    questions.el,
    pastControls,
    compose
      ? compose.form
      : h('p', { class: 'note' }, 'Subagents are view-only: watch them here, write to the parent session.'),
  );
  const head = h(
    'div',
    { class: 'session-head' },
    h('div', { class: 'session-title-row' }, titleEl, viewOnly ? null : menuButton),
    meta,
    offer,
    viewOnly
      ? h('a', { class: 'button', href: `#/w/${encodeURIComponent(hookId)}/${encodeURIComponent(name)}` }, 'Watch')
      : null,
  );
  const el = h('section', { class: 'screen session' }, head, menu, panel, controlStatus, talkBox, foot);
  const update = () => {
    const found = findSession(app.computers, hookId, name);
    const card = found?.card;
    const agent = found?.record.meta?.kind === 'agent' ? found.record.meta.agent : undefined;
    // the conversation follows the agent the inventory names (its timeline, if it has one): made again when the
    // session is found after the screen opened (a link opened before the inventory arrived)
    const talkAgent = found && !found.record.shell ? (found.record.meta?.agent ?? '') : '';
    if (!talk || talkFor !== talkAgent) {
      talk?.dispose();
      talkFor = talkAgent;
      talk = conversationSection(app, hookId, name, talkAgent || undefined, {
        messages,
        status: messageStatus,
        cancel: (m) => void app.cancel(m.clientId),
        // answered questions and cards fold into the conversation where they happened
        events: () => {
          const all = [...askEvents(app, hookId, name), ...cardEvents(hookId, name)];
          for (const e of all) if (!seenAt.has(e.id)) seenAt.set(e.id, seenAt.size);
          return all.sort((x, y) => seenAt.get(x.id)! - seenAt.get(y.id)!);
        },
      });
      replace(talkBox, talk.el);
    }
    titleEl.textContent = card?.label ?? name;
    // redrawn only when it changed: the screen updates every second while offline, and a tap must not land on a
    // node swapped under the finger
    replaceChanged(
      meta,
      found?.record.ended !== undefined
        ? h('span', { class: 'state' }, `ended ${ago(Date.now() - found.record.ended * 1000)}`)
        : waitingAsks(app).has(`${hookId}/${name}`)
          ? h('span', { class: 'state state-asking' }, 'asking')
          : card
            ? h('span', { class: `state state-${card.state}` }, card.stateText)
            : h('span', { class: 'state' }, 'not in the inventory'),
      card ? ` ${card.attached ? 'attached' : 'detached'}` : null,
      card?.shell ? ' · shell session' : null,
      card?.remote ? h('span', { class: 'tag tag-remote' }, 'REMOTE') : null,
      found ? ` · ${found.computer.name}` : null,
    );
    replaceChanged(
      offer,
      askLoopOffer(
        agent,
        compose,
        app.messages.some((m) => m.computer === hookId && m.session === name && m.text === ASK_LOOP_LINE),
      ),
    );
    talk?.update();
    compose?.update();
    approval?.update();
    questions.update();
    // End and force end for a running session (in the menu), resume and forget for a past one (in view: there is
    // nothing else to do with it); none for a subagent (spec 4.14)
    const mode = !found || viewOnly ? 'none' : found.record.ended !== undefined ? 'past' : 'live';
    const controlsKey = `${mode} ${agent ?? ''} ${found?.record.shell === true} ${found?.record.resumable === true}`;
    if (controlsKey !== controlsFor) {
      controlsFor = controlsKey;
      const watch = h(
        'a',
        { class: 'button menu-item', href: `#/w/${encodeURIComponent(hookId)}/${encodeURIComponent(name)}` },
        'Watch',
      );
      const live = mode === 'live' && found && !found.record.shell;
      replace(
        menu,
        watch,
        live
          ? h(
              'button',
              { type: 'button', class: 'menu-item', onclick: () => showPanel(filesSection(app, hookId, name)) },
              'Files',
            )
          : null,
        mode !== 'none' && agent
          ? h(
              'button',
              { type: 'button', class: 'menu-item', onclick: () => showPanel(scheduleForm(app, hookId, name, agent)) },
              'Schedule…',
            )
          : null,
        mode === 'live'
          ? controlButtons(app, hookId, name, mode, found?.record.meta?.agent, found?.record.resumable, controlStatus)
          : null,
      );
      replace(
        pastControls,
        mode === 'past'
          ? controlButtons(app, hookId, name, mode, found?.record.meta?.agent, found?.record.resumable, controlStatus)
          : null,
      );
      pastControls.hidden = mode !== 'past';
      if (compose) compose.form.hidden = mode === 'past';
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
      talk?.dispose();
      questions.dispose();
    },
  };
}
