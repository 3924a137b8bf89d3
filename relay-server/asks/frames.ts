/**
 * What the relay does with the ask and notify frames (docs/protocol.md "Asks and notifications"). It reads only
 * what is outside the envelopes, and logs ids, sessions and codes, never a question or an answer.
 */

import { deliveredNote, type NotifyEvent, type PushOutcome } from '../../core/notify/push.js';
import { decideAccess } from '../../core/relay/access.js';
import type { Connection } from '../connection.js';
import type { FrameContext } from '../frameContext.js';
import { describeError } from '../log.js';
import type { AskClientFrame } from './book.js';

export async function askFrame(ctx: FrameContext, conn: Connection, frame: AskClientFrame): Promise<void> {
  if (frame.type === 'ask.answer') {
    await answer(ctx, conn, frame);
    return;
  }
  const hookId = conn.role === 'listener' && conn.phase === 'subscribed' ? conn.hookId : null;
  if (!hookId) {
    ctx.log.warn(`ws not_subscribed from ${conn.label}: ${frame.type}`);
    conn.send({
      type: 'error',
      code: 'not_subscribed',
      message: `subscribe as a listener before sending ${frame.type}`,
    });
    return;
  }
  // Asked and told on the computer's behalf: its own key only (core/relay/access.ts), as for its listener.
  const computer = await ctx.store.getComputer(hookId);
  const access = decideAccess(conn.key, { act: 'announce', owner: computer?.ownerKeyId });
  if (!access.ok) {
    ctx.log.warn(`ws forbidden from ${conn.label}: ${frame.type} for ${hookId}: ${access.message}`);
    conn.send({ type: 'error', code: 'forbidden', message: access.message.slice(0, 200) });
    return;
  }
  const publish = (f: Parameters<typeof ctx.bus.publish>[1]) => ctx.bus.publish(conn.accountId, f);
  switch (frame.type) {
    case 'ask.new':
      ctx.log.info(`ask ${hookId}/${frame.id} for ${frame.session} (${Math.round(frame.leftMs / 1000)} s left)`);
      // Announced again after a reconnect: the phone was told already.
      if (!ctx.asks.known(conn.accountId, hookId, frame.id)) void push(ctx, conn, hookId, { ...frame, kind: 'ask' });
      await publish({ kind: 'ask.toApps', frame: { ...frame, computer: hookId, envelope: { ...frame.envelope } } });
      return;
    case 'ask.closed':
      ctx.log.info(`ask ${hookId}/${frame.id} ${frame.state}`);
      await publish({ kind: 'ask.toApps', frame: { ...frame, computer: hookId } });
      return;
    case 'ask.result':
      if (frame.state === 'refused') ctx.log.info(`answer to ask ${hookId}/${frame.id} refused (${frame.code ?? '-'})`);
      await publish({ kind: 'ask.toApps', frame: { ...frame, computer: hookId } });
      return;
    case 'notify.new': {
      // kept for the phones' inbox first: nothing is lost to an app that is closed or a push that does not arrive
      const envelope = { ...frame.envelope } as Record<string, unknown>;
      const { id, session, kind } = frame;
      const at = ctx.now();
      const size = JSON.stringify(envelope).length;
      if (size > MAX_NOTE_ENVELOPE_CHARS) {
        // a notice is a couple of KiB sealed (MAX_NOTIFY_CHARS): one this big is not kept nor sent
        ctx.log.warn(`notify ${hookId}/${id} (${kind}) for ${session}: refused, ${size} chars sealed`);
        conn.send({ type: 'notify.ack', id, delivered: false, reason: 'too large to keep or send' });
        return;
      }
      try {
        const note = { accountId: conn.accountId, computer: hookId, id, session, kind, envelope, at };
        await ctx.store.saveNotification(note);
        ctx.log.info(`notify ${hookId}/${id} (${kind}) for ${session}: kept`);
      } catch (error) {
        // the inbox could not take it (a full disk, the database away): still sent to the phones now
        ctx.log.error(`notify ${hookId}/${id} (${kind}) for ${session}: not kept: ${describeError(error)}`);
      }
      const pushed = push(ctx, conn, hookId, frame);
      await publish({ kind: 'ask.toApps', frame: { ...frame, computer: hookId, envelope } });
      // the ack waits for the push service's word, off this connection's queue (its other frames go on meanwhile)
      void ackNote(ctx, conn, `${hookId}/${id}`, id, ctx.appsOnline(conn.accountId), pushed);
      return;
    }
  }
}

