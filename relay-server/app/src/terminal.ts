/**
 * The pane as a real terminal (xterm.js), drawn from opened `pane.frame` bodies: exactly as many columns and rows as
 * the pane has (the frame says), so a line wraps where it wraps on the computer, and a font small enough for those
 * columns to fit the phone's width (core/panes/frames.ts fitFontSize). Loaded only by the Watch screen: its own chunk,
 * so the first load of the app stays small.
 */
import { Terminal } from '@xterm/xterm';
import xtermCss from '@xterm/xterm/css/xterm.css';
import { applyFrame, fitFontSize, PANE_FONT, type PaneZoom, paneFont } from '../../../core/panes/frames.js';
import type { FrameBody } from '../../../core/protocol/bodies.js';

const ANSI_RE = /\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*(?:\x07|\x1b\\)/g;
const visibleLength = (row: string) => [...row.replace(ANSI_RE, '')].length;

const LIGHT = { background: '#fbfbfa', foreground: '#1d1d1f', cursor: '#1d1d1f', selectionBackground: '#b4d5fe' };
const DARK = { background: '#0f1115', foreground: '#e6e6e6', cursor: '#e6e6e6', selectionBackground: '#3a4a66' };

export interface PaneTerminal {
  /** Draw a frame; false when it was a change frame that does not follow the last one (ask for a full frame). */
  draw(body: FrameBody): boolean;
  /** The text on screen, row by row (for tests and screen readers). */
  text(): string;
  /** Draw at this zoom (fit the width, or a font size with sideways scroll). */
  setZoom(zoom: PaneZoom): void;
  /** The font size at which the pane fits the width (what `fit` draws with). */
  fittedSize(): number;
  dispose(): void;
}

let styled = false;

export function createTerminal(container: HTMLElement, initialZoom: PaneZoom = 'fit'): PaneTerminal {
  let zoom = initialZoom;
  let fitted: number = PANE_FONT.max;
  if (!styled) {
    styled = true;
    document.head.appendChild(Object.assign(document.createElement('style'), { textContent: xtermCss }));
  }
  const dark = matchMedia('(prefers-color-scheme: dark)');
  const term = new Terminal({
    disableStdin: true,
    cursorBlink: false,
    cursorInactiveStyle: 'none',
    scrollback: 0,
    fontSize: PANE_FONT.max,
    fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace',
    cols: 80,
    rows: 24,
    theme: dark.matches ? DARK : LIGHT,
    screenReaderMode: false,
  });
  const onScheme = () => {
    term.options.theme = dark.matches ? DARK : LIGHT;
  };
  dark.addEventListener('change', onScheme);
  term.open(container);
  // keys go through the Keys row and the message box, never xterm's own input (stdin is off): its hidden textarea
  // is neither focusable nor announced
  const input = container.querySelector<HTMLTextAreaElement>('.xterm-helper-textarea');
  if (input) {
    input.disabled = true;
    input.tabIndex = -1;
    input.setAttribute('aria-hidden', 'true');
  }
  // The screen as the frames built it: the same code the listener's tests rebuild screens with (core/panes/frames.ts).
  let screen: string[] = [];
  let lastSeq = -1;

  /** The font at which the terminal's columns fit the width it is shown in (the wrap, inside its padding). */
  const fitFont = () => {
    const wrap = container.parentElement;
    const screen = container.querySelector('.xterm-screen');
    if (!wrap || !screen) return;
    const style = getComputedStyle(wrap);
    const available = wrap.clientWidth - Number.parseFloat(style.paddingLeft) - Number.parseFloat(style.paddingRight);
    const font = term.options.fontSize ?? PANE_FONT.max;
    const cellPerPx = screen.getBoundingClientRect().width / term.cols / font;
    // Cells are rounded to device pixels: a pixel of slack keeps the fitted width from spilling over.
    fitted = fitFontSize(term.cols, available - 1, cellPerPx);
    const next = paneFont(zoom, fitted);
    if (next !== font) term.options.fontSize = next;
    container.dataset.fontSize = String(term.options.fontSize);
    container.dataset.zoom = String(zoom);
  };
  const onResize = () => fitFont();
  window.addEventListener('resize', onResize);

  return {
    draw(body) {
      const follows = body.full || body.frameSeq === lastSeq + 1;
      lastSeq = body.frameSeq;
      screen = applyFrame(screen, body);
      // A listener that does not say the pane's width (older ones): as wide as the widest row seen.
      const widest = Math.max(20, ...screen.map(visibleLength));
      const cols = body.width && body.width > 0 ? body.width : Math.max(term.cols, widest);
      const height = Math.max(1, body.height);
      if (cols !== term.cols || height !== term.rows || container.dataset.cols === undefined) {
        term.resize(cols, height);
        container.dataset.cols = String(cols);
        container.dataset.rows = String(height);
        fitFont();
      }
      // A whole frame rewrites every row of the screen; a change frame the rows it carries. Each row is cleared and
      // written at its own place, top to bottom: a row longer than the terminal never pushes the others down.
      const changed = body.full ? screen.map((_, i) => i) : Object.keys(body.rows).map(Number);
      let out = '';
      for (const i of changed.sort((a, b) => a - b)) {
        if (i >= screen.length) continue;
        out += `\x1b[${i + 1};1H\x1b[0m\x1b[2K${screen[i]}\x1b[0m`;
      }
      term.write(out);
      return follows;
    },
    text() {
      return screen.map((r) => r.replace(ANSI_RE, '')).join('\n');
    },
    setZoom(next) {
      zoom = next;
      fitFont();
    },
    fittedSize: () => fitted,
    dispose() {
      dark.removeEventListener('change', onScheme);
      window.removeEventListener('resize', onResize);
      term.dispose();
    },
  };
}
