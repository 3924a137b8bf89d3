/**
 * The approval card of a session (spec 4.11.2): what the agent waits for, opened from the sealed card the listener
 * puts in the session's inventory record, with its choices as buttons. An answer names the choice and carries the
 * fingerprint of the prompt the card showed; the listener types it only while that very prompt is on the screen,
 * else it comes back `prompt_changed` and nothing was typed. The Watch screen's keys carry the fingerprint of the
 * prompt it draws (`watchFingerprint`).
 */
import { readApproval } from '../../../../core/agents/approvals.js';
import type { ApprovalCardBody, KeysBody } from '../../../../core/protocol/bodies.js';
import type { RelayFrame, SessionRecord } from '../../../../core/protocol/index.js';
import { refusalText } from '../../../../core/protocol/refusalText.js';
import { sessionAgent } from '../../../../core/sessions/view.js';
import { parseBody } from '../api.js';
import { openFrom, sealFor } from '../crypto.js';
import { nextSeq } from '../db.js';
import { unopenedText } from '../device.js';
import { h, replace } from '../dom.js';
import { findSession } from '../inventory.js';
import type { App } from '../state.js';
import type { ConversationEvent } from './conversation.js';

/** The fingerprint of the approval prompt on a screen the Watch draws (its rows), for the keys sent from it. */
export function watchFingerprint(record: SessionRecord | undefined, rows: string): string | undefined {
  const agent = record ? sessionAgent(record) : undefined;
  return agent ? readApproval(agent.id, { text: rows })?.fingerprint : undefined;
}

/** The cards answered from this phone and typed, by session: lines of its conversation (views/conversation.ts). */
const answered = new Map<string, ConversationEvent[]>();

export function cardEvents(hookId: string, name: string): ConversationEvent[] {
  return answered.get(`${hookId}/${name}`) ?? [];
}

/** The card of `hookId`/`name`, kept in step with the inventory; `update` redraws it. */
export function approvalCard(app: App, hookId: string, name: string) {
  const el = h('section', { class: 'approval', 'aria-label': 'Approval', hidden: true });
  let sealed: unknown = null;
  let card: ApprovalCardBody | null = null;
  let problem: string | null = null;
  /** What became of the last answer sent from this card (and the card's tool then: a newer card may come meanwhile). */
  let outcome: { seq: number; label: string; text: string; typed?: boolean; tool?: string } | null = null;

  const open = async (envelope: unknown) => {
    const key = app.keyFor(hookId);
    if (!key) return;
    try {
      const body = await parseBody('ApprovalCardBody', await openFrom(app.device, key, 'approval', envelope));
      if (envelope !== sealed) return; // a newer card came meanwhile
      if (body.session !== name) throw new Error('a card of another session');
      card = body;
      problem = null;
    } catch (error) {
      card = null;
      problem = unopenedText('The approval card', error);
    }
    draw();
  };

  const answer = async (choice: number) => {
    if (!card) return;
    const label = card.choices[choice]?.label ?? String(choice + 1);
    try {
      const seq = await nextSeq('pane.keys');
      const body: KeysBody = { session: name, seq, answer: { fingerprint: card.fingerprint, choice } };
      const envelope = await sealFor(app.device, app.keyFor(hookId), 'pane.keys', body);
      const sent = app.link.send({ type: 'pane.keys', computer: hookId, session: name, envelope: envelope as never });
      outcome = { seq, label, tool: card.tool, text: sent ? 'sending…' : 'not sent, the relay cannot be reached.' };
    } catch (error) {
      outcome = { seq: -1, label, text: `not sent: ${(error as Error).message}.` };
    }
    draw();
  };

  const offFrames = app.onFrames((frame: RelayFrame) => {
    if (frame.type !== 'keys.result' || frame.computer !== hookId || frame.session !== name) return;
    if (!outcome || frame.seq !== outcome.seq) return;
    if (frame.state === 'typed' && outcome.tool !== undefined) {
      const key = `${hookId}/${name}`;
      const list = answered.get(key) ?? [];
      list.push({
        id: `card-${frame.seq}`,
        state: 'answered',
        label: 'Answered',
        text: `${outcome.tool} · “${outcome.label}”`,
      });
      answered.set(key, list.slice(-50));
    }
    outcome = {
      ...outcome,
      typed: frame.state === 'typed',
      text:
        frame.state === 'typed'
          ? 'typed on the computer.'
          : refusalText(frame.code).replace(/^Not typed: /, 'not typed: '),
    };
    draw();
  });

  function draw(): void {
    const shown = card !== null || problem !== null || outcome !== null;
    el.hidden = !shown;
    const result = outcome
      ? h(
          'p',
          { class: 'approval-result', role: 'status' },
          `${card && outcome.typed ? 'Last answer, ' : ''}${outcome.label}: ${outcome.text}`,
        )
      : null;
    replace(el, shown ? [...cardContent(), result] : []);
  }

  function cardContent(): (HTMLElement | null)[] {
    if (!card) return [problem ? h('p', { class: 'note' }, problem) : null];
    if (!card.readable) {
      return [
        h('h3', {}, 'Waiting for your approval'),
        h(
          'p',
          { class: 'note' },
          'svc could not read this dialog (a layout it does not know yet). Open Watch to see it and answer with the keys.',
        ),
        h('a', { class: 'button', href: `#/w/${encodeURIComponent(hookId)}/${encodeURIComponent(name)}` }, 'Watch'),
      ];
    }
    const c = card;
    return [
      h('h3', { class: 'approval-tool' }, c.tool),
      c.detail.length ? h('pre', { class: 'approval-detail' }, c.detail.join('\n')) : null,
      h('p', { class: 'approval-question' }, c.question),
      h(
        'div',
        { class: 'approval-choices' },
        c.choices.map((choice, i) =>
          h(
            'button',
            {
              type: 'button',
              class: `button${i === 0 ? ' primary' : ''}${choice.always ? ' always' : ''}`,
              'data-choice': String(i),
              'aria-current': c.highlighted === i ? 'true' : null,
              onclick: () => void answer(i),
            },
            choice.label,
            choice.always ? h('span', { class: 'tag tag-always' }, 'don’t ask again') : null,
          ),
        ),
      ),
    ];
  }

  const update = () => {
    const record = findSession(app.computers, hookId, name)?.record;
    const envelope = record?.approval ?? null;
    if (envelope === null) {
      // the prompt went (answered, here or at the keyboard): the card goes, the last outcome stays
      if (sealed !== null) {
        sealed = null;
        card = null;
        problem = null;
        draw();
      }
      return;
    }
    if (JSON.stringify(envelope) === JSON.stringify(sealed)) return;
    sealed = envelope;
    // What became of the last tap stays until the next one: an agent may redraw its dialog once more after the
    // answer was typed (a new card for a moment, then none), and that must not wipe the "typed" the person is
    // reading (it did, on a loaded CI machine with Gemini CLI); after a refusal it says why the tap did nothing.
    void open(envelope);
  };
  update();
  return { el, update, dispose: offFrames };
}
