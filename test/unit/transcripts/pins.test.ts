/**
 * Each session its own transcript (issue 30 item 2): the agent's hooks say which of its sessions runs in a pane
 * (core/transcripts/pins.ts decides whether to take it), the history follows that file, a session whose agent has
 * not said yet is never given a file another session holds, a resume runs the recorded id, and a resumed
 * conversation goes on from where the ended session's was read to.
 */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ancestry, parentInStat } from '../../../actors/hooks/ancestry.js';
import { createPastSessions, findResumeId } from '../../../actors/sessions/pastSessions.js';
import { createHistory, type HistoryChunkOut } from '../../../actors/transcripts/history.js';
import { inAgentStore } from '../../../actors/transcripts/locate.js';
import { createPinning } from '../../../actors/transcripts/pinning.js';
import { parseHookInput } from '../../../core/hooks/remoteOrigin.js';
import type { SessionRecord } from '../../../core/protocol/index.js';
import { claudeProjectDir, emptyPast, rememberSessions } from '../../../core/sessions/control.js';
import { forRelay } from '../../../core/sessions/inventory.js';
import { pinDecision } from '../../../core/transcripts/pins.js';

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'svc-pins-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const T1 = '/h/.claude/projects/-p/11111111-1111-1111-1111-111111111111.jsonl';
const T2 = '/h/.claude/projects/-p/22222222-2222-2222-2222-222222222222.jsonl';

describe('pinDecision', () => {
  const base = {
    sessionAgent: 'A1',
    hookAgent: 'A1',
    current: {},
    said: { transcript: T1, agentSession: '1111' },
    inStore: true,
    ancestry: [40, 30, 20, 10] as number[] | undefined,
    panePid: 20 as number | null,
    pinnedDepth: undefined as number | undefined,
  };
  it.each([
    ['the pane’s agent says it first', base, { pin: true, depth: 2 }],
    ['the same again', { ...base, current: base.said }, { pin: false, why: 'unchanged' }],
    [
      'a hook that names the id alone leaves the pinned file as it is',
      { ...base, current: base.said, said: { agentSession: '1111' } },
      { pin: false, why: 'unchanged' },
    ],
    ['nothing said', { ...base, said: {} }, { pin: false, why: 'unchanged' }],
    [
      'a new conversation (/clear), same depth',
      { ...base, current: { transcript: T2 }, pinnedDepth: 2 },
      { pin: true, depth: 2 },
    ],
    [
      'an agent it runs (one level further down) names its own',
      { ...base, ancestry: [50, 45, 40, 30, 20, 10], pinnedDepth: 2, current: { transcript: T2 } },
      { pin: false, why: 'nested agent' },
    ],
    ['another agent’s hook in this pane', { ...base, hookAgent: 'A2' }, { pin: false, why: 'other agent' }],
    ['a hook of an agent svc does not know', { ...base, hookAgent: undefined }, { pin: false, why: 'other agent' }],
    ['a file outside the agent’s store', { ...base, inStore: false }, { pin: false, why: 'outside the store' }],
    ['a process that is not in the pane', { ...base, ancestry: [99, 98] }, { pin: false, why: 'not this pane' }],
    ['no /proc to read: the ancestry check is left out', { ...base, ancestry: undefined }, { pin: true, depth: null }],
    ['tmux did not say the pane’s process', { ...base, panePid: null }, { pin: true, depth: null }],
  ])('%s', (_, facts, expected) => {
    expect(pinDecision(facts)).toEqual(expected);
  });
});

