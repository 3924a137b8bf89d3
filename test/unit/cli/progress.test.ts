import { afterEach, describe, expect, it, vi } from 'vitest';
import { progress, progressLine } from '../../../cli/progress.js';

/** A stream that keeps what was written to it. */
function stream(isTTY: boolean, columns = 80) {
  const written: string[] = [];
  return { isTTY, columns, written, write: (s: string) => written.push(s) > 0 };
}
const WIPE = '\r\x1b[2K';

afterEach(() => {
  vi.useRealTimers();
});

describe('progressLine', () => {
  it.each([
    ['starting the relay', 0, 0, '⠋ starting the relay…'],
    ['starting the relay', 1, 999, '⠙ starting the relay…'],
    ['starting the relay', 10, 1_000, '⠋ starting the relay… 1 s'],
    ['waiting for cloudflared', 3, 12_400, '⠸ waiting for cloudflared… 12 s'],
  ])('%s, frame %i, %i ms: %s', (what, tick, ms, line) => {
    expect(progressLine(what, tick, ms)).toBe(line);
  });
});

describe('progress', () => {
  it('on a terminal: one line redrawn in place while the step lasts, wiped when done', () => {
    vi.useFakeTimers();
    const s = stream(true);
    const p = progress(s, {});
    p.step('starting the relay');
    expect(s.written).toEqual([`${WIPE}⠋ starting the relay…`]);
    vi.advanceTimersByTime(1_050);
    expect(s.written.at(-1)).toMatch(/^\r\x1b\[2K. starting the relay… 1 s$/);
    p.step('starting the listener');
    expect(s.written.at(-1)).toMatch(/^\r\x1b\[2K. starting the listener…$/);
    p.done();
    expect(s.written.at(-1)).toBe(WIPE);
    const count = s.written.length;
    vi.advanceTimersByTime(1_000);
    expect(s.written).toHaveLength(count); // nothing drawn after done
  });

  it('a line said while it runs goes above it, and the step carries on below', () => {
    const s = stream(true);
    const p = progress(s, {});
    p.step('logging in');
    p.say('svc: stopped the background listener');
    expect(s.written.slice(1)).toEqual([WIPE, 'svc: stopped the background listener\n', `${WIPE}⠙ logging in…`]);
    p.done();
  });

  it('never draws wider than the terminal (a wrapped line could not be wiped)', () => {
    const s = stream(true, 20);
    const p = progress(s, {});
    p.step('a step with a long description');
    expect(s.written[0]).toBe(`${WIPE}⠋ a step with a lon`);
    p.done();
  });

  it.each([
    ['a pipe', false, {}],
    ['CI', true, { CI: 'true' }],
    ['TERM=dumb', true, { TERM: 'dumb' }],
  ])('in %s: nothing but the lines said', (_, isTTY, env) => {
    const s = stream(isTTY);
    const p = progress(s, env);
    p.step('starting the relay');
    p.say('svc: a warning');
    p.done();
    expect(s.written).toEqual(['svc: a warning\n']);
  });
});
