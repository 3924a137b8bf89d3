/**
 * What a person reads when a message, a key or a watch was not carried out: one plain sentence per code. The app
 * shows these; the type makes a new code in REFUSAL_CODES a compile error here until it has its sentence.
 */
import type { PaneStopReason, PushState, RefusalCode } from './index.js';

export const REFUSAL_TEXT: Record<RefusalCode, string> = {
  invalid_target: 'Not typed: the session name has characters svc does not accept.',
  session_not_found: 'Not typed: the session is gone from the computer.',
  shell_in_front:
    'Not typed: a shell is in front in that session (the agent has exited), so your words would run as commands.',
  rate_limited: 'Not typed: too many messages to this session at once. Wait a few seconds and send again.',
  not_for_this_computer: 'Not typed: shell sessions only take messages addressed to their own computer.',
  shell_input_forbidden: 'Not typed: a shell session takes one line of plain text, without control keys.',
  subagent_view_only: 'Not typed: subagents are view-only. Write to the parent session.',
  empty_body: 'Not typed: the message was empty.',
  inject_failed: 'Not typed: tmux refused the keys, or the listener stopped while typing. Nothing was typed twice.',
  e2ee_required: 'Not typed: this computer only accepts end-to-end encrypted messages, and this one was not.',
  subscriber_unverified:
    'Not typed: the computer does not trust this phone’s key. Compare the safety code on the Device screen with `svc devices`.',
  approval_pending: 'Not typed: an approval prompt is waiting on the screen. Answer it first (Watch), then send.',
  listener_stopped:
    'Not typed: svc on the computer stopped (or restarted) while this waited for the agent to finish its turn. Send it again.',
  screen_unreadable:
    'Not typed: the agent’s screen could not be read, and an approval prompt could be up. Look (Watch), then send again.',
  bad_seal: 'Not typed: the computer could not open the encrypted message (wrong key or damaged on the way).',
  replayed: 'Not typed: the computer saw this message before (an old or repeated copy), so it ignored it.',
  bad_key_name: 'Not typed: the computer does not accept that key.',
  computer_offline:
    'Not typed: the computer is offline. Keys are never kept to be typed later; press it again when the screen is live.',
  devices_unavailable:
    'Not typed: the computer could not reach the relay to check who sent it (a network problem, not tampering). Send it again.',
  prompt_changed:
    'Not typed: the approval prompt on the computer is not the one you answered (answered at the keyboard, gone, or the highlight moved). Look at it again.',
  not_supported: 'Not typed: svc does not know how to do that for this agent. Use Watch, or the computer.',
  bad_schedule: 'Not scheduled: the time, interval (at least 15 minutes) or max-runtime (5m to 24h) is not accepted.',
  prompt_not_accepted: 'Not scheduled: only Claude Code, Codex, Gemini CLI and pi take a prompt at a scheduled start.',
  too_many_schedules: 'Not scheduled: the computer has 20 schedules already. Remove one first.',
  no_such_schedule: 'Not removed: the schedule is not there any more (removed already).',
  too_large: 'Not typed: the message is longer than 65,536 characters. Split it, or send a file path instead.',
};

/** A sentence for any code a push, key or watch came back with; unknown codes are shown as they are. */
export function refusalText(code: string | null | undefined): string {
  if (!code) return 'Not typed.';
  return (REFUSAL_TEXT as Record<string, string>)[code] ?? `Not typed (${code}).`;
}

/** The status line of a sent message. */
export function pushStateText(state: PushState | 'sending' | 'unsent', code: string | null): string {
  switch (state) {
    case 'unsent':
      return 'Not sent yet: waiting for the connection.';
    case 'sending':
      return 'Sending…';
    case 'pending':
      return 'Sent; waiting for the computer.';
    case 'delivered':
      return 'The computer has it; typed when the agent can take it…';
    case 'injected':
      return 'typed';
    case 'refused':
      return refusalText(code);
    case 'expired':
      // no_result: the computer took it and never said (it stopped while handling it); it may have been typed.
      return code === 'no_result'
        ? 'No answer: the computer took it but never said whether it was typed. Look at the session before sending again.'
        : 'Not typed: the computer was away too long, and old messages are never typed late. Send it again.';
  }
}

const STOP_TEXT: Record<PaneStopReason, string> = {
  requested: 'Stopped.',
  lease_expired: 'Stopped: the phone stopped asking for the screen.',
  session_gone: 'The session is gone from the computer.',
  listener_stopping: 'The listener on the computer is stopping.',
  computer_offline: 'The computer went offline; the screen below is the last one seen.',
  failed: 'Stopped: the live screen failed on the computer (its log says why). Open it again.',
};

/** Why a live pane is not streaming. */
export function paneStatusText(state: 'streaming' | 'stopped' | 'refused', code: string | null | undefined): string {
  if (state === 'streaming') return 'Live';
  if (state === 'stopped') return (STOP_TEXT as Record<string, string>)[code ?? 'requested'] ?? `Stopped (${code}).`;
  return refusalText(code).replace(/^Not typed/, 'Refused');
}

/** The words for an agent's state in the picker. */
export const AGENT_STATE_TEXT = {
  awaiting_approval: 'awaiting approval',
  working: 'working',
  idle: 'idle',
  unknown: 'state unknown',
} as const;

/** "just now", "3 min ago", "2 h ago", "4 days ago". */
export function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 45) return 'just now';
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.round(m / 60);
  if (h < 36) return `${h} h ago`;
  const d = Math.round(h / 24);
  return `${d} day${d === 1 ? '' : 's'} ago`;
}
