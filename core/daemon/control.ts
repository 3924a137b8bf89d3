/**
 * The listener's control socket (`~/.svc/listener.sock`): what the CLI may ask the running daemon, and what it
 * answers. Newline-delimited JSON, one request per line, answered in order; an `events` request with `follow`
 * keeps the connection open and streams one `transition` line per transition after the first answer.
 *
 * Nothing here carries a key, a push body, typed text or a screen: actors are shown by id, machine, state value and
 * a context summary made of counts, flags and short codes (actors/debug/inspector.ts).
 */
import { z } from 'zod/v3';
import { HOOK_CONTROL_REPLIES, HOOK_CONTROL_REQUESTS } from '../hooks/control.js';
import { MCP_CONTROL_REPLIES, MCP_CONTROL_REQUESTS } from '../mcp/control.js';

/** The socket's file name in `~/.svc`. */
export const CONTROL_SOCKET_NAME = 'listener.sock';
/** A request line longer than this is refused and the connection closed. */
export const CONTROL_LINE_MAX = 64 * 1024;
/** Transitions the daemon keeps for `events`. */
export const TRANSITIONS_KEPT = 500;

export const ControlRequest = z.discriminatedUnion('type', [
  z.object({ type: z.literal('status') }),
  z.object({ type: z.literal('stop') }),
  z.object({ type: z.literal('state') }),
  z.object({
    type: z.literal('events'),
    follow: z.boolean().optional(),
    limit: z.number().int().min(0).max(TRANSITIONS_KEPT).optional(),
  }),
  z.object({ type: z.literal('charts') }),
  // svc mcp and svc verify: asks and notifications (core/mcp/control.ts)
  ...MCP_CONTROL_REQUESTS,
  // svc remote-hook: the agent's own hooks (core/hooks/control.ts)
  ...HOOK_CONTROL_REQUESTS,
]);
export type ControlRequest = z.infer<typeof ControlRequest>;

/** A context summary: short scalar facts only. */
export const Summary = z.record(z.string(), z.union([z.string(), z.number().finite(), z.boolean(), z.null()]));
export type Summary = z.infer<typeof Summary>;

/** An XState state value: a leaf name, or a region → value map. */
export type StateValue = string | { [region: string]: StateValue };
const StateValueSchema: z.ZodType<StateValue> = z.lazy(() =>
  z.union([z.string(), z.record(z.string(), StateValueSchema)]),
);

export const ActorStatus = z.enum(['active', 'done', 'error', 'stopped']);

export const ActorView = z.object({
  /** Unique in the running system (xstate's session id, `x:12`). */
  key: z.string(),
  /** What a person calls it: the system id (`session.svc-proj`), else the actor id; the root by its machine. */
  id: z.string(),
  parent: z.string().nullable(),
  /** The machine's id (`session`); null for promise and callback actors. */
  machine: z.string().nullable(),
  value: StateValueSchema.nullable(),
  status: ActorStatus,
  summary: Summary,
});
export type ActorView = z.infer<typeof ActorView>;

export const TransitionRecord = z.object({
  seq: z.number().int().safe(),
  /** Epoch ms. */
  at: z.number().finite(),
  actor: z.string(),
  key: z.string(),
  parent: z.string().nullable(),
  machine: z.string(),
  /** The event's type only; never its payload. */
  event: z.string(),
  /** Null when the actor starts. */
  from: StateValueSchema.nullable(),
  to: StateValueSchema,
  status: ActorStatus,
  summary: Summary,
});
export type TransitionRecord = z.infer<typeof TransitionRecord>;

const Ok = { ok: z.literal(true) };

/** A listener child that failed (core/supervision.ts): `svc verify` and `svc debug state` show it. */
export const FailingChild = z.object({
  id: z.string(),
  /** Failures in the last ten minutes. */
  failures: z.number().int().safe(),
  givenUp: z.boolean(),
  error: z.string(),
});
export type FailingChild = z.infer<typeof FailingChild>;

export const StatusReply = z.object({
  ...Ok,
  type: z.literal('status'),
  pid: z.number().int().safe(),
  version: z.string(),
  startedAt: z.number().finite(),
  uptimeMs: z.number().finite(),
  tmuxSocket: z.string(),
  /** The relay link's state value, e.g. `connection.online.quiet`. */
  relay: z.string().nullable(),
  sessions: z.number().int().safe(),
  /** Which command runs this listener: `listener` (the background daemon or a foreground `svc listener`) or `up`. */
  host: z.enum(['listener', 'up']).optional(),
  /** Children that failed and were restarted or given up (absent from listeners before supervision). */
  failing: z.array(FailingChild).optional(),
});
export type StatusReply = z.infer<typeof StatusReply>;

