/**
 * Session history and the live timeline (spec 4.11.1, 4.12; docs/files.md): what of an agent's transcript leaves the
 * computer, and in what pieces. Pure: the transcript readers' events in, history items out, cut into chunks that
 * the listener seals (purpose `history.chunk`, core/protocol/bodies.ts HistoryChunkBody) for itself and the devices the
 * account lists at that moment, so a device paired later cannot open them.
 *
 * What an item may hold: the turn's prompt, the agent's replies, one line per tool (its name, a short target: a
 * file's path or a shell command's first line, relative to the project where it is inside it, how many lines an
 * edit changes, and whether it worked), token counts, the to-do list (at most 30 tasks of 100 characters). Never a
 * tool's other arguments, output or a file's contents: the readers do not keep them and nothing here adds them.
 */
import type { TranscriptEvent } from './readers.js';

/**
 * Agents with a timeline and history (spec 4.12's table): the transcript readers' (readers.ts TRANSCRIPT_AGENTS), and
 * A5 opencode from its database. Written out rather than derived so the web app, which needs this list and
 * `timeline()`, does not load the readers; test/unit/transcripts/history.test.ts holds it to them.
 */
export const TIMELINE_AGENTS: ReadonlySet<string> = new Set(['A1', 'A2', 'A3', 'A4', 'A5']);

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

/**
 * `target` with the project folder `cwd` taken out: `/home/me/proj/src/a.ts` is `src/a.ts`, `cd /home/me/proj && …`
 * is `cd . && …`; a path elsewhere stays whole.
 */
export function relativeTarget(target: string, cwd: string | undefined): string {
  const root = cwd?.replace(/\/+$/, '');
  if (!root) return target;
  const escaped = root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // the folder and the slash after it go (`src/a.ts`); the folder alone, or with a slash and nothing after, is `.`
  return target.replace(
    new RegExp(`(?<![\\w./-])${escaped}(?:(/+)(?=[^\\s;&|)'"/])|/*(?=[\\s;&|)'"]|$))`, 'g'),
    (_m, sep: string | undefined) => (sep ? '' : '.'),
  );
}

/**
 * `events` with each prompt before the steps it led to. Claude Code writes a session's first prompt after the reply
 * to it (the reply's line comes first, its time is later): a prompt moves back over the replies and tools just
 * before it whose time is after its own, with what follows them (tool outcomes, tokens). Events without a time keep
 * their place.
 */
export function promptsFirst(events: readonly TranscriptEvent[]): TranscriptEvent[] {
  const out: TranscriptEvent[] = [];
  for (const e of events) {
    if (e.kind !== 'prompt' || !e.at) {
      out.push(e);
      continue;
    }
    let at = out.length;
    for (let i = out.length - 1; i >= 0; i--) {
      const o = out[i]!;
      if (o.kind === 'prompt') break;
      if (o.kind !== 'reply' && o.kind !== 'tool') continue;
      if (!o.at || o.at <= e.at) break;
      at = i;
    }
    out.splice(at, 0, e);
  }
  return out;
}

/** The items of `events`, in order, clipped to what may leave the computer; tool targets relative to `cwd`. */
export function historyItems(events: readonly TranscriptEvent[], opts: { cwd?: string } = {}): HistoryItem[] {
  const out: HistoryItem[] = [];
  for (const e of promptsFirst(events)) {
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
          ...(e.target ? { target: clip(relativeTarget(e.target, opts.cwd), MAX_TARGET_CHARS) } : {}),
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
          ...(item.lines !== undefined ? { lines: item.lines } : {}),
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

const squeeze = (text: string) => text.replace(/\s+/g, ' ').trim();

/** A prompt is the message's text: the same words, or its start when the history cut it (`…`, MAX_TEXT_CHARS). */
function sameText(prompt: string, text: string): boolean {
  const p = squeeze(prompt);
  const t = squeeze(text);
  if (p === t) return true;
  return prompt.length >= MAX_TEXT_CHARS && p.endsWith('…') && t.startsWith(p.slice(0, -1).trimEnd());
}

/**
 * Where each message the phone sent sits in a conversation: the index of the turn whose prompt is its text, or null
 * (the app draws it after the last turn, with what became of it). Only a message the listener typed (`typed`) is
 * placed, oldest first, each turn at most once and in order, so two messages with the same words take two turns.
 * Known limit: an older turn with the same words typed at the keyboard is taken for the phone's (there is no time
 * on a turn to tell them apart).
 */
export function placeMessages(
  prompts: readonly (string | null)[],
  messages: readonly { text: string; typed: boolean }[],
): (number | null)[] {
  let next = 0;
  return messages.map((m) => {
    if (!m.typed) return null;
    for (let i = next; i < prompts.length; i++) {
      const prompt = prompts[i];
      if (prompt !== null && prompt !== undefined && sameText(prompt, m.text)) {
        next = i + 1;
        return i;
      }
    }
    return null;
  });
}
