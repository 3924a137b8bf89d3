/**
 * A session's timeline (spec 4.12) and history (4.11.1) on its screen: the turn's prompt, each tool call with its
 * outcome, the agent's replies and token counts, and the newest to-do list. Drawn from the sealed chunks the
 * listener uploads (`GET /history`, newest page first) and kept live by the `history.chunk` frames that follow.
 * A chunk sealed before this phone was paired does not open here, by design: it is counted, not shown.
 */

import type { RelayFrame } from '../../../../core/protocol/index.js';
import { HistoryPage } from '../../../../core/relay/history.js';
import { HistoryChunkBody } from '../../../../core/seal/bodies.js';
import { type HistoryItem, TIMELINE_AGENTS, timeline } from '../../../../core/transcripts/history.js';
import { request } from '../api.js';
import { openFrom } from '../crypto.js';
import { h, replace } from '../dom.js';
import type { App } from '../state.js';

const REPLY_SHOWN = 600;

export function timelineSection(app: App, hookId: string, name: string, agent: string | undefined) {
  const el = h('section', { class: 'timeline', 'aria-label': 'Timeline' });
  const supported = agent !== undefined && TIMELINE_AGENTS.has(agent);
  /** Opened chunks by relay id. */
  const chunks = new Map<number, { seq: number; reset: boolean; items: HistoryItem[] }>();
  let sealedBefore = 0;
  let problem: string | null = null;
  /** The oldest chunk loaded, when the relay has older ones (a page at a time). */
  let older: number | null = null;
  /** The person asked for earlier pages: a reload of the newest page keeps where they got to. */
  let pagedBack = false;

  const open = async (id: number, envelope: unknown) => {
    if (chunks.has(id)) return;
    const key = app.keyFor(hookId);
    try {
      if (!key) throw new Error('no key');
      const body = HistoryChunkBody.parse(await openFrom(app.device, key, 'history.chunk', envelope));
      if (body.session !== name) throw new Error('another session');
      chunks.set(id, { seq: body.seq, reset: body.reset, items: body.items });
    } catch {
      sealedBefore++;
    }
  };

  const draw = () => {
    if (!supported) {
      replace(el, h('h3', {}, 'Timeline'), h('p', { class: 'muted' }, 'Not available for this agent.'));
      return;
    }
    const ids = [...chunks.keys()].sort((a, b) => a - b);
    let items: HistoryItem[] = [];
    for (const id of ids) {
      const c = chunks.get(id)!;
      if (c.reset) items = [];
      items.push(...c.items);
    }
    const { turns, todos } = timeline(items);
    replace(
      el,
      h('h3', {}, 'Timeline'),
      problem ? h('p', { class: 'muted' }, problem) : null,
      todos && todos.items.length > 0
        ? h(
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
          )
        : null,
      turns.length === 0
        ? h('p', { class: 'muted' }, problem ? '' : 'Nothing yet: the agent’s turns show here as it works.')
        : h(
            'ol',
            { class: 'turns', 'aria-label': 'Turns' },
            turns.map((turn) =>
              h(
                'li',
                { class: 'turn' },
                turn.prompt !== null ? h('p', { class: 'turn-prompt' }, turn.prompt) : null,
                h(
                  'ul',
                  { class: 'steps' },
                  turn.steps.map((s) =>
                    s.kind === 'tool'
                      ? h(
                          'li',
                          { class: `step tool${s.ok === false ? ' failed' : ''}` },
                          s.ok === null ? '… ' : s.ok ? '✓ ' : '✗ ',
                          h('span', { class: 'tool-name' }, s.name),
                          s.target ? h('span', { class: 'tool-target' }, ` ${s.target}`) : null,
                          s.lines !== undefined
                            ? h('span', { class: 'muted' }, ` · ${s.lines} line${s.lines === 1 ? '' : 's'}`)
                            : null,
                        )
                      : h(
                          'li',
                          { class: 'step reply' },
                          s.text.length > REPLY_SHOWN ? `${s.text.slice(0, REPLY_SHOWN)}…` : s.text,
                        ),
                  ),
                ),
                turn.tokens.input + turn.tokens.output > 0
                  ? h('p', { class: 'tokens muted' }, `${turn.tokens.input} tokens in · ${turn.tokens.output} out`)
                  : null,
              ),
            ),
          ),
      sealedBefore > 0
        ? h('p', { class: 'muted' }, `${sealedBefore} earlier part(s) were sealed before this phone was paired.`)
        : null,
      older !== null
        ? h('button', { type: 'button', class: 'button secondary', onclick: () => void load(older!) }, 'Show earlier')
        : null,
    );
  };

  const load = async (before?: number) => {
    try {
      const q = `computer=${encodeURIComponent(hookId)}&session=${encodeURIComponent(name)}&limit=200${before ? `&before=${before}` : ''}`;
      const page = await request(HistoryPage, 'GET', `/history?${q}`, { token: app.device.token });
      for (const c of page.chunks) await open(c.id, c.envelope);
      if (before !== undefined) pagedBack = true;
      if (before !== undefined || !pagedBack) older = page.more ? (page.chunks.at(-1)?.id ?? null) : null;
      problem = null;
    } catch (error) {
      problem = `Could not load the history: ${(error as Error).message}`;
    }
    draw();
  };

  const off = app.onFrames((frame: RelayFrame) => {
    if (frame.type !== 'history.chunk' || frame.computer !== hookId || frame.session !== name) return;
    void open(frame.id, frame.envelope).then(draw);
  });
  // chunks stored while the link was down came as no frame: read the newest page again (known ones are skipped)
  const offSubscribed = supported ? app.onSubscribed(() => void load()) : () => {};
  draw();
  if (supported) void load();
  return {
    el,
    dispose: () => {
      off();
      offSubscribed();
    },
  };
}
