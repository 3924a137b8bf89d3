import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AGENTS, agentById } from '../../../core/agents/registry.js';
import {
  type AgentState,
  CONFIRM_MS,
  type DebounceState,
  IDLE_QUIET_MS,
  initialDebounce,
  lastLines,
  nextAgentState,
  readingDue,
  readScreen,
  SCREEN_RULES,
  type ScreenReading,
  type ScreenRules,
  screenHash,
} from '../../../core/agents/screens.js';

const FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '../../fixtures/screens');

interface Fixture {
  agent: string;
  file: string;
  /** The state the file name claims; `transcript` fixtures must read `frozen`. */
  expected: ScreenReading;
  text: string;
  title: string | undefined;
}

const STATE_OF_FILE: Record<string, ScreenReading> = {
  idle: 'idle',
  working: 'working',
  awaiting_approval: 'awaiting_approval',
  transcript: 'frozen',
};

function loadFixtures(): Fixture[] {
  if (!existsSync(FIXTURES)) return [];
  const out: Fixture[] = [];
  for (const agent of readdirSync(FIXTURES)) {
    const dir = join(FIXTURES, agent);
    if (!existsSync(join(dir, 'meta.json'))) continue;
    const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as {
      captures: Record<string, { paneTitle?: string }>;
    };
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.txt'))) {
      const m = /^([a-z_]+)-\d+\.txt$/.exec(file);
      const expected = m ? STATE_OF_FILE[m[1]!] : undefined;
      if (!expected) throw new Error(`${agent}/${file}: not <state>-<n>.txt`);
      out.push({
        agent,
        file,
        expected,
        text: readFileSync(join(dir, file), 'utf8'),
        title: meta.captures[file]?.paneTitle,
      });
    }
  }
  return out;
}

const fixtures = loadFixtures();
const fixturesOf = (agent: string) => fixtures.filter((f) => f.agent === agent);

describe('screen fixtures from the real programs', () => {
  it('there are fixtures', () => {
    expect(fixtures.length).toBeGreaterThan(0);
  });

  it.each(fixtures.map((f) => [`${f.agent}/${f.file}`, f] as const))('%s reads as its state', (_name, f) => {
    expect(readScreen(SCREEN_RULES[f.agent], { text: f.text, title: f.title })).toBe(f.expected);
  });

  it.each(Object.entries(SCREEN_RULES).filter(([, r]) => r.trusted))(
    'trusted rules of %s are backed by a fixture for every state they claim',
    (id, rules) => {
      const have = new Set(fixturesOf(id).map((f) => f.expected));
      expect(have.size, `${id}: trusted rules without fixtures`).toBeGreaterThan(0);
      for (const rule of rules.rules) expect(have.has(rule.state), `${id}: no ${rule.state} fixture`).toBe(true);
      if (rules.freeze?.length) expect(have.has('frozen'), `${id}: no transcript fixture`).toBe(true);
    },
  );

  it('every fixture directory belongs to an agent of the registry', () => {
    for (const f of fixtures) expect(agentById(f.agent), f.agent).toBeDefined();
  });

  it('the registry carries the rules of screens.ts', () => {
    for (const a of AGENTS) expect(a.screenRules ?? undefined, a.id).toBe(SCREEN_RULES[a.id]);
  });
});

