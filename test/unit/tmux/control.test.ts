/**
 * tmux control mode as pure functions (core/tmux/control.ts): the quoting of a written line, the blocks read back,
 * and a reply that a pane's own text cannot end early or forge. The client against a real tmux is
 * test/integration/tmuxControl.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  type ControlBlock,
  ControlParser,
  controlArg,
  controlLine,
  ReplyReader,
  type ReplyStep,
} from '../../../core/tmux/control.js';

describe('controlArg', () => {
  it.each([
    ['plain', '"plain"'],
    ['', '""'],
    ['a "b" c', '"a \\"b\\" c"'],
    ['back\\slash', '"back\\\\slash"'],
    ['$HOME and ${X}', '"\\$HOME and \\${X}"'],
    ['~/x', '"\\176/x"'],
    ['line\nbreak\ttab\rcr', '"line\\012break\\011tab\\015cr"'],
    ['\x1b[1m\x7f', '"\\033[1m\\177"'],
    ['ends with ;', '"ends with ;"'],
    ['#{session_name} # not a comment', '"#{session_name} # not a comment"'],
    ['é ✓ 😀', '"é ✓ 😀"'],
  ])('%j → %s', (arg, quoted) => {
    expect(controlArg(arg)).toBe(quoted);
  });
});

describe('controlLine', () => {
  it('brackets the commands with the nonce marks, one line', () => {
    expect(
      controlLine(
        [
          ['send-keys', '-t', '%1', '-l', '--', 'hi;\nthere'],
          ['send-keys', '-t', '%1', 'Enter'],
        ],
        'ab12',
      ),
    ).toBe(
      '"display-message" "-p" "svc-begin-ab12" ; "send-keys" "-t" "%1" "-l" "--" "hi;\\012there" ; ' +
        '"send-keys" "-t" "%1" "Enter" ; "display-message" "-p" "svc-end-ab12"\n',
    );
  });

  it('refuses a nonce display-message would expand', () => {
    expect(() => controlLine([], 'a#{b}')).toThrow(/letters and digits/);
    expect(() => controlLine([], '%d')).toThrow(/letters and digits/);
  });
});

describe('ControlParser', () => {
  it('splits blocks and notifications across chunk boundaries', () => {
    const p = new ControlParser();
    const events = [
      ...p.feed('%begin 17 300 0\n%end 17 300 0\n%session-changed $0 a\n%beg'),
      ...p.feed('in 17 301 1\nline one\n\nline three\n%end 17 301 1\n%begin 17 302 1\nno such pane\n%error 17'),
      ...p.feed(' 302 1\n%sessions-changed\n%exit\n'),
    ];
    expect(events).toEqual([
      { kind: 'block', block: { ok: true, output: '', fromClient: false } },
      { kind: 'notification', name: 'session-changed', text: '$0 a' },
      { kind: 'block', block: { ok: true, output: 'line one\n\nline three\n', fromClient: true } },
      { kind: 'block', block: { ok: false, output: 'no such pane\n', fromClient: true } },
      { kind: 'notification', name: 'sessions-changed', text: '' },
      { kind: 'exit', reason: '' },
    ]);
  });

  it('takes an end line with other numbers as output (a pane showing one)', () => {
    const p = new ControlParser();
    const events = p.feed('%begin 17 301 1\n%end 17 300 1\n%error 16 301 1\n%begin 1 2 1\n%end 17 301 1\n');
    expect(events).toEqual([
      {
        kind: 'block',
        block: { ok: true, output: '%end 17 300 1\n%error 16 301 1\n%begin 1 2 1\n', fromClient: true },
      },
    ]);
  });
});

describe('ReplyReader', () => {
  const ok = (output: string): ControlBlock => ({ ok: true, output, fromClient: true });
  const err = (output: string): ControlBlock => ({ ok: false, output, fromClient: true });
  const run = (nonce: string, blocks: ControlBlock[]): ReplyStep[] => {
    const r = new ReplyReader(nonce);
    return blocks.map((b) => r.push(b));
  };

  it('joins the commands’ output between the marks', () => {
    expect(run('n1', [ok('svc-begin-n1\n'), ok('a\n'), ok(''), ok('b\nc\n'), ok('svc-end-n1\n')]).at(-1)).toEqual({
      kind: 'done',
      stdout: 'a\nb\nc\n',
    });
  });

  it('fails at the first error: the rest of the line did not run', () => {
    expect(run('n1', [ok('svc-begin-n1\n'), ok('a\n'), err("can't find pane: %9\n")])).toEqual([
      { kind: 'more' },
      { kind: 'more' },
      { kind: 'failed', stderr: "can't find pane: %9" },
    ]);
  });

  it('a line that did not parse fails with the parse error', () => {
    expect(run('n1', [err('parse error: syntax error\n')])).toEqual([
      { kind: 'failed', stderr: 'parse error: syntax error' },
    ]);
  });

  it('is not done by a block that only looks like another reply’s end, and says desync on a foreign start', () => {
    expect(run('n1', [ok('svc-begin-n1\n'), ok('svc-end-n2\n')]).at(-1)).toEqual({ kind: 'more' });
    expect(run('n1', [ok('svc-begin-n2\n')])).toEqual([{ kind: 'desync', why: expect.any(String) }]);
    expect(run('n1', [ok('x\n')])).toEqual([{ kind: 'desync', why: expect.any(String) }]);
  });
});
