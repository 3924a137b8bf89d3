/**
 * Key input from a live pane (docs/protocol.md "Key input"): named keys from a short list, and text typed as is
 * without a submit. It goes through the same refusal rules as a message (core/sessions/refusals.ts), plus the key list.
 */
import type { RefusalCode } from '../protocol/index.js';
import { type InjectionFacts, refusalFor } from '../sessions/refusals.js';

/** tmux key names the app may send. Anything else is refused `bad_key_name`. */
export const ALLOWED_KEYS = [
  'Enter',
  'Escape',
  'Tab',
  'BTab',
  'Up',
  'Down',
  'Left',
  'Right',
  'BSpace',
  'C-c',
  'C-d',
  'PageUp',
  'PageDown',
  'Home',
  'End',
] as const;
export type AllowedKey = (typeof ALLOWED_KEYS)[number];

const ALLOWED: ReadonlySet<string> = new Set(ALLOWED_KEYS);

/**
 * Keys that are control bytes on the wire (ESC, ETX, EOT): refused into a `svc sh` shell session, as control bytes
 * in typed text are (spec 7.3). Enter there is the submit a message also ends with.
 */
export const SHELL_FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['Escape', 'C-c', 'C-d']);

export function badKeyName(keys: readonly string[]): string | undefined {
  return keys.find((k) => !ALLOWED.has(k));
}

export type KeysFacts = Omit<InjectionFacts, 'body'> & { keys: readonly string[]; text: string };

/**
 * Whether key input may reach the pane: the message rules first, then the key list and the shell's keys.
 * An approval prompt does not stop keys: they come from a person watching the live pane, who sees the prompt they
 * answer, as at the keyboard (a message is refused `approval_pending`, because its sender may not have seen it).
 */
export function keysRefusal(facts: KeysFacts): RefusalCode | null {
  const { keys, text, ...rest } = facts;
  const code = refusalFor({
    ...rest,
    approvalPending: false,
    screenUnreadable: false,
    body: text.length > 0 ? text : keys.join(' '),
  });
  if (code) return code;
  if (badKeyName(keys) !== undefined) return 'bad_key_name';
  if (facts.shellSession && keys.some((k) => SHELL_FORBIDDEN_KEYS.has(k))) return 'shell_input_forbidden';
  return null;
}
