/** Pure inventory decisions: has anything a phone would notice changed since the last report? */

import { byCodeUnits } from '../order.js';
import type { SessionRecord } from '../protocol/index.js';
import { startProgramName } from '../tmux/startCommand.js';

/** A stable key of what the app shows; order of sessions and panes does not matter. */
export function inventoryKey(sessions: readonly SessionRecord[]): string {
  const sorted = [...sessions]
    .map((s) => ({ ...s, panes: [...s.panes].sort((a, b) => byCodeUnits(a.id, b.id)) }))
    .sort((a, b) => byCodeUnits(a.name, b.name));
  return JSON.stringify(sorted);
}

export function inventoryChanged(prev: readonly SessionRecord[] | null, next: readonly SessionRecord[]): boolean {
  return prev === null || inventoryKey(prev) !== inventoryKey(next);
}

/**
 * The same comparison without what changes all the time while an agent works (the pane titles a spinner animates,
 * the activity time): what a reading taken because a screen changed reports at once. The rest waits for the poll.
 */
export function inventoryChangedMuch(prev: readonly SessionRecord[] | null, next: readonly SessionRecord[]): boolean {
  const plain = (sessions: readonly SessionRecord[]) =>
    sessions.map((s) => ({ ...s, activityAt: 0, panes: s.panes.map(({ title: _t, ...p }) => p) }));
  return prev === null || inventoryKey(plain(prev)) !== inventoryKey(plain(next));
}

export function activePane(session: SessionRecord) {
  return session.panes.find((p) => p.active) ?? session.panes[0];
}

export function describeSessions(sessions: readonly SessionRecord[]): string {
  return sessions.map((s) => s.name).join(', ');
}

/**
 * A session record as the relay may keep it: a pane's start command becomes its program's name alone. The rest of
 * what the pane was started with (a first prompt, `svc cc --detach "rotate the prod db password to …"`) is what a
 * person typed, which the relay never holds in the clear. Where the agent files its transcript, and its own session
 * id, are the computer's business: they stay on it.
 */
export function forRelay(record: SessionRecord): SessionRecord {
  let out = record;
  if (record.meta?.transcript !== undefined || record.meta?.agentSession !== undefined) {
    const { transcript: _t, agentSession: _a, ...meta } = record.meta;
    out = { ...out, meta };
  }
  if (!out.panes.some((p) => p.startCommand !== undefined)) return out;
  return {
    ...out,
    panes: out.panes.map(({ startCommand, ...pane }) => {
      const program = startProgramName(startCommand);
      return program ? { ...pane, startCommand: program } : pane;
    }),
  };
}
