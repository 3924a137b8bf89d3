/**
 * The listener's side of pinning a transcript to its session (core/transcripts/pins.ts decides): a hook that names
 * the agent's own session (its id and transcript file) is checked against the session holding its pane, and taken
 * into the session's tmux options `@svc-transcript` and `@svc-agent-session`, where every later inventory reading
 * (and a listener that restarts) finds it. The history is told at once.
 */
import { agentForCommand } from '../../core/agents/registry.js';
import type { SessionRecord } from '../../core/protocol/index.js';
import { pinDecision } from '../../core/transcripts/pins.js';
import type { HookRequest } from '../daemon/controlSocket.js';
import type { Tmux } from '../tmux/tmux.js';
import { inAgentStore } from './locate.js';

export interface PinningDeps {
  tmux: Pick<Tmux, 'setSessionOptions' | 'panePid'>;
  sessions: () => Readonly<Record<string, SessionRecord>>;
  /** The history follows the pinned file from now on. */
  pinned: (session: string, transcript: string | undefined) => void;
  log: { info(m: string): void; warn(m: string): void };
  env?: Readonly<Record<string, string | undefined>>;
}

export function createPinning(deps: PinningDeps) {
  /**
   * By session (its name and when tmux made it: a resumed session may take an ended one's name): the depth in the
   * pane's process tree its pin came from (an agent nested deeper is not taken), and what was set last (before an
   * inventory reading shows it).
   */
  const depths = new Map<string, number>();
  const set = new Map<string, { transcript?: string; agentSession?: string }>();
  const keyOf = (r: SessionRecord) => `${r.name}\u0000${r.createdAt}`;
  const forget = () => {
    const live = new Set(Object.values(deps.sessions()).map(keyOf));
    for (const key of [...depths.keys()]) if (!live.has(key)) depths.delete(key);
    for (const key of [...set.keys()]) if (!live.has(key)) set.delete(key);
  };

  return {
    async pin(session: string, request: HookRequest): Promise<void> {
      const record = deps.sessions()[session];
      if (!record) return;
      const said = {
        ...(request.transcript ? { transcript: request.transcript } : {}),
        ...(request.agentSession ? { agentSession: request.agentSession } : {}),
      };
      const hookAgent = agentForCommand(request.agent)?.id;
      const key = keyOf(record);
      const current = set.get(key) ?? record.meta ?? {};
      const decision = pinDecision({
        sessionAgent: record.meta?.agent,
        hookAgent,
        current: { transcript: current.transcript, agentSession: current.agentSession },
        said,
        inStore: !said.transcript || (hookAgent !== undefined && inAgentStore(hookAgent, said.transcript, deps.env)),
        ancestry: request.ancestry,
        panePid: request.ancestry && request.pane ? await deps.tmux.panePid(request.pane) : null,
        pinnedDepth: depths.get(key),
      });
      if (!decision.pin) {
        if (decision.why !== 'unchanged')
          deps.log.info(`${session}: the ${request.agent} hook's session not taken (${decision.why})`);
        return;
      }
      const options: Record<string, string> = {};
      if (said.transcript) options['@svc-transcript'] = said.transcript;
      if (said.agentSession) options['@svc-agent-session'] = said.agentSession;
      try {
        await deps.tmux.setSessionOptions(session, options);
      } catch (err) {
        deps.log.warn(`${session}: could not record the agent's session: ${(err as Error).message}`);
        return;
      }
      forget();
      if (decision.depth !== null) depths.set(key, decision.depth);
      set.set(key, { transcript: current.transcript, agentSession: current.agentSession, ...said });
      deps.log.info(`${session}: the agent's session is ${said.agentSession ?? '?'} (${said.transcript ?? 'no file'})`);
      if (said.transcript) deps.pinned(session, said.transcript);
    },
  };
}
