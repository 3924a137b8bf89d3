/**
 * Session history and the live timeline (spec 4.11.1, 4.12; docs/files.md): what of an agent's transcript leaves the
 * computer, and in what pieces. Pure: the transcript readers' events in, history items out, cut into chunks that
 * the listener seals (purpose `history.chunk`, core/seal/bodies.ts HistoryChunkBody) for itself and the devices the
 * account lists at that moment, so a device paired later cannot open them.
 *
 * What an item may hold: the turn's prompt, the agent's replies, one line per tool (its name, a short target: a
 * file's path or only a shell command's program, and whether it worked), token counts, the to-do list (at most 30
 * tasks of 100 characters). Never a tool's arguments, output or a file's contents: the readers do not keep them and
 * nothing here adds them.
 */
import { TRANSCRIPT_AGENTS, type TranscriptEvent } from './readers.js';

/** Agents with a timeline and history (spec 4.12's table): the transcript readers', and A5 opencode from its database. */
export const TIMELINE_AGENTS: ReadonlySet<string> = new Set([...TRANSCRIPT_AGENTS, 'A5']);

/** Spec 4.12 / 8: the to-do list sent. */
export const MAX_TODOS = 30;
export const MAX_TODO_CHARS = 100;
/** A prompt or reply longer than this is cut (the rest is on the computer). */
export const MAX_TEXT_CHARS = 8_000;
export const MAX_TARGET_CHARS = 300;
/** At most this many items in one chunk (a transcript caught up after a restart goes in several). */
export const MAX_CHUNK_ITEMS = 40;

export type HistoryItem =
  | { k: 'prompt'; text: string }
  | { k: 'reply'; text: string }
  | { k: 'tool'; id: string; name: string; target?: string; lines?: number }
  | { k: 'result'; id: string; ok: boolean }
  | { k: 'tokens'; input: number; output: number }
  | { k: 'todos'; items: { text: string; status: 'pending' | 'in_progress' | 'completed' }[] };

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** The items of `events`, in order, clipped to what may leave the computer. */
export function historyItems(events: readonly TranscriptEvent[]): HistoryItem[] {
  const out: HistoryItem[] = [];
  for (const e of events) {
    switch (e.kind) {
      case 'prompt':
      case 'reply':
        if (e.text.trim()) out.push({ k: e.kind, text: clip(e.text, MAX_TEXT_CHARS) });
        break;
      case 'tool':
        out.push({
          k: 'tool',
          id: e.id.slice(0, 128),
          name: clip(e.name, 128),
          ...(e.target ? { target: clip(e.target, MAX_TARGET_CHARS) } : {}),
          ...(e.lines !== undefined ? { lines: e.lines } : {}),
        });
        break;
      case 'tool_result':
        out.push({ k: 'result', id: e.id.slice(0, 128), ok: e.ok });
        break;
      case 'tokens':
        if (e.input > 0 || e.output > 0) out.push({ k: 'tokens', input: e.input, output: e.output });
        break;
      case 'todos':
        out.push({
          k: 'todos',
          items: e.items.slice(0, MAX_TODOS).map((t) => ({ text: clip(t.text, MAX_TODO_CHARS), status: t.status })),
        });
        break;
    }
  }
  return out;
}

/** `items` in chunks of at most MAX_CHUNK_ITEMS, in order. */
export function chunked<T>(items: readonly T[], size = MAX_CHUNK_ITEMS): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** A timeline as the app draws it: one turn per prompt, each with its tools (and outcome), replies and tokens. */
export interface TimelineTurn {
  prompt: string | null;
  steps: (
    | { kind: 'tool'; name: string; target?: string; lines?: number; ok: boolean | null }
    | { kind: 'reply'; text: string }
  )[];
  tokens: { input: number; output: number };
}

/** Folds items (oldest first) into turns; the to-do list is the newest one seen. */
export function timeline(items: readonly HistoryItem[]): {
  turns: TimelineTurn[];
  todos: (HistoryItem & { k: 'todos' }) | null;
} {
  const turns: TimelineTurn[] = [];
  let todos: (HistoryItem & { k: 'todos' }) | null = null;
  const tools = new Map<string, TimelineTurn['steps'][number] & { kind: 'tool' }>();
  // Claude Code does not write its transcript in order (a turn's reply can come before its prompt): an outcome read
  // before its call waits for it.
  const early = new Map<string, boolean>();
  const current = () => {
    if (turns.length === 0) turns.push({ prompt: null, steps: [], tokens: { input: 0, output: 0 } });
    return turns[turns.length - 1]!;
  };
  for (const item of items) {
    switch (item.k) {
      case 'prompt':
        turns.push({ prompt: item.text, steps: [], tokens: { input: 0, output: 0 } });
        break;
      case 'reply':
        current().steps.push({ kind: 'reply', text: item.text });
        break;
      case 'tool': {
        const step = {
          kind: 'tool' as const,
          name: item.name,
          ...(item.target ? { target: item.target } : {}),
          ok: early.get(item.id) ?? null,
        };
        tools.set(item.id, step);
        current().steps.push(step);
        break;
      }
      case 'result': {
        const step = tools.get(item.id);
        if (step) step.ok = item.ok;
        else early.set(item.id, item.ok);
        break;
      }
      case 'tokens': {
        const t = current().tokens;
        t.input += item.input;
        t.output += item.output;
        break;
      }
      case 'todos':
        todos = item;
        break;
    }
  }
  return { turns, todos };
}
