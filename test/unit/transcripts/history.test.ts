/**
 * Session history (core/transcripts/history.ts): what of a real transcript becomes history items (never a tool's
 * arguments or output), the timeline the app folds them into, the limits of the to-do list, a follower that goes on
 * from where an earlier one stopped, and the relay's store of chunks: paging and the per-account limits.
 */
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { followTranscript } from '../../../actors/transcripts/follow.js';
import { createHistory, type HistoryChunkOut } from '../../../actors/transcripts/history.js';
import { findTranscript } from '../../../actors/transcripts/locate.js';
import { HistoryChunkBody } from '../../../core/protocol/bodies.js';
import type { SessionRecord } from '../../../core/protocol/index.js';
import { claudeProjectDir } from '../../../core/sessions/control.js';
import {
  chunked,
  historyItems,
  MAX_TODO_CHARS,
  MAX_TODOS,
  placeMessages,
  promptsFirst,
  relativeTarget,
  TIMELINE_AGENTS,
  timeline,
} from '../../../core/transcripts/history.js';
import { readLine, TRANSCRIPT_AGENTS, type TranscriptEvent } from '../../../core/transcripts/readers.js';
import { APPROVAL_COMMAND } from '../../fakes/fakeModel.js';

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'svc-history-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const fixture = (agent: string) => readFileSync(join('test/fixtures/transcripts', agent, 'session.jsonl'), 'utf8');
const eventsOf = (agent: string, text: string) => {
  const seen = new Set<string>();
  return text.split('\n').flatMap((l) => readLine(agent, l, seen).events);
};

describe('a prompt before the steps it led to', () => {
  const reply = (text: string, at?: string): TranscriptEvent => ({ kind: 'reply', text, ...(at ? { at } : {}) });
  const prompt = (text: string, at?: string): TranscriptEvent => ({ kind: 'prompt', text, ...(at ? { at } : {}) });
  const texts = (events: TranscriptEvent[]) => events.map((e) => ('text' in e ? e.text : e.kind));
  it.each([
    ['in order already', [prompt('p', 't1'), reply('r', 't2')], ['p', 'r']],
    [
      'Claude Code’s first turn: the reply written first, with its tokens',
      [reply('r', 't2'), { kind: 'tokens', input: 1, output: 1 } as TranscriptEvent, prompt('p', 't1')],
      ['p', 'r', 'tokens'],
    ],
    ['a reply after the prompt’s time stays', [reply('r', 't1'), prompt('p', 't2')], ['r', 'p']],
    ['never over an earlier prompt', [prompt('a', 't3'), reply('r', 't4'), prompt('b', 't1')], ['a', 'b', 'r']],
    ['no time: where it was written', [reply('r', 't2'), prompt('p')], ['r', 'p']],
    ['a reply with no time stops it', [reply('x'), reply('r', 't2'), prompt('p', 't1')], ['x', 'p', 'r']],
  ])('%s', (_what, events, order) => expect(texts(promptsFirst(events as TranscriptEvent[]))).toEqual(order));

  it('the real Claude Code transcript reads prompt first', () => {
    const items = historyItems(eventsOf('A1', fixture('A1')));
    expect(items.slice(0, 2).map((i) => i.k)).toEqual(['prompt', 'reply']);
  });
});

describe('messages sent from the phone, placed in the conversation', () => {
  const typed = (text: string) => ({ text, typed: true });
  it.each([
    ['each at its turn', ['a', 'b'], [typed('a'), typed('b')], [0, 1]],
    ['not in the transcript yet', ['a'], [typed('a'), typed('b')], [0, null]],
    ['the same text twice: two turns in order', ['go', 'x', 'go'], [typed('go'), typed('go')], [0, 2]],
    [
      'a second "go" not written yet does not take the first one’s turn',
      ['go', 'x'],
      [typed('go'), typed('go')],
      [0, null],
    ],
    ['never before an earlier one', ['b', 'a'], [typed('a'), typed('b')], [1, null]],
    ['whitespace as the agent wrote it', ['fix\r\nit '], [typed('fix\nit')], [0]],
    ['a turn without a prompt is skipped', [null, 'a'], [typed('a')], [1]],
    ['not typed (refused, waiting): never placed', ['a'], [{ text: 'a', typed: false }], [null]],
  ])('%s', (_what, prompts, sent, at) =>
    expect(placeMessages(prompts as (string | null)[], sent as { text: string; typed: boolean }[])).toEqual(at),
  );

  it('a long message the history cut (…) is found by its start', () => {
    const long = `${'word '.repeat(2_000)}end`;
    const [item] = historyItems([{ kind: 'prompt', text: long }]);
    expect(placeMessages([(item as { text: string }).text], [typed(long)])).toEqual([0]);
    expect(placeMessages([(item as { text: string }).text], [typed(`${'other '.repeat(2_000)}`)])).toEqual([null]);
  });
});

