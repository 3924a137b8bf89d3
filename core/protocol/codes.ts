/**
 * Wire protocol, part 1 of 3 (entry point: core/protocol/index.ts): limits, the error and refusal codes, and the small field
 * schemas both the HTTP bodies and the WebSocket frames use.
 */
import { z } from 'zod/v3';
import { DEVICE_ID_RE } from '../seal/seal.js';
import { MAX_SESSION_NAME } from './limits.js';

export * from './limits.js';

export const SCOPES = ['push:read', 'push:write'] as const;
export type Scope = (typeof SCOPES)[number];

/** Error codes in `{error:{code,message}}` bodies and `error` frames. */
export const HTTP_ERROR_CODES = [
  'bad_json',
  'bad_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'too_large',
  'rate_limited',
  'unknown_computer',
  'method_not_allowed',
  'unknown_device', // a deviceId that is not a device of this account
  'internal', // a bug in the relay, never something a client sent; logged
  'unavailable', // 503: the relay is shutting down
  'pairing_used', // 410: a pairing code that was already claimed (codes work once)
  'pairing_expired', // 410: a pairing code past its expiry (PAIRING_TTL_MS)
  'storage_full', // 429: the account's open pushes hold MAX_OPEN_PUSH_BYTES already (relay-server/pushes.ts)
  'bad_endpoint', // 400: a Web Push endpoint the relay will not connect to (core/notify/endpoint.ts)
] as const;
export type HttpErrorCode = (typeof HTTP_ERROR_CODES)[number];

/** Codes of `error` frames on the WebSocket. The connection stays open after each of them. */
export const WS_ERROR_CODES = [
  'bad_json', // the frame is not JSON
  'bad_frame', // JSON, but not a ClientFrame (unknown type, wrong field, binary frame)
  'rate_limited', // the connection's frame bucket (RELAY_WS_BUCKET) is empty; the frame was dropped
  'not_subscribed', // push.result before a listener subscribe
  'already_subscribed', // a second subscribe on the same connection
  'not_found', // push.result for a push id this account does not have
  'unknown_device', // an app subscribe with a deviceId that is not a device of this account
  'unknown_computer', // a pane frame for a computer that is not this account's
  'computer_offline', // pane.stop for a computer whose listener is not connected (watch and keys are answered in kind)
  'forbidden', // ask.new, ask.closed, ask.result or notify.new from a key other than the computer's own (core/relay/access.ts)
  'internal', // a bug in the relay; logged
] as const;
export type WsErrorCode = (typeof WS_ERROR_CODES)[number];

/**
 * Why the listener did not type a push. Each is documented in docs/protocol.md.
 * Spec part 7 names the conditions; these are our names for them.
 */
export const REFUSAL_CODES = [
  'invalid_target', // 7.4: name outside [A-Za-z0-9._-]+
  'session_not_found', // no such tmux session on this computer
  'shell_in_front', // 7.1: an interactive shell is the pane's foreground program
  'rate_limited', // 7.6: per-session token bucket empty
  'not_for_this_computer', // 7.2: shell session, push not addressed to this computer
  'shell_input_forbidden', // 7.3: control bytes / newline / attachment into a shell session
  'subagent_view_only', // 7.5 / 4.14
  'empty_body',
  'inject_failed', // tmux refused the keys
  'e2ee_required', // spec 5.5
  'subscriber_unverified', // spec 5.5
  'approval_pending', // an approval prompt is on screen: typed text could answer it; answer it first
  'listener_stopped', // the listener stopped while the push waited for the agent's turn to end: never typed
  'screen_unreadable', // the agent's screen could not be read: a prompt could be up unseen (fail closed)
  'bad_seal', // a sealed body that does not open (tampered, wrong recipient, truncated) or holds the wrong thing
  'replayed', // a sealed sequence stamp not above the last one seen from that device (replayed or reordered)
  'bad_key_name', // key input naming a key outside ALLOWED_KEYS (core/panes/keys.ts)
  'computer_offline', // relay: key input for a computer whose listener is not connected; refused, never typed later
  'devices_unavailable', // temporary: the relay's device list could not be read to open a sealed message; send again
  'too_large', // a sealed text over MAX_BODY_CHARS: refused where it is sealed, and by the listener
  'prompt_changed', // spec 7: an answer or keys for an approval prompt that is no longer the one on screen
  'not_supported', // session control svc cannot do for this agent (no exit command known, no resume)
  'bad_schedule', // spec 4.8: a schedule's time, interval or max-runtime outside what svc accepts
  'prompt_not_accepted', // spec 7.7: a scheduled --prompt for an agent other than A1-A4
  'too_many_schedules', // spec 4.8.5: 20 already
  'no_such_schedule', // removing a schedule that is not (or no longer) there
] as const;
export type RefusalCode = (typeof REFUSAL_CODES)[number];

/** What became of a push, as `GET /pushes/<id>` and `push.status` report it. */
export const PushState = z.enum(['pending', 'delivered', 'injected', 'refused', 'expired']);
export type PushState = z.infer<typeof PushState>;

export const SessionName = z.string().min(1).max(MAX_SESSION_NAME);
/** A device id (app, computer or `svc agent send`); core/seal/seal.ts says why it has no `/`. */
export const DeviceId = z.string().max(128).regex(DEVICE_ID_RE);

/** `a_` + 16 hex: made by the listener, unique across its restarts. */
export const AskId = z.string().regex(/^a_[0-9a-f]{16}$/);

/** Codes an ask can end with, or an answer can be refused with (docs/mcp.md). */
export const ASK_CODES = [
  'no_listener', // the MCP server found no listener on the control socket
  'no_device', // no paired phone to seal the question for
  'no_device_key', // this computer has no device key (svc login again)
  'ask_expired', // the answer came after the ask's time
  'already_answered', // the ask was answered (by this or another device) before
  'ask_unknown', // no such ask on this computer (a listener restart forgets finished ones)
  'not_for_you', // the answering device was not one the question was sealed for
  'bad_seal', // the answer did not open, or holds another ask's id or session
  'listener_stopped', // the listener stopped while the ask waited
  'ask_failed', // the listener's actor for the ask failed (a bug, logged); the question is closed
  'computer_offline', // relay: the computer's listener is not connected
  'forbidden', // relay: this key may not answer (core/relay/access.ts)
] as const;
export type AskCode = (typeof ASK_CODES)[number];
