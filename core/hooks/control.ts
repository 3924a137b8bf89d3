/**
 * What `svc remote-hook <agent>` tells the running listener on its control socket (core/daemon/control.ts), and
 * what it answers. The hook runs inside the agent's pane, so it names the pane (`$TMUX_PANE`) and, when the prompt
 * matched a marker, the session the marker was written for; the listener finds the session from either.
 *
 * - `remote`: the prompt was the text the phone sent (spec 4.13.1): the session enters sticky REMOTE.
 * - `keyboard`: a prompt that is not the phone's was submitted: the person is at the keyboard, REMOTE ends.
 * - `finished`: the agent's Stop-style hook ran: the phones are told the turn finished (sealed, names only).
 */
import { z } from 'zod';
import { SessionName } from '../protocol/codes.js';

export const HOOK_EVENTS = ['remote', 'keyboard', 'finished'] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** A tmux pane id as `$TMUX_PANE` holds it. */
export const PaneId = z.string().regex(/^%\d{1,9}$/);

export const HOOK_CONTROL_REQUESTS = [
  z.object({
    type: z.literal('hook'),
    event: z.enum(HOOK_EVENTS),
    /** Registry command name of the agent whose hook ran (`claude`, `codex`, `gemini`, `pi`). */
    agent: z.string().min(1).max(32),
    session: SessionName.optional(),
    pane: PaneId.optional(),
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
