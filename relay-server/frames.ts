/**
 * What the relay does with each frame a client sends: subscribe (listener or app), push.result, listener.sessions.
 * A frame that does not parse gets an `error` frame (or a failed `sessions.result`) and the connection stays.
 */
import {
  CLOSE,
  type ClientFrame,
  ClientFrame as ClientFrameSchema,
  type PaneStopReason,
  parseFrame,
  type RefusalCode,
  type WsErrorCode,
} from '../core/protocol/index.js';
import { decideAccess } from '../core/relay/access.js';
import { askFrame } from './asks/frames.js';
import { type Connection, watchKey } from './connection.js';
import type { FrameContext } from './frameContext.js';
import { historyFrame } from './history/history.js';
import { toWirePush } from './pushes.js';

/** What a pane request for a computer whose listener is not connected gets (docs/protocol.md "Live panes"). */
const OFFLINE = 'computer_offline' satisfies PaneStopReason & RefusalCode & WsErrorCode;

/** WebSocket close code 1011: the server hit an unexpected condition. */
const INTERNAL_ERROR_CLOSE = 1011;

type SubscribeListener = Extract<ClientFrame, { type: 'subscribe'; role: 'listener' }>;
type PushResultFrame = Extract<ClientFrame, { type: 'push.result' }>;
type SessionsFrame = Extract<ClientFrame, { type: 'listener.sessions' }>;
type SubscribeApp = Extract<ClientFrame, { type: 'subscribe'; role: 'app' }>;
type AppPaneRequest = Extract<ClientFrame, { type: 'pane.watch' | 'pane.stop' | 'pane.keys' }>;
type ListenerPaneAnswer = Extract<ClientFrame, { type: 'pane.frame' | 'pane.status' | 'keys.result' }>;

/** The seq of something that claims to be a listener.sessions frame, so a failed one can be answered in kind. */
function sessionsSeq(text: string): number | null {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return null;
    const { type, seq } = value as { type?: unknown; seq?: unknown };
    return type === 'listener.sessions' && Number.isSafeInteger(seq) && (seq as number) >= 0 ? (seq as number) : null;
  } catch {
    return null;
  }
}

/** Parse one text frame and act on it. Never throws for anything the client sent. */
export async function handleText(ctx: FrameContext, conn: Connection, text: string): Promise<void> {
  const parsed = parseFrame(ClientFrameSchema, text);
  if (!parsed.ok) {
    const seq = parsed.code === 'bad_frame' ? sessionsSeq(text) : null;
    ctx.log.warn(`ws ${parsed.code} from ${conn.label}: ${parsed.message}`);
    if (seq !== null) conn.send({ type: 'sessions.result', seq, ok: false, reason: parsed.message });
    else conn.send({ type: 'error', code: parsed.code, message: parsed.message });
    return;
  }
  const frame = parsed.value;
  switch (frame.type) {
    case 'ping':
      conn.send(frame.t === undefined ? { type: 'pong' } : { type: 'pong', t: frame.t });
      return;
    case 'subscribe':
      if (conn.phase !== 'open') {
        ctx.log.warn(`ws already_subscribed from ${conn.label}`);
        conn.send({ type: 'error', code: 'already_subscribed', message: 'this connection has already subscribed' });
        return;
      }
      if (frame.role === 'app') await subscribeApp(ctx, conn, frame);
      else {
        try {
          await subscribeListener(ctx, conn, frame);
        } catch (error) {
          // A listener left half-subscribed would wait forever; closing makes it reconnect.
          conn.close(INTERNAL_ERROR_CLOSE, 'internal error; reconnect');
          throw error;
        }
      }
      return;
    case 'push.result':
      await pushResult(ctx, conn, frame);
      return;
    case 'listener.sessions':
      await listenerSessions(ctx, conn, frame);
      return;
    case 'pane.watch':
    case 'pane.stop':
    case 'pane.keys':
      await paneRequest(ctx, conn, frame);
      return;
    case 'pane.frame':
    case 'pane.status':
    case 'keys.result':
      await paneAnswer(ctx, conn, frame);
      return;
    case 'history.chunk':
      await historyFrame(ctx, conn, frame);
      return;
    case 'ask.new':
    case 'ask.closed':
    case 'ask.result':
    case 'ask.answer':
    case 'notify.new':
      await askFrame(ctx, conn, frame);
      return;
  }
}

