/**
 * The WebSocket frames of `svc_ask` and `svc_notify` (docs/protocol.md "Asks and notifications"). Spread into
 * `ClientFrame` and `RelayFrame` (core/protocol/frames.ts). Question, answer and notification travel only inside
 * envelopes; outside is routing: the computer, the ask id, the session, the deadline.
 */
import { z } from 'zod/v3';
import { Envelope } from '../seal/envelopeSchema.js';
import { ASK_CODES, AskId, DeviceId, SessionName } from './codes.js';

const SealedField = z.record(z.string(), z.unknown());
const ConnectionId = z.string().min(1).max(64);
const HookIdText = z.string().min(1).max(64);
/** Short id of a notification: `n_…` from svc_notify, `<kind>.<session>.<n>` from listener events. */
const NoteId = z.string().min(1).max(64);
export const ASK_STATES = ['waiting', 'answered', 'expired'] as const;
export const AskResultState = z.enum(['accepted', 'refused']);
export const AskCode = z.enum(ASK_CODES);
export const NOTIFY_KINDS = ['notify', 'ask', 'approval', 'turn', 'schedule'] as const;
export const NotifyKind = z.enum(NOTIFY_KINDS);

const AskNewFields = {
  id: AskId,
  session: SessionName,
  /** Epoch ms, the computer's clock; the relay forgets the ask after it. */
  deadline: z.number().finite(),
  /** Ms left when the listener sent it: the app counts down without trusting the clocks to agree. */
  leftMs: z.number().int().safe().nonnegative(),
};

/** Frames a listener or an app sends to the relay. */
export const ASK_CLIENT_FRAMES = [
  // listener → relay
  z.object({ type: z.literal('ask.new'), ...AskNewFields, envelope: Envelope }),
  z.object({ type: z.literal('ask.closed'), id: AskId, state: z.enum(['answered', 'expired']) }),
  z.object({
    type: z.literal('ask.result'),
    id: AskId,
    deviceId: DeviceId.nullable(),
    connection: ConnectionId.optional(),
    state: AskResultState,
    code: AskCode.optional(),
  }),
  z.object({ type: z.literal('notify.new'), id: NoteId, session: SessionName, kind: NotifyKind, envelope: Envelope }),
  // app → relay
  z.object({ type: z.literal('ask.answer'), computer: HookIdText, id: AskId, envelope: Envelope }),
] as const;

/** Frames the relay sends. */
export const ASK_RELAY_FRAMES = [
  // relay → apps
  z.object({ type: z.literal('ask.new'), computer: z.string(), ...AskNewFields, envelope: SealedField }),
  z.object({ type: z.literal('ask.closed'), computer: z.string(), id: AskId, state: z.enum(['answered', 'expired']) }),
  z.object({
    type: z.literal('ask.result'),
    computer: z.string(),
    id: AskId,
    deviceId: DeviceId.nullable(),
    connection: ConnectionId.optional(),
    state: AskResultState,
    code: AskCode.optional(),
  }),
  z.object({
    type: z.literal('notify.new'),
    computer: z.string(),
    id: NoteId,
    session: SessionName,
    kind: NotifyKind,
    envelope: SealedField,
  }),
  // relay → listener
  z.object({
    type: z.literal('ask.answer'),
    id: AskId,
    deviceId: DeviceId.nullable(),
    connection: ConnectionId,
    envelope: SealedField,
  }),
  /**
   * The relay kept the notification in the phones' inbox; `delivered`: a phone got it now (an app connected, or the
   * push service took a push for it); otherwise `reason`, in words. Absent from older relays: taken as delivered.
   */
  z.object({
    type: z.literal('notify.ack'),
    id: NoteId,
    delivered: z.boolean().optional(),
    reason: z.string().max(200).optional(),
  }),
] as const;
