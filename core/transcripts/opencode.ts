/**
 * A5 opencode keeps its sessions in a SQLite database, not a transcript file (spec 4.11.1, 4.12: "A5 read from its
 * database"): `~/.local/share/opencode/opencode.db`, tables `session` (its `directory`), `message` (`data.role`),
 * `part` (`data.type`: `text`, `tool` with `state.status`, `step-finish` with `tokens`) and `todo`. Pure: rows in,
 * the same neutral events as the transcript readers out. A part is updated in place as it grows (a text while it
 * streams, a tool from pending to completed): each event is given once, when it is final, and `seen` remembers it.
 * Checked against opencode 1.18.33's own database (test/fixtures/transcripts/A5/session.db); a part of a type this
 * reader does not know is counted, so a drifted format fails the fixture test.
 */
import { type TodoStatus, type TranscriptEvent, toolTarget } from './readers.js';

/** One row of `part` with its message's role, as actors/transcripts/opencodeDb.ts selects it. */
export interface OpencodePartRow {
  id: string;
  role: string;
  /** The part's JSON `data`. */
  data: string;
}

/** Part types that carry nothing for the history (known, so not counted as drift). */
const QUIET = new Set([
  'step-start',
  'patch',
  'snapshot',
  'reasoning',
  'file',
  'agent',
  'compaction',
  'subtask',
  'retry',
]);

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

export function opencodeEvents(
  rows: readonly OpencodePartRow[],
  seen: Set<string>,
): { events: TranscriptEvent[]; unknown: number } {
  const events: TranscriptEvent[] = [];
  let unknown = 0;
  const once = (key: string) => {
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  };
  for (const row of rows) {
    let d: Json;
    try {
      const parsed = JSON.parse(row.data) as unknown;
      if (!isObj(parsed)) throw new Error('not an object');
      d = parsed;
    } catch {
      unknown++;
      continue;
    }
    const type = d.type;
    if (type === 'text') {
      const text = typeof d.text === 'string' ? d.text : '';
      if (row.role === 'user') {
        if (text && d.synthetic !== true && once(`${row.id}:prompt`)) events.push({ kind: 'prompt', text });
      } else if (isObj(d.time) && typeof d.time.end === 'number' && text && once(`${row.id}:reply`)) {
        // a reply is given once it is whole (its `time.end` is set)
        events.push({ kind: 'reply', text });
      }
    } else if (type === 'tool') {
      const state = isObj(d.state) ? d.state : {};
      const id = String(d.callID ?? row.id);
      if (once(`${row.id}:tool`)) {
        const t = toolTarget(state.input);
        events.push({ kind: 'tool', id, name: String(d.tool ?? ''), ...(t ? { target: t } : {}) });
      }
      if ((state.status === 'completed' || state.status === 'error') && once(`${row.id}:result`))
        events.push({ kind: 'tool_result', id, ok: state.status === 'completed' });
    } else if (type === 'step-finish') {
      const tokens = isObj(d.tokens) ? d.tokens : {};
      if (once(`${row.id}:tokens`))
        events.push({ kind: 'tokens', input: num(tokens.input), output: num(tokens.output) });
    } else if (typeof type !== 'string' || !QUIET.has(type)) unknown++;
  }
  return { events, unknown };
}

/** opencode's `todo` rows as the to-do list event (`completed`/`in_progress`/`pending`; `cancelled` is done with). */
export function opencodeTodos(rows: readonly { content: string; status: string }[]): TranscriptEvent {
  const status = (s: string): TodoStatus =>
    s === 'completed' || s === 'cancelled' ? 'completed' : s === 'in_progress' ? 'in_progress' : 'pending';
  return { kind: 'todos', items: rows.map((r) => ({ text: r.content, status: status(r.status) })) };
}
