/**
 * One inventory reading of tmux, as the listener takes it on every tick and for every push (a fresh reading): the
 * sessions and their panes (one `list-panes -a`), then the screens of the agent panes worth reading (one call for
 * all of them). Two tmux calls whatever the number of sessions.
 */

import { SCREEN_LINES } from '../../core/agents/screens.js';
import { describeInventory, panesToRead } from '../../core/sessions/view.js';
import type { InventoryReading } from '../../machines/inventory.js';
import type { Tmux } from '../tmux/tmux.js';

export { SCREEN_LINES };

export async function readInventory(
  tmux: Pick<Tmux, 'listSessions' | 'captureMany'>,
  hostname: string,
  now: () => number = Date.now,
): Promise<InventoryReading> {
  const sessions = await tmux.listSessions();
  const panes = panesToRead(describeInventory(sessions, hostname));
  const screens = panes.length > 0 ? await tmux.captureMany(panes, SCREEN_LINES) : {};
  return { sessions, screens, takenAt: now() };
}
