/**
 * The pure side of tmux (core/tmux/tmux.ts): arguments, error codes, the inventory format and the other output the
 * adapter parses. The adapter against a real server is test/integration/tmux.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { SessionRecord } from '../../../core/protocol/index.js';
import {
  chain,
  classifyTmuxError,
  formatLiteral,
  inventoryCommands,
  inventoryFormat,
  lastScreenLines,
  leaveModeCommands,
  newSessionFormat,
  paneTargetArg,
  parseInventory,
  parseNewSession,
  parseScreens,
  parseSizedScreen,
  screensCommands,
  sessionTargetArg,
  shellQuote,
  sizedScreenCommands,
  TmuxError,
  tmuxArg,
} from '../../../core/tmux/tmux.js';

describe('argument and output helpers', () => {
  it.each([
    ['plain', 'plain'],
    ['ends;', 'ends\\;'],
    [';', '\\;'],
    ['a\\;', 'a\\\\;'],
    ['mid;dle', 'mid;dle'],
  ])('tmuxArg(%j) → %j', (arg, out) => {
    expect(tmuxArg(arg)).toBe(out);
  });

  it('chain puts bare ; between commands and protects every argument', () => {
    expect(
      chain([
        ['send-keys', '-l', 'x;'],
        ['send-keys', 'Enter'],
      ]),
    ).toEqual(['send-keys', '-l', 'x\\;', ';', 'send-keys', 'Enter']);
  });

  it('formatLiteral doubles #', () => {
    expect(formatLiteral('a#{b}#(c)')).toBe('a##{b}##(c)');
  });

  it('parseInventory groups by session and survives hostile field contents', () => {
    const nonce = 'abc123';
    const { recordMark: R, fieldMark: F } = inventoryFormat(nonce);
    // Fields as tmux prints them; the svc options, mode flag and indexes sit between the title and the active flag.
    const row = (fields: string[], extra = ['', '', '', '', '', '0', '', '', '', '']) =>
      `${R}${[...fields.slice(0, -1), ...extra, ...fields.slice(-1)].join(F)}\n`;
    const out =
      row(['s one', '1', '100', '200', '%1', 'claude', '"claude"', '/tmp/a\tb\nc', 'title | with <|x|>', '1']) +
      row(['s one', '1', '100', '200', '%2', 'bash', '', '/tmp', '', '0']) +
      row(['x;$(y)', '0', '5', '6', '%3', 'node', '', '', '', '1']) +
      `${R}broken${F}row\n`;
    const sessions = parseInventory(out, nonce);
    expect(sessions).toEqual([
      {
        name: 's one',
        attached: true,
        createdAt: 100,
        activityAt: 200,
        panes: [
          {
            id: '%1',
            command: 'claude',
            startCommand: '"claude"',
            path: '/tmp/a\tb\nc',
            title: 'title | with <|x|>',
            active: true,
          },
          { id: '%2', command: 'bash', path: '/tmp', active: false },
        ],
      },
      {
        name: 'x;$(y)',
        attached: false,
        createdAt: 5,
        activityAt: 6,
        panes: [{ id: '%3', command: 'node', active: true }],
      },
    ]);
    for (const s of sessions) expect(SessionRecord.safeParse(s).success).toBe(true);
  });

  it('parseInventory counts as attached only the clients that may show the session to a person', () => {
    const nonce = 'k9';
    const { recordMark: R, fieldMark: F } = inventoryFormat(nonce);
    const pane = (name: string, attached: string, id: string) =>
      `${R}${[name, attached, '1', '2', id, 'claude', '', '/p', '', '', '', '', '', '', '0', '0', '0', '', '', '1'].join(F)}\n`;
    const client = (session: string, control: string, flags: string) =>
      `<svc-client:${nonce}>${[session, control, flags].join(F)}\n`;
    const panes =
      pane('mine', '1', '%1') + pane('term', '1', '%2') + pane('iterm', '1', '%3') + pane('none', '0', '%4');
    const clients =
      client('mine', '1', 'attached,focused,control-mode,ignore-size,no-output,UTF-8') + // the listener's own
      client('term', '0', 'attached,focused,UTF-8') +
      client('iterm', '1', 'attached,control-mode,UTF-8'); // tmux -CC: a person watches through it
    const attached = (out: string) => Object.fromEntries(parseInventory(out, nonce).map((s) => [s.name, s.attached]));
    expect(attached(panes + clients)).toEqual({ mine: false, term: true, iterm: true, none: false });
    // no client list (an older call): session_attached as tmux counts it
    expect(attached(panes)).toEqual({ mine: true, term: true, iterm: true, none: false });
    // a session name that holds the client mark's look-alike is still one session
    expect(parseInventory(pane('<svc-client:x>', '0', '%5') + clients, nonce).map((s) => s.name)).toEqual([
      '<svc-client:x>',
    ]);
  });

  it('inventoryCommands asks for panes, then clients, in one call', () => {
    expect(inventoryCommands('n1').map((c) => c.slice(0, 2))).toEqual([
      ['list-panes', '-a'],
      ['list-clients', '-F'],
    ]);
  });

  it('parseInventory clips fields to the wire limits', () => {
    const nonce = 'n';
    const { recordMark: R, fieldMark: F } = inventoryFormat(nonce);
    const long = 'x'.repeat(5000);
    const fields = [
      's',
      '0',
      '1',
      '1',
      '%1',
      long,
      long,
      long,
      long,
      long,
      long,
      long,
      long,
      long,
      '1',
      '3',
      '4',
      long,
      long,
      '1',
    ];
    const [s] = parseInventory(`${R}${fields.join(F)}\n`, nonce);
    expect(SessionRecord.safeParse(s).success).toBe(true);
  });

  it('parseInventory reads the svc session options the wrapper sets', () => {
    const nonce = 'm';
    const { recordMark: R, fieldMark: F } = inventoryFormat(nonce);
    const fields = [
      'svc-app-wt-x',
      '0',
      '1',
      '2',
      '%7',
      'claude',
      '',
      '/w',
      '',
      'agent',
      'A1',
      'app',
      'x',
      '/w',
      '1',
      '2',
      '0',
      '/h/.claude/projects/-w/0b5e.jsonl',
      '0b5e',
      '1',
    ];
    const [s] = parseInventory(`${R}${fields.join(F)}\n`, nonce);
    expect(s?.meta).toEqual({
      kind: 'agent',
      agent: 'A1',
      project: 'app',
      label: 'x',
      worktree: '/w',
      transcript: '/h/.claude/projects/-w/0b5e.jsonl',
      agentSession: '0b5e',
    });
    expect(s?.panes[0]).toMatchObject({ index: '2.0', inMode: true, active: true });
    const [plain] = parseInventory(
      `${R}${['t', '0', '1', '2', '%8', 'cat', '', '', '', '', '', '', '', '', '0', '0', '0', '', '', '1'].join(F)}\n`,
      nonce,
    );
    expect(plain?.meta).toBeUndefined();
  });

  it.each([
    ['a\nb\nc\n\n\n', 2, 'b\nc'],
    ['a\nb\n', 10, 'a\nb'],
    ['\n\n', 3, ''],
    ['a\n  \nb\n   \n', 1, 'b'],
  ])('lastScreenLines(%j, %d)', (screen, n, out) => {
    expect(lastScreenLines(screen, n)).toBe(out);
  });

  it.each([
    ['no server running on /tmp/x', 'no_server'],
    ['error connecting to /tmp/x (No such file or directory)', 'no_server'],
    ['server exited unexpectedly', 'no_server'],
    ["can't find session: proj", 'no_session'],
    ["can't find pane: %9", 'no_session'],
    ["can't find window: 3", 'no_session'],
    ['duplicate session: proj', 'duplicate_session'],
    ['command too long', 'failed'],
  ])('classifyTmuxError(%j) → %s', (stderr, code) => {
    expect(classifyTmuxError(stderr)).toBe(code);
  });
});

/** One inventory record as tmux prints it: the 19 pane fields and the active flag. */
function record(nonce: string, over: Partial<Record<'name' | 'id' | 'path' | 'title' | 'command', string>> = {}) {
  const { recordMark: R, fieldMark: F } = inventoryFormat(nonce);
  const fields = [
    over.name ?? 's',
    '0',
    '10',
    '20',
    over.id ?? '%1',
    over.command ?? 'bash',
    '',
    over.path ?? '/p',
    over.title ?? '',
    '',
    '',
    '',
    '',
    '',
    '0',
    '0',
    '0',
    '',
    '',
    '1',
  ];
  return `${R}${fields.join(F)}\n`;
}

