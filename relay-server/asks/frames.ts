/**
 * What the relay does with the ask and notify frames (docs/protocol.md "Asks and notifications"). It reads only
 * what is outside the envelopes, and logs ids, sessions and codes, never a question or an answer.
 */
import type { NotifyEvent } from '../../core/notify/push.js';
import { decideAccess } from '../../core/relay/access.js';
import type { Connection } from '../connection.js';
import type { FrameContext } from '../frames.js';
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
      if (!ctx.asks.known(conn.accountId, hookId, frame.id)) push(ctx, conn, hookId, { ...frame, kind: 'ask' });
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
    case 'notify.new':
      ctx.log.info(`notify ${hookId}/${frame.id} (${frame.kind}) for ${frame.session}`);
      push(ctx, conn, hookId, frame);
      await publish({ kind: 'ask.toApps', frame: { ...frame, computer: hookId, envelope: { ...frame.envelope } } });
      conn.send({ type: 'notify.ack', id: frame.id });
      return;
  }
}

/** A Web Push for the account's devices that want it and are not watching that session live. */
function push(
  ctx: FrameContext,
  conn: Connection,
  computer: string,
  frame: { id: string; session: string; kind: NotifyEvent; envelope: object },
): void {
  const { id, session, kind, envelope } = frame;
  const sealed = { ...envelope } as Record<string, unknown>;
  ctx.webPush?.notify(conn.accountId, { computer, session, kind, id, envelope: sealed }, (deviceId) =>
    ctx.watchedLive(conn.accountId, deviceId, computer, session),
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
