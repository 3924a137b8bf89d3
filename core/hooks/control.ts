/**
 * What `svc remote-hook <agent>` tells the running listener on its control socket (core/daemon/control.ts), and
 * what it answers. The hook runs inside the agent's pane, so it names the pane (`$TMUX_PANE`) and, when the prompt
 * matched a marker, the session the marker was written for; the listener finds the session from either.
 *
 * - `remote`: the prompt was the text the phone sent (spec 4.13.1): the session enters sticky REMOTE.
 * - `keyboard`: a prompt that is not the phone's was submitted: the person is at the keyboard, REMOTE ends.
 * - `finished`: the agent's Stop-style hook ran: the phones are told the turn finished (sealed, names only).
 * - `started`: the agent's session-start hook ran (Claude Code's SessionStart): nothing but which conversation
 *   runs in the pane, pinned from its start (core/transcripts/pins.ts).
 */
import { z } from 'zod/v3';
import { SessionName } from '../protocol/codes.js';
import { AGENT_SESSION_ID } from './remoteOrigin.js';

export const HOOK_EVENTS = ['remote', 'keyboard', 'finished', 'started'] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** A tmux pane id as `$TMUX_PANE` holds it. */
export const PaneId = z.string().regex(/^%\d{1,9}$/);

/** How far up the hook looks for the pane's process. */
export const MAX_ANCESTRY = 32;

export const HOOK_CONTROL_REQUESTS = [
  z.object({
    type: z.literal('hook'),
    event: z.enum(HOOK_EVENTS),
    /** Registry command name of the agent whose hook ran (`claude`, `codex`, `gemini`, `pi`). */
    agent: z.string().min(1).max(32),
    session: SessionName.optional(),
    pane: PaneId.optional(),
    /** With `remote`: the sha256 (hex) of the submitted prompt; the listener takes it only for a text it typed. */
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/)
      .optional(),
    /** The agent's own session the hook ran for (core/hooks/remoteOrigin.ts `AgentSessionRef`), when it said. */
    transcript: z.string().max(4096).optional(),
    agentSession: z.string().regex(AGENT_SESSION_ID).optional(),
    /** The hook's process ancestry, parent first (Linux): whether it ran for the pane's agent or one nested in it. */
    ancestry: z.array(z.number().int().safe().positive()).max(MAX_ANCESTRY).optional(),
  }),
] as const;

export const HOOK_CONTROL_REPLIES = [
  z.object({
    ok: z.literal(true),
    type: z.literal('hook'),
    /** The session the event was taken for; null when the listener knows no session with that pane or name. */
    session: z.string().nullable(),
    /** What came of it: `remote` / `local` (the session's mode now), `told` (the phones were told), `ignored`. */
    outcome: z.enum(['remote', 'local', 'told', 'ignored']),
  }),
] as const;

/** Which session a hook event is about: the marker's session when it is live, else the one holding the pane. */
export function hookSession(
  sessions: Readonly<Record<string, { panes: readonly { id: string }[] }>>,
  request: { session?: string | undefined; pane?: string | undefined },
): string | null {
  if (request.session && Object.hasOwn(sessions, request.session)) return request.session;
  if (!request.pane) return null;
  for (const [name, record] of Object.entries(sessions)) {
    if (record.panes.some((p) => p.id === request.pane)) return name;
  }
  return null;
}

/**
 * The texts the listener typed lately, by session: what a `remote` hook request must name (its sha256) to count.
 * A marker file or a control-socket request any local process can write proves nothing by itself; only a prompt
 * the listener itself typed may put a session in sticky REMOTE.
 */
export class TypedTexts {
  private readonly typed = new Map<string, { sha256: string; at: number }[]>();

  constructor(
    private readonly keepMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The listener typed a text (its sha256) into `session`. */
  add(session: string, sha256: string): void {
    const at = this.now();
    const kept = (this.typed.get(session) ?? []).filter((t) => at - t.at <= this.keepMs).slice(-15);
    this.typed.set(session, [...kept, { sha256, at }]);
  }

  /** Whether the listener typed that text into `session` within `keepMs`; a text counts once. */
  take(session: string, sha256: string | undefined): boolean {
    if (!sha256) return false;
    const at = this.now();
    const list = (this.typed.get(session) ?? []).filter((t) => at - t.at <= this.keepMs);
    const i = list.findIndex((t) => t.sha256 === sha256);
    if (i < 0) {
      this.typed.set(session, list);
      return false;
    }
    list.splice(i, 1);
    this.typed.set(session, list);
    return true;
  }
}
