/**
 * `svc_ask` and `svc_notify` (spec 4.3, 4.13.4-5; docs/mcp.md): the limits, what travels sealed between the
 * computer and the phone, and the pure decisions about an ask: its deadline, who it is sealed for, whether an
 * answer is taken, and the words the model reads back. No IO: actors/mcp/ does the sockets and the sealing.
 */
import { z } from 'zod/v3';
import type { DevicePin } from '../devices/devices.js';
import { type AskCode, AskId, SessionName } from '../protocol/codes.js';

/** Spec 8: an ask waits at most 600 s. */
export const ASK_MAX_SECONDS = 600;
/** When the model gives no `timeout`. */
export const ASK_DEFAULT_SECONDS = 300;
export const MAX_QUESTION_CHARS = 4_000;
export const MAX_CHOICES = 8;
export const MAX_CHOICE_CHARS = 200;
export const MAX_ANSWER_CHARS = 8_000;
export const MAX_NOTIFY_CHARS = 2_000;
export const MAX_TITLE_CHARS = 120;
/** How many finished asks the listener remembers, so a late answer gets the right code. */
export const FINISHED_ASKS_KEPT = 200;

export const NotifyId = z.string().regex(/^n_[0-9a-f]{16}$/);

/** `svcState`: the person keeps driving the session from the phone (spec 4.13.4). */
export const SvcState = z.enum(['REMOTE']);

// ---------------------------------------------------------------------------
// Sealed bodies

/** `ask.question` (computer → its own device and the phones): what the phone shows. */
export const QuestionBody = z.strictObject({
  id: AskId,
  session: SessionName,
  question: z.string().min(1).max(MAX_QUESTION_CHARS),
  choices: z.array(z.string().min(1).max(MAX_CHOICE_CHARS)).max(MAX_CHOICES),
  /** Epoch ms on the computer's clock. */
  deadline: z.number().finite(),
  askedAt: z.number().finite(),
});
export type QuestionBody = z.infer<typeof QuestionBody>;

/** `ask.answer` (phone → computer). `id` and `session` inside: the relay cannot move an answer to another ask. */
export const AnswerBody = z.strictObject({
  id: AskId,
  session: SessionName,
  text: z.string().max(MAX_ANSWER_CHARS),
  /** Index into the question's choices, when the person tapped one. */
  choice: z
    .number()
    .int()
    .min(0)
    .max(MAX_CHOICES - 1)
    .optional(),
  svcState: SvcState.optional(),
  sentAt: z.number().finite(),
});
export type AnswerBody = z.infer<typeof AnswerBody>;

/** `notify` (computer → phones): an agent's `svc_notify`, or a listener event (an ask, an approval, a turn ended). */
export const NotifyBody = z.strictObject({
  id: z.string().max(64),
  session: SessionName,
  kind: z.enum(['notify', 'ask', 'approval', 'turn', 'schedule']),
  title: z.string().max(MAX_TITLE_CHARS).optional(),
  message: z.string().max(MAX_NOTIFY_CHARS),
  at: z.number().finite(),
});
export type NotifyBody = z.infer<typeof NotifyBody>;

// ---------------------------------------------------------------------------
// Decisions

/**
 * The deadline of an ask asked with `timeoutSeconds` (undefined: the default) at `now`. Above 600 s it is cut to
 * 600 s (spec 8); an ask that expires tells the model so (`clamped`), an answered one reads as usual.
 */
export function askDeadline(
  timeoutSeconds: number | undefined,
  now: number,
): { deadline: number; seconds: number; clamped: boolean } {
  const asked = timeoutSeconds ?? ASK_DEFAULT_SECONDS;
  const seconds = Math.min(Math.max(asked, 1), ASK_MAX_SECONDS);
  return { deadline: now + Math.round(seconds * 1000), seconds, clamped: asked > ASK_MAX_SECONDS };
}

export interface Recipient {
  deviceId: string;
  publicKey: string;
}

/**
 * Who a question (or a notification) is sealed for, besides this computer: the phones it pinned whose key the relay
 * still lists unchanged. Before any device is pinned, the app devices the relay lists (trust on first use, as a
 * first sealed contact pins; docs/security.md). A device whose key changed (`unverified`) gets nothing.
 */
