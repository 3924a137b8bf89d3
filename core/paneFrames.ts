/**
 * What a live pane sends (docs/protocol.md "Live panes"): the first frame whole, then only the rows that changed,
 * with a whole frame again now and then so an app that missed one recovers. Pure; machines/paneWatch.ts decides
 * when, actors/ capture and seal.
 */
import type { FrameBody } from './sealedBodies.js';

/** Screen lines as tmux's capture gives them (one string per row, trailing blank rows dropped). */
export type Screen = readonly string[];

export function splitScreen(text: string): string[] {
  if (text === '') return [];
  return text.split('\n');
}

/**
 * The rows of `next` to send: all of them when `full` or nothing was sent before; else the rows that differ from
 * `previous` (a row past the new height is dropped by the app). Null when nothing changed and no full frame is due.
 */
export function frameRows(
  previous: Screen | null,
  next: Screen,
  full: boolean,
): Pick<FrameBody, 'full' | 'height' | 'rows'> | null {
  const rows: Record<string, string> = {};
  if (full || previous === null) {
    next.forEach((line, i) => {
      rows[String(i)] = line;
    });
    return { full: true, height: next.length, rows };
  }
  next.forEach((line, i) => {
    if (previous[i] !== line) rows[String(i)] = line;
  });
  if (Object.keys(rows).length === 0 && previous.length === next.length) return null;
  return { full: false, height: next.length, rows };
}

/** What an app does with a frame: the screen after it (used by tests and the web app). */
export function applyFrame(screen: Screen, frame: Pick<FrameBody, 'full' | 'height' | 'rows'>): string[] {
  const out = frame.full ? [] : screen.slice(0, frame.height);
  while (out.length < frame.height) out.push('');
  for (const [index, line] of Object.entries(frame.rows)) {
    const i = Number(index);
    if (i < frame.height) out[i] = line;
  }
  return out;
}