describe('tool targets relative to the project', () => {
  it.each([
    ['a file in the project', '/home/me/proj/src/a.ts', 'src/a.ts'],
    ['the project itself', '/home/me/proj', '.'],
    ['a command that goes there', 'cd /home/me/proj && npm test', 'cd . && npm test'],
    ['a command on a file there', 'cat /home/me/proj/README.md | head', 'cat README.md | head'],
    ['a quoted path', "ls '/home/me/proj/a b'", "ls 'a b'"],
    ['a folder that only starts the same', '/home/me/project2/a.ts', '/home/me/project2/a.ts'],
    ['the path inside another path', '/mnt/home/me/proj/a.ts', '/mnt/home/me/proj/a.ts'],
    ['a path elsewhere', '/etc/hosts', '/etc/hosts'],
    ['a program only', 'npm test', 'npm test'],
    ['the folder with its slash', 'cd /home/me/proj/ && make', 'cd . && make'],
    ['the folder with its slash, alone', 'ls /home/me/proj/', 'ls .'],
  ])('%s', (_what, target, shown) => expect(relativeTarget(target, '/home/me/proj/')).toBe(shown));

  it('without a project folder, the target stays whole', () =>
    expect(relativeTarget('/home/me/proj/a.ts', undefined)).toBe('/home/me/proj/a.ts'));

  it('history items carry them', () =>
    expect(
      historyItems([{ kind: 'tool', id: 't', name: 'Edit', target: '/w/p/src/a.ts', lines: 2 }], { cwd: '/w/p' }),
    ).toEqual([{ k: 'tool', id: 't', name: 'Edit', target: 'src/a.ts', lines: 2 }]));
});