export const ControlReply = z.discriminatedUnion('type', [
  StatusReply,
  z.object({
    ...Ok,
    type: z.literal('stop'),
    pid: z.number().int().safe(),
    host: z.enum(['listener', 'up']).optional(),
  }),
  z.object({ ...Ok, type: z.literal('state'), actors: z.array(ActorView), failing: z.array(FailingChild).optional() }),
  z.object({ ...Ok, type: z.literal('events'), transitions: z.array(TransitionRecord), following: z.boolean() }),
  z.object({ ...Ok, type: z.literal('transition'), transition: TransitionRecord }),
  // Chart models (core/debug/statechart.ts ChartModel) by machine, and the actor tree of the definitions.
  z.object({ ...Ok, type: z.literal('charts'), charts: z.array(z.unknown()), tree: z.array(z.string()) }),
  ...MCP_CONTROL_REPLIES,
  ...HOOK_CONTROL_REPLIES,
  z.object({
    ok: z.literal(false),
    type: z.literal('error'),
    error: z.object({ code: z.string(), message: z.string() }),
  }),
]);
export type ControlReply = z.infer<typeof ControlReply>;

export type ControlErrorCode = 'bad_json' | 'bad_request' | 'line_too_long' | 'internal';

export function errorReply(code: ControlErrorCode, message: string): ControlReply {
  return { ok: false, type: 'error', error: { code, message } };
}

/** Parse one request line: the request, or the error reply to send back. */
export function parseRequest(line: string): { request: ControlRequest } | { error: ControlReply } {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return { error: errorReply('bad_json', 'a request is one JSON object per line') };
  }
  const parsed = ControlRequest.safeParse(json);
  if (!parsed.success) {
    const type = typeof json === 'object' && json !== null ? (json as { type?: unknown }).type : undefined;
    return {
      error: errorReply(
        'bad_request',
        typeof type === 'string'
          ? `unknown or malformed request ${JSON.stringify(type.slice(0, 40))}`
          : 'a request needs a "type": status, stop, state, events or charts',
      ),
    };
  }
  return { request: parsed.data };
}

/**
 * Split what arrived into complete lines. `overflow` when the unfinished line is longer than `max`: the caller
 * answers `line_too_long` and closes, rather than buffering without end.
 */
export function takeLines(
  pending: string,
  chunk: string,
  max = CONTROL_LINE_MAX,
): { lines: string[]; rest: string; overflow: boolean } {
  const text = pending + chunk;
  const parts = text.split('\n');
  const rest = parts.pop() ?? '';
  const lines = parts.map((l) => l.replace(/\r$/, '')).filter((l) => l.trim() !== '');
  const overflow = rest.length > max || lines.some((l) => l.length > max);
  return { lines: overflow ? [] : lines, rest: overflow ? '' : rest, overflow };
}

/** `running.waitingToScan`; parallel regions joined with `, ` in definition order. */
export function formatStateValue(value: StateValue | null | undefined): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return value;
  const leaves: string[] = [];
  const walk = (v: StateValue, prefix: string) => {
    if (typeof v === 'string') {
      leaves.push(prefix ? `${prefix}.${v}` : v);
      return;
    }
    const entries = Object.entries(v);
    if (entries.length === 0) leaves.push(prefix);
    for (const [k, child] of entries) walk(child, prefix ? `${prefix}.${k}` : k);
  };
  walk(value, '');
  return leaves.join(', ');
}

/** The leaves of a state value (`agent.idle`), in definition order. */
export function stateLeaves(value: StateValue | null | undefined): string[] {
  const text = formatStateValue(value);
  return text === '-' ? [] : text.split(', ');
}

/**
 * What a transition changed, as the leaves it left and the leaves it entered: `delivery.ready → delivery.injecting`
 * rather than every region of a parallel machine. `(start)` for a new actor; null when nothing changed.
 */
export function describeMove(from: StateValue | null, to: StateValue): string | null {
  if (from === null) return `(start) → ${formatStateValue(to)}`;
  const before = stateLeaves(from);
  const after = stateLeaves(to);
  const left = before.filter((l) => !after.includes(l));
  const entered = after.filter((l) => !before.includes(l));
  if (left.length === 0 && entered.length === 0) return null;
  return `${left.join(', ') || '-'} → ${entered.join(', ') || '-'}`;
}

/** `a=1 b=true c=-`: a summary on one line. */
export function formatSummary(summary: Summary): string {
  return Object.entries(summary)
    .map(([k, v]) => `${k}=${v === null ? '-' : typeof v === 'string' && /\s/.test(v) ? JSON.stringify(v) : v}`)
    .join(' ');
}

/** The tree as indented rows (parents before children, siblings by id). */
export function actorRows(actors: readonly ActorView[]): { actor: ActorView; depth: number; prefix: string }[] {
  const byParent = new Map<string | null, ActorView[]>();
  const keys = new Set(actors.map((a) => a.key));
  for (const a of actors) {
    const parent = a.parent !== null && keys.has(a.parent) ? a.parent : null;
    const list = byParent.get(parent) ?? [];
    list.push(a);
    byParent.set(parent, list);
  }
  for (const list of byParent.values()) list.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const rows: { actor: ActorView; depth: number; prefix: string }[] = [];
  const visit = (a: ActorView, depth: number, prefix: string, childPrefix: string) => {
    rows.push({ actor: a, depth, prefix });
    const children = byParent.get(a.key) ?? [];
    children.forEach((c, i) => {
      const last = i === children.length - 1;
      visit(c, depth + 1, `${childPrefix}${last ? '└── ' : '├── '}`, `${childPrefix}${last ? '    ' : '│   '}`);
    });
  };
  for (const root of byParent.get(null) ?? []) visit(root, 0, '', '');
  return rows;
}
