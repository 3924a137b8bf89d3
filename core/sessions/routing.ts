/**
 * What the listener's root does with each thing the relay hands it, before a session, device or watch actor sees
 * it (docs/architecture.md): a push is ignored, answered again, expired, refused, held for a fresh tmux reading, or
 * sent to the `device.<id>` actor of its sender to be opened; a pane request is refused or sent to its device; an
 * opened body is refused, held, or starts or renews a live pane.
 *
 * Pure: the root's delivery steps (machines/delivery.ts) hand in the frame and the facts the root holds (its context
 * fits `RouteFacts`) and act on the decision.
 */

import { anyPinned, type ContactOutcome, MAX_DEVICE_ACTORS, type PinsFile } from '../devices/devices.js';
import { badKeyName } from '../panes/keys.js';
import { type InboundPurpose, type PhoneInput, phoneInputOf } from '../protocol/bodies.js';
import type {
  ClientFrame,
  PaneAnswerFrame,
  PaneRequestFrame,
  RefusalCode,
  SessionRecord,
  WirePush,
} from '../protocol/index.js';
import { DEVICE_ID_RE } from '../seal/seal.js';
import { activePane } from './inventory.js';
import type { Ledger } from './ledger.js';
import { STOPPED_WHILE_TYPING, triagePush } from './ledger.js';
import { isValidSessionName } from './refusals.js';

/** Live panes at once, over all devices: each is a tmux capture every paneInterval. */
export const MAX_WATCHES = 8;

export const watchId = (deviceId: string, session: string) => `watch.${deviceId}/${session}`;

/** What a sealed contact was, so the root knows what to do with the body its device opens. */
export type ContactRef =
  | { kind: 'push'; push: WirePush; receivedAt: number }
  | { kind: 'watch'; session: string; connection: string }
  | { kind: 'keys'; session: string; connection: string; receivedAt: number };

/** A sealed contact as the root hands it to `device.<id>`. */
export interface Contact {
  ref: ContactRef;
  purpose: InboundPurpose;
  envelope: unknown;
}

/**
 * The facts the decisions read: machines/listener.ts passes its context, and machines/watches.ts its live panes (a
 * `pane.stop`, an opened `pane.watch`).
 */
export interface RouteFacts {
  ledger: Ledger;
  /** The relay's replay window once the link is up. */
  replayWindowMs: number;
  pins: PinsFile;
  /** devices.json exists but cannot be read: plaintext is refused as if a device were pinned. */
  pinsUnreadable: boolean;
  /** Device ids that have a `device.<id>` actor. */
  devices: readonly string[];
  /** Sessions tmux showed last, by name. */
  sessions: Readonly<Record<string, SessionRecord>>;
  /** Live panes by `watchId`. */
  watches: Readonly<Record<string, unknown>>;
}

// ---------------------------------------------------------------------------
// To a device actor

/** Whether a sealed contact can reach a device actor: its own, or one made for it while there is room. */
export type DeviceRoute =
  | { kind: 'refuse'; code: 'bad_seal' | 'subscriber_unverified' }
  | { kind: 'contact'; deviceId: string; spawn: boolean };

export function routeToDevice(deviceId: string, devices: readonly string[]): DeviceRoute {
  if (!DEVICE_ID_RE.test(deviceId)) return { kind: 'refuse', code: 'bad_seal' };
  if (devices.includes(deviceId)) return { kind: 'contact', deviceId, spawn: false };
  // A relay inventing device ids must not grow the actor tree without bound.
  if (devices.length >= MAX_DEVICE_ACTORS) return { kind: 'refuse', code: 'subscriber_unverified' };
  return { kind: 'contact', deviceId, spawn: true };
}

// ---------------------------------------------------------------------------
// push.new

export type PushDecision =
  /** Not an `agent.command`: another tool's push (spec 2.1). */
  | { kind: 'ignore' }
  /**
   * Claimed by this listener and not answered yet (opened, waiting for its session's turn, or being typed): a copy
   * the relay sent again is dropped; the one in hand is answered when it is done. A start settles every claim of the
   * listener before it (core/sessions/ledger.ts `recoverLedger`), so a claim in the ledger is always this one's.
   */
  | { kind: 'inHand' }
  /** Acted on before: its recorded result is sent again and nothing is typed. */
  | { kind: 'resend'; state: 'injected' | 'refused' | 'expired'; code?: string; message?: string }
  /** Older than the replay window: recorded and reported expired, never typed late. */
  | { kind: 'expire' }
  /** Recorded refused at once. */
  | { kind: 'refuse'; code: 'invalid_target' | 'e2ee_required' | 'bad_seal' }
  /** Sealed: claimed, then opened by its sender's device actor (made first when `spawn`). */
  | { kind: 'contact'; deviceId: string; spawn: boolean; contact: Contact }
  /** Sealed, but no device actor can be made for its sender: claimed, then refused as a session would answer. */
  | { kind: 'claimThenRefuse'; code: 'bad_seal' | 'subscriber_unverified' }
  /** Plaintext: claimed, then held for a tmux reading newer than itself. */
  | { kind: 'hold' };

