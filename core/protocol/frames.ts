/**
 * Wire protocol, part 3 of 3 (entry point: core/protocol/index.ts): WebSocket frames, with the session inventory a listener
 * reports in them, the close codes, and parseFrame.
 */
import { z } from 'zod/v3';
import { Envelope } from '../seal/envelopeSchema.js';
import { ASK_CLIENT_FRAMES, ASK_RELAY_FRAMES } from './askFrames.js';
import { DeviceId, MAX_SESSION_NAME, PushState, SessionName } from './codes.js';
import { issueLine } from './issues.js';

// ---------------------------------------------------------------------------
// Inventory (the `listener.sessions` payload)

export const PaneInfo = z.object({
  id: z.string().max(32), // tmux pane id, e.g. %3
  command: z.string().max(256), // #{pane_current_command}
  startCommand: z.string().max(1024).optional(), // #{pane_start_command}
  path: z.string().max(4096).optional(), // #{pane_current_path}
  title: z.string().max(256).optional(), // #{pane_title}
  active: z.boolean(),
  /** `<window index>.<pane index>` */
  index: z.string().max(32).optional(),
  /** The pane is in copy or another mode: keys would go to tmux, not the program. */
  inMode: z.boolean().optional(),
});
export type PaneInfo = z.infer<typeof PaneInfo>;

export const AgentState = z.enum(['idle', 'working', 'awaiting_approval', 'unknown']);
export type AgentState = z.infer<typeof AgentState>;

export const SessionMeta = z.object({
  kind: z.enum(['agent', 'shell']).optional(), // @svc-kind
  agent: z.string().max(16).optional(), // @svc-agent: registry id, e.g. A1
  project: z.string().max(128).optional(), // @svc-project
  label: z.string().max(128).optional(), // @svc-label: the wrapper's --label
  worktree: z.string().max(4096).optional(), // @svc-worktree: path of the --wt worktree
  /** @svc-transcript, @svc-agent-session: the agent's own session, as its hooks said (core/transcripts/pins.ts). */
  transcript: z.string().max(4096).optional(),
  agentSession: z.string().max(128).optional(),
});
export type SessionMeta = z.infer<typeof SessionMeta>;

export const SessionRecord = z.object({
  name: z.string().max(MAX_SESSION_NAME),
  attached: z.boolean(),
  createdAt: z.number().finite(), // epoch seconds, #{session_created}
  activityAt: z.number().finite(), // epoch seconds, #{session_activity}
  panes: z.array(PaneInfo).max(64),
  /** What the svc wrapper recorded on the session (tmux user options `@svc-*`); absent for sessions svc did not make. */
  meta: SessionMeta.optional(),
  /** Filled in by the listener from the agent registry and the session actor. */
  agent: z.string().max(64).optional(),
  label: z.string().max(256).optional(),
  /** Worktree sessions are grouped under their repository's name (spec 2.2). */
  group: z.string().max(128).optional(),
  state: AgentState.optional(),
  shell: z.boolean().optional(),
  parent: z.string().max(MAX_SESSION_NAME).optional(),
  /** Sticky REMOTE (spec 4.13): the person drives this session from the phone; set by the listener. */
  remote: z.boolean().optional(),
  /**
   * The approval prompt on the session's screen, sealed (`approval`, core/protocol/bodies.ts ApprovalCardBody) for this
   * computer and the account's phones; set by the listener while the prompt shows. The relay stores it as is.
   */
  approval: z.record(z.string(), z.unknown()).optional(),
  /**
   * A past session (core/sessions/control.ts): not running (it ended, or the computer restarted); epoch seconds
   * when svc last saw it. It has no panes; `resumable`: the phone may ask to resume it.
   */
  ended: z.number().finite().optional(),
  resumable: z.boolean().optional(),
});
export type SessionRecord = z.infer<typeof SessionRecord>;

// ---------------------------------------------------------------------------
// WebSocket frames. Every frame is a JSON object with a `type`.

/**
 * An envelope as the relay hands it on. Checked loosely here: the receiver's `open` (core/seal/seal.ts) checks it
 * strictly, so a malformed one is refused with a code (`bad_seal`) instead of dropping the whole frame.
 */
export const SealedField = z.record(z.string(), z.unknown());

export const WirePush = z.object({
  id: z.number().int().safe().positive(),
  type: z.string(),
  agentSessionName: z.string(),
  body: z.string(),
  targetComputer: z.string().nullable(),
  createdAt: z.number().finite(), // relay clock, epoch ms
  ageMs: z.number().int().safe().nonnegative(), // relay clock: now - createdAt when this frame was sent
  replay: z.boolean(), // true when sent because the listener missed it while away
  /** A sealed push: the text is in here (body is ''), opened by the listener with the sender's listed key. */
  sealed: SealedField.optional(),
});
export type WirePush = z.infer<typeof WirePush>;

// Pane and key frames (docs/protocol.md "Live panes"): routed by the relay between one app connection and one
// listener, never stored. Screens and keystrokes travel only inside envelopes; what is outside is routing.

