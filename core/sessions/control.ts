/**
 * Session control from the phone (spec 3, 4.14; docs/protocol.md "Session control"): end a session the way a person
 * would (the agent's own exit command), force it (tmux `kill-session`, only when the person chose it and confirmed),
 * resume a past session with the agent's own resume (from its session store, in a new named tmux session), forget a
 * past session (gone from the phone's list). Subagents are view-only: every action on one is refused. Pure: the
 * listener (machines/listener.ts, machines/session.ts) and its IO (actors/sessions/pastSessions.ts) carry it out.
 */

import { AGENT_SESSION_ID } from '../hooks/remoteOrigin.js';
import type { ControlAction } from '../protocol/actions.js';
import type { SessionRecord } from '../protocol/index.js';
import { startWord } from '../tmux/startCommand.js';
import { activePane } from './inventory.js';

export { CONTROL_ACTIONS, type ControlAction } from '../protocol/actions.js';

/** A session svc saw that is no longer running (it ended, or the computer restarted): offered to resume. */
export interface PastSession {
  name: string;
  /** Registry id (`A1`). */
  agent: string;
  /** The directory the agent ran in (its pane's path): where its session store files it. */
  cwd: string;
  project?: string | undefined;
  label?: string | undefined;
  /** Epoch seconds: when tmux made it, and when svc last saw it running. */
  createdAt: number;
  lastSeenAt: number;
  /** The program's absolute path when the session was started with one (the resume runs the same program). */
  program?: string | undefined;
  /** The agent's own id of this session and its transcript, as its hooks said: the one a resume runs. */
  agentSession?: string | undefined;
  transcript?: string | undefined;
}

export interface PastSessions {
  version: 1;
  sessions: Record<string, PastSession>;
}

/** At most this many past sessions are kept (the oldest seen go first). */
export const MAX_PAST_SESSIONS = 50;

export const emptyPast = (): PastSessions => ({ version: 1, sessions: {} });

/**
 * The agent's own way to end itself, typed like a message (text, then Enter), as each program documents it. An
 * agent missing here cannot be ended gently: the phone offers only "force".
 */
export const EXIT_COMMANDS: Readonly<Record<string, string>> = {
  A1: '/exit', // Claude Code
  A2: '/quit', // Codex
  A3: '/quit', // Gemini CLI
  A4: '/quit', // pi (its slash command; Ctrl+D on an empty editor does the same)
  A5: '/exit', // opencode
};

/** How an agent resumes one of its own sessions by id: the argv of a new session; null: svc cannot resume it. */
export function resumeArgv(past: Pick<PastSession, 'agent' | 'program'>, id: string): string[] | null {
  const resume = RESUME[past.agent];
  // only an id of the agent's own shape: never one its resume would read as an option (`--yolo`), a path (pi takes
  // `x.jsonl` as a file), `latest` or a list number (Gemini CLI)
  if (!resume || !AGENT_SESSION_ID.test(id) || !resume.id.test(id)) return null;
  return [past.program ?? resume.program, ...resume.args(id)];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Each agent's own resume of a session by its id, and the shape of its ids (checked on the real programs:
 * test/e2e/claude-control.test.ts, test/e2e/resume.realAgents.test.ts).
 */
const RESUME: Readonly<Record<string, { program: string; id: RegExp; args(id: string): string[] }>> = {
  A1: { program: 'claude', id: UUID, args: (id) => ['--resume', id] },
  A2: { program: 'codex', id: UUID, args: (id) => ['resume', id] },
  A3: { program: 'gemini', id: UUID, args: (id) => ['--resume', id] }, // as `--list-sessions` names them
  A4: { program: 'pi', id: UUID, args: (id) => ['--session', id] }, // the session header's id
  A5: { program: 'opencode', id: /^ses_[A-Za-z0-9]{1,64}$/, args: (id) => ['--session', id] },
};

/** The absolute program a pane was started with (`exec '/x/bin/claude' …`), if it was started with one. */
export function startedProgram(startCommand: string | undefined): string | undefined {
  const first = startWord(startCommand);
  return first?.startsWith('/') ? first : undefined;
}

/** The agents whose past sessions svc can resume (their session stores are read: actors/sessions/pastSessions.ts). */
export const RESUMABLE_AGENTS: ReadonlySet<string> = new Set(Object.keys(RESUME));