export { STOPPED_WHILE_TYPING };

export function decidePush(push: WirePush, receivedAt: number, facts: Omit<RouteFacts, 'watches'>): PushDecision {
  const triage = triagePush(push, facts.ledger, facts.replayWindowMs);
  if (triage.action === 'ignore' || triage.action === 'expire') return { kind: triage.action };
  if (triage.action === 'resend') {
    const before = triage.outcome;
    if (before.state === 'claimed') return { kind: 'inHand' };
    return { kind: 'resend', state: before.state, ...(before.code ? { code: before.code } : {}) };
  }
  if (!isValidSessionName(push.agentSessionName)) return { kind: 'refuse', code: 'invalid_target' };
  if (!push.sealed) {
    return anyPinned(facts.pins) || facts.pinsUnreadable ? { kind: 'refuse', code: 'e2ee_required' } : { kind: 'hold' };
  }
  const from = push.sealed.from;
  if (typeof from !== 'string' || !DEVICE_ID_RE.test(from)) return { kind: 'refuse', code: 'bad_seal' };
  const route = routeToDevice(from, facts.devices);
  if (route.kind === 'refuse') return { kind: 'claimThenRefuse', code: route.code };
  const contact: Contact = { ref: { kind: 'push', push, receivedAt }, purpose: 'agent.command', envelope: push.sealed };
  return { ...route, contact };
}

// ---------------------------------------------------------------------------
// pane.watch, pane.keys, pane.stop

export type PaneRequestDecision =
  /** A pane.stop for no live pane, or from a connection without a device. */
  | { kind: 'ignore' }
  | { kind: 'stop'; watchId: string }
  /** Answered to the connection that asked (pane.status or keys.result). */
  | { kind: 'refuse'; code: 'e2ee_required' | 'bad_seal' | 'subscriber_unverified' }
  | { kind: 'contact'; deviceId: string; spawn: boolean; contact: Contact };

export function decidePaneRequest(
  frame: PaneRequestFrame,
  receivedAt: number,
  facts: Pick<RouteFacts, 'devices' | 'watches'>,
): PaneRequestDecision {
  const { session, connection, deviceId } = frame;
  if (frame.type === 'pane.stop') {
    const id = deviceId === null ? null : watchId(deviceId, session);
    return id !== null && facts.watches[id] ? { kind: 'stop', watchId: id } : { kind: 'ignore' };
  }
  // Screens and keystrokes never cross the relay in the clear: a connection without a device key is refused
  // whatever the pins (docs/security.md).
  if (deviceId === null) return { kind: 'refuse', code: 'e2ee_required' };
  // The device the relay says asked must be the one that sealed: the answer goes to that device.
  if (frame.envelope.from !== deviceId) return { kind: 'refuse', code: 'bad_seal' };
  const route = routeToDevice(deviceId, facts.devices);
  if (route.kind === 'refuse') return route;
  const { envelope } = frame;
  const contact: Contact =
    frame.type === 'pane.watch'
      ? { ref: { kind: 'watch', session, connection }, purpose: 'pane.watch', envelope }
      : { ref: { kind: 'keys', session, connection, receivedAt }, purpose: 'pane.keys', envelope };
  return { ...route, contact };
}

// ---------------------------------------------------------------------------
// What a device actor opened

const ANOTHER_SESSION = 'sealed for another session';

/** A sealed push its device opened (or refused): bound to its session inside the envelope. */
export type OpenedPushDecision =
  | { kind: 'refuse'; code: RefusalCode; message?: string }
  /** The push with its opened text as the body, held like a plaintext one. */
  | { kind: 'hold'; push: WirePush };

export function decideOpenedPush(push: WirePush, outcome: ContactOutcome<'agent.command'>): OpenedPushDecision {
  const refuse = (code: RefusalCode, message: string) => ({
    kind: 'refuse' as const,
    code,
    ...(message ? { message: message.slice(0, 200) } : {}),
  });
  if (!outcome.accepted) return refuse(outcome.code, outcome.message);
  // The relay cannot point a sealed message at another session.
  if (outcome.body.session !== push.agentSessionName) return refuse('bad_seal', ANOTHER_SESSION);
  return { kind: 'hold', push: { ...push, body: outcome.body.text, sealed: undefined } };
}

