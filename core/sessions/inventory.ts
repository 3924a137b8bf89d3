/** Pure inventory decisions: has anything a phone would notice changed since the last report? */
import type { SessionRecord } from '../protocol/index.js';

/** A stable key of what the app shows; order of sessions and panes does not matter. */
export function inventoryKey(sessions: readonly SessionRecord[]): string {
  const sorted = [...sessions]
    .map((s) => ({ ...s, panes: [...s.panes].sort((a, b) => a.id.localeCompare(b.id)) }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return JSON.stringify(sorted);
}

export function inventoryChanged(prev: readonly SessionRecord[] | null, next: readonly SessionRecord[]): boolean {
  return prev === null || inventoryKey(prev) !== inventoryKey(next);
}

export function activePane(session: SessionRecord) {
  return session.panes.find((p) => p.active) ?? session.panes[0];
}

export function describeSessions(sessions: readonly SessionRecord[]): string {
  return sessions.map((s) => s.name).join(', ');
}