describe('history items', () => {
  it('the agents with a timeline are the transcript readers and opencode (A5), as written out for the app', () => {
    expect([...TIMELINE_AGENTS].sort()).toEqual([...TRANSCRIPT_AGENTS, 'A5'].sort());
  });

  it.each(['A1', 'A2', 'A3', 'A4'])(
    '%s: prompts, replies and tools; of a tool only its command’s first line leaves',
    (agent) => {
      const text = fixture(agent);
      const items = historyItems(eventsOf(agent, text));
      expect(items.filter((i) => i.k === 'prompt').map((i) => (i as { text: string }).text)).toEqual([
        'hello there',
        expect.stringMatching(/^run a command/),
      ]);
      expect(items.some((i) => i.k === 'reply')).toBe(true);
      expect(items.some((i) => i.k === 'tool')).toBe(true);
      // the shell command's first line, so the person reads what ran; nothing else of the call or its output
      const tools = items.filter((i) => i.k === 'tool');
      expect(tools.map((t) => [t.target, Object.keys(t).sort()])).toEqual([
        [APPROVAL_COMMAND, ['id', 'k', 'name', 'target']],
      ]);
      for (const i of items.filter((i) => i.k === 'result')) expect(Object.keys(i).sort()).toEqual(['id', 'k', 'ok']);
      // every chunk is a body the seal accepts
      for (const piece of chunked(items)) {
        expect(() =>
          HistoryChunkBody.parse({ session: 'svc-x', seq: 0, reset: false, items: piece, at: 1 }),
        ).not.toThrow();
      }
    },
  );

  it('an edit carries how many lines it changes, and the seal takes it', () => {
    const items = historyItems([{ kind: 'tool', id: 't', name: 'Edit', target: '/w/a.ts', lines: 3 }]);
    expect(items).toEqual([{ k: 'tool', id: 't', name: 'Edit', target: '/w/a.ts', lines: 3 }]);
    expect(() => HistoryChunkBody.parse({ session: 'svc-x', seq: 0, reset: false, items, at: 1 })).not.toThrow();
  });

  it('cuts the to-do list to 30 tasks of 100 characters, and long texts', () => {
    const todos: TranscriptEvent = {
      kind: 'todos',
      items: Array.from({ length: 45 }, (_, i) => ({
        text: `task ${i} ${'x'.repeat(200)}`,
        status: 'pending' as const,
      })),
    };
    const [item] = historyItems([todos, { kind: 'reply', text: 'y'.repeat(20_000) }, { kind: 'prompt', text: '  ' }]);
    expect(item).toMatchObject({ k: 'todos' });
    const list = (item as { items: { text: string }[] }).items;
    expect(list).toHaveLength(MAX_TODOS);
    expect(Math.max(...list.map((t) => t.text.length))).toBe(MAX_TODO_CHARS);
    const all = historyItems([
      { kind: 'reply', text: 'y'.repeat(20_000) },
      { kind: 'prompt', text: '  ' },
    ]);
    expect(all).toHaveLength(1); // an empty prompt is nothing
    expect((all[0] as { text: string }).text.length).toBe(8_000);
  });

  it('folds items into turns: each tool with its outcome and lines changed, replies, tokens; the newest to-do list', () => {
    const { turns, todos } = timeline([
      { k: 'prompt', text: 'fix it' },
      { k: 'tool', id: 't1', name: 'Edit', target: 'src/a.ts', lines: 4 },
      { k: 'tool', id: 't2', name: 'Bash', target: 'npm' },
      { k: 'result', id: 't1', ok: true },
      { k: 'result', id: 't2', ok: false },
      { k: 'tokens', input: 10, output: 5 },
      { k: 'reply', text: 'done' },
      { k: 'todos', items: [{ text: 'a', status: 'completed' }] },
      { k: 'prompt', text: 'again' },
      { k: 'tool', id: 't3', name: 'Read' },
      { k: 'tokens', input: 3, output: 1 },
    ]);
    expect(turns).toEqual([
      {
        prompt: 'fix it',
        steps: [
          { kind: 'tool', name: 'Edit', target: 'src/a.ts', lines: 4, ok: true },
          { kind: 'tool', name: 'Bash', target: 'npm', ok: false },
          { kind: 'reply', text: 'done' },
        ],
        tokens: { input: 10, output: 5 },
      },
      { prompt: 'again', steps: [{ kind: 'tool', name: 'Read', ok: null }], tokens: { input: 3, output: 1 } },
    ]);
    expect(todos?.items).toEqual([{ text: 'a', status: 'completed' }]);
  });

  it('an outcome read before its call (Claude Code writes out of order) is kept for the call', () => {
    const { turns } = timeline([
      { k: 'prompt', text: 'look' },
      { k: 'result', id: 't1', ok: true },
      { k: 'tool', id: 't1', name: 'Read', target: '/p/notes.txt' },
      { k: 'result', id: 'gone', ok: false }, // a call never seen is nothing
      { k: 'tool', id: 't2', name: 'Edit' },
    ]);
    expect(turns[0]?.steps).toEqual([
      { kind: 'tool', name: 'Read', target: '/p/notes.txt', ok: true },
      { kind: 'tool', name: 'Edit', ok: null },
    ]);
  });
});