describe('session and pane targets', () => {
  it.each([
    ['proj', '=proj', '=proj:'],
    ['proj-2', '=proj-2', '=proj-2:'],
    ['%1', '=%1', '=%1:'], // a session NAMED %1, not the pane
    ['@1', '=@1', '=@1:'],
    ['a;b', '=a;b', '=a;b:'],
    ['x;', '=x;', '=x;:'],
    ['=x', '==x', '==x:'],
    ['has space', '=has space', '=has space:'],
    ['a\tb', '=a\tb', '=a\tb:'],
  ])('session %j → %j, its active pane %j', (name, session, pane) => {
    expect(sessionTargetArg(name)).toBe(session);
    expect(paneTargetArg(name)).toBe(pane);
  });

  it.each(['', '$1', '$', '$proj'])('session %j cannot be targeted exactly', (name) => {
    expect(() => sessionTargetArg(name)).toThrow(TmuxError);
    expect(() => paneTargetArg(name)).toThrow(expect.objectContaining({ code: 'failed' }));
  });

  it.each(['%3', '%0', '%1234'])('pane id %j is used as is', (pane) => {
    expect(paneTargetArg({ pane })).toBe(pane);
  });

  it.each(['3', '%', '%x', '%1;', '%1 ', '=s:', '%-1'])('pane id %j is refused', (pane) => {
    expect(() => paneTargetArg({ pane })).toThrow(TmuxError);
  });

  it('a session target ending in ; survives chain', () => {
    expect(chain([['kill-session', '-t', sessionTargetArg('x;')]])).toEqual(['kill-session', '-t', '=x\\;']);
  });
});

