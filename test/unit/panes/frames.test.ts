/** core/panes/frames.ts, core/panes/keys.ts, core/sessions/agentSend.ts: frames, key input rules, and svc agent send's picks. */
import { describe, expect, it } from 'vitest';
import {
  applyFrame,
  fitFontSize,
  frameRows,
  PANE_FONT,
  paneFont,
  paneScreen,
  parsePaneZoom,
  READABLE_FONT,
  splitScreen,
  stepPaneZoom,
} from '../../../core/panes/frames.js';
import { badKeyName, keysRefusal } from '../../../core/panes/keys.js';
import type { SessionRecord } from '../../../core/protocol/index.js';
import { parseSendArgs, pickComputer, pickSession } from '../../../core/sessions/agentSend.js';

describe('frameRows and applyFrame', () => {
  const at = (lines: string[], width = 80) => ({ lines, width });

  it('sends the first frame whole, then only the rows that changed; each with the pane’s size', () => {
    expect(frameRows(null, at(['a', 'b']), false)).toEqual({
      full: true,
      height: 2,
      width: 80,
      rows: { 0: 'a', 1: 'b' },
    });
    expect(frameRows(at(['a', 'b']), at(['a', 'c']), false)).toEqual({
      full: false,
      height: 2,
      width: 80,
      rows: { 1: 'c' },
    });
    expect(frameRows(at(['a', 'b']), at(['a', 'b']), false)).toBeNull();
    expect(frameRows(at(['a', 'b']), at(['a', 'b']), true)).toMatchObject({ full: true });
  });

  it.each([
    ['wider', at(['a', 'b'], 120)],
    ['narrower', at(['a', 'b'], 40)],
    ['taller', at(['a', 'b', ''])],
    ['shorter', at(['a'])],
  ])('sends a whole frame when the pane gets %s, even with the same text', (_, next) => {
    expect(frameRows(at(['a', 'b']), next, false)).toEqual({
      full: true,
      height: next.lines.length,
      width: next.width,
      rows: Object.fromEntries(next.lines.map((l, i) => [String(i), l])),
    });
  });

  it('shrinking and growing screens rebuild exactly', () => {
    const screens = [['a', 'b', 'c'], ['a'], ['a', 'x', '', 'y'], [], ['z']];
    let app: string[] = [];
    let prev: ReturnType<typeof at> | null = null;
    for (const next of screens) {
      const frame = frameRows(prev, at(next), false);
      if (frame) app = applyFrame(app, frame);
      expect(app).toEqual(next);
      prev = at(next);
    }
  });

  it('splits a capture into rows', () => {
    expect(splitScreen('')).toEqual([]);
    expect(splitScreen('a\n\nb')).toEqual(['a', '', 'b']);
  });

  it.each([
    ['blank rows the capture dropped come back', 'a\nb', { width: 80, height: 4 }, ['a', 'b', '', '']],
    ['an empty pane is all blank rows', '', { width: 10, height: 2 }, ['', '']],
    ['a full pane stays as it is', 'a\nb', { width: 80, height: 2 }, ['a', 'b']],
    ['never more rows than the pane has', 'a\nb\nc', { width: 80, height: 2 }, ['a', 'b']],
  ])('paneScreen: %s', (_, text, size, lines) => {
    expect(paneScreen(text, size)).toEqual({ lines, width: size.width });
  });
});

describe('fitFontSize', () => {
  // A monospace cell is about 0.6 of the font size wide.
  it.each([
    ['80 columns on a 375 px phone shrink to fit', 80, 355, 0.6, 7],
    ['a 60-column pane fits at a larger size', 60, 355, 0.6, 9.5],
    ['a narrow pane is not blown up past the largest size', 40, 1200, 0.6, PANE_FONT.max],
    ['a pane too wide even at the smallest size keeps it (and scrolls sideways)', 200, 355, 0.6, PANE_FONT.min],
    ['nothing measured yet: the largest size', 80, 0, 0.6, PANE_FONT.max],
    ['no columns: the largest size', 0, 355, 0.6, PANE_FONT.max],
  ])('%s', (_, cols, available, cell, size) => {
    const font = fitFontSize(cols, available, cell);
    expect(font).toBe(size);
    // When it fits at all, it really fits.
    if (font > PANE_FONT.min && available > 0 && cols > 0) expect(cols * cell * font).toBeLessThanOrEqual(available);
  });
});