export type OpenedWatchDecision =
  | { kind: 'refuse'; code: RefusalCode; message?: string }
  /** This device already watches this session: the lease is renewed, no second stream. */
  | { kind: 'renew'; watchId: string; leaseMs: number }
  /** A new live pane: what machines/paneWatch.ts needs besides who asked for which session. */
  | { kind: 'watch'; watchId: string; paneId: string; publicKey: string; leaseMs: number };

export function decideOpenedWatch(
  ref: Extract<ContactRef, { kind: 'watch' }>,
  deviceId: string,
  outcome: ContactOutcome<'pane.watch'>,
  facts: Pick<RouteFacts, 'sessions' | 'watches'>,
): OpenedWatchDecision {
  if (!outcome.accepted) return { kind: 'refuse', code: outcome.code, message: outcome.message };
  const { session, leaseMs } = outcome.body;
  if (session !== ref.session) return { kind: 'refuse', code: 'bad_seal', message: ANOTHER_SESSION };
  const record = facts.sessions[session];
  const pane = record ? activePane(record) : undefined;
  if (!pane) return { kind: 'refuse', code: 'session_not_found' };
  const id = watchId(deviceId, session);
  if (facts.watches[id]) return { kind: 'renew', watchId: id, leaseMs };
  if (Object.keys(facts.watches).length >= MAX_WATCHES) {
    return { kind: 'refuse', code: 'rate_limited', message: 'too many live panes' };
  }
  return { kind: 'watch', watchId: id, paneId: pane.id, publicKey: outcome.publicKey, leaseMs };
}

/** A phone's key input for a session (machines/session.ts SessionKeys): what it asks, decoded once. */
export interface HeldKeys {
  kind: 'keys';
  ref: { deviceId: string; connection: string; seq: number };
  receivedAt: number;
  input: PhoneInput;
}

export type OpenedKeysDecision =
  /** `seq`: the stamp inside the envelope, when it opened. */
  { kind: 'refuse'; code: RefusalCode; seq: number | null; message?: string } | { kind: 'hold'; keys: HeldKeys };

export function decideOpenedKeys(
  ref: Extract<ContactRef, { kind: 'keys' }>,
  deviceId: string,
  outcome: ContactOutcome<'pane.keys'>,
): OpenedKeysDecision {
  if (!outcome.accepted) return { kind: 'refuse', code: outcome.code, seq: null, message: outcome.message };
  const { session, seq, keys = [] } = outcome.body;
  if (session !== ref.session) return { kind: 'refuse', code: 'bad_seal', seq, message: ANOTHER_SESSION };
  if (badKeyName(keys) !== undefined) return { kind: 'refuse', code: 'bad_key_name', seq };
  const held: HeldKeys = {
    kind: 'keys',
    ref: { deviceId, connection: ref.connection, seq },
    receivedAt: ref.receivedAt,
    input: phoneInputOf(outcome.body),
  };
  return { kind: 'hold', keys: held };
}

// ---------------------------------------------------------------------------
// Held input

/**
 * What an inventory snapshot that answers REFRESH number `answers` releases. Input held with `ask` greater than
 * that waits: the reading began before the input arrived and may predate what it is about. Released input is
 * `found` when the reading shows its session, otherwise it is refused session_not_found. Order is kept.
 */
export function releaseHeld<H extends { session: string; ask: number }>(
  held: readonly H[],
  answers: number,
  sessions: Readonly<Record<string, unknown>>,
): { waiting: H[]; released: { held: H; found: boolean }[] } {
  const waiting: H[] = [];
  const released: { held: H; found: boolean }[] = [];
  for (const h of held) {
    if (answers < h.ask) waiting.push(h);
    else released.push({ held: h, found: sessions[h.session] !== undefined });
  }
  return { waiting, released };
}

// ---------------------------------------------------------------------------
// Answers to the relay

/** Who asked for a live pane or sent keys: the answer goes back to that device and connection. */
export interface PaneAsker {
  session: string;
  deviceId: string | null;
  connection: string;
}

export function paneStatusFrame(
  to: PaneAsker,
  state: 'streaming' | 'stopped' | 'refused',
  code?: string,
): PaneAnswerFrame {
  const { session, deviceId, connection } = to;
  return { type: 'pane.status', session, deviceId, connection, ...(code ? { code } : {}), state };
}

export function keysResultFrame(
  to: PaneAsker,
  state: 'typed' | 'refused',
  code?: string,
  seq: number | null = null,
): PaneAnswerFrame {
  const { session, deviceId, connection } = to;
  return { type: 'keys.result', session, deviceId, connection, ...(code ? { code } : {}), seq, state };
}

export function pushResultFrame(
  id: number,
  state: 'injected' | 'refused' | 'expired',
  code?: string,
  message?: string,
): ClientFrame {
  return { type: 'push.result', id, state, ...(code ? { code } : {}), ...(message ? { message } : {}) };
}