describe('words for sh -c and mode leaving', () => {
  it.each([
    ['claude', 'claude'],
    ['/usr/bin/env', '/usr/bin/env'],
    ['A=b,c:d@e%f+g', 'A=b,c:d@e%f+g'],
    ['', "''"],
    ['two words', "'two words'"],
    ["it's", `'it'\\''s'`],
    ['$(rm -rf ~)', "'$(rm -rf ~)'"],
    ['`x`;y&z|w', "'`x`;y&z|w'"],
    ['a\nb', "'a\nb'"],
    ['~', "'~'"],
    ['*', "'*'"],
  ])('shellQuote(%j) → %s', (word, out) => {
    expect(shellQuote(word)).toBe(out);
  });

  it('leaveModeCommands chains copy-mode -q only when asked', () => {
    expect(leaveModeCommands('%1')).toEqual([]);
    expect(leaveModeCommands('%1', { leaveMode: false })).toEqual([]);
    expect(leaveModeCommands('=s:', { leaveMode: true })).toEqual([['copy-mode', '-q', '-t', '=s:']]);
  });

  it('chain of nothing is nothing, of one command has no separator', () => {
    expect(chain([])).toEqual([]);
    expect(chain([['kill-server']])).toEqual(['kill-server']);
  });
});

describe('more error texts', () => {
  it.each([
    ['lost server', 'no_server'],
    ['no current target', 'no_session'],
    ['no current session', 'no_session'],
    ['no current client', 'no_session'],
    ['', 'failed'],
    ['not in a mode', 'failed'],
  ])('classifyTmuxError(%j) → %s', (stderr, code) => {
    expect(classifyTmuxError(stderr)).toBe(code);
  });
});

