/**
 * Progress on long work (`svc up` starting, `svc install`, the benchmarks): on a terminal, one line on stderr that
 * says what is being done and for how long, redrawn in place and wiped when the work is done, so what is printed
 * after it reads as if it had never been there. In a pipe, a file, under CI or with TERM=dumb it writes nothing.
 * A command that fails on the way (cli/output.ts `fail`, cli/run.ts) wipes every line still shown first
 * (`wipeProgress`), so its error never lands on the end of one.
 */

import { progressShown } from '../core/cli/commandLine.js';

/** How a step reads on its line: a spinner frame, what, and the seconds so far once there is one. */
export function progressLine(what: string, tick: number, elapsedMs: number): string {
  const frame = FRAMES[tick % FRAMES.length];
  const seconds = Math.floor(elapsedMs / 1000);
  return `${frame} ${what}…${seconds >= 1 ? ` ${seconds} s` : ''}`;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const FRAME_MS = 100;
/** Back to the line's start and clear it. */
const WIPE = '\r\x1b[2K';

export interface Progress {
  /** Now doing `what` (replaces the step before). */
  step(what: string): void;
  /** A line that stays (a warning, a result): printed above the progress line, which carries on. */
  say(line: string): void;
  /** Done: the line is wiped. */
  done(): void;
}

type Stream = Pick<NodeJS.WriteStream, 'write'> & { isTTY?: boolean; columns?: number };

/** The lines being shown, to wipe before an error is printed. */
const shownNow = new Set<Progress>();

/** Wipes every progress line still shown and stops it (before an error message, or at exit). */
export function wipeProgress(): void {
  for (const p of [...shownNow]) p.done();
}

export function progress(stream: Stream = process.stderr, env: NodeJS.ProcessEnv = process.env): Progress {
  const shown = progressShown(stream.isTTY === true, env);
  let what = '';
  let since = 0;
  let tick = 0;
  let timer: NodeJS.Timeout | null = null;
  const draw = () => {
    if (!what) return;
    // never longer than the terminal is wide: a wrapped line would not be wiped
    const line = progressLine(what, tick++, Date.now() - since).slice(0, Math.max(10, (stream.columns ?? 80) - 1));
    stream.write(`${WIPE}${line}`);
  };
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = null;
    if (what) stream.write(WIPE);
    what = '';
    shownNow.delete(self);
  };
  const self: Progress = {
    step(next) {
      if (!shown) return;
      what = next;
      since = Date.now();
      draw();
      timer ??= setInterval(draw, FRAME_MS).unref();
      shownNow.add(self);
    },
    say(line) {
      if (shown && what) stream.write(WIPE);
      stream.write(`${line}\n`);
      if (shown) draw();
    },
    done() {
      if (shown) stop();
    },
  };
  return self;
}