describe('following a transcript across a listener restart', () => {
  it('goes on from the end of the last complete line, not from the start', () => {
    const dir = temp();
    const file = join(dir, 'session.jsonl');
    const lines = fixture('A1').trim().split('\n');
    writeFileSync(file, `${lines.slice(0, 8).join('\n')}\n${lines[8]!.slice(0, 20)}`);
    const first = followTranscript('A1', () => file);
    const before = first.poll().events;
    const where = first.position()!;
    expect(where.offset).toBe(Buffer.byteLength(`${lines.slice(0, 8).join('\n')}\n`));
    // the listener stops; the agent writes on
    writeFileSync(file, `${lines.join('\n')}\n`);
    const second = followTranscript(
      'A1',
      () => file,
      () => where,
    );
    const after = second.poll();
    expect(after.reset).toBe(false);
    expect([...before, ...after.events]).toEqual(eventsOf('A1', lines.join('\n')));
    // a start position of a file that was cut meanwhile is read again from its start
    writeFileSync(file, `${lines[0]}\n`);
    const third = followTranscript(
      'A1',
      () => file,
      () => ({ ...where, ino: statSync(file).ino }),
    );
    expect(third.poll().events).toEqual([]);
    appendFileSync(file, `${lines.slice(1).join('\n')}\n`);
    expect(third.poll().events.length).toBeGreaterThan(0);
  });

  it('polls only while a session is followed: the timer alone sends it, saves where an ended one was, then stops', async () => {
    const home = temp();
    const cwd = '/src/timer';
    const store = join(home, '.claude', 'projects', claudeProjectDir(cwd));
    mkdirSync(store, { recursive: true });
    writeFileSync(join(store, '44444444-4444-4444-4444-444444444444.jsonl'), fixture('A1'));
    const sent: HistoryChunkOut[] = [];
    const positionsPath = join(home, 'history.json');
    const history = createHistory({
      positionsPath,
      env: { HOME: home },
      log: { info: () => {}, warn: () => {} },
      pollMs: 10,
      send: async (chunk) => {
        sent.push(chunk);
      },
    });
    const record: SessionRecord = {
      name: 'svc-timer',
      attached: false,
      createdAt: 0,
      activityAt: 0,
      meta: { kind: 'agent', agent: 'A1' },
      panes: [{ id: '%1', command: 'claude', path: cwd, active: true }],
    };
    try {
      // a listener with no agent session is not woken
      history.sessions([{ ...record, meta: { kind: 'shell' } }]);
      expect(history.polling()).toBe(false);
      history.sessions([record]);
      expect(history.polling()).toBe(true);
      await vi.waitFor(() => expect(sent.length).toBeGreaterThan(0), { timeout: 10_000 });
      // the session ends: one more round saves where its transcript was read to, then the timer stops
      history.sessions([]);
      await vi.waitFor(() => expect(history.polling()).toBe(false), { timeout: 10_000 });
      const saved = JSON.parse(readFileSync(positionsPath, 'utf8'));
      expect(Object.keys(saved.ended)).toEqual([join(store, '44444444-4444-4444-4444-444444444444.jsonl')]);
    } finally {
      history.stop();
    }
    expect(history.polling()).toBe(false);
  });

  it('a pane whose current folder flickers keeps following the transcript it found', async () => {
    const home = temp();
    const cwd = '/src/my app';
    const store = join(home, '.claude', 'projects', claudeProjectDir(cwd));
    mkdirSync(store, { recursive: true });
    const file = join(store, '33333333-3333-3333-3333-333333333333.jsonl');
    const lines = fixture('A1').trim().split('\n');
    const half = Math.ceil(lines.length / 2);
    writeFileSync(file, `${lines.slice(0, half).join('\n')}\n`);
    const sent: HistoryChunkOut[] = [];
    const history = createHistory({
      positionsPath: join(home, 'history.json'),
      env: { HOME: home },
      log: { info: () => {}, warn: () => {} },
      pollMs: 60_000,
      send: async (chunk) => {
        sent.push(chunk);
      },
    });
    const record = (path: string): SessionRecord => ({
      name: 'svc-app',
      attached: false,
      createdAt: 0,
      activityAt: 0,
      meta: { kind: 'agent', agent: 'A1' },
      panes: [{ id: '%1', command: 'claude', path, active: true }],
    });
    try {
      history.sessions([record(cwd)]);
      await history.tick();
      const first = sent.length;
      expect(first).toBeGreaterThan(0);
      // a helper process of the agent in front for a moment: tmux reports its folder
      history.sessions([record('/')]);
      appendFileSync(file, `${lines.slice(half).join('\n')}\n`);
      await history.tick();
      expect(sent.length).toBeGreaterThan(first);
      expect(sent.every((c) => !c.reset)).toBe(true);
    } finally {
      history.stop();
    }
  });

  it('finds a Claude Code session’s transcript in its store, the newest since the session started', () => {
    const home = temp();
    const cwd = '/src/my app';
    const store = join(home, '.claude', 'projects', claudeProjectDir(cwd));
    expect(findTranscript('A1', cwd, 0, { HOME: home })).toBeNull();
    mkdirSync(store, { recursive: true });
    const old = join(store, '11111111-1111-1111-1111-111111111111.jsonl');
    const now = join(store, '22222222-2222-2222-2222-222222222222.jsonl');
    writeFileSync(old, '{}\n');
    writeFileSync(now, '{}\n');
    utimesSync(old, new Date(1_000_000), new Date(1_000_000));
    expect(findTranscript('A1', cwd, 2_000_000, { HOME: home })).toBe(now);
    expect(findTranscript('A1', cwd, Date.now() + 60_000, { HOME: home })).toBeNull();
    expect(findTranscript('A5', cwd, 0, { HOME: home })).toBeNull();
  });
});