describe('parseInventory on hostile and broken output', () => {
  const nonce = 'f00d';

  it.each([
    ['control bytes', 'a\x01b\x1b[31mc\x7f'],
    ['a newline', 'two\nlines'],
    ['a record mark of another call', '<svc:beef>'],
    ['a field mark of another call', '<|beef|>'],
    ['half a mark of this call', '<|f00d'],
    ['shell syntax', '$(x);`y`|z&'],
    ['non-ASCII', 'café ✓ 日本'],
  ])('a session name with %s is kept as printed', (_what, name) => {
    const [s] = parseInventory(record(nonce, { name }), nonce);
    expect(s?.name).toBe(name);
    expect(s?.panes).toEqual([{ id: '%1', command: 'bash', path: '/p', index: '0.0', active: true }]);
  });

  it('paths and titles may hold tabs, newlines and other calls’ marks', () => {
    const path = '/tmp/a\tb\n<svc:other>\n';
    const title = '<|other|> <svc:other> \x07';
    const [s] = parseInventory(record(nonce, { path, title }), nonce);
    expect(s?.panes[0]).toMatchObject({ path, title });
  });

  it('a field holding this call’s field mark breaks only its own record', () => {
    const out = record(nonce, { name: 'a', title: `x<|${nonce}|>y` }) + record(nonce, { name: 'b' });
    expect(parseInventory(out, nonce).map((s) => s.name)).toEqual(['b']);
  });

  it('a field holding this call’s record mark breaks only the records it splits', () => {
    const { recordMark } = inventoryFormat(nonce);
    const out = record(nonce, { name: 'a', path: `x${recordMark}y` }) + record(nonce, { name: 'b' });
    expect(parseInventory(out, nonce).map((s) => s.name)).toEqual(['b']);
  });

  it.each([
    ['nothing', ''],
    ['a newline', '\n'],
    ['text without a mark', 'no server running\n'],
    ['the mark alone', inventoryFormat('f00d').recordMark],
  ])('%s gives no session', (_what, out) => {
    expect(parseInventory(out, nonce)).toEqual([]);
  });

  it('output cut short keeps the whole records before the cut', () => {
    const whole = record(nonce, { name: 'a' }) + record(nonce, { name: 'b', id: '%2' });
    const names = (out: string) => parseInventory(out, nonce).map((s) => s.name);
    expect(names(whole)).toEqual(['a', 'b']);
    expect(names(whole.slice(0, -1))).toEqual(['a', 'b']); // only the last newline lost
    expect(names(whole.slice(0, -3))).toEqual(['a']); // the last record's active flag cut
    expect(names(whole.slice(0, whole.lastIndexOf('<|')))).toEqual(['a']);
    expect(names(whole.slice(0, record(nonce, { name: 'a' }).length + 4))).toEqual(['a']);
  });

  it('output read with another nonce gives nothing', () => {
    expect(parseInventory(record(nonce), 'beef')).toEqual([]);
  });

  it('numbers that do not parse read as 0, and a session keeps its first record’s details', () => {
    const { recordMark: R, fieldMark: F } = inventoryFormat(nonce);
    const fields = ['s', 'x', '', 'NaN', '%1', 'sh', '', '', '', '', '', '', '', '', '0', '0', '0', '', '', '0'];
    const second = ['s', '1', '99', '99', '%2', 'sh', '', '', '', 'agent', '', '', '', '', '0', '0', '1', '', '', '1'];
    const [s] = parseInventory(`${R}${fields.join(F)}\n${R}${second.join(F)}\n`, nonce);
    expect(s).toMatchObject({ attached: false, createdAt: 0, activityAt: 0 });
    expect(s?.meta).toBeUndefined();
    expect(s?.panes.map((p) => p.id)).toEqual(['%1', '%2']);
  });

  it('an unknown @svc-kind is left out', () => {
    const { recordMark: R, fieldMark: F } = inventoryFormat(nonce);
    const fields = ['s', '0', '1', '1', '%1', 'sh', '', '', '', 'evil', '', '', '', '', '0', '0', '0', '', '', '1'];
    expect(parseInventory(`${R}${fields.join(F)}\n`, nonce)[0]?.meta).toBeUndefined();
  });

  it('keeps at most 64 panes of a session, as the wire schema allows', () => {
    const out = Array.from({ length: 70 }, (_, i) => record(nonce, { id: `%${i}` })).join('');
    const [s] = parseInventory(out, nonce);
    expect(s?.panes).toHaveLength(64);
    expect(SessionRecord.safeParse(s).success).toBe(true);
  });

  it('the format asks for every field between this call’s marks', () => {
    const { format, recordMark, fieldMark } = inventoryFormat(nonce);
    expect(recordMark).toBe('<svc:f00d>');
    expect(fieldMark).toBe('<|f00d|>');
    expect(format.startsWith(`${recordMark}#{session_name}${fieldMark}`)).toBe(true);
    expect(format.split(fieldMark)).toHaveLength(20);
    expect(format.endsWith('#{&&:#{pane_active},#{window_active}}')).toBe(true);
  });
});