describe('readScreen', () => {
  const rules: ScreenRules = {
    trusted: true,
    source: 'test',
    lines: 3,
    freeze: [/transcript view/],
    rules: [
      { state: 'idle', any: [/^> $/, /ready/] },
      { state: 'working', any: [/esc to interrupt/], title: [/^⠋/] },
      { state: 'awaiting_approval', any: [/Allow\?/] },
    ],
  };
  it.each<[string, string, string | undefined, ScreenReading]>([
    ['idle', 'hello\nready\n\n\n', undefined, 'idle'],
    [
      'approval outranks working and idle, whatever the rule order',
      'esc to interrupt\nAllow?\nready',
      undefined,
      'awaiting_approval',
    ],
    ['working outranks idle', 'ready\nesc to interrupt', undefined, 'working'],
    ['a title cue counts', 'ready', '⠋ My session', 'working'],
    ['only the last non-blank lines are read', 'Allow?\na\nb\nready\n\n', undefined, 'idle'],
    ['nothing matches → unknown', 'some output', 'host', 'unknown'],
    ['transcript view freezes', 'Allow?\ntranscript view', undefined, 'frozen'],
    ['empty screen', '', undefined, 'unknown'],
  ])('%s', (_name, text, title, want) => {
    expect(readScreen(rules, { text, title })).toBe(want);
  });

  it('untrusted or missing rules read unknown, even on a screen they would match', () => {
    expect(readScreen({ ...rules, trusted: false }, { text: 'Allow?' })).toBe('unknown');
    expect(readScreen(undefined, { text: 'Allow?' })).toBe('unknown');
    expect(readScreen(agentById('A8')?.screenRules ?? undefined, { text: 'esc to interrupt' })).toBe('unknown');
  });

  it('global regexes do not carry state between reads', () => {
    const g: ScreenRules = { ...rules, rules: [{ state: 'idle', any: [/ready/g] }] };
    expect([1, 2, 3].map(() => readScreen(g, { text: 'ready' }))).toEqual(['idle', 'idle', 'idle']);
  });

  it('lastLines drops blank lines and trailing spaces', () => {
    expect(lastLines('a  \n\n b\n   \nc\n\n', 2)).toEqual([' b', 'c']);
    expect(lastLines('', 5)).toEqual([]);
  });

  it('screenHash is stable and tells screens apart', () => {
    expect(screenHash('abc')).toBe(screenHash('abc'));
    expect(screenHash('abc')).not.toBe(screenHash('abd'));
    expect(screenHash('')).toMatch(/^[0-9a-f]{8}$/);
  });
});

describe('A9 Qwen Code cues beyond the fixtures', () => {
  const footer = '  ⏸ Ask permissions (shift + tab to cycle)';
  it.each<[string, string, string | undefined, ScreenReading]>([
    ['its state glyph in the title alone: working', '', '◐︎ Qwen - proj', 'working'],
    ['its state glyph in the title alone: a dialog', '', '✳︎ Qwen - proj', 'awaiting_approval'],
    ['the plain title says nothing', '', 'Qwen - proj', 'unknown'],
    [
      'another approval mode',
      '>   Type your message or @path/to/file\n  YOLO mode (shift + tab to cycle)',
      'Qwen - proj',
      'idle',
    ],
    [
      'Windows says tab',
      '>   Type your message or @path/to/file\n  ⏸ Ask permissions (tab to cycle)',
      undefined,
      'idle',
    ],
    [
      'a message queued while it works',
      `  steer me\n>   Type your message\n  Enter to steer · Ctrl+Q to queue · ${footer.trim()}`,
      undefined,
      'working',
    ],
    ['the edit dialog', '   Apply this change?\n   › 1. Yes, allow once', undefined, 'awaiting_approval'],
  ])('%s', (_name, text, title, want) => {
    expect(readScreen(SCREEN_RULES.A9, { text, title })).toBe(want);
  });
});

