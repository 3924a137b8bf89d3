/**
 * What a live pane sends (docs/protocol.md "Live panes"): the first frame whole, then only the rows that changed,
 * with a whole frame again now and then so an app that missed one recovers. Every frame carries the pane's size,
 * so the app's terminal is exactly as wide and as tall as the pane. Pure; machines/paneWatch.ts decides when,
 * actors/ capture and seal.
 */
import type { FrameBody } from '../protocol/bodies.js';

/** Screen lines as tmux's capture gives them (one string per row, trailing blank rows dropped). */
export type Screen = readonly string[];

/** A pane as one capture saw it: a line per row of the pane (blank rows included), and its width in columns. */
export interface PaneScreen {
  lines: string[];
  width: number;
}

export function splitScreen(text: string): string[] {
  if (text === '') return [];
  return text.split('\n');
}

/**
 * The capture of a pane of `size` (tmux `#{pane_width}` × `#{pane_height}`) as its rows: the blank rows the capture
 * dropped at the bottom come back, so the frame's height is the pane's.
 */
export function paneScreen(text: string, size: { width: number; height: number }): PaneScreen {
  const lines = splitScreen(text).slice(0, size.height);
  while (lines.length < size.height) lines.push('');
  return { lines, width: size.width };
}

export type FrameRows = Pick<FrameBody, 'full' | 'height' | 'width' | 'rows'>;

/**
 * The rows of `next` to send: all of them when `full`, when nothing was sent before, or when the pane changed size
 * (the app's terminal is resized and redrawn); else the rows that differ from `previous`. Null when nothing changed
 * and no full frame is due.
 */
export function frameRows(previous: PaneScreen | null, next: PaneScreen, full: boolean): FrameRows | null {
  const rows: Record<string, string> = {};
  const { lines, width } = next;
  const resized = previous !== null && (previous.width !== width || previous.lines.length !== lines.length);
  if (full || previous === null || resized) {
    lines.forEach((line, i) => {
      rows[String(i)] = line;
    });
    return { full: true, height: lines.length, width, rows };
  }
  lines.forEach((line, i) => {
    if (previous.lines[i] !== line) rows[String(i)] = line;
  });
  if (Object.keys(rows).length === 0) return null;
  return { full: false, height: lines.length, width, rows };
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

/** The smallest and largest font (CSS px) the app draws a pane with: below the smallest, the pane scrolls sideways. */
export const PANE_FONT = { min: 7, max: 12 } as const;

/**
 * The font size (CSS px, in half pixels) at which `cols` columns fit in `availablePx`, for a font whose cell is
 * `cellPerPx` px wide per px of font size (about 0.6 for monospace). A pane too wide even at the smallest size keeps
 * the smallest and scrolls sideways; a narrow one is not blown up past the largest.
 */
export function fitFontSize(cols: number, availablePx: number, cellPerPx: number, limits = PANE_FONT): number {
  if (!(cols > 0) || !(availablePx > 0) || !(cellPerPx > 0)) return limits.max;
  const fits = Math.floor((availablePx / (cols * cellPerPx)) * 2) / 2;
  return Math.min(limits.max, Math.max(limits.min, fits));
}

/**
 * How big the Watch screen draws a pane, as the person chose on this phone: `fit` (the font at which the pane's
 * columns fit the width, down to PANE_FONT.min: an 80-column pane on a 390 px phone is barely legible) or a font
 * size in CSS px, at which a wide pane scrolls sideways. Readable by default.
 */
export type PaneZoom = 'fit' | number;

/** The sizes the zoom control steps through (CSS px). */
export const PANE_ZOOM_SIZES = [7, 8, 9, 10, 11, 12, 13, 14, 16, 18, 20] as const;
/** Where a phone starts: legible text, the pane scrolling sideways. */
export const READABLE_FONT = 12;

/** The zoom kept on this device (`fit` or a size in px); anything else is the readable default. */
export function parsePaneZoom(stored: string | null | undefined): PaneZoom {
  if (stored === 'fit') return 'fit';
  const n = Number(stored);
  return (PANE_ZOOM_SIZES as readonly number[]).includes(n) ? n : READABLE_FONT;
}

/** The font size to draw with: the fitted one, or the chosen one. */
export function paneFont(zoom: PaneZoom, fitSize: number): number {
  return zoom === 'fit' ? fitSize : zoom;
}

/** One step larger (`+1`) or smaller (`-1`) than what is shown now; from `fit`, a step from the fitted size. */
export function stepPaneZoom(zoom: PaneZoom, fitSize: number, direction: 1 | -1): PaneZoom {
  const now = paneFont(zoom, fitSize);
  const sizes = PANE_ZOOM_SIZES as readonly number[];
  if (direction > 0) return sizes.find((s) => s > now) ?? sizes[sizes.length - 1]!;
  return [...sizes].reverse().find((s) => s < now) ?? sizes[0]!;
}
