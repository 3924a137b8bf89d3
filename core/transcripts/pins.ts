/**
 * Which transcript belongs to which session (issue 30 item 2): the agent says it. Its hooks (`svc remote-hook`,
 * core/hooks/remoteOrigin.ts) hand over the agent's own session id and transcript file with the pane they ran in,
 * and the listener pins them to the session holding that pane (tmux session options `@svc-transcript` and
 * `@svc-agent-session`, so a listener that restarts still knows). The history follows the pinned file, and a resume
 * runs the pinned id: two sessions of one agent in one folder never read or resume each other's conversation.
 *
 * A hook is taken only when it is the pane's own agent speaking:
 * - the same agent as the session's (a Codex run inside a Claude Code session is not the session's);
 * - a file inside that agent's own session store (the listener checks; a hook cannot point it anywhere else);
 * - from inside the pane's process tree, and no deeper in it than the pane's agent was when it first pinned: an
 *   agent the session's agent runs (a `claude -p` in a tool call) inherits the pane and fires the same hooks, one
 *   process level further down. Where the hook cannot see its ancestry (no /proc), this check is left out.
 */

/** What the session holds now (its `@svc-*` options), and the depth its pin came from (the listener's memory). */
export interface TranscriptPin {
  transcript?: string | undefined;
  agentSession?: string | undefined;
}

export type PinDecision =
  | { pin: true; depth: number | null }
  | { pin: false; why: 'unchanged' | 'other agent' | 'outside the store' | 'not this pane' | 'nested agent' };

export function pinDecision(facts: {
  /** The session's registry id (`@svc-agent`), and the registry id of the agent whose hook ran. */
  sessionAgent: string | undefined;
  hookAgent: string | undefined;
  current: TranscriptPin;
  said: TranscriptPin;
  /** Whether `said.transcript` lies in the hook agent's session store (absent transcript: true). */
  inStore: boolean;
  /** The hook's ancestry, parent first; absent where it could not be read. */
  ancestry: readonly number[] | undefined;
  /** The pane's process (`#{pane_pid}`); null when tmux did not say. */
  panePid: number | null;
  /** The depth the session's first pin came from; undefined before it. */
  pinnedDepth: number | undefined;
}): PinDecision {
  const { said, current } = facts;
  if (!said.transcript && !said.agentSession) return { pin: false, why: 'unchanged' };
  // only what the hook said is compared: a hook that names the id alone leaves the pinned file as it is
  if (
    (said.transcript === undefined || said.transcript === current.transcript) &&
    (said.agentSession === undefined || said.agentSession === current.agentSession)
  )
    return { pin: false, why: 'unchanged' };
  if (!facts.hookAgent || facts.hookAgent !== facts.sessionAgent) return { pin: false, why: 'other agent' };
  if (!facts.inStore) return { pin: false, why: 'outside the store' };
  if (!facts.ancestry || facts.panePid === null) return { pin: true, depth: null };
  const depth = facts.ancestry.indexOf(facts.panePid);
  if (depth < 0) return { pin: false, why: 'not this pane' };
  if (facts.pinnedDepth !== undefined && depth > facts.pinnedDepth) return { pin: false, why: 'nested agent' };
  return { pin: true, depth };
}