describe('screens', () => {
  it('sizedScreenCommands reads the size, then the screen', () => {
    expect(sizedScreenCommands('%4')).toEqual([
      ['display-message', '-p', '-t', '%4', '#{pane_width} #{pane_height}'],
      ['capture-pane', '-p', '-t', '%4'],
    ]);
  });

  it.each([
    ['80 3\na\nb\nc\nd\n\n', { text: 'b\nc\nd', width: 80, height: 3 }],
    ['120 40\nhello\n\n\n', { text: 'hello', width: 120, height: 40 }],
    ['80 24\n', { text: '', width: 80, height: 24 }],
    ['80 24', { text: '', width: 80, height: 24 }], // cut before the screen
    ['', { text: '', width: 0, height: 0 }],
  ])('parseSizedScreen(%j)', (out, screen) => {
    expect(parseSizedScreen(out)).toEqual(screen);
  });

  it('screensCommands marks each pane with tmux’s own #{pane_id}, never a % of its own', () => {
    const commands = screensCommands(['%1', '%12'], 'ab');
    expect(commands).toEqual([
      ['display-message', '-p', '-t', '%1', '<svc-screen:ab>#{pane_id}'],
      ['capture-pane', '-p', '-t', '%1'],
      ['display-message', '-p', '-t', '%12', '<svc-screen:ab>#{pane_id}'],
      ['capture-pane', '-p', '-t', '%12'],
    ]);
    // display-message text goes through strftime: not one % in it
    for (const c of commands.filter((c) => c[0] === 'display-message')) expect(c.at(-1)).not.toContain('%');
    expect(() => screensCommands(['%1'], 'a%d')).toThrow(/nonce/);
    expect(() => screensCommands(['1'], 'ab')).toThrow(/pane id/);
  });

  it('parseScreens splits by pane, keeps screens that hold other marks, and drops a cut-off pane', () => {
    const out =
      '<svc-screen:ab>%1\none\ntwo\nthree\n\n' +
      '<svc-screen:ab>%2\n<svc-screen:cd>%9\n$ \n' +
      '<svc-screen:ab>%3\n\n' +
      '<svc-screen:ab>%4';
    expect(parseScreens(out, 'ab', 2)).toEqual({ '%1': 'two\nthree', '%2': '<svc-screen:cd>%9\n$ ', '%3': '' });
    expect(parseScreens('', 'ab', 2)).toEqual({});
    expect(parseScreens(out, 'zz', 2)).toEqual({});
  });

  it.each([
    ['unpadded', '%4', '%4'],
    ['padded by strftime (glibc, %3…%9)', ' %4', '%4'],
    ['padded, two digits', '  %12', '%12'],
    ['trailing blank', '%15 ', '%15'],
  ])('parseScreens files a %s id under the pane id', (_what, written, id) => {
    const out = `<svc-screen:ab>%0\nfirst\n<svc-screen:ab>${written}\nsecond\n`;
    expect(parseScreens(out, 'ab', 5)).toEqual({ '%0': 'first', [id]: 'second' });
  });

  it.each([
    ['a strftime conversion', 'Tue'],
    ['empty', ''],
    ['a session name', 'proj'],
  ])('parseScreens files nothing under a marked line that is %s', (_what, written) => {
    expect(parseScreens(`<svc-screen:ab>${written}\nscreen\n`, 'ab', 5)).toEqual({});
  });
});

describe('new-session output', () => {
  it.each([
    ['svc-a<|n1|>%3\n', { name: 'svc-a', paneId: '%3' }],
    ['svc-a<|n1|>%3', { name: 'svc-a', paneId: '%3' }],
    ['a_b<|n1|>%12\n', { name: 'a_b', paneId: '%12' }],
    ['x<|n1|>y<|n1|>%4\n', { name: 'x<|n1|>y', paneId: '%4' }], // the name holds the separator: the last one counts
    ['tab\\there<|n1|>%5\n', { name: 'tab\\there', paneId: '%5' }],
  ])('parseNewSession(%j)', (out, session) => {
    expect(parseNewSession(out, 'n1')).toEqual(session);
  });

  it.each(['', '\n', 'svc-a%3\n', 'svc-a<|n2|>%3'])('parseNewSession(%j) fails', (out) => {
    expect(() => parseNewSession(out, 'n1')).toThrow(expect.objectContaining({ name: 'TmuxError', code: 'failed' }));
  });

  it.each([
    [
      '',
      'error creating /tmp/x/tmux-1/default (No such file or directory)\n',
      'tmux created no session (tmux said: error creating /tmp/x/tmux-1/default (No such file or directory))',
    ],
    ['', '', 'tmux created no session (and said nothing on stderr)'],
    ['huh\n', 'a\nb\n', 'tmux answered "huh" (tmux said: a; b)'],
  ])('parseNewSession(%j) with stderr %j says what tmux said', (out, stderr, message) => {
    expect(() => parseNewSession(out, 'n1', stderr)).toThrow(message);
  });

  it('newSessionFormat prints the name and pane around the separator', () => {
    expect(newSessionFormat('n1')).toBe('#{session_name}<|n1|>#{pane_id}');
  });
});
