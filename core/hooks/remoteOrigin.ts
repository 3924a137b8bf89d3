/**
 * Remote-origin detection on the agent's side (spec 2.3, 4.13.1-3): the decisions of `svc remote-hook <agent>`.
 * The agent's prompt-submit hook hands over the submitted prompt; it counts as typed by the phone only when its
 * sha256 is exactly the one in the marker the listener wrote for that project directory, the marker is fresh, and
 * the project is not muted. Exact match only: a keystroke at the keyboard racing a phone message changes the text,
 * so it is never flagged (4.13.3). On a match the hook answers in the agent's own output format with context that
 * tells the model the person drives the session from the phone (sticky REMOTE, 4.13.1).
 *
 * Hook input and output formats, per agent, as the real programs define them:
 * - Claude Code `UserPromptSubmit`: stdin `{ session_id, transcript_path, cwd, hook_event_name, prompt }`; stdout
 *   `{ hookSpecificOutput: { hookEventName: "UserPromptSubmit", additionalContext } }`.
 * - Codex `UserPromptSubmit` (0.169.0 follows Claude Code's shape: `hookSpecificOutput.additionalContext`).
 * - Gemini CLI `BeforeAgent` (0.61.0 `fireBeforeAgentEvent`): stdin `{ session_id, transcript_path, cwd,
 *   hook_event_name: "BeforeAgent", timestamp, prompt }`; stdout `hookSpecificOutput.additionalContext`, which it
 *   wraps in `<hook_context>`.
 */

/**
 * The agents whose hooks call `svc remote-hook <agent>`, with the name of their prompt-submit event (pi's is the
 * extension's `before_agent_start`, which svc's pi extension hands over in the same JSON shape).
 */
export const HOOK_AGENTS = {
  claude: 'UserPromptSubmit',
  codex: 'UserPromptSubmit',
  gemini: 'BeforeAgent',
  pi: 'before_agent_start',
} as const;
export type HookAgent = keyof typeof HOOK_AGENTS;

export function isHookAgent(name: string): name is HookAgent {
  return Object.hasOwn(HOOK_AGENTS, name);
}

/** The events a prompt is submitted on, and those a turn ends on (the Stop-style hooks `svc install` writes). */
const PROMPT_EVENTS = new Set(['UserPromptSubmit', 'BeforeAgent', 'before_agent_start']);
const STOP_EVENTS = new Set(['Stop', 'AfterAgent', 'agent_end']);
/** The events a session starts on: Claude Code's SessionStart (at start, resume, /clear and compaction). */
const START_EVENTS = new Set(['SessionStart']);

/** A marker counts this long after the listener wrote it (the injection, the agent's redraw, its hook). */
export const MARKER_FRESH_SECONDS = 60;

/**
 * Which of the agent's own sessions the hook ran for, when its input says (Claude Code, Codex and Gemini CLI hand
 * over `session_id` and `transcript_path`; svc's pi extension hands over pi's session id and file): the listener
 * follows that file for this pane's session, and resumes that id (issue 30 item 2).
 */
export interface AgentSessionRef {
  transcript?: string;
  agentSession?: string;
}

/** What the hook reads of its input: a submitted prompt, or the end of a turn. */
export type HookInput = (
  | { kind: 'prompt'; prompt: string; cwd: string }
  | { kind: 'stop'; cwd: string }
  | { kind: 'start'; cwd: string }
) &
  AgentSessionRef;

/** An agent's session id as svc passes it to the agent's resume (core/sessions/control.ts `resumeArgv`). */
export const AGENT_SESSION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A transcript path a hook may name: absolute, a `.jsonl` file, no control bytes, no `..` (checked again on use). */
export function transcriptPath(v: unknown): string | undefined {
  if (typeof v !== 'string' || v.length > 4096 || !v.startsWith('/') || !v.endsWith('.jsonl')) return undefined;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control bytes are what is refused
  if (/[\u0000-\u001f\u007f]/.test(v) || v.split('/').includes('..')) return undefined;
  return v;
}

function sessionRef(v: Record<string, unknown>): AgentSessionRef {
  const transcript = transcriptPath(v.transcript_path);
  const id = v.session_id;
  return {
    ...(transcript ? { transcript } : {}),
    ...(typeof id === 'string' && AGENT_SESSION_ID.test(id) ? { agentSession: id } : {}),
  };
}

/**
 * The event of a hook's stdin; null when it is not one of ours. Input without `hook_event_name` is a prompt (the
 * entries of an earlier svc install).
 */
export function parseHookInput(raw: string): HookInput | null {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!v || typeof v !== 'object') return null;
  const { prompt, cwd, hook_event_name: event } = v as Record<string, unknown>;
  if (typeof cwd !== 'string' || cwd === '') return null;
  const ref = sessionRef(v as Record<string, unknown>);
  if (typeof event === 'string' && STOP_EVENTS.has(event)) return { kind: 'stop', cwd, ...ref };
  if (typeof event === 'string' && START_EVENTS.has(event)) return { kind: 'start', cwd, ...ref };
  if (event !== undefined && (typeof event !== 'string' || !PROMPT_EVENTS.has(event))) return null;
  if (typeof prompt !== 'string') return null;
  return { kind: 'prompt', prompt, cwd, ...ref };
}

/** A remote-origin marker as the listener writes it (actors/sessions/marker.ts). */
export interface MarkerRecord {
  epoch: number;
  sha256: string;
  projectDir: string;
  session: string;
}

export type RemoteMatch =
  | { remote: true; session: string }
  | { remote: false; why: 'no marker' | 'stale' | 'different text' | 'other project' | 'muted' };

export function matchRemote(facts: {
  marker: MarkerRecord | null;
  /** sha256 (hex) of the submitted prompt, exactly as the hook received it. */
  promptSha256: string;
  projectDir: string;
  nowSeconds: number;
  muted: boolean;
}): RemoteMatch {
  const { marker } = facts;
  if (facts.muted) return { remote: false, why: 'muted' };
  if (!marker) return { remote: false, why: 'no marker' };
  if (marker.projectDir !== facts.projectDir) return { remote: false, why: 'other project' };
  const age = facts.nowSeconds - marker.epoch;
  if (age < 0 || age > MARKER_FRESH_SECONDS) return { remote: false, why: 'stale' };
  if (marker.sha256.toLowerCase() !== facts.promptSha256.toLowerCase()) return { remote: false, why: 'different text' };
  return { remote: true, session: marker.session };
}

/** What the model is told on a match (sticky REMOTE, spec 4.13.1). */
export const REMOTE_CONTEXT =
  'The person is driving this session from their phone through svc and is not at the keyboard. ' +
  'Until they type at the keyboard again, end every response with a call to the svc_ask tool: a short question ' +
  'they can answer from the phone (with options when there are obvious choices), so the conversation can go on.';

/** The hook's stdout on a match, in the agent's own format. */
export function hookOutput(agent: HookAgent, context: string = REMOTE_CONTEXT): string {
  return JSON.stringify({ hookSpecificOutput: { hookEventName: HOOK_AGENTS[agent], additionalContext: context } });
}