describe('what a hook hands over', () => {
  it.each([
    [
      'Claude Code: its session id and transcript',
      { session_id: 'ab-12', transcript_path: T1, cwd: '/p', hook_event_name: 'UserPromptSubmit', prompt: 'hi' },
      { kind: 'prompt', prompt: 'hi', cwd: '/p', transcript: T1, agentSession: 'ab-12' },
    ],
    [
      'a Stop event names them too',
      { session_id: 'ab-12', transcript_path: T1, cwd: '/p', hook_event_name: 'Stop' },
      { kind: 'stop', cwd: '/p', transcript: T1, agentSession: 'ab-12' },
    ],
    [
      'Gemini CLI’s empty transcript path, a hostile id',
      { session_id: 'a b;rm', transcript_path: '', cwd: '/p', hook_event_name: 'AfterAgent' },
      { kind: 'stop', cwd: '/p' },
    ],
    [
      'a relative path, a path that climbs, a path with a control byte, not a .jsonl',
      { transcript_path: 'x.jsonl', cwd: '/p', hook_event_name: 'Stop' },
      { kind: 'stop', cwd: '/p' },
    ],
    [
      'climbs',
      { transcript_path: '/h/../etc/x.jsonl', cwd: '/p', hook_event_name: 'Stop' },
      { kind: 'stop', cwd: '/p' },
    ],
    [
      'control byte',
      { transcript_path: '/h/a\u001b.jsonl', cwd: '/p', hook_event_name: 'Stop' },
      { kind: 'stop', cwd: '/p' },
    ],
    [
      'not jsonl',
      { transcript_path: '/h/.ssh/id_ed25519', cwd: '/p', hook_event_name: 'Stop' },
      { kind: 'stop', cwd: '/p' },
    ],
  ])('%s', (_, input, expected) => {
    expect(parseHookInput(JSON.stringify(input))).toEqual(expected);
  });
});

describe('the agent’s store and the hook’s ancestry', () => {
  it('a pinned file must lie in the agent’s own store', () => {
    const home = temp();
    const env = { HOME: home };
    const store = join(home, '.claude', 'projects');
    expect(inAgentStore('A1', join(store, '-p', 'x.jsonl'), env)).toBe(true);
    expect(inAgentStore('A1', join(home, '.codex', 'sessions', 'x.jsonl'), env)).toBe(false);
    expect(inAgentStore('A2', join(home, '.codex', 'sessions', '2026', 'x.jsonl'), env)).toBe(true);
    expect(inAgentStore('A1', `${store}/-p/../../../.ssh/x.jsonl`, env)).toBe(false);
    expect(inAgentStore('A1', `${store}-evil/x.jsonl`, env)).toBe(false);
    expect(inAgentStore('A5', join(store, 'x.jsonl'), env)).toBe(false);
    // a store reached through a symbolic link (macOS: /var is /private/var)
    const real = temp();
    mkdirSync(join(real, 'projects'));
    const linked = join(home, 'claude-linked');
    symlinkSync(real, linked);
    expect(inAgentStore('A1', join(real, 'projects', 'x.jsonl'), { HOME: home, CLAUDE_CONFIG_DIR: linked })).toBe(true);
  });

  it('reads the parent from /proc/<pid>/stat, a name with spaces and parentheses included', () => {
    expect(parentInStat('123 (node) S 45 123 123 0 -1')).toBe(45);
    expect(parentInStat('123 (a (b) c) R 77 1 1')).toBe(77);
    expect(parentInStat('garbage')).toBeNull();
    const mine = ancestry();
    if (mine) expect(mine[0]).toBe(process.ppid);
  });
});