describe('nextAgentState (debounce)', () => {
  type Poll = [t: number, reading: ScreenReading, hash: string];
  const run = (polls: readonly Poll[], start: DebounceState = initialDebounce(0)): AgentState[] => {
    let s = start;
    return polls.map(([t, reading, hash]) => {
      s = nextAgentState(s, reading, t, hash);
      return s.state;
    });
  };

  it('constants', () => {
    expect(CONFIRM_MS).toBe(250);
    expect(IDLE_QUIET_MS).toBe(500);
  });

  it.each<[string, Poll[], AgentState[]]>([
    [
      'a state is accepted on the second poll in a row',
      [
        [0, 'working', 'a'],
        [500, 'working', 'b'],
      ],
      ['unknown', 'working'],
    ],
    [
      'one odd reading is ignored',
      [
        [0, 'working', 'a'],
        [500, 'working', 'b'],
        [1000, 'awaiting_approval', 'c'],
        [1500, 'working', 'd'],
      ],
      ['unknown', 'working', 'working', 'working'],
    ],
    [
      'alternating readings never settle',
      [
        [0, 'working', 'a'],
        [500, 'idle', 'a'],
        [1000, 'working', 'a'],
        [1500, 'idle', 'a'],
      ],
      ['unknown', 'unknown', 'unknown', 'unknown'],
    ],
    [
      'idle waits for the screen to stay the same 500 ms',
      [
        [0, 'idle', 'a'],
        [250, 'idle', 'a'],
        [400, 'idle', 'a'],
        [500, 'idle', 'a'],
      ],
      ['unknown', 'unknown', 'unknown', 'idle'],
    ],
    [
      'readings 250 ms apart: a change is accepted 250 ms after it is first read',
      [
        [0, 'idle', 'a'],
        [1000, 'idle', 'a'],
        [1250, 'working', 'b'],
        [1500, 'working', 'c'],
      ],
      ['unknown', 'idle', 'idle', 'working'],
    ],
    [
      'two readings close together are not enough: the state must hold for 250 ms',
      [
        [0, 'working', 'a'],
        [5, 'working', 'a'],
        [100, 'working', 'b'],
        [260, 'working', 'c'],
      ],
      ['unknown', 'unknown', 'unknown', 'working'],
    ],
    [
      'a redraw that shows idle for a moment between fast readings never flips working',
      [
        [0, 'working', 'a'],
        [250, 'working', 'b'],
        [500, 'idle', 'c'],
        [750, 'working', 'd'],
        [1000, 'idle', 'e'],
        [1250, 'working', 'f'],
      ],
      ['unknown', 'working', 'working', 'working', 'working', 'working'],
    ],
    [
      'idle while the screen still changes (a reply streaming) is not accepted',
      [
        [0, 'idle', 'a'],
        [2000, 'idle', 'b'],
        [4000, 'idle', 'c'],
        [6000, 'idle', 'c'],
      ],
      ['unknown', 'unknown', 'unknown', 'idle'],
    ],
    [
      'working → idle after 500 ms quiet',
      [
        [0, 'working', 'a'],
        [1000, 'working', 'b'],
        [2000, 'idle', 'c'],
        [2250, 'idle', 'c'],
        [2500, 'idle', 'c'],
      ],
      ['unknown', 'working', 'working', 'working', 'idle'],
    ],
    [
      'approval is accepted on two readings 250 ms apart even while the screen changes',
      [
        [0, 'awaiting_approval', 'a'],
        [250, 'awaiting_approval', 'b'],
      ],
      ['unknown', 'awaiting_approval'],
    ],
    [
      'frozen (transcript view) keeps the state and resets a candidate',
      [
        [0, 'working', 'a'],
        [500, 'working', 'a'],
        [1000, 'idle', 'b'],
        [1500, 'frozen', 'c'],
        [5000, 'idle', 'c'],
      ],
      ['unknown', 'working', 'working', 'working', 'working'],
    ],
    [
      'unknown, too, needs two polls',
      [
        [0, 'working', 'a'],
        [500, 'working', 'a'],
        [1000, 'unknown', 'b'],
        [1500, 'unknown', 'c'],
      ],
      ['unknown', 'working', 'working', 'unknown'],
    ],
  ])('%s', (_name, polls, want) => {
    expect(run(polls)).toEqual(want);
  });

  it('readingDue: a screen the last reading did not see, or a state still to confirm', () => {
    const watched = [
      { session: 's1', pane: '%1' },
      { session: 's2', pane: '%2' },
    ];
    const settled = nextAgentState(
      nextAgentState(initialDebounce(0), 'working', 0, screenHash('busy')),
      'working',
      300,
      screenHash('busy'),
    );
    expect(settled.candidate).toBeNull();
    const pending = nextAgentState(settled, 'idle', 400, screenHash('done'));
    expect(pending.candidate).toBe('idle');
    expect(readingDue(watched, { '%1': 'busy', '%2': 'busy' }, { s1: settled, s2: settled })).toBe(false);
    expect(readingDue(watched, { '%1': 'busy', '%2': 'busy!' }, { s1: settled, s2: settled })).toBe(true);
    expect(readingDue(watched, { '%1': 'busy', '%2': 'done' }, { s1: settled, s2: pending })).toBe(true);
    // a pane the look could not read, or a session no reading has judged yet: left to the next full reading
    expect(readingDue(watched, { '%1': 'busy' }, { s1: settled, s2: settled })).toBe(false);
    expect(readingDue(watched, { '%1': 'x', '%2': 'y' }, {})).toBe(false);
  });

  it('is pure: the previous state is not changed', () => {
    const prev = initialDebounce(0);
    const copy = { ...prev };
    nextAgentState(prev, 'working', 100, 'x');
    expect(prev).toEqual(copy);
  });
});
