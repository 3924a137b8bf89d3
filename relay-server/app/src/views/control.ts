/**
 * Session control from the phone (core/sessions/control.ts): end (the agent's own exit command), force end (tmux
 * kill-session), resume and forget a past session. Each is asked first on the screen that offers it; the request
 * travels sealed like key input (`pane.keys` with `control`), and its `keys.result` says what became of it.
 */

import type { KeysBody } from '../../../../core/protocol/bodies.js';
import type { RelayFrame } from '../../../../core/protocol/index.js';
import { refusalText } from '../../../../core/protocol/refusalText.js';
import type { ControlAction } from '../../../../core/sessions/control.js';
import { sealFor } from '../crypto.js';
import { nextSeq } from '../db.js';
import { h, replace } from '../dom.js';
import type { App } from '../state.js';

/** How long an answer is waited for before the phone says it does not know. */
const ANSWER_MS = 30_000;

const DONE_TEXT: Record<ControlAction, string> = {
  end: 'The exit command was typed; the session ends when the agent has quit.',
  kill: 'The tmux session was killed.',
  resume: 'Resumed: it is in the list again.',
  forget: 'Forgotten.',
};

/** Sends `action` for `name` and resolves with a sentence on what became of it. */
export function sendControl(app: App, hookId: string, name: string, action: ControlAction): Promise<string> {
  return sendRequest(app, hookId, name, { control: action }, DONE_TEXT[action]);
}

/** The relay's answer to a sealed request (its `keys.result`), or a sentence on why there is none. */
export type KeysAnswer = { frame: Extract<RelayFrame, { type: 'keys.result' }> } | { problem: string };

/**
 * Seals `fields` about session `name` in a `pane.keys` body (a control action, a schedule, a file request, a chunk
 * of a file), sends it, and resolves with the `keys.result` that answers it.
 */
export async function keysRequest(
  app: App,
  hookId: string,
  name: string,
  fields: Omit<KeysBody, 'session' | 'seq'>,
  waitMs = ANSWER_MS,
): Promise<KeysAnswer> {
  const seq = await nextSeq('pane.keys');
  const body: KeysBody = { session: name, seq, ...fields };
  const envelope = await sealFor(app.device, app.keyFor(hookId), 'pane.keys', body);
  return new Promise<KeysAnswer>((resolve) => {
    const timer = setTimeout(() => {
      off();
      resolve({ problem: 'No answer from the computer yet; look again in a moment.' });
    }, waitMs);
    const off = app.onFrames((frame: RelayFrame) => {
      if (frame.type !== 'keys.result' || frame.computer !== hookId || frame.session !== name) return;
      if (frame.seq !== seq && !(frame.seq === null && frame.state === 'refused')) return;
      clearTimeout(timer);
      off();
      resolve({ frame });
    });
    if (!app.link.send({ type: 'pane.keys', computer: hookId, session: name, envelope: envelope as never })) {
      clearTimeout(timer);
      off();
      resolve({ problem: 'Not sent: the relay cannot be reached.' });
    }
  });
}

/**
 * Sends a sealed request about session `name` (a control action or a schedule request) and resolves with `done`, or
 * the sentence of the refusal, or why nothing is known yet.
 */
export async function sendRequest(
  app: App,
  hookId: string,
  name: string,
  fields: Pick<KeysBody, 'control' | 'schedule'>,
  done: string,
): Promise<string> {
  const answer = await keysRequest(app, hookId, name, fields);
  if ('problem' in answer) return answer.problem;
  return answer.frame.state === 'typed' ? done : refusalText(answer.frame.code);
}

/**
 * A button that asks before it acts: the first tap shows what will happen with Confirm and Cancel; Confirm sends.
 * `status` shows the outcome.
 */
export function askingButton(opts: {
  label: string;
  question: string;
  confirm: string;
  danger?: boolean;
  run: () => Promise<string>;
  status: HTMLElement;
}): HTMLElement {
  const box = h('span', { class: 'asking' });
  const idle = () =>
    replace(
      box,
      h(
        'button',
        {
          type: 'button',
          class: `button${opts.danger ? ' danger' : ' secondary'}`,
          onclick: () =>
            replace(
              box,
              h('span', { class: 'asking-question', role: 'alert' }, opts.question),
              h(
                'button',
                {
                  type: 'button',
                  class: `button${opts.danger ? ' danger' : ' primary'}`,
                  onclick: async () => {
                    idle();
                    opts.status.textContent = `${opts.label}: sending…`;
                    opts.status.textContent = `${opts.label}: ${await opts.run()}`;
                  },
                },
                opts.confirm,
              ),
              h('button', { type: 'button', class: 'button secondary', onclick: idle }, 'Cancel'),
            ),
        },
        opts.label,
      ),
    );
  idle();
  return box;
}