describe('the history follows each session’s own transcript', () => {
  const record = (name: string, cwd: string, meta: SessionRecord['meta'] = {}, createdAt = 0): SessionRecord => ({
    name,
    attached: false,
    createdAt,
    activityAt: 0,
    meta: { kind: 'agent', agent: 'A1', ...meta },
    panes: [{ id: `%${name.length}`, command: 'claude', path: cwd, active: true }],
  });
  const line = (uuid: string, text: string) =>
    `${JSON.stringify({ type: 'user', uuid, message: { role: 'user', content: text }, timestamp: '2026-11-26T10:00:00Z' })}\n`;

  /** A history for `home`, and what it sent, with the prompts of a session among it. */
  const historyAt = (home: string) => {
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
    const prompts = (session: string) =>
      sent
        .filter((c) => c.session === session)
        .flatMap((c) => c.items.flatMap((i) => (i.k === 'prompt' ? [i.text] : [])));
    return { sent, history, prompts };
  };
  const setup = () => {
    const home = temp();
    const cwd = '/src/app';
    const store = join(home, '.claude', 'projects', claudeProjectDir(cwd));
    mkdirSync(store, { recursive: true });
    return { home, cwd, store, ...historyAt(home) };
  };

  it('two sessions in one folder each read their own turns, pinned or not yet', async () => {
    const { cwd, store, history, prompts } = setup();
    const a = join(store, 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa.jsonl');
    const b = join(store, 'bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb.jsonl');
    try {
      writeFileSync(a, line('u1', 'from A'));
      // A's hook said its file; B's has not said yet
      history.sessions([record('svc-app', cwd, { transcript: a }), record('svc-app-2', cwd)]);
      await history.tick();
      expect(prompts('svc-app')).toEqual(['from A']);
      // B's agent writes its own file; B has not said, and A's (the newer by a write) is never B's
      writeFileSync(b, line('u2', 'from B'));
      appendFileSync(a, line('u3', 'A again'));
      await history.tick();
      expect(prompts('svc-app-2')).toEqual(['from B']);
      expect(prompts('svc-app')).toEqual(['from A', 'A again']);
      // now B's hook says it: nothing changes, nothing is sent twice
      history.pinned('svc-app-2', b);
      appendFileSync(b, line('u4', 'B again'));
      await history.tick();
      expect(prompts('svc-app-2')).toEqual(['from B', 'B again']);
      expect(prompts('svc-app')).toEqual(['from A', 'A again']);
    } finally {
      history.stop();
    }
  });

  it('a reading taken just before a hook pinned anew does not undo the pin', async () => {
    const { cwd, store, history, prompts } = setup();
    const a = join(store, 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa.jsonl');
    const b = join(store, 'bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb.jsonl');
    try {
      writeFileSync(a, line('u1', 'before /clear'));
      history.sessions([record('svc-app', cwd, { transcript: a })]);
      await history.tick();
      // the agent's new conversation: its hook pins b; a reading made a moment before still shows a
      writeFileSync(b, line('u2', 'after /clear'));
      history.pinned('svc-app', b);
      history.sessions([record('svc-app', cwd, { transcript: a })]);
      await history.tick();
      history.sessions([record('svc-app', cwd, { transcript: b })]);
      await history.tick();
      expect(prompts('svc-app')).toEqual(['before /clear', 'after /clear']);
    } finally {
      history.stop();
    }
  });

  it('a listener that restarts onto another file than it read (a /clear while it was away) starts the view again', async () => {
    const { home, cwd, store, history: first, sent } = setup();
    const a = join(store, 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa.jsonl');
    const b = join(store, 'bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb.jsonl');
    writeFileSync(a, line('u1', 'old conversation'));
    first.sessions([record('svc-app', cwd, { transcript: a })]);
    await first.tick();
    first.stop();
    expect(sent.every((c) => !c.reset)).toBe(true);
    writeFileSync(b, line('u2', 'new conversation'));
    const { history, sent: after } = historyAt(home);
    try {
      history.sessions([record('svc-app', cwd, { transcript: b })]);
      await history.tick();
      expect(after[0]).toMatchObject({ reset: true });
      expect(after.flatMap((c) => c.items.flatMap((i) => (i.k === 'prompt' ? [i.text] : [])))).toEqual([
        'new conversation',
      ]);
    } finally {
      history.stop();
    }
  });

  it('a resumed conversation goes on from where the ended session was read to: nothing sent twice', async () => {
    const { home, cwd, store, history, prompts, sent } = setup();
    const a = join(store, 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa.jsonl');
    try {
      writeFileSync(a, line('u1', 'first') + line('u2', 'second'));
      history.sessions([record('svc-app', cwd, { transcript: a })]);
      await history.tick();
      expect(prompts('svc-app')).toEqual(['first', 'second']);
      history.sessions([]); // it ended
      await history.tick();
      expect(JSON.parse(readFileSync(join(home, 'history.json'), 'utf8')).ended[a]).toMatchObject({ path: a });
      // resumed by its id: the agent appends to the same file
      appendFileSync(a, line('u3', 'third'));
      history.sessions([record('svc-app', cwd, { transcript: a }, 100)]);
      await history.tick();
      expect(prompts('svc-app')).toEqual(['first', 'second', 'third']);
      expect(sent.every((c) => !c.reset)).toBe(true);
    } finally {
      history.stop();
    }
  });

  it('a listener with a history.json of the earlier shape goes on from it', async () => {
    const { home, cwd, store, history: first } = setup();
    first.stop();
    const a = join(store, 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa.jsonl');
    writeFileSync(a, line('u1', 'old'));
    const { statSync } = await import('node:fs');
    const offset = statSync(a).size;
    writeFileSync(join(home, 'history.json'), JSON.stringify({ 'svc-app': { path: a, ino: statSync(a).ino, offset } }));
    appendFileSync(a, line('u2', 'new'));
    const { history, prompts } = historyAt(home);
    try {
      history.sessions([record('svc-app', cwd, { transcript: a })]);
      await history.tick();
      expect(prompts('svc-app')).toEqual(['new']);
    } finally {
      history.stop();
    }
  });
});

describe('a resume runs the session’s own conversation', () => {
  const past = { name: 'svc-app', agent: 'A1', cwd: '/src/app', createdAt: 1, lastSeenAt: 2 };

  it('the id its hooks recorded; without one, the newest no live session holds', () => {
    const home = temp();
    const store = join(home, '.claude', 'projects', claudeProjectDir('/src/app'));
    mkdirSync(store, { recursive: true });
    const mine = join(store, '11111111-1111-1111-1111-111111111111.jsonl');
    const theirs = join(store, '22222222-2222-2222-2222-222222222222.jsonl');
    writeFileSync(mine, '{}\n');
    writeFileSync(theirs, '{}\n'); // newer: the other live session's
    const env = { HOME: home };
    expect(findResumeId({ ...past, agentSession: '1111', transcript: mine }, env, new Set([theirs]))).toEqual({
      id: '1111',
      transcript: mine,
    });
    expect(findResumeId(past, env, new Set([theirs]))).toEqual({
      id: '11111111-1111-1111-1111-111111111111',
      transcript: mine,
    });
    expect(findResumeId(past, env, new Set([theirs, mine]))).toBeNull();
  });

  it('a conversation that runs already is not resumed a second time', async () => {
    const home = temp();
    const book = createPastSessions(join(home, 'past.json'), { warn: () => {} });
    const live = (name: string, createdAt: number, agentSession: string): SessionRecord => ({
      name,
      attached: false,
      createdAt,
      activityAt: 0,
      meta: { kind: 'agent', agent: 'A1', agentSession },
      panes: [{ id: '%1', command: 'claude', path: '/src/app', active: true }],
    });
    book.seen([live('svc-app', 1, '1111')], 10);
    // it ended, and the person resumed that conversation at the keyboard in another session
    book.seen([live('svc-app-2', 20, '1111')], 30);
    const made: string[] = [];
    const outcome = await book.resume(book.find('svc-app')!, {
      newSession: async (o) => {
        made.push(o.name);
        return { name: o.name, paneId: '%9' };
      },
    });
    expect(outcome).toEqual({ ok: false, code: 'inject_failed', message: 'that conversation is running in svc-app-2' });
    expect(made).toEqual([]);
  });

  it('the book keeps the id a session’s hooks said, not one of an older session of that name', () => {
    const live = (createdAt: number, meta: SessionRecord['meta'] = {}): SessionRecord => ({
      name: 'svc-app',
      attached: false,
      createdAt,
      activityAt: 0,
      meta: { kind: 'agent', agent: 'A1', ...meta },
      panes: [{ id: '%1', command: 'claude', path: '/src/app', active: true }],
    });
    let book = rememberSessions(emptyPast(), [live(1, { agentSession: 'old', transcript: T1 })], 10);
    expect(book.sessions['svc-app']).toMatchObject({ agentSession: 'old', transcript: T1 });
    book = rememberSessions(book, [live(1)], 11);
    expect(book.sessions['svc-app']).toMatchObject({ agentSession: 'old', transcript: T1 });
    book = rememberSessions(book, [live(5)], 12);
    expect(book.sessions['svc-app']?.agentSession).toBeUndefined();
    expect(book.sessions['svc-app']?.transcript).toBeUndefined();
  });
});

describe('pinning from a hook', () => {
  it('takes the pane agent’s file into the session’s options and tells the history; refuses one outside its store', async () => {
    const home = temp();
    const store = join(home, '.claude', 'projects', '-p');
    const options: Record<string, Record<string, string>> = {};
    const told: [string, string | undefined][] = [];
    const logs: string[] = [];
    const sessions: Record<string, SessionRecord> = {
      'svc-p': {
        name: 'svc-p',
        attached: false,
        createdAt: 1,
        activityAt: 1,
        meta: { kind: 'agent', agent: 'A1' },
        panes: [{ id: '%4', command: 'claude', path: '/p', active: true }],
      },
    };
    const pinning = createPinning({
      tmux: {
        setSessionOptions: async (name, o) => {
          options[name] = { ...options[name], ...o };
        },
        panePid: async () => 500,
      },
      sessions: () => sessions,
      pinned: (s, t) => told.push([s, t]),
      log: { info: (m) => logs.push(m), warn: (m) => logs.push(m) },
      env: { HOME: home },
    });
    const hook = { type: 'hook' as const, event: 'keyboard' as const, agent: 'claude', pane: '%4' };
    await pinning.pin('svc-p', { ...hook, transcript: join(home, '.ssh', 'x.jsonl'), agentSession: 'x' });
    expect(options).toEqual({});
    expect(logs.at(-1)).toMatch(/outside the store/);
    await pinning.pin('svc-p', {
      ...hook,
      transcript: join(store, 'a.jsonl'),
      agentSession: 'a',
      ancestry: [9, 500, 1],
    });
    expect(options['svc-p']).toEqual({ '@svc-transcript': join(store, 'a.jsonl'), '@svc-agent-session': 'a' });
    expect(told).toEqual([['svc-p', join(store, 'a.jsonl')]]);
    // a `claude -p` the agent runs in a tool call: same pane, one level further down
    await pinning.pin('svc-p', {
      ...hook,
      transcript: join(store, 'nested.jsonl'),
      agentSession: 'nested',
      ancestry: [12, 11, 10, 9, 500, 1],
    });
    expect(options['svc-p']?.['@svc-agent-session']).toBe('a');
    expect(logs.at(-1)).toMatch(/nested agent/);
    // the agent's own new conversation (/clear) from where it pinned first
    await pinning.pin('svc-p', {
      ...hook,
      transcript: join(store, 'b.jsonl'),
      agentSession: 'b',
      ancestry: [9, 500, 1],
    });
    expect(options['svc-p']?.['@svc-agent-session']).toBe('b');
  });
});

describe('what the relay is told', () => {
  it('never where the agent files its transcript, nor its own session id', () => {
    const record: SessionRecord = {
      name: 's',
      attached: false,
      createdAt: 1,
      activityAt: 1,
      meta: { kind: 'agent', agent: 'A1', project: 'p', transcript: T1, agentSession: '1111' },
      panes: [{ id: '%1', command: 'claude', active: true }],
    };
    expect(forRelay(record).meta).toEqual({ kind: 'agent', agent: 'A1', project: 'p' });
    expect(JSON.stringify(forRelay(record))).not.toContain('1111');
  });
});