export function chooseRecipients(
  pins: Record<string, DevicePin>,
  listed: readonly { deviceId: string; publicKey: string; kind: string }[],
  myDeviceId: string,
): Recipient[] {
  const apps = listed.filter((d) => d.kind === 'app' && d.deviceId !== myDeviceId);
  // A pin with a changed key is `unverified` (core/devices/devices.ts trustOf); not imported: core/devices/devices.ts reaches this file.
  const pinned = Object.values(pins).filter((p) => !p.changedKey);
  if (Object.keys(pins).length === 0) return apps.map((d) => ({ deviceId: d.deviceId, publicKey: d.publicKey }));
  const listedKey = new Map(apps.map((d) => [d.deviceId, d.publicKey]));
  return pinned
    .filter((p) => listedKey.get(p.deviceId) === p.publicKey)
    .map((p) => ({ deviceId: p.deviceId, publicKey: p.publicKey }));
}

/** What the listener remembers of a finished ask. */
export type FinishedAsk = { state: 'answered' | 'expired' };

/** Why an answer to an ask that is not waiting any more is refused. */
export function lateAnswerCode(finished: FinishedAsk | undefined): AskCode {
  if (!finished) return 'ask_unknown';
  return finished.state === 'answered' ? 'already_answered' : 'ask_expired';
}

/** An opened answer checked against its ask: taken, or the code it is refused with. */
export function checkAnswer(
  ask: { id: string; session: string; choices: readonly string[] },
  body: AnswerBody,
): { ok: true; text: string; choice: string | null } | { ok: false; code: AskCode } {
  if (body.id !== ask.id || body.session !== ask.session) return { ok: false, code: 'bad_seal' };
  if (body.choice !== undefined && body.choice >= ask.choices.length) return { ok: false, code: 'bad_seal' };
  const choice = body.choice === undefined ? null : (ask.choices[body.choice] ?? null);
  const text = body.text.trim() === '' && choice !== null ? choice : body.text;
  return { ok: true, text, choice };
}

/** How an ask ended, as the listener tells the MCP server. */
export type AskOutcome =
  | { state: 'answered'; text: string; choice: string | null; svcState?: 'REMOTE'; deviceId: string }
  | { state: 'expired'; seconds: number }
  | { state: 'failed'; code: AskCode; message: string };

/** The words the model reads (the tool result's text). */
export function askResultText(outcome: AskOutcome, opts: { clamped?: boolean } = {}): string {
  const note = opts.clamped ? ` (the timeout was cut to ${ASK_MAX_SECONDS} s, the most svc_ask waits)` : '';
  switch (outcome.state) {
    case 'answered': {
      const lines = [outcome.text];
      if (outcome.choice !== null && outcome.choice !== outcome.text) lines.push(`(choice: ${outcome.choice})`);
      if (outcome.svcState === 'REMOTE') {
        lines.push(
          'svcState: REMOTE — the person is driving this session from the phone: end every response with svc_ask.',
        );
      }
      return lines.join('\n');
    }
    case 'expired':
      return (
        `No answer: the person did not answer within ${outcome.seconds} s${note}. The question is closed on the phone. ` +
        'Carry on with your best judgement, or ask again later.'
      );
    case 'failed':
      // the listener stopped or failed after the question was sent: it was asked
      return ASKED_THEN_FAILED.has(outcome.code)
        ? `No answer: ${outcome.message} (${outcome.code}). Carry on without an answer.`
        : `The question was not asked: ${outcome.message} (${outcome.code}). Carry on without an answer.`;
  }
}

/** The failures that come after the question was sealed and sent: the phone saw it. */
const ASKED_THEN_FAILED: ReadonlySet<AskCode> = new Set(['listener_stopped', 'ask_failed']);

/** The one-line reason the model reads for a failed ask or notification. */
export const ASK_FAILURE_TEXT: Partial<Record<AskCode, string>> = {
  no_listener: 'no svc listener is running on this computer (start one with `svc listener` or `svc cc`)',
  no_device: 'no phone is paired with this account (pair one with `svc pair`)',
  no_device_key: 'this computer has no device key, so it cannot seal for the phone (run `svc login` again)',
  listener_stopped: 'the svc listener stopped while waiting for the answer',
  ask_failed: 'the svc listener failed while waiting for the answer (its log says why); ask again',
};