async function ackNote(
  ctx: FrameContext,
  conn: Connection,
  what: string,
  id: string,
  apps: number,
  pushed: Promise<PushOutcome>,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    pushed,
    new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), NOTIFY_PUSH_WAIT_MS);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
  const delivered = deliveredNote(apps, outcome);
  ctx.log.info(`notify ${what}: ${delivered.delivered ? 'delivered' : `not delivered (${delivered.reason})`}`);
  conn.send({ type: 'notify.ack', id, ...delivered });
}

/** The largest sealed notification the relay keeps and sends (a real one is about 3 KiB). */
export const MAX_NOTE_ENVELOPE_CHARS = 32_768;

/** How long a notification's ack waits for the push service's word (the listener waits NOTIFY_ACK_MS in all). */
export const NOTIFY_PUSH_WAIT_MS = 8_000;

/** A Web Push for the account's devices that want it and are not watching that session live. */
function push(
  ctx: FrameContext,
  conn: Connection,
  computer: string,
  frame: { id: string; session: string; kind: NotifyEvent; envelope: object },
): Promise<PushOutcome> {
  const { id, session, kind, envelope } = frame;
  const sealed = { ...envelope } as Record<string, unknown>;
  const none = { subscribed: 0, wanted: 0, accepted: 0 };
  return (
    ctx.webPush?.notify(conn.accountId, { computer, session, kind, id, envelope: sealed }, (deviceId) =>
      ctx.watchedLive(conn.accountId, deviceId, computer, session),
    ) ?? Promise.resolve(none)
  );
}

/** An app's sealed answer: refused here when the ask is known to be over or its computer is away, else routed. */
async function answer(
  ctx: FrameContext,
  conn: Connection,
  frame: Extract<AskClientFrame, { type: 'ask.answer' }>,
): Promise<void> {
  if (conn.role !== 'app' || conn.phase !== 'subscribed') {
    ctx.log.warn(`ws not_subscribed from ${conn.label}: ask.answer`);
    conn.send({ type: 'error', code: 'not_subscribed', message: 'subscribe as an app before sending ask.answer' });
    return;
  }
  const access = decideAccess(conn.key, { act: 'answerAsk' });
  if (!access.ok) {
    ctx.log.warn(`ws forbidden from ${conn.label}: ask.answer for ${frame.computer}: ${access.message}`);
    conn.send({
      type: 'ask.result',
      computer: frame.computer,
      id: frame.id,
      deviceId: conn.deviceId,
      connection: conn.id,
      state: 'refused',
      code: 'forbidden',
    });
    return;
  }
  const computer = await ctx.store.getComputer(frame.computer);
  if (!computer || computer.accountId !== conn.accountId) {
    ctx.log.warn(`ws unknown_computer from ${conn.label}: ask.answer for ${frame.computer}`);
    conn.send({ type: 'error', code: 'unknown_computer', message: 'computer is not a computer of this account' });
    return;
  }
  const to = { computer: frame.computer, id: frame.id, deviceId: conn.deviceId, connection: conn.id };
  const ended = ctx.asks.ended(conn.accountId, frame.computer, frame.id, ctx.now());
  if (ended) {
    const code = ended === 'answered' ? 'already_answered' : 'ask_expired';
    ctx.log.info(`answer to ask ${frame.computer}/${frame.id} from ${conn.label}: refused (${code})`);
    conn.send({ type: 'ask.result', ...to, state: 'refused', code });
    return;
  }
  if (!ctx.isOnline(frame.computer)) {
    conn.send({ type: 'ask.result', ...to, state: 'refused', code: 'computer_offline' });
    return;
  }
  ctx.log.info(`answer to ask ${frame.computer}/${frame.id} from ${conn.label}`);
  await ctx.bus.publish(conn.accountId, {
    kind: 'ask.toListener',
    hookId: frame.computer,
    frame: {
      type: 'ask.answer',
      id: frame.id,
      deviceId: conn.deviceId,
      connection: conn.id,
      envelope: { ...frame.envelope },
    },
  });
}
