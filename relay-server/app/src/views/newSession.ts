/**
 * New session (issue 30 item 3): computer → folder (those svc ran agents in, newest first) → agent (those on that
 * computer) → an optional `--wt` branch and first prompt. Asked and answered sealed (`pane.keys` with `launch`, the
 * answer a `launch` body for this phone alone); the computer starts it as `svc <agent> --detach` would there, and
 * the phone opens the new session's conversation.
 */

import type { LaunchRequest, LaunchResultBody } from '../../../../core/protocol/bodies.js';
import { ago, refusalText } from '../../../../core/protocol/refusalText.js';
import { NEW_SESSION_TARGET } from '../../../../core/sessions/newSession.js';
import { parseBody } from '../api.js';
import { openFrom } from '../crypto.js';
import { h, replace } from '../dom.js';
import type { App } from '../state.js';
import { keysRequest } from './control.js';
import { sessionHref } from './hrefs.js';
import type { Screen } from './screen.js';

/** A start may make a worktree first (a checkout of a large repository): its answer is waited for this long. */
const START_WAIT_MS = 120_000;

/** Sends a launch request and resolves with the opened answer, or a sentence on why there is none. */
async function ask(app: App, hookId: string, launch: LaunchRequest): Promise<LaunchResultBody | string> {
  let answer: Awaited<ReturnType<typeof keysRequest>>;
  try {
    const waitMs = launch.op === 'start' ? START_WAIT_MS : undefined;
    answer = await keysRequest(app, hookId, NEW_SESSION_TARGET, { launch }, waitMs);
  } catch (error) {
    // not sealed: no key for that computer, or its key changed (compare the safety code)
    return (error as Error).message;
  }
  if ('problem' in answer) return answer.problem;
  const key = app.keyFor(hookId);
  // a listener older than new sessions cannot read the request, and answers without a body
  if (answer.frame.code === 'bad_seal' && !answer.frame.envelope)
    return 'The computer did not take the request: if its svc is older than this app, update it there.';
  if (!answer.frame.envelope || !key) return refusalText(answer.frame.code);
  try {
    return await parseBody('LaunchResultBody', await openFrom(app.device, key, 'launch', answer.frame.envelope));
  } catch {
    return 'The answer did not open on this phone.';
  }
}

/** A folder's path as a person reads it at phone width: its last three parts. */
const shortPath = (cwd: string) => {
  const parts = cwd.split('/').filter(Boolean);
  return parts.length > 3 ? `…/${parts.slice(-3).join('/')}` : cwd;
};

/** A list of choices as radio buttons, each a full-width row at least 44 px tall. */
function choices(
  legend: string,
  name: string,
  items: { value: string; label: string; detail?: string }[],
  checked: string | undefined,
): HTMLFieldSetElement {
  return h(
    'fieldset',
    { class: 'choices' },
    h('legend', {}, legend),
    items.map((it) =>
      h(
        'label',
        { class: 'choice' },
        h('input', { type: 'radio', name, value: it.value, ...(it.value === checked ? { checked: true } : {}) }),
        h(
          'span',
          { class: 'choice-text' },
          h('span', { class: 'choice-label' }, it.label),
          it.detail ? h('span', { class: 'choice-detail' }, it.detail) : null,
        ),
      ),
    ),
  ) as HTMLFieldSetElement;
}

