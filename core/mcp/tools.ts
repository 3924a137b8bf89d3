/**
 * The two tools `svc mcp` offers (spec 4.3), as the model sees them: names, descriptions, zod input and output
 * shapes. The server wiring is actors/mcp/server.ts.
 */
import { z } from 'zod/v3';
import { ASK_CODES } from '../protocol/codes.js';
import {
  ASK_DEFAULT_SECONDS,
  ASK_MAX_SECONDS,
  MAX_CHOICE_CHARS,
  MAX_CHOICES,
  MAX_NOTIFY_CHARS,
  MAX_QUESTION_CHARS,
  MAX_TITLE_CHARS,
} from './ask.js';

export const ASK_TOOL = 'svc_ask';
export const NOTIFY_TOOL = 'svc_notify';

export const askInput = {
  question: z.string().min(1).max(MAX_QUESTION_CHARS).describe('The question for the person, as they will read it.'),
  choices: z
    .array(z.string().min(1).max(MAX_CHOICE_CHARS))
    .max(MAX_CHOICES)
    .optional()
    .describe(`Up to ${MAX_CHOICES} short answers shown as buttons; the person may still type another answer.`),
  timeout: z
    .number()
    .finite()
    .positive()
    .optional()
    .describe(
      `Seconds to wait for the answer. Default ${ASK_DEFAULT_SECONDS}. At most ${ASK_MAX_SECONDS}: a larger value ` +
        `waits ${ASK_MAX_SECONDS} s; if nobody answers, the result says the wait was cut.`,
    ),
};

export const askOutput = {
  status: z.enum(['answered', 'expired', 'failed']),
  answer: z.string().optional().describe('What the person answered (the choice text when they tapped one).'),
  choice: z.string().optional().describe('The choice they tapped, if any.'),
  svcState: z
    .literal('REMOTE')
    .optional()
    .describe('REMOTE: the person drives this session from the phone; end every response with svc_ask.'),
  code: z.enum(ASK_CODES).optional(),
  waitedSeconds: z.number().finite().optional(),
};

export const notifyInput = {
  message: z.string().min(1).max(MAX_NOTIFY_CHARS).describe('What the notification says.'),
  title: z.string().max(MAX_TITLE_CHARS).optional().describe('A short title; the session name when absent.'),
};

export const notifyOutput = {
  delivered: z.boolean(),
  code: z.string().optional(),
};

export const ASK_DESCRIPTION =
  'Ask the person on their phone a question and wait for the answer (end to end encrypted through svc). ' +
  'Use it when you need a decision or are done and want the next instruction. Returns their answer as text; ' +
  `if nobody answers within the timeout (default ${ASK_DEFAULT_SECONDS} s, at most ${ASK_MAX_SECONDS} s) it ` +
  'returns a result saying so, never hangs.';

export const NOTIFY_DESCRIPTION =
  'Send the person a notification on their phone (end to end encrypted through svc), without waiting for an answer. ' +
  'Returns delivered: true once a phone got it; delivered: false (code not_delivered) with the reason when none did ' +
  "now: it then waits in the app's inbox.";