/**
 * The past-sessions book after a reading of the live sessions at `now` (epoch s): every agent session svc made
 * (`@svc-kind agent`, a registry id) is remembered with where it runs; a subagent or a shell never is. A live
 * session is not past; the book keeps it so that it is offered once it has gone.
 */
export function rememberSessions(book: PastSessions, live: readonly SessionRecord[], now: number): PastSessions {
  const sessions = { ...book.sessions };
  for (const record of live) {
    const agent = record.meta?.agent;
    const cwd = activePane(record)?.path;
    if (record.parent || record.shell || record.meta?.kind !== 'agent' || !agent || !cwd) continue;
    const before = book.sessions[record.name];
    sessions[record.name] = {
      name: record.name,
      agent,
      cwd,
      project: record.meta?.project,
      label: record.meta?.label,
      createdAt: record.createdAt,
      lastSeenAt: now,
      program: startedProgram(activePane(record)?.startCommand),
      agentSession:
        record.meta?.agentSession ?? (before?.createdAt === record.createdAt ? before.agentSession : undefined),
      transcript: record.meta?.transcript ?? (before?.createdAt === record.createdAt ? before.transcript : undefined),
    };
  }
  const kept = Object.values(sessions)
    .sort((a, b) => b.lastSeenAt - a.lastSeenAt)
    .slice(0, MAX_PAST_SESSIONS);
  return { version: 1, sessions: Object.fromEntries(kept.map((s) => [s.name, s])) };
}

/** The past sessions to offer: remembered, not running now, newest first. */
export function pastSessions(book: PastSessions, live: readonly SessionRecord[]): PastSession[] {
  const running = new Set(live.map((r) => r.name));
  return Object.values(book.sessions)
    .filter((s) => !running.has(s.name))
    .sort((a, b) => b.lastSeenAt - a.lastSeenAt);
}

/** A past session as the phone's list shows it: a record with no panes, `ended` and whether it can be resumed. */
export function pastRecord(past: PastSession): SessionRecord {
  return {
    name: past.name,
    attached: false,
    createdAt: past.createdAt,
    activityAt: past.lastSeenAt,
    panes: [],
    meta: {
      kind: 'agent',
      agent: past.agent,
      ...(past.project ? { project: past.project } : {}),
      ...(past.label ? { label: past.label } : {}),
    },
    ended: past.lastSeenAt,
    resumable: RESUMABLE_AGENTS.has(past.agent),
  };
}

export type ControlDecision =
  | { kind: 'refuse'; code: 'subagent_view_only' | 'session_not_found' | 'not_supported' }
  /** `end`: type the exit command; `kill`: tmux kill-session. Carried out by the session's actor. */
  | { kind: 'live'; action: 'end' | 'kill'; text?: string }
  | { kind: 'resume'; past: PastSession }
  | { kind: 'forget'; name: string };

/**
 * What to do with a control request for `name`: `live` is the session as the fresh reading shows it (undefined: not
 * running), `past` what the book has. `end`/`kill` are for running sessions, `resume`/`forget` for past ones.
 */
export function decideControl(
  action: ControlAction,
  name: string,
  live: SessionRecord | undefined,
  past: PastSession | undefined,
): ControlDecision {
  // a subagent (`<session>.<n>`, spec 4.14): view-only, whatever is asked
  if (live?.parent !== undefined || /\.\d+$/.test(name)) return { kind: 'refuse', code: 'subagent_view_only' };
  if (action === 'end' || action === 'kill') {
    if (!live) return { kind: 'refuse', code: 'session_not_found' };
    if (action === 'kill') return { kind: 'live', action };
    const agent = live.meta?.agent;
    const text = agent ? EXIT_COMMANDS[agent] : undefined;
    return text ? { kind: 'live', action, text } : { kind: 'refuse', code: 'not_supported' };
  }
  if (!past || live) return { kind: 'refuse', code: 'session_not_found' };
  if (action === 'forget') return { kind: 'forget', name };
  return RESUMABLE_AGENTS.has(past.agent) ? { kind: 'resume', past } : { kind: 'refuse', code: 'not_supported' };
}

/** Claude Code files a project's sessions under `~/.claude/projects/<cwd with every non-alphanumeric as ->/`. */
export function claudeProjectDir(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, '-');
}