/**
 * Only the key a computer belongs to may be its listener (core/relay/access.ts): a device token or another key of
 * the account is closed 4403 and the computer's real listener is not disturbed.
 */
async function subscribeListener(ctx: FrameContext, conn: Connection, frame: SubscribeListener): Promise<void> {
  const refuse = (message: string) => {
    ctx.log.warn(`ws 4403 ${conn.label}: listener subscribe for ${frame.hookId} refused: ${message}`);
    conn.close(CLOSE.forbidden, message.slice(0, 120));
  };
  const basic = decideAccess(conn.key, { act: 'listen', owner: null });
  if (!basic.ok) return refuse(basic.message);
  const computer = await ctx.store.getComputer(frame.hookId);
  if (!computer || computer.accountId !== conn.accountId) {
    ctx.log.warn(`ws 4404 ${conn.label}: unknown computer ${frame.hookId}`);
    conn.close(CLOSE.unknownComputer, 'no such computer for this key');
    return;
  }
  const access = decideAccess(conn.key, { act: 'listen', owner: computer.ownerKeyId });
  if (!access.ok) return refuse(access.message);
  // A computer registered before owners were recorded belongs to the first API key that listens for it.
  if (access.claims && !(await ctx.store.claimComputer(frame.hookId, conn.key.keyId))) {
    const now = await ctx.store.getComputer(frame.hookId);
    if (now?.ownerKeyId !== conn.key.keyId) return refuse('this computer belongs to another key');
  }
  if (access.claims) ctx.log.info(`computer ${frame.hookId} now belongs to ${conn.key.keyId} (its first listener)`);
  conn.role = 'listener';
  conn.hookId = frame.hookId;
  conn.phase = 'subscribing';
  // From here on, live pushes for this listener are held until the replay has gone out.
  ctx.claimListener(conn);
  await ctx.bus.publish(conn.accountId, { kind: 'listener.subscribed', hookId: frame.hookId, connectionId: conn.id });
  await ctx.store.touchComputer(frame.hookId, ctx.now());
  const { replay, expired } = await ctx.pushes.replayFor(conn.accountId, frame.hookId, frame.lastPushId);
  if (conn.phase !== 'subscribing') return; // closed (or replaced) meanwhile
  conn.send({
    type: 'subscribed',
    role: 'listener',
    computer: frame.hookId,
    replayed: replay.length,
    expired,
    replayWindowMs: ctx.replayWindowMs,
  });
  ctx.log.info(
    `listener ${frame.hookId} subscribed (v${frame.version}, after push ${frame.lastPushId}): ` +
      `${replay.length} replayed, ${expired} expired`,
  );
  const sent = new Set<number>();
  for (const push of replay) {
    conn.send({ type: 'push.new', push: toWirePush(push, ctx.now(), true) });
    sent.add(push.id);
  }
  // Pushes that arrived live during the replay, in order, unless the replay already carried them.
  const held = conn.held.splice(0).filter((p) => !sent.has(p.id) && p.id > frame.lastPushId);
  for (const push of held) conn.send({ type: 'push.new', push: toWirePush(push, ctx.now(), false) });
  conn.phase = 'subscribed';
  for (const push of [...replay, ...held]) await ctx.pushes.markDelivered(push.accountId, push.id);
  await ctx.bus.publish(conn.accountId, { kind: 'computers.changed', computer: frame.hookId });
}

