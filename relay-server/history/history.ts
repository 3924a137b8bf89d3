/**
 * Session history on the relay (spec 4.11.1; docs/files.md "History"): a listener's `history.chunk` frames are
 * stored as they came (envelopes only: the relay opens nothing) within the account's limits and handed to the
 * account's apps at once (the live timeline); `GET /history` pages a session's chunks, newest first.
 */
import type { ServerResponse } from 'node:http';
import type { ClientFrame } from '../../core/protocol/index.js';
import { HISTORY_LIMITS, type HistoryLimits, HistoryQuery, MAX_CHUNK_CHARS } from '../../core/relay/history.js';
import type { Connection } from '../connection.js';
import type { FrameContext } from '../frameContext.js';
import { HttpError, sendJson } from '../http.js';
import type { KeyRecord, Store } from '../store.js';

type HistoryFrame = Extract<ClientFrame, { type: 'history.chunk' }>;

export async function historyFrame(
  ctx: FrameContext & { historyLimits?: HistoryLimits },
  conn: Connection,
  frame: HistoryFrame,
): Promise<void> {
  const hookId = conn.role === 'listener' && conn.phase === 'subscribed' ? conn.hookId : null;
  if (!hookId) {
    ctx.log.warn(`ws not_subscribed from ${conn.label}: history.chunk`);
    conn.send({
      type: 'error',
      code: 'not_subscribed',
      message: 'subscribe as a listener before sending history.chunk',
    });
    return;
  }
  const size = JSON.stringify(frame.envelope).length;
  if (size > MAX_CHUNK_CHARS) {
    ctx.log.warn(`ws too_large from ${conn.label}: history.chunk for ${frame.session} (${size} chars)`);
    conn.send({
      type: 'error',
      code: 'too_large',
      message: `a history chunk is at most ${MAX_CHUNK_CHARS} characters`,
    });
    return;
  }
  const chunk = { accountId: conn.accountId, computer: hookId, session: frame.session, envelope: frame.envelope };
  const stored = await ctx.store.addHistoryChunk(chunk, ctx.now(), ctx.historyLimits ?? HISTORY_LIMITS);
  ctx.log.info(`history ${hookId}/${frame.session}: chunk ${stored.id} (${size} chars)`);
  const { id, at, envelope } = stored;
  await ctx.bus.publish(conn.accountId, {
    kind: 'history.toApps',
    frame: { type: 'history.chunk', computer: hookId, session: frame.session, id, at, envelope },
  });
}

/** `GET /history?computer=&session=[&before=][&limit=]`: a page of the session's chunks, newest first. */
export async function getHistory(
  { res, key, url }: { res: ServerResponse; key: KeyRecord; url: string },
  { store }: { store: Store },
): Promise<void> {
  const params = Object.fromEntries(new URL(url, 'http://relay').searchParams);
  const parsed = HistoryQuery.safeParse(params);
  if (!parsed.success) {
    throw new HttpError(
      400,
      'bad_request',
      'GET /history?computer=<hookId>&session=<name>[&before=<id>][&limit=1..200]',
    );
  }
  const q = parsed.data;
  const computer = await store.getComputer(q.computer);
  if (!computer || computer.accountId !== key.accountId) throw new HttpError(404, 'not_found', 'no such computer');
  const rows = await store.listHistory({ ...q, accountId: key.accountId, limit: q.limit + 1 });
  sendJson(res, 200, { chunks: rows.slice(0, q.limit), more: rows.length > q.limit });
}
