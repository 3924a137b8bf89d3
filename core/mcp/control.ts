/**
 * What `svc mcp` and `svc verify` ask the listener on its control socket (core/daemon/control.ts) about asks and
 * notifications, and what it answers. An `ask` request keeps its connection open: `ask.started` at once, then one
 * `ask.done` when the ask ends (answered, expired, or failed with a code).
 */
import { z } from 'zod/v3';
import { ASK_CODES, SessionName } from '../protocol/codes.js';
import { MAX_CHOICE_CHARS, MAX_CHOICES, MAX_NOTIFY_CHARS, MAX_QUESTION_CHARS, MAX_TITLE_CHARS } from './ask.js';

const Ok = { ok: z.literal(true) };

export const MCP_CONTROL_REQUESTS = [
  z.object({
    type: z.literal('ask'),
    session: SessionName,
    question: z.string().min(1).max(MAX_QUESTION_CHARS),
    choices: z.array(z.string().min(1).max(MAX_CHOICE_CHARS)).max(MAX_CHOICES),
    /** Seconds; the listener applies the default and the 600 s cap (core/mcp/ask.ts askDeadline). */
    timeoutSeconds: z.number().finite().positive().optional(),
  }),
  z.object({
    type: z.literal('notify'),
    session: SessionName,
    message: z.string().min(1).max(MAX_NOTIFY_CHARS),
    title: z.string().max(MAX_TITLE_CHARS).optional(),
  }),
  z.object({ type: z.literal('asks') }),
] as const;

export const AskOutcomeSchema = z.discriminatedUnion('state', [
  z.object({
    state: z.literal('answered'),
    text: z.string(),
    choice: z.string().nullable(),
    svcState: z.literal('REMOTE').optional(),
    deviceId: z.string(),
  }),
  z.object({ state: z.literal('expired'), seconds: z.number().finite() }),
  z.object({ state: z.literal('failed'), code: z.enum(ASK_CODES), message: z.string() }),
]);

export const AskInFlight = z.object({
  id: z.string(),
  session: z.string(),
  deadline: z.number().finite(),
  /** Devices the question was sealed for (this computer aside). */
  devices: z.number().int().safe(),
});
export type AskInFlight = z.infer<typeof AskInFlight>;

export const MCP_CONTROL_REPLIES = [
  z.object({
    ...Ok,
    type: z.literal('ask.started'),
    id: z.string(),
    deadline: z.number().finite(),
    seconds: z.number().finite(),
    clamped: z.boolean(),
    devices: z.number().int().safe(),
  }),
  z.object({ ...Ok, type: z.literal('ask.done'), id: z.string(), outcome: AskOutcomeSchema }),
  z.object({
    ...Ok,
    type: z.literal('notify.done'),
    id: z.string(),
    delivered: z.boolean(),
    code: z.string().optional(),
    message: z.string().optional(),
  }),
  z.object({ ...Ok, type: z.literal('asks'), asks: z.array(AskInFlight) }),
] as const;
