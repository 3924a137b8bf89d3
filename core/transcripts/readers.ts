/**
 * The agents' own transcripts, line by line, into one neutral shape (issue 13 part 1; spec 4.11.1, 4.12): the turn's
 * prompt, the agent's replies, each tool call (name, a short target, outcome), token counts and the to-do list.
 * Pure: one JSON line in, events out; actors/transcripts/follow.ts tails the file. Each reader is held to a
 * transcript of the real program (`test/fixtures/transcripts/<id>/`, captured by
 * test/fixtures/capture/transcripts.capture.ts); a line of a kind the reader does not know is reported `unknown`, so
 * the fixture test fails when a new capture shows the format drifted.
 *
 * Decided (spec silent): a tool's `target` is a file's path for file tools, and for a shell command its first line,
 * cut at MAX_COMMAND_CHARS (`npm test -- --run`), so the person reads what ran; never a tool's other arguments, its
 * output or a file's contents. History is sealed for the person's own devices (issue 30: the program's name alone,
 * `✓ Bash npm`, said too little).
 */

export type TodoStatus = 'pending' | 'in_progress' | 'completed';

export type TranscriptEvent =
  | { kind: 'prompt'; text: string; at?: string }
  | { kind: 'reply'; text: string; at?: string }
  /** `lines`: how many lines an edit or a write changes (a number only: never the text). */
  | { kind: 'tool'; id: string; name: string; target?: string; lines?: number; at?: string }
  | { kind: 'tool_result'; id: string; ok: boolean }
  | { kind: 'tokens'; input: number; output: number }
  | { kind: 'todos'; items: { text: string; status: TodoStatus }[] };