const HookIdText = z.string().min(1).max(64);
/** The relay's id of the app connection that asked: answers go back to it when it named no device. */
const ConnectionId = z.string().min(1).max(64);
export const PANE_STATES = ['streaming', 'stopped', 'refused'] as const;
/**
 * Why a stream stopped (`pane.status` state `stopped`); a refusal carries a REFUSAL_CODES code instead. The listener
 * sends all but `computer_offline`, which the relay sends when the computer's listener is no longer connected.
 */
export const PANE_STOP_REASONS = [
  'requested',
  'lease_expired',
  'session_gone',
  'listener_stopping',
  'computer_offline',
  'failed', // the listener's live-pane actor failed and was not restarted (logged on the computer)
] as const;
export const PaneStopReason = z.enum(PANE_STOP_REASONS);
export type PaneStopReason = z.infer<typeof PaneStopReason>;

/**
 * A `pane.status` that says the computer went away (its listener stopped, or the relay lost it), not that the watch
 * is over: the app keeps the last screen, says so, and asks again when the computer is back; the relay keeps
 * counting the app as watching (docs/protocol.md "Live panes").
 */
export function computerAway(state: (typeof PANE_STATES)[number], code: string | null | undefined): boolean {
  return state === 'stopped' && (code === 'computer_offline' || code === 'listener_stopping');
}
export const KEYS_STATES = ['typed', 'refused'] as const;

/** The fields listener → relay and relay → app pane answers share. */
const PaneAnswer = {
  session: SessionName,
  /** The device the answer is for; null when the asking connection had no device (answered to `connection`). */
  deviceId: DeviceId.nullable(),
  connection: ConnectionId.optional(),
};

const PaneStatusFields = {
  ...PaneAnswer,
  state: z.enum(PANE_STATES),
  code: z.string().max(64).optional(),
};

const KeysResultFields = {
  ...PaneAnswer,
  /** The sequence stamp from inside the envelope, when it opened. */
  seq: z.number().int().safe().nonnegative().nullable(),
  state: z.enum(KEYS_STATES),
  code: z.string().max(64).optional(),
  /** A file-view answer for the asking device (`file`, core/protocol/bodies.ts FileResultBody). */
  envelope: z.record(z.string(), z.unknown()).optional(),
};

const PaneFrameFields = {
  session: SessionName,
  deviceId: DeviceId,
  /** Increases by one per frame of one watch; also inside the ciphertext, where the app checks it. */
  frameSeq: z.number().int().safe().nonnegative(),
  envelope: Envelope,
};

/** Relay → listener: what an app connection asked, with the device it subscribed as (or null) and its id. */
const PaneRequestFields = {
  session: SessionName,
  deviceId: DeviceId.nullable(),
  connection: ConnectionId,
};

/** The two `subscribe` frames (listener or app), told apart by `role`. */
const SubscribeFrame = z.discriminatedUnion('role', [
  z.object({
    type: z.literal('subscribe'),
    role: z.literal('listener'),
    hookId: z.string().min(1).max(64),
    /** Highest push id this computer has acted on; the relay replays what came after. */
    lastPushId: z.number().int().safe().nonnegative(),
    version: z.string().max(32),
  }),
  z.object({
    type: z.literal('subscribe'),
    role: z.literal('app'),
    /** The device this connection speaks for (a device of the account): pane frames for it come here. */
    deviceId: DeviceId.optional(),
  }),
]);

/** Every other frame a client sends, told apart by `type`. */
const OtherClientFrame = z.discriminatedUnion('type', [
  /** Any connection, subscribed or not: answered with `pong` (browsers cannot send WebSocket pings). */
  z.object({ type: z.literal('ping'), t: z.number().finite().optional() }),
  // app → relay
  z.object({ type: z.literal('pane.watch'), computer: HookIdText, session: SessionName, envelope: Envelope }),
  z.object({ type: z.literal('pane.stop'), computer: HookIdText, session: SessionName }),
  z.object({ type: z.literal('pane.keys'), computer: HookIdText, session: SessionName, envelope: Envelope }),
  // listener → relay
  z.object({ type: z.literal('pane.frame'), ...PaneFrameFields }),
  z.object({ type: z.literal('pane.status'), ...PaneStatusFields }),
  z.object({ type: z.literal('keys.result'), ...KeysResultFields }),
  z.object({
    type: z.literal('push.result'),
    id: z.number().int().safe().positive(),
    state: z.enum(['injected', 'refused', 'expired']),
    code: z.string().max(64).optional(),
    message: z.string().max(512).optional(),
  }),
  z.object({
    type: z.literal('listener.sessions'),
    seq: z.number().int().safe().nonnegative(),
    sessions: z.array(SessionRecord).max(512),
    /**
     * The computer's schedules (spec 4.8.9), sealed (`schedules`, core/protocol/bodies.ts SchedulesBody) for this computer
     * and the phones; absent when it has none. The relay keeps the newest with the inventory.
     */
    schedules: SealedField.optional(),
  }),
  /** A session's history, a sealed chunk (`history.chunk`, core/protocol/bodies.ts HistoryChunkBody): stored, fanned out. */
  z.object({ type: z.literal('history.chunk'), session: SessionName, envelope: SealedField }),
  // svc_ask and svc_notify (core/protocol/askFrames.ts)
  ...ASK_CLIENT_FRAMES,
]);

