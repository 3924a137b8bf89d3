/**
 * The decisions `svc agent send` makes (spec 4.5): which computer, which session, and what to tell the person about
 * the result. Pure: cli/commands/agentSend.ts gathers the relay's answers and acts.
 */

import { byCodeUnits } from '../order.js';
import type { SessionRecord } from '../protocol/index.js';

export interface ComputerEntry {
  hookId: string;
  name: string;
  deviceId?: string | null;
  sessions: SessionRecord[];
}

export type Pick<T> = { ok: true; value: T } | { ok: false; message: string };

/** `--computer` (a hookId or a name), else the only computer of the account. */
export function pickComputer(computers: readonly ComputerEntry[], wanted?: string): Pick<ComputerEntry> {
  if (wanted !== undefined) {
    const found = computers.find((c) => c.hookId === wanted) ?? computers.filter((c) => c.name === wanted)[0];
    if (!found) return { ok: false, message: `no computer ${wanted} in this account` };
    return { ok: true, value: found };
  }
  if (computers.length === 1) return { ok: true, value: computers[0]! };
  if (computers.length === 0) return { ok: false, message: 'this account has no computer yet: run `svc login` on one' };
  const list = computers.map((c) => `${c.hookId} (${c.name})`).join(', ');
  return { ok: false, message: `this account has ${computers.length} computers; pick one with --computer: ${list}` };
}

/**
 * `--session`, else the most recently active agent session of the computer's last inventory. Shell sessions
 * (`svc sh`) are skipped, and refused by name: `svc agent send` never types into a shell (spec 4.5). Subagents are
 * view-only, so they are skipped too.
 */
export function pickSession(computer: ComputerEntry, wanted?: string): Pick<string> {
  if (wanted !== undefined) {
    const record = computer.sessions.find((s) => s.name === wanted);
    if (record?.shell) {
      return { ok: false, message: `${wanted} is a shell session: svc agent send skips shell sessions` };
    }
    return { ok: true, value: wanted };
  }
  const candidates = computer.sessions
    .filter((s) => !s.shell && s.parent === undefined)
    .sort((a, b) => b.activityAt - a.activityAt || byCodeUnits(a.name, b.name));
  const best = candidates[0];
  if (!best)
    return { ok: false, message: `${computer.name} reports no session to send to (shell sessions are skipped)` };
  return { ok: true, value: best.name };
}

/** One line for each code a sealed message may come back with, in words a person acts on. */
const EXPLAIN: Record<string, string> = {
  invalid_target: 'the session name has characters svc does not accept',
  session_not_found: 'that computer has no session of this name',
  shell_in_front: 'a shell is in front in that session (the agent has exited): your words would run as commands',
  rate_limited: 'too many messages to this session at once; wait a few seconds',
  not_for_this_computer: 'shell sessions only take messages addressed to their own computer',
  shell_input_forbidden: 'a shell session takes one line of plain text, without control keys',
  subagent_view_only: 'subagents are view-only; send to the parent session',
  empty_body: 'the message was empty',
  inject_failed: 'tmux refused the keys, or the listener stopped while typing (nothing is typed twice)',
  e2ee_required: 'the computer only accepts end-to-end encrypted messages',
  subscriber_unverified:
    "the computer does not trust this sender's key (new, changed or not on the relay); compare safety codes with `svc devices` there",
  approval_pending: 'an approval prompt is waiting on the screen; answer it first',
  screen_unreadable: 'the agent’s screen could not be read, so it was not typed (an approval prompt could be up)',
  bad_seal: 'the computer could not open the sealed message (wrong key, or changed on the way)',
  replayed: 'the computer saw this sequence stamp before (a replayed or reordered copy)',
  bad_key_name: 'a key the computer does not accept',
  devices_unavailable:
    "the computer could not reach the relay's device list to check the sender (a network problem, not tampering); send it again",
  too_large: 'the message is over 65,536 characters',
};

export function explainCode(code: string | null): string {
  return (code && EXPLAIN[code]) || 'no reason given';
}

export interface SendArgs {
  text: string;
  session?: string;
  computer?: string;
  json: boolean;
}

/**
 * `svc agent send`'s words, read from the raw arguments: `--session NAME`, `--computer ID` (or `=value`) and `--json`
 * are options wherever they are; every other word is the message, joined by spaces, even one that starts with `-`
 * (`svc agent send -5 degrees is too cold`), and everything after `--` is the message as it is.
 */
export function parseSendArgs(rawArgs: readonly string[]): Pick<SendArgs> {
  const out: SendArgs = { text: '', json: false };
  const words: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const arg = rawArgs[i]!;
    if (arg === '--') {
      words.push(...rawArgs.slice(i + 1));
      break;
    }
    if (arg === '--json') {
      out.json = true;
      continue;
    }
    const option = /^--(session|computer)(?:=(.*))?$/.exec(arg);
    if (!option) {
      words.push(arg);
      continue;
    }
    const value = option[2] ?? rawArgs[++i];
    if (value === undefined) return { ok: false, message: `--${option[1]} needs a value` };
    out[option[1] as 'session' | 'computer'] = value;
  }
  out.text = words.join(' ');
  if (out.text.length === 0) return { ok: false, message: 'nothing to send: svc agent send [--session NAME] TEXT' };
  return { ok: true, value: out };
}
