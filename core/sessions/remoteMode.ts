/**
 * Sticky REMOTE kept across a restart of the listener (spec 4.13, docs/agents.md): the sessions the person drives
 * from the phone, each with the tmux creation time of the session it was, in `~/.svc/remote.json` (0600,
 * actors/sessions/remoteBook.ts). A listener that starts again puts those sessions back in REMOTE; a session of that
 * name made since (another creation time) starts local, and one that ended is forgotten, as it would have been had
 * the listener run all along. Pure.
 */
import { z } from 'zod/v3';
import { SessionName, type SessionRecord } from '../protocol/index.js';

/** Session name → its `createdAt` (tmux's `#{session_created}`, epoch seconds) when it went REMOTE. */
export type RemoteSessions = Record<string, number>;

export const RemoteFile = z.object({
  version: z.literal(1),
  sessions: z.record(SessionName, z.number().int().safe().nonnegative()),
});
export type RemoteFile = z.infer<typeof RemoteFile>;

/** Whether the session of `record` is the one that went REMOTE (not another made since under its name). */
export const isRemote = (remote: RemoteSessions, record: SessionRecord): boolean =>
  remote[record.name] === record.createdAt;

/** `remote` with the session of `record` in REMOTE (`on`) or not. */
export function withRemote(remote: RemoteSessions, record: SessionRecord, on: boolean): RemoteSessions {
  const { [record.name]: _was, ...rest } = remote;
  return on ? { ...rest, [record.name]: record.createdAt } : rest;
}

/**
 * `remote` as a tmux reading leaves it: a session that ended, or was made again under its name, is not REMOTE any
 * more. The same object when nothing changed, so a caller writes the file only when it did.
 */
export function remoteAfterReading(remote: RemoteSessions, sessions: Record<string, SessionRecord>): RemoteSessions {
  const kept = Object.fromEntries(Object.entries(remote).filter(([name, at]) => sessions[name]?.createdAt === at));
  return Object.keys(kept).length === Object.keys(remote).length ? remote : kept;
}