function form(app: App, hookId: string, offered: LaunchResultBody, isGone: () => boolean): HTMLElement {
  const projects = offered.projects ?? [];
  const agents = offered.agents ?? [];
  if (projects.length === 0)
    return h(
      'p',
      { class: 'empty' },
      'svc has not run an agent on this computer yet. Start one there once (',
      h('code', {}, 'svc cc'),
      ' in a project); its folder is offered here from then on.',
    );
  if (agents.length === 0) return h('p', { class: 'empty' }, 'No agent svc knows is installed on this computer.');
  const status = h('p', { class: 'control-status', role: 'status' });
  const first = projects[0]!;
  const pickAgent = (cwd: string) => {
    const ran = projects.find((p) => p.cwd === cwd)?.agents ?? [];
    return ran.find((id) => agents.some((a) => a.id === id)) ?? agents[0]!.id;
  };
  const projectSet = choices(
    'Folder',
    'cwd',
    projects.map((p) => ({
      value: p.cwd,
      label: p.name,
      detail: `${shortPath(p.cwd)} · ${ago(Date.now() - p.at * 1000)}`,
    })),
    first.cwd,
  );
  const agentSet = choices(
    'Agent',
    'agent',
    agents.map((a) => ({ value: a.id, label: a.name, detail: ' ' })),
    pickAgent(first.cwd),
  );
  /** Says which agents never ran in the folder: they may ask first whether to trust it (answer it in Watch). */
  const markAgents = (cwd: string) => {
    const ran = projects.find((p) => p.cwd === cwd)?.agents ?? [];
    for (const label of agentSet.querySelectorAll<HTMLLabelElement>('label.choice')) {
      const id = label.querySelector('input')?.value ?? '';
      const detail = label.querySelector('.choice-detail');
      if (detail)
        detail.textContent = ran.includes(id)
          ? 'ran here before'
          : 'new here: it may first ask to trust the folder (answer in Watch)';
    }
  };
  markAgents(first.cwd);
  const branch = h('input', {
    type: 'text',
    name: 'branch',
    autocapitalize: 'off',
    autocomplete: 'off',
    spellcheck: false,
    placeholder: 'Branch for a new worktree (optional)',
    'aria-label': 'Worktree branch',
  }) as HTMLInputElement;
  const prompt = h('textarea', {
    name: 'prompt',
    rows: 3,
    placeholder: 'First message, typed when it is ready (optional)',
    'aria-label': 'First message',
  }) as HTMLTextAreaElement;
  const noPrompt = h('p', { class: 'muted', hidden: true });
  const start = h('button', { type: 'submit', class: 'button primary' }, 'Start') as HTMLButtonElement;
  const el = h(
    'form',
    { class: 'new-session-form' },
    projectSet,
    agentSet,
    branch,
    prompt,
    noPrompt,
    start,
    status,
  ) as HTMLFormElement;
  const value = (name: string) => (el.elements.namedItem(name) as RadioNodeList | null)?.value ?? '';
  const agentChanged = () => {
    const agent = agents.find((a) => a.id === value('agent'));
    prompt.hidden = agent?.prompt === false;
    noPrompt.hidden = agent?.prompt !== false;
    noPrompt.textContent = agent ? `${agent.name} takes no first message from svc; type it once it runs.` : '';
  };
  projectSet.addEventListener('change', () => {
    markAgents(value('cwd'));
    const id = pickAgent(value('cwd'));
    const radio = agentSet.querySelector<HTMLInputElement>(`input[value="${id}"]`);
    if (radio) radio.checked = true;
    agentChanged();
  });
  agentSet.addEventListener('change', agentChanged);
  agentChanged();
  el.onsubmit = async (e) => {
    e.preventDefault();
    const text = prompt.hidden ? '' : prompt.value.trim();
    const wt = branch.value.trim();
    const request: LaunchRequest = {
      op: 'start',
      cwd: value('cwd'),
      agent: value('agent'),
      ...(wt ? { branch: wt } : {}),
      ...(text ? { prompt: text } : {}),
    };
    start.disabled = true;
    status.textContent = 'Starting…';
    const r = await ask(app, hookId, request);
    if (typeof r !== 'string' && r.started) {
      if (!isGone()) location.hash = sessionHref(hookId, r.started);
      return;
    }
    if (typeof r === 'string' && r.startsWith('No answer')) {
      // it may have started all the same: a second Start would make a second session
      status.textContent =
        'No answer from the computer yet: it may have started. Look in Agents before starting again.';
      return;
    }
    start.disabled = false;
    status.textContent = typeof r === 'string' ? r : `Not started: ${r.message ?? refusalText(r.refused)}`;
  };
  return el;
}

export function newSessionScreen(app: App, hookId: string): Screen {
  const computer = app.computers.find((c) => c.hookId === hookId);
  const body = h(
    'div',
    { class: 'new-session-body' },
    h('p', { class: 'muted', role: 'status' }, 'Asking the computer…'),
  );
  const el = h(
    'section',
    { class: 'screen new-session', 'aria-labelledby': 'new-session-title' },
    h('h2', { id: 'new-session-title', class: 'session-title' }, `New session on ${computer?.name ?? 'this computer'}`),
    body,
  );
  let gone = false;
  let asked = false;
  const show = (r: LaunchResultBody | string) => {
    if (gone) return;
    if (typeof r === 'string') replace(body, h('p', { class: 'empty' }, r));
    else if (r.refused)
      replace(
        body,
        h('p', { class: 'empty' }, `${r.message ?? refusalText(r.refused)}.`),
        r.off
          ? h('p', { class: 'muted' }, 'On the computer, ', h('code', {}, 'svc new-session on'), ' turns it on.')
          : null,
      );
    else
      replace(
        body,
        form(app, hookId, r, () => gone),
      );
  };
  // asked once the phone is online and knows the computer's key (a page just opened loads both first)
  const askWhenReady = () => {
    if (asked || gone || app.linkState !== 'online' || !app.keyFor(hookId)) return;
    asked = true;
    void ask(app, hookId, { op: 'options' }).then(show);
  };
  askWhenReady();
  return {
    el,
    title: 'New session',
    back: '#/',
    update: askWhenReady,
    dispose: () => {
      gone = true;
    },
  };
}