export interface LineReading {
  events: TranscriptEvent[];
  /** The line is of a kind this reader knows (false: the format may have drifted). */
  known: boolean;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

const lineCount = (text: string) => (text === '' ? 0 : text.replace(/\n$/, '').split('\n').length);

/**
 * How many lines an edit or write tool changes, from its arguments (which never leave): the larger side of a
 * replacement, a written file's lines, or the `+`/`-` lines of a patch. Undefined for other tools.
 */
function changedLines(args: Json): number | undefined {
  const before = str(args.old_string) ?? str(args.oldText) ?? str(args.old_str);
  const after = str(args.new_string) ?? str(args.newText) ?? str(args.new_str);
  if (before !== undefined || after !== undefined) return Math.max(lineCount(before ?? ''), lineCount(after ?? ''));
  if (Array.isArray(args.edits)) return args.edits.filter(isObj).reduce((n, e) => n + (changedLines(e) ?? 0), 0);
  const content = str(args.content) ?? str(args.file_text);
  if (content !== undefined) return lineCount(content);
  const patch = str(args.patch) ?? (str(args.input)?.startsWith('*** Begin Patch') ? str(args.input) : undefined);
  if (patch !== undefined) return patch.split('\n').filter((l) => /^[+-]/.test(l) && !/^(\+\+\+|---)/.test(l)).length;
  return undefined;
}

/** A tool call's target and changed line count, for the history (core/transcripts/history.ts). */
function toolFacts(args: unknown): { target?: string; lines?: number } {
  const target = toolTarget(args);
  const lines = isObj(args) ? changedLines(args) : undefined;
  return { ...(target ? { target } : {}), ...(lines !== undefined ? { lines } : {}) };
}

/** The most of a shell command's first line a tool line carries. */
export const MAX_COMMAND_CHARS = 120;

/** A shell command's first non-empty line, cut at MAX_COMMAND_CHARS (an ellipsis says so; so does a second line). */
export function commandLine(command: string): string | undefined {
  const lines = command.split('\n').map((l) => l.trim());
  const at = lines.findIndex((l) => l !== '');
  if (at < 0) return undefined;
  const first = lines[at]!;
  const more = lines.slice(at + 1).some((l) => l !== '');
  if (first.length > MAX_COMMAND_CHARS) return `${first.slice(0, MAX_COMMAND_CHARS - 1)}…`;
  return more ? `${first} …` : first;
}

/** File tools name a path; shell tools their command's first line; anything else names nothing. */
export function toolTarget(args: unknown): string | undefined {
  if (!isObj(args)) return undefined;
  const path = str(args.file_path) ?? str(args.filePath) ?? str(args.absolute_path) ?? str(args.path);
  if (path) return path.slice(0, 300);
  const command = args.command ?? args.cmd;
  // Codex runs an argv (`["bash", "-lc", "npm test"]`): the script is its last word
  const text = Array.isArray(command) ? String(command.at(-1) ?? '') : typeof command === 'string' ? command : '';
  return commandLine(text);
}

const todoStatus = (s: unknown): TodoStatus =>
  s === 'completed' || s === 'done' ? 'completed' : s === 'in_progress' ? 'in_progress' : 'pending';

/** A1 Claude Code: `~/.claude/projects/<dir>/<id>.jsonl`, one entry a line. */
function claudeCode(o: Json): LineReading {
  const type = str(o.type);
  const at = str(o.timestamp);
  const message = isObj(o.message) ? o.message : {};
  if (type === 'user') {
    if (o.isMeta === true) return { events: [], known: true };
    const content = message.content;
    if (typeof content === 'string') {
      // the agent's own notes and slash-command records are not the person's prompt
      if (/^\s*<(command-|local-command|system-reminder)/.test(content)) return { events: [], known: true };
      return { events: [{ kind: 'prompt', text: content, ...(at ? { at } : {}) }], known: true };
    }
    const events: TranscriptEvent[] = [];
    for (const part of Array.isArray(content) ? content : []) {
      if (!isObj(part)) continue;
      if (part.type === 'tool_result')
        events.push({ kind: 'tool_result', id: String(part.tool_use_id ?? ''), ok: part.is_error !== true });
      else if (part.type === 'text' && typeof part.text === 'string' && !part.text.startsWith('<'))
        events.push({ kind: 'prompt', text: part.text, ...(at ? { at } : {}) });
    }
    return { events, known: true };
  }
  if (type === 'assistant') {
    const events: TranscriptEvent[] = [];
    for (const part of Array.isArray(message.content) ? message.content : []) {
      if (!isObj(part)) continue;
      if (part.type === 'text' && typeof part.text === 'string' && part.text.trim())
        events.push({ kind: 'reply', text: part.text, ...(at ? { at } : {}) });
      else if (part.type === 'tool_use') {
        const name = String(part.name ?? '');
        const facts = toolFacts(part.input);
        events.push({
          kind: 'tool',
          id: String(part.id ?? ''),
          name,
          ...facts,
          ...(at ? { at } : {}),
        });
        if (name === 'TodoWrite' && isObj(part.input) && Array.isArray(part.input.todos))
          events.push({
            kind: 'todos',
            items: part.input.todos
              .filter(isObj)
              .map((t) => ({ text: String(t.content ?? ''), status: todoStatus(t.status) })),
          });
      }
    }
    if (isObj(message.usage))
      events.push({ kind: 'tokens', input: num(message.usage.input_tokens), output: num(message.usage.output_tokens) });
    return { events, known: true };
  }
  const quiet = [
    'system',
    'summary',
    'ai-title',
    'last-prompt',
    'mode',
    'permission-mode',
    'file-history-snapshot',
    'attachment',
  ];
  return { events: [], known: type !== undefined && quiet.includes(type) };
}

/** A2 Codex: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, `{timestamp, type, payload}` a line. */
function codex(o: Json): LineReading {
  const type = str(o.type);
  const at = str(o.timestamp);
  const p = isObj(o.payload) ? o.payload : {};
  if (type === 'response_item') {
    if (p.type === 'message') {
      const text = (Array.isArray(p.content) ? p.content : [])
        .filter(isObj)
        .map((c) => str(c.text) ?? '')
        .join('');
      // the environment and instructions Codex sends as user/developer messages start with a tag
      if (p.role === 'user' && text && !text.trimStart().startsWith('<'))
        return { events: [{ kind: 'prompt', text, ...(at ? { at } : {}) }], known: true };
      if (p.role === 'assistant' && text.trim())
        return { events: [{ kind: 'reply', text, ...(at ? { at } : {}) }], known: true };
      return { events: [], known: true };
    }
    if (p.type === 'function_call' || p.type === 'local_shell_call' || p.type === 'custom_tool_call') {
      let args: unknown = p.arguments ?? (isObj(p.action) ? p.action : undefined);
      if (typeof args === 'string') {
        try {
          args = JSON.parse(args);
        } catch {
          args = undefined;
        }
      }
      const name = String(p.name ?? 'shell');
      const facts = toolFacts(args);
      const events: TranscriptEvent[] = [
        {
          kind: 'tool',
          id: String(p.call_id ?? p.id ?? ''),
          name,
          ...facts,
          ...(at ? { at } : {}),
        },
      ];
      if (name === 'update_plan' && isObj(args) && Array.isArray(args.plan))
        events.push({
          kind: 'todos',
          items: args.plan.filter(isObj).map((t) => ({ text: String(t.step ?? ''), status: todoStatus(t.status) })),
        });
      return { events, known: true };
    }
    if (p.type === 'function_call_output' || p.type === 'custom_tool_call_output') {
      const out = typeof p.output === 'string' ? p.output : JSON.stringify(p.output ?? '');
      const code = /Process exited with code (\d+)/.exec(out)?.[1];
      return {
        events: [{ kind: 'tool_result', id: String(p.call_id ?? ''), ok: code === undefined || code === '0' }],
        known: true,
      };
    }
    return { events: [], known: ['reasoning', 'web_search_call'].includes(String(p.type)) };
  }
  if (type === 'event_msg') {
    if (p.type === 'token_count' && isObj(p.info) && isObj(p.info.last_token_usage)) {
      const u = p.info.last_token_usage;
      return { events: [{ kind: 'tokens', input: num(u.input_tokens), output: num(u.output_tokens) }], known: true };
    }
    return { events: [], known: true };
  }
  return {
    events: [],
    known: ['session_meta', 'turn_context', 'world_state', 'token_usage_record', 'compacted'].includes(String(type)),
  };
}

/** A4 pi: `~/.pi/agent/sessions/<dir>/*.jsonl`, `{type, id, parentId, timestamp, …}` a line. */
function pi(o: Json): LineReading {
  const type = str(o.type);
  const at = str(o.timestamp);
  if (type !== 'message') {
    const quiet = ['session', 'model_change', 'thinking_level_change', 'compaction', 'custom', 'label'];
    return { events: [], known: type !== undefined && quiet.includes(type) };
  }
  const m = isObj(o.message) ? o.message : {};
  const parts = (Array.isArray(m.content) ? m.content : []).filter(isObj);
  const events: TranscriptEvent[] = [];
  if (m.role === 'user') {
    const text = parts.map((c) => str(c.text) ?? '').join('');
    if (text) events.push({ kind: 'prompt', text, ...(at ? { at } : {}) });
  } else if (m.role === 'assistant') {
    for (const c of parts) {
      if (c.type === 'text' && typeof c.text === 'string' && c.text.trim())
        events.push({ kind: 'reply', text: c.text, ...(at ? { at } : {}) });
      else if (c.type === 'toolCall') {
        const facts = toolFacts(c.arguments);
        events.push({
          kind: 'tool',
          id: String(c.id ?? ''),
          name: String(c.name ?? ''),
          ...facts,
          ...(at ? { at } : {}),
        });
      }
    }
    if (isObj(m.usage)) events.push({ kind: 'tokens', input: num(m.usage.input), output: num(m.usage.output) });
  } else if (m.role === 'toolResult') {
    events.push({ kind: 'tool_result', id: String(m.toolCallId ?? ''), ok: m.isError !== true });
  }
  return { events, known: true };
}

/**
 * A3 Gemini CLI 0.61: `~/.gemini/tmp/<project>/chats/session-*.jsonl`. A message may be written again as it grows
 * (the same `id`, now with its tool calls): `seen` keeps what was already given, so nothing is given twice.
 */
function geminiCli(o: Json, seen: Set<string>): LineReading {
  const once = (key: string) => {
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  };
  if ('$set' in o || ('sessionId' in o && 'startTime' in o)) return { events: [], known: true };
  const id = str(o.id);
  const at = str(o.timestamp);
  if (!id) return { events: [], known: false };
  const events: TranscriptEvent[] = [];
  if (o.type === 'user') {
    for (const part of Array.isArray(o.content) ? o.content.filter(isObj) : []) {
      if (typeof part.text === 'string' && !part.text.trimStart().startsWith('<') && once(`${id}:prompt`))
        events.push({ kind: 'prompt', text: part.text, ...(at ? { at } : {}) });
      const fr = isObj(part.functionResponse) ? part.functionResponse : null;
      if (fr && once(`${id}:result:${String(fr.id)}`)) {
        const response = isObj(fr.response) ? fr.response : {};
        events.push({ kind: 'tool_result', id: String(fr.id ?? ''), ok: !('error' in response) });
      }
    }
    return { events, known: true };
  }
  if (o.type === 'gemini') {
    if (typeof o.content === 'string' && o.content.trim() && once(`${id}:reply`))
      events.push({ kind: 'reply', text: o.content, ...(at ? { at } : {}) });
    for (const call of Array.isArray(o.toolCalls) ? o.toolCalls.filter(isObj) : []) {
      if (!once(`${id}:tool:${String(call.id)}`)) continue;
      const facts = toolFacts(call.args);
      events.push({
        kind: 'tool',
        id: String(call.id ?? ''),
        name: String(call.name ?? ''),
        ...facts,
        ...(at ? { at } : {}),
      });
    }
    if (isObj(o.tokens) && once(`${id}:tokens`))
      events.push({ kind: 'tokens', input: num(o.tokens.input), output: num(o.tokens.output) });
    return { events, known: true };
  }
  return { events: [], known: o.type === 'info' || o.type === 'error' || o.type === 'warning' };
}

const READERS: Readonly<Record<string, (o: Json, seen: Set<string>) => LineReading>> = {
  A1: claudeCode,
  A2: codex,
  A3: geminiCli,
  A4: pi,
};

/** The agents whose transcript svc reads line by line. */
export const TRANSCRIPT_AGENTS: ReadonlySet<string> = new Set(Object.keys(READERS));

/**
 * One line of agent `agent`'s transcript. A line that is not JSON, or not an object, is unknown and gives nothing.
 * `seen`: kept by the caller for one transcript (a reader that meets the same message twice gives it once).
 */
export function readLine(agent: string, line: string, seen: Set<string> = new Set()): LineReading {
  const reader = READERS[agent];
  if (!reader || !line.trim()) return { events: [], known: line.trim() === '' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return { events: [], known: false };
  }
  return isObj(parsed) ? reader(parsed, seen) : { events: [], known: false };
}

/**
 * The complete lines of what was read so far, and the rest: a last line without its newline may still be being
 * written, so it waits for the next read.
 */
export function completeLines(buffered: string): { lines: string[]; rest: string } {
  const end = buffered.lastIndexOf('\n');
  if (end < 0) return { lines: [], rest: buffered };
  return { lines: buffered.slice(0, end).split('\n'), rest: buffered.slice(end + 1) };
}