/**
 * Frames a client (listener or app) sends to the relay: `subscribe` by its role, the rest by type. Chosen by hand,
 * since zod 3 takes no union inside a discriminated union; the chosen schema's issues come through as they are, so
 * a refusal still names the field.
 */
export const ClientFrame = byType('subscribe', SubscribeFrame, OtherClientFrame);
export type ClientFrame = z.infer<typeof ClientFrame>;

function byType<A extends z.ZodTypeAny, B extends z.ZodTypeAny>(type: string, when: A, otherwise: B) {
  return z.unknown().transform((value, ctx): z.infer<A> | z.infer<B> => {
    const isType = typeof value === 'object' && value !== null && (value as { type?: unknown }).type === type;
    const parsed = (isType ? when : otherwise).safeParse(value);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.addIssue(issue);
    return z.NEVER;
  });
}

/** Frames the relay sends. */
export const RelayFrame = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('subscribed'),
    role: z.enum(['listener', 'app']),
    computer: z.string().nullable(),
    replayed: z.number().int().safe().nonnegative(),
    expired: z.number().int().safe().nonnegative(),
    replayWindowMs: z.number().int().safe().positive(),
  }),
  z.object({ type: z.literal('push.new'), push: WirePush }),
  z.object({
    type: z.literal('push.status'),
    id: z.number().int().safe(),
    state: PushState,
    code: z.string().nullable(),
  }),
  /** The relay has taken the listener's push.result for `id` (stored, or moot): the listener stops resending it. */
  z.object({ type: z.literal('push.ack'), id: z.number().int().safe() }),
  z.object({
    type: z.literal('sessions.result'),
    seq: z.number().int().safe().nonnegative(),
    ok: z.boolean(),
    reason: z.string().optional(),
  }),
  z.object({
    type: z.literal('computers.changed'),
    computer: z.string(),
  }),
  z.object({ type: z.literal('error'), code: z.string(), message: z.string() }),
  /** The answer to `ping`, with its `t`: lets a client that cannot see WebSocket pongs find a half-open socket. */
  z.object({ type: z.literal('pong'), t: z.number().finite().optional() }),
  // relay → listener
  z.object({ type: z.literal('pane.watch'), ...PaneRequestFields, envelope: SealedField }),
  z.object({ type: z.literal('pane.stop'), ...PaneRequestFields }),
  z.object({ type: z.literal('pane.keys'), ...PaneRequestFields, envelope: SealedField }),
  // relay → app
  z.object({ type: z.literal('pane.frame'), computer: z.string(), ...PaneFrameFields, envelope: SealedField }),
  z.object({ type: z.literal('pane.status'), computer: z.string(), ...PaneStatusFields }),
  z.object({ type: z.literal('keys.result'), computer: z.string(), ...KeysResultFields }),
  /** A history chunk the relay stored (`id`, `at`: its own), for the account's apps as it arrives. */
  z.object({
    type: z.literal('history.chunk'),
    computer: z.string(),
    session: z.string(),
    id: z.number().int().safe().positive(),
    at: z.number().finite(),
    envelope: SealedField,
  }),
  // svc_ask and svc_notify (core/protocol/askFrames.ts)
  ...ASK_RELAY_FRAMES,
]);
export type RelayFrame = z.infer<typeof RelayFrame>;

/** What the relay hands a listener for an app connection (pane.watch, pane.stop, pane.keys). */
export type PaneRequestFrame = Extract<RelayFrame, { type: 'pane.watch' | 'pane.stop' | 'pane.keys' }>;
/** What a listener sends back for an app (pane.frame, pane.status, keys.result), without the relay's `computer`. */
export type PaneAnswerFrame = Extract<ClientFrame, { type: 'pane.frame' | 'pane.status' | 'keys.result' }>;
/** The same, as the relay hands it to the app: stamped with the computer it came from. */
export type AppPaneFrame = Extract<RelayFrame, { type: 'pane.frame' | 'pane.status' | 'keys.result' }>;

/** WebSocket close codes the relay uses. 4401/4403 mean: do not retry with this key. */
export const CLOSE = {
  normal: 1000,
  goingAway: 1001,
  tooBig: 1009,
  unauthorized: 4401,
  forbidden: 4403,
  unknownComputer: 4404,
  replaced: 4409,
} as const;

export const AUTH_CLOSE_CODES: ReadonlySet<number> = new Set([
  CLOSE.unauthorized,
  CLOSE.forbidden,
  CLOSE.unknownComputer,
]);

/** Parse a raw frame: JSON first, then the schema. Never throws. */
export function parseFrame<T>(
  schema: z.ZodType<T, z.ZodTypeDef, unknown>,
  raw: string,
): { ok: true; value: T } | { ok: false; code: 'bad_json' | 'bad_frame'; message: string } {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    return { ok: false, code: 'bad_json', message: 'frame is not valid JSON' };
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) return { ok: false, code: 'bad_frame', message: issueLine(parsed.error, 'frame') };
  return { ok: true, value: parsed.data };
}
