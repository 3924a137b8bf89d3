/**
 * The listener's side of `svc remote-hook` (core/hooks/control.ts): a prompt from the phone puts the session in
 * sticky REMOTE, a prompt from the keyboard takes it out, and a Stop-style hook tells the phones the turn finished,
 * once per turn (the screen reading sees the same finish a moment later: core/notify/events.ts turnNoticeDue). Each
 * names the agent's own session when the agent said it: pinned to the session holding the pane.
 */
import type { ControlReply } from '../../core/daemon/control.js';
import { hookSession, type TypedTexts } from '../../core/hooks/control.js';
import { TURN_NOTICE_WINDOW_MS, turnNoticeDue } from '../../core/notify/events.js';
import type { SessionRecord } from '../../core/protocol/frames.js';
import type { HookRequest } from '../daemon/controlSocket.js';

export interface ListenerHooksDeps {
  sessions: () => Readonly<Record<string, SessionRecord>>;
  /** The texts the listener typed lately: a `remote` event counts only for one of them. */
  typed: TypedTexts;
  setRemote: (session: string, on: boolean, why: 'hook' | 'keyboard') => void;
  tell: (session: string, kind: 'turn', message: string) => void;
  /** The hook named the agent's own session: pin it to this one (actors/transcripts/pinning.ts). */
  pin?: (session: string, request: HookRequest) => void;
  log: { info(m: string): void };
  now?: () => number;
}

export const TURN_MESSAGE = 'finished its turn';
/** How long a session-start pin waits for a reading that shows its pane. */
export const EARLY_PIN_MS = 60_000;

export function createListenerHooks(deps: ListenerHooksDeps) {
  const now = deps.now ?? Date.now;
  const lastTurn = new Map<string, number>();

  /** Tell the phones a turn finished unless this turn was told already; true when told. */
  const turn = (session: string): boolean => {
    const at = now();
    if (!turnNoticeDue(lastTurn.get(session), at)) return false;
    lastTurn.set(session, at);
    for (const [name, when] of lastTurn) if (at - when > TURN_NOTICE_WINDOW_MS * 10) lastTurn.delete(name);
    deps.tell(session, 'turn', TURN_MESSAGE);
    return true;
  };

  /** Session-start pins from panes no reading showed yet, by pane. */
  const early = new Map<string, { request: HookRequest; at: number }>();

  return {
    turn,
    /** A new reading: the waiting session-start pins of the panes it shows are made now. */
    seen(sessions: Readonly<Record<string, SessionRecord>>): void {
      for (const [pane, e] of early) {
        if (now() - e.at > EARLY_PIN_MS) {
          early.delete(pane);
          continue;
        }
        const session = hookSession(sessions, { pane });
        if (!session) continue;
        early.delete(pane);
        deps.pin?.(session, e.request);
      }
    },
    handle(request: HookRequest): ControlReply {
      const session = hookSession(deps.sessions(), request);
      const reply = (outcome: 'remote' | 'local' | 'told' | 'ignored') =>
        ({ ok: true, type: 'hook', session, outcome }) as const;
      if (!session) {
        // an agent's session-start hook runs a moment after tmux made the session, often before a reading shows it:
        // its pin waits for the reading that does (for a minute)
        if (request.event === 'started' && request.pane) {
          early.set(request.pane, { request, at: now() });
          for (const [pane, e] of early) if (now() - e.at > EARLY_PIN_MS || early.size > 50) early.delete(pane);
          return reply('ignored');
        }
        deps.log.info(`${request.agent} hook (${request.event}) from a pane no session holds: ignored`);
        return reply('ignored');
      }
      if (request.transcript || request.agentSession) deps.pin?.(session, request);
      if (request.event === 'finished') return reply(turn(session) ? 'told' : 'ignored');
      if (request.event === 'started') return reply('ignored'); // the pin above is all it brings
      const on = request.event === 'remote';
      if (on && !deps.typed.take(session, request.sha256)) {
        deps.log.info(
          `${request.agent} hook asked REMOTE for ${session} for a text the listener did not type: ignored`,
        );
        return reply('ignored');
      }
      deps.setRemote(session, on, on ? 'hook' : 'keyboard');
      return reply(on ? 'remote' : 'local');
    },
  };
}