describe('keysRefusal', () => {
  const pane = { id: '%1', command: 'claude', active: true };
  const base = {
    target: 'svc-proj',
    pane,
    shellSession: false,
    subagent: false,
    addressedToThisComputer: true,
    keys: [] as string[],
    text: '',
  };
  it.each([
    ['text into an agent', { text: 'hi' }, null],
    ['named keys into an agent', { keys: ['C-c', 'Enter'] }, null],
    ['an unknown key', { keys: ['F12'] }, 'bad_key_name'],
    ['anything to a subagent', { subagent: true, keys: ['Enter'] }, 'subagent_view_only'],
    ['keys with a shell in front', { pane: { ...pane, command: 'bash' }, keys: ['Up'] }, 'shell_in_front'],
    ['answering an approval prompt seen in the live pane', { approvalPending: true, keys: ['Down', 'Enter'] }, null],
    ['no session', { pane: undefined, keys: ['Enter'] }, 'session_not_found'],
    [
      'C-c into a shell session',
      { shellSession: true, pane: { ...pane, command: 'bash' }, keys: ['C-c'] },
      'shell_input_forbidden',
    ],
    ['Enter into a shell session', { shellSession: true, pane: { ...pane, command: 'bash' }, keys: ['Enter'] }, null],
    ['a newline in text for a shell', { shellSession: true, text: 'a\nb' }, 'shell_input_forbidden'],
  ] as const)('%s', (_, over, code) => {
    expect(keysRefusal({ ...base, ...over })).toBe(code);
  });

  it('names the first key outside the list', () => {
    expect(badKeyName(['Enter', 'x', 'y'])).toBe('x');
    expect(badKeyName(['Enter'])).toBeUndefined();
  });
});

describe('svc agent send picks', () => {
  const s = (name: string, activityAt: number, extra: Partial<SessionRecord> = {}): SessionRecord => ({
    name,
    attached: false,
    createdAt: 1,
    activityAt,
    panes: [],
    ...extra,
  });
  const box = {
    hookId: 'c_1',
    name: 'box',
    deviceId: 'd_1',
    sessions: [s('svc-a', 5), s('svc-b', 9), s('svc-a-sh', 20, { shell: true }), s('svc-b.1', 30, { parent: 'svc-b' })],
  };

  it('picks the only computer, or the one named; refuses when it cannot tell', () => {
    expect(pickComputer([box])).toEqual({ ok: true, value: box });
    const other = { ...box, hookId: 'c_2', name: 'desk' };
    expect(pickComputer([box, other])).toMatchObject({ ok: false, message: /2 computers; pick one with --computer/ });
    expect(pickComputer([box, other], 'desk')).toEqual({ ok: true, value: other });
    expect(pickComputer([box, other], 'c_1')).toEqual({ ok: true, value: box });
    expect(pickComputer([], undefined)).toMatchObject({ ok: false });
  });

  it('picks the most recently active agent session, skipping shells and subagents; refuses a shell by name', () => {
    expect(pickSession(box)).toEqual({ ok: true, value: 'svc-b' });
    expect(pickSession(box, 'svc-a')).toEqual({ ok: true, value: 'svc-a' });
    expect(pickSession(box, 'svc-a-sh')).toEqual({
      ok: false,
      message: 'svc-a-sh is a shell session: svc agent send skips shell sessions',
    });
    expect(pickSession({ ...box, sessions: [s('svc-x-sh', 1, { shell: true })] })).toMatchObject({ ok: false });
  });
});

describe('the Watch zoom (core/panes/frames.ts)', () => {
  it.each([
    [null, READABLE_FONT],
    ['', READABLE_FONT],
    ['fit', 'fit'],
    ['14', 14],
    ['15', READABLE_FONT], // not a size the control offers
    ['huge', READABLE_FONT],
  ])('parsePaneZoom(%j) = %j', (stored, zoom) => {
    expect(parsePaneZoom(stored)).toBe(zoom);
  });

  it.each([
    ['fit', 5.5, 5.5],
    [12, 5.5, 12],
    [9, 11, 9],
  ] as const)('paneFont(%j, fitted %d) = %d', (zoom, fit, font) => {
    expect(paneFont(zoom, fit)).toBe(font);
  });

  it.each([
    [12, 7, 1, 13],
    [12, 7, -1, 11],
    ['fit', 7, 1, 8],
    ['fit', 7.5, 1, 8],
    ['fit', 7.5, -1, 7],
    [20, 7, 1, 20], // the largest stays
    [7, 7, -1, 7], // the smallest stays
  ] as const)('stepPaneZoom(%j, fitted %d, %d) = %d', (zoom, fit, dir, next) => {
    expect(stepPaneZoom(zoom, fit, dir)).toBe(next);
  });
});

describe('parseSendArgs: svc agent send reads its words itself', () => {
  it.each([
    ['plain words', ['run', 'the', 'tests'], { text: 'run the tests', json: false }],
    ['a leading dash', ['-5', 'degrees'], { text: '-5 degrees', json: false }],
    ['a word like an option', ['-rf', '--force', 'now'], { text: '-rf --force now', json: false }],
    ['options anywhere', ['hi', '--session', 's1', '--json', 'there'], { text: 'hi there', session: 's1', json: true }],
    ['an option with =', ['--computer=laptop', 'go'], { text: 'go', computer: 'laptop', json: false }],
    [
      'everything after -- is the message',
      ['--session', 's', '--', '--json', '-x'],
      { text: '--json -x', session: 's', json: false },
    ],
  ])('%s', (_, raw, expected) => {
    expect(parseSendArgs(raw)).toEqual({ ok: true, value: expected });
  });

  it.each([
    ['no words', []],
    ['only options', ['--json']],
    ['an option without its value', ['hello', '--session']],
  ])('refuses %s', (_, raw) => {
    expect(parseSendArgs(raw).ok).toBe(false);
  });
});
