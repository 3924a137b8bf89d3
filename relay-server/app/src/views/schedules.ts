/**
 * Schedules from the phone (spec 4.8.9): a computer's schedules, opened from the sealed list its listener reports
 * with the inventory, each with Remove; and, on an agent session's screen, a form that schedules that agent to start
 * again where it ran. The phone chooses only when, how long and the prompt: never a directory, a command or
 * arguments. Requests travel sealed in `pane.keys` (`schedule`), like session control.
 */
import { agentById, PROMPT_AGENTS } from '../../../../core/agents/registry.js';
import type { ScheduleRequest, SchedulesBody } from '../../../../core/protocol/bodies.js';
import { parseBody } from '../api.js';
import { openFrom } from '../crypto.js';
import { unopenedText } from '../device.js';
import { h, replace } from '../dom.js';
import type { App } from '../state.js';
import { askingButton, sendRequest } from './control.js';

type Opened = { state: 'open'; body: SchedulesBody } | { state: 'opening' } | { state: 'failed'; why: string };
/** Opened lists by their ciphertext: the inventory is fetched again and again, a list is opened once. */
const opened = new Map<string, Opened>();

function openedList(app: App, hookId: string, envelope: Record<string, unknown>): Opened {
  const id = String(envelope.ct ?? '');
  const known = opened.get(id);
  if (known) return known;
  opened.set(id, { state: 'opening' });
  const key = app.keyFor(hookId);
  void (async () => {
    try {
      if (!key) throw Object.assign(new Error('no key for this computer'), { code: 'no_key' });
      opened.set(id, {
        state: 'open',
        body: await parseBody('SchedulesBody', await openFrom(app.device, key, 'schedules', envelope)),
      });
    } catch (error) {
      opened.set(id, { state: 'failed', why: unopenedText('The schedules', error) });
    }
    app.changed();
  })();
  return { state: 'opening' };
}

const time = (ms: number | null) =>
  ms === null
    ? 'none'
    : new Date(ms).toLocaleString(undefined, {
        weekday: 'short',
        day: 'numeric',
        month: 'short',
        hour: '2-digit',
        minute: '2-digit',
      });

/** Per computer: its box as last drawn (kept across redraws, so an open list and a status line stay). */
const boxes = new Map<string, { key: string; el: HTMLDetailsElement; body: HTMLElement; status: HTMLElement }>();

/**
 * A computer's schedules, for the Agents screen; null when it has none (and had none while this page was open: a
 * list whose last schedule was removed says so instead of vanishing under its status line).
 */
export function schedulesList(app: App, hookId: string, computerName: string): HTMLElement | null {
  const envelope = app.computers.find((c) => c.hookId === hookId)?.schedules;
  let box = boxes.get(hookId);
  if (!envelope && !box) return null;
  const list: Opened | { state: 'none' } = envelope ? openedList(app, hookId, envelope) : { state: 'none' };
  const key = `${envelope?.ct ?? ''}/${list.state}`;
  if (box?.key === key) return box.el;
  if (!box) {
    const status = h('p', { class: 'control-status', role: 'status' });
    const body = h('div', {});
    const el = h('details', { class: 'past schedules-box' }) as HTMLDetailsElement;
    box = { key, el, body, status };
    boxes.set(hookId, box);
  }
  box.key = key;
  const { status } = box;
  const count = list.state === 'open' ? ` (${list.body.schedules.length})` : list.state === 'none' ? ' (0)' : '';
  replace(box.el, h('summary', {}, `Schedules${count}`), box.body, status);
  replace(
    box.body,
    list.state === 'open'
      ? h(
          'ul',
          { class: 'schedules', 'aria-label': `schedules of ${computerName}` },
          list.body.schedules.map((s) =>
            h(
              'li',
              { class: 'schedule' },
              h('span', { class: 'label' }, `${s.agentName} in ${s.project}`),
              h('span', { class: 'when' }, ` ${s.when} · at most ${s.maxRuntime}`),
              s.prompt ? h('q', { class: 'prompt' }, s.prompt) : null,
              h(
                'span',
                { class: 'muted' },
                ` next ${time(s.next)} · last ${s.last ? `${time(s.last.at)}: ${s.last.text}${s.last.note ? ` (${s.last.note})` : ''}` : 'never ran'}`,
                s.running ? ' · running now' : '',
              ),
              askingButton({
                label: 'Remove',
                question: `Remove this schedule?${s.running ? ' The session it started keeps running.' : ''}`,
                confirm: 'Remove it',
                run: () => sendRequest(app, hookId, s.session, { schedule: { action: 'rm', id: s.id } }, 'Removed.'),
                status,
              }),
            ),
          ),
        )
      : h(
          'p',
          { class: 'muted' },
          list.state === 'opening' ? 'Opening the schedules…' : list.state === 'none' ? 'No schedules left.' : list.why,
        ),
  );
  return box.el;
}