async function subscribeApp(ctx: FrameContext, conn: Connection, frame: SubscribeApp): Promise<void> {
  if (frame.deviceId !== undefined) {
    const device = await ctx.store.getDevice(frame.deviceId);
    // A device token speaks for its own device only.
    const foreign = conn.key.deviceId != null && conn.key.deviceId !== frame.deviceId;
    if (!device || device.accountId !== conn.accountId || foreign) {
      ctx.log.warn(`ws unknown_device from ${conn.label}: ${frame.deviceId}`);
      conn.send({ type: 'error', code: 'unknown_device', message: 'deviceId is not a device of this account' });
      return;
    }
    // A paired device speaks only through its own token: an API key cannot pose as the phone and take its frames.
    const access = decideAccess(conn.key, {
      act: 'actAsDevice',
      deviceId: device.deviceId,
      paired: device.paired === true,
    });
    if (!access.ok) {
      ctx.log.warn(`ws forbidden from ${conn.label}: subscribe as ${frame.deviceId}: ${access.message}`);
      conn.send({ type: 'error', code: 'forbidden', message: access.message });
      return;
    }
    conn.deviceId = device.deviceId;
  }
  conn.role = 'app';
  conn.phase = 'subscribed';
  conn.send({
    type: 'subscribed',
    role: 'app',
    computer: null,
    replayed: 0,
    expired: 0,
    replayWindowMs: ctx.replayWindowMs,
  });
  ctx.log.info(`${conn.label} subscribed${conn.deviceId ? ` as device ${conn.deviceId}` : ''}`);
  for (const ask of ctx.asks.open(conn.accountId, ctx.now())) conn.send(ask);
}

function subscribedListener(conn: Connection): string | null {
  return conn.role === 'listener' && conn.phase === 'subscribed' ? conn.hookId : null;
}

async function pushResult(ctx: FrameContext, conn: Connection, frame: PushResultFrame): Promise<void> {
  const hookId = subscribedListener(conn);
  if (!hookId) {
    ctx.log.warn(`ws not_subscribed from ${conn.label}: push.result ${frame.id}`);
    conn.send({ type: 'error', code: 'not_subscribed', message: 'subscribe as a listener before sending push.result' });
    return;
  }
  const outcome = await ctx.pushes.applyResult(conn.accountId, hookId, frame.id, frame);
  const what = `push ${conn.accountId}/${frame.id} ${frame.state}${frame.code ? ` (${frame.code})` : ''} by ${hookId}`;
  if (outcome === 'not_found') {
    ctx.log.warn(`ws not_found from ${conn.label}: push.result for unknown push ${frame.id}`);
    conn.send({ type: 'error', code: 'not_found', message: `no push ${frame.id} in this account` });
  } else if (outcome === 'ignored') {
    ctx.log.info(`${what}: ignored, the push already has a final state`);
  } else {
    ctx.log.info(what);
  }
  // Stored (or moot: sending it again cannot change anything): the listener stops resending it.
  conn.send({ type: 'push.ack', id: frame.id });
}

async function listenerSessions(ctx: FrameContext, conn: Connection, frame: SessionsFrame): Promise<void> {
  const hookId = subscribedListener(conn);
  if (!hookId) {
    ctx.log.warn(`ws not_subscribed from ${conn.label}: listener.sessions ${frame.seq}`);
    conn.send({ type: 'sessions.result', seq: frame.seq, ok: false, reason: 'not_subscribed' });
    return;
  }
  await ctx.store.saveSessions(hookId, frame.sessions, ctx.now(), frame.schedules ?? null);
  conn.send({ type: 'sessions.result', seq: frame.seq, ok: true });
  ctx.log.info(`listener ${hookId} reported ${frame.sessions.length} session(s) (seq ${frame.seq})`);
  await ctx.bus.publish(conn.accountId, { kind: 'computers.changed', computer: hookId });
}

/**
 * An app asks a computer's listener to start or stop a live pane, or sends it keys. The relay adds who asked (the
 * device the connection subscribed as, and the connection) and routes it; it reads nothing inside the envelope.
 */
async function paneRequest(ctx: FrameContext, conn: Connection, frame: AppPaneRequest): Promise<void> {
  if (conn.role !== 'app' || conn.phase !== 'subscribed') {
    ctx.log.warn(`ws not_subscribed from ${conn.label}: ${frame.type}`);
    conn.send({ type: 'error', code: 'not_subscribed', message: `subscribe as an app before sending ${frame.type}` });
    return;
  }
  if (frame.type === 'pane.keys') {
    const access = decideAccess(conn.key, { act: 'typeKeys' });
    if (!access.ok) {
      ctx.log.warn(
        `ws forbidden from ${conn.label}: pane.keys for ${frame.computer}/${frame.session}: ${access.message}`,
      );
      const to = { computer: frame.computer, session: frame.session, deviceId: conn.deviceId, connection: conn.id };
      conn.send({ type: 'keys.result', ...to, seq: null, state: 'refused', code: 'forbidden' });
      return;
    }
  }
  const computer = await ctx.store.getComputer(frame.computer);
  if (!computer || computer.accountId !== conn.accountId) {
    ctx.log.warn(`ws unknown_computer from ${conn.label}: ${frame.type} for ${frame.computer}`);
    conn.send({ type: 'error', code: 'unknown_computer', message: 'computer is not a computer of this account' });
    return;
  }
  if (frame.type === 'pane.watch') conn.watch(frame.computer, frame.session);
  if (frame.type === 'pane.stop') conn.watching.delete(watchKey(frame.computer, frame.session));
  if (!ctx.isOnline(frame.computer)) {
    // Answered at once and in kind, so the app can say which screen is not live and which key was not typed. Keys
    // are not kept for later: typed after the computer is back, they would land on a screen nobody saw.
    const to = { computer: frame.computer, session: frame.session, deviceId: conn.deviceId, connection: conn.id };
    if (frame.type === 'pane.watch') conn.send({ type: 'pane.status', ...to, state: 'stopped', code: OFFLINE });
    else if (frame.type === 'pane.keys') {
      conn.send({ type: 'keys.result', ...to, seq: null, state: 'refused', code: OFFLINE });
    } else conn.send({ type: 'error', code: OFFLINE, message: `no listener of ${frame.computer} is connected` });
    return;
  }
  const routing = { session: frame.session, deviceId: conn.deviceId, connection: conn.id };
  const forward =
    frame.type === 'pane.stop'
      ? { type: frame.type, ...routing }
      : { type: frame.type, ...routing, envelope: { ...frame.envelope } };
  if (frame.type !== 'pane.keys') ctx.log.info(`${frame.type} ${frame.computer}/${frame.session} from ${conn.label}`);
  await ctx.bus.publish(conn.accountId, { kind: 'pane.toListener', hookId: frame.computer, frame: forward });
}

/** A listener's pane frame, status or key result, for the app connections of one device (or the one that asked). */
async function paneAnswer(ctx: FrameContext, conn: Connection, frame: ListenerPaneAnswer): Promise<void> {
  const hookId = subscribedListener(conn);
  if (!hookId) {
    ctx.log.warn(`ws not_subscribed from ${conn.label}: ${frame.type}`);
    conn.send({
      type: 'error',
      code: 'not_subscribed',
      message: `subscribe as a listener before sending ${frame.type}`,
    });
    return;
  }
  if (frame.type === 'pane.status') {
    ctx.log.info(`pane ${hookId}/${frame.session} ${frame.state}${frame.code ? ` (${frame.code})` : ''}`);
  }
  const stamped =
    frame.type === 'pane.frame'
      ? { ...frame, computer: hookId, envelope: { ...frame.envelope } }
      : { ...frame, computer: hookId };
  await ctx.bus.publish(conn.accountId, { kind: 'pane.toApp', frame: stamped });
}