const DAYS = [
  ['daily', 'Every day'],
  ['weekdays', 'Weekdays'],
  ['weekends', 'Weekends'],
] as const;
const EVERY = ['15m', '30m', '1h', '2h', '4h', '8h', '12h'] as const;
const RUNTIMES = ['5m', '15m', '30m', '1h', '2h', '4h', '8h', '24h'] as const;

/** "Schedule this agent": on the screen of an agent session (running or past) of this computer. */
export function scheduleForm(app: App, hookId: string, name: string, agentId: string): HTMLElement {
  const agent = agentById(agentId);
  const status = h('p', { class: 'control-status', role: 'status' });
  const kind = h(
    'select',
    { name: 'kind', 'aria-label': 'When' },
    h('option', { value: 'at' }, 'At a time'),
    h('option', { value: 'every' }, 'Every…'),
  ) as HTMLSelectElement;
  const at = h('input', { type: 'time', name: 'at', value: '07:30', 'aria-label': 'Time' }) as HTMLInputElement;
  const days = h(
    'select',
    { name: 'days', 'aria-label': 'Days' },
    DAYS.map(([v, l]) => h('option', { value: v }, l)),
  ) as HTMLSelectElement;
  const every = h(
    'select',
    { name: 'every', 'aria-label': 'Interval', hidden: true },
    EVERY.map((v) => h('option', { value: v }, `every ${v}`)),
  ) as HTMLSelectElement;
  const runtime = h(
    'select',
    { name: 'maxRuntime', 'aria-label': 'At most' },
    RUNTIMES.map((v) => h('option', { value: v, ...(v === '2h' ? { selected: true } : {}) }, `at most ${v}`)),
  ) as HTMLSelectElement;
  const takesPrompt = PROMPT_AGENTS.has(agentId);
  const prompt = takesPrompt
    ? (h('textarea', {
        name: 'prompt',
        rows: 2,
        placeholder: 'Prompt typed when it starts (optional)',
        'aria-label': 'Prompt',
      }) as HTMLTextAreaElement)
    : null;
  kind.onchange = () => {
    const atTime = kind.value === 'at';
    at.hidden = !atTime;
    days.hidden = !atTime;
    every.hidden = atTime;
  };
  const form = h(
    'form',
    { class: 'schedule-form' },
    h(
      'p',
      { class: 'muted' },
      `Starts ${agent?.name ?? 'the agent'} again in the folder where ${name} ran, in its own session, and ends it with its exit command after the time you choose.`,
    ),
    kind,
    at,
    days,
    every,
    runtime,
    prompt,
    takesPrompt
      ? null
      : h('p', { class: 'muted' }, `${agent?.name ?? 'This agent'} does not take a prompt at a scheduled start.`),
    h('button', { type: 'submit', class: 'button primary' }, 'Schedule'),
    status,
  ) as HTMLFormElement;
  form.onsubmit = async (e) => {
    e.preventDefault();
    const text = prompt?.value.trim() ?? '';
    const request: ScheduleRequest = {
      action: 'add',
      ...(kind.value === 'at' ? { at: at.value, days: days.value } : { every: every.value }),
      maxRuntime: runtime.value,
      ...(text ? { prompt: text } : {}),
    };
    status.textContent = 'Scheduling…';
    const done = 'Scheduled: it is in the computer’s list.';
    status.textContent = await sendRequest(app, hookId, name, { schedule: request }, done);
    // taken: the form is ready for another (a refusal keeps what the person chose, to mend it)
    if (status.textContent === done) {
      form.reset();
      kind.onchange?.(new Event('change'));
    }
  };
  return h('details', { class: 'schedule-box' }, h('summary', {}, 'Schedule this agent…'), form);
}
