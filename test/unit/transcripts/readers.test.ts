/**
 * Transcript readers against transcripts of the real programs (test/fixtures/transcripts/<id>/, captured by
 * test/fixtures/capture/transcripts.capture.ts), and the follower on a file that grows, is cut mid-line, truncated
 * and replaced.
 */
import { appendFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { followTranscript } from '../../../actors/transcripts/follow.js';
import {
  commandLine,
  completeLines,
  MAX_COMMAND_CHARS,
  readLine,
  type TranscriptEvent,
  toolTarget,
} from '../../../core/transcripts/readers.js';
import { APPROVAL_COMMAND, DONE_REPLY, PLAIN_REPLY } from '../../fakes/fakeModel.js';

const fixture = (agent: string) => readFileSync(join('test/fixtures/transcripts', agent, 'session.jsonl'), 'utf8');

/** The events of a whole transcript, and how many lines were of a kind the reader does not know. */
function readAll(agent: string, text: string) {
  const events: TranscriptEvent[] = [];
  const seen = new Set<string>();
  let unknown = 0;
  for (const line of text.split('\n')) {
    const r = readLine(agent, line, seen);
    events.push(...r.events);
    if (!r.known) unknown++;
  }
  return { events, unknown };
}

const TOOL: Record<string, string> = { A1: 'Bash', A2: 'exec_command', A3: 'run_shell_command', A4: 'bash' };

describe.each(['A1', 'A2', 'A3', 'A4'])('%s transcript of the real program', (agent) => {
  const { events, unknown } = readAll(agent, fixture(agent));

  it('knows every line (a new kind of line means the format drifted: look at the new capture)', () => {
    expect(unknown).toBe(0);
  });

  it('reads both prompts, the replies, the tool call with its command and its outcome, and tokens', () => {
    expect(events.filter((e) => e.kind === 'prompt').map((e) => (e as { text: string }).text)).toEqual([
      'hello there',
      'run a command, svc-approve',
    ]);
    expect(events.filter((e) => e.kind === 'reply').map((e) => (e as { text: string }).text)).toEqual([
      PLAIN_REPLY,
      DONE_REPLY,
    ]);
    const tools = events.filter((e) => e.kind === 'tool') as Extract<TranscriptEvent, { kind: 'tool' }>[];
    expect(tools.map((t) => [t.name, t.target])).toEqual([[TOOL[agent], APPROVAL_COMMAND]]);
    const results = events.filter((e) => e.kind === 'tool_result') as Extract<
      TranscriptEvent,
      { kind: 'tool_result' }
    >[];
    expect(results).toEqual([{ kind: 'tool_result', id: tools[0]!.id, ok: true }]);
    const tokens = events.filter((e) => e.kind === 'tokens') as Extract<TranscriptEvent, { kind: 'tokens' }>[];
    expect(tokens.length).toBeGreaterThan(0);
    expect(tokens.every((t) => t.output > 0)).toBe(true);
  });

  it('never carries a tool’s output or other arguments: a tool line has its name, target and line count only', () => {
    const allowed = new Set(['kind', 'id', 'name', 'target', 'lines', 'at']);
    for (const e of events.filter((e) => e.kind === 'tool' || e.kind === 'tool_result'))
      expect(Object.keys(e).filter((k) => !allowed.has(k) && k !== 'ok')).toEqual([]);
  });
});

describe('a shell command on a tool line: its first line, cut', () => {
  const long = `echo ${'x'.repeat(200)}`;
  it.each([
    ['one line', 'npm test', 'npm test'],
    ['spaces around', '  npm test  ', 'npm test'],
    ['a second line is said with an ellipsis', 'cd web\nnpm test', 'cd web …'],
    ['blank lines first', '\n\n  git status\n', 'git status'],
    ['a long line is cut', long, `${long.slice(0, MAX_COMMAND_CHARS - 1)}…`],
    ['nothing', '  \n ', undefined],
  ])('%s', (_what, command, shown) => expect(commandLine(command)).toBe(shown));

  it.each([
    ['a file tool names its path', { file_path: '/w/src/a.ts', old_string: 'a', new_string: 'b' }, '/w/src/a.ts'],
    ['a shell tool its command', { command: 'npm test -- --run' }, 'npm test -- --run'],
    ['Codex’s argv its script', { command: ['bash', '-lc', 'npm test'] }, 'npm test'],
    ['anything else nothing', { query: 'svc' }, undefined],
  ])('%s', (_what, args, shown) => expect(toolTarget(args)).toBe(shown));
});

describe('readers on lines that are not what they expect', () => {
  it.each([
    ['not JSON', '{"type": "user", "mess'],
    ['an array', '[1, 2]'],
    ['a kind it does not know', '{"type":"brand-new-kind"}'],
  ])('%s: nothing, and unknown', (_what, line) => {
    for (const agent of ['A1', 'A2', 'A3', 'A4']) expect(readLine(agent, line)).toEqual({ events: [], known: false });
  });

  it('Claude Code to-do lists and Codex plans become the to-do list', () => {
    const claude = readLine(
      'A1',
      JSON.stringify({
        type: 'assistant',
        message: {
          content: [
            {
              type: 'tool_use',
              id: 't1',
              name: 'TodoWrite',
              input: {
                todos: [
                  { content: 'write tests', status: 'in_progress' },
                  { content: 'ship', status: 'pending' },
                ],
              },
            },
          ],
        },
      }),
    );
    expect(claude.events.at(-1)).toEqual({
      kind: 'todos',
      items: [
        { text: 'write tests', status: 'in_progress' },
        { text: 'ship', status: 'pending' },
      ],
    });
    const codex = readLine(
      'A2',
      JSON.stringify({
        type: 'response_item',
        payload: {
          type: 'function_call',
          name: 'update_plan',
          call_id: 'c1',
          arguments: JSON.stringify({ plan: [{ step: 'read', status: 'completed' }] }),
        },
      }),
    );
    expect(codex.events.at(-1)).toEqual({ kind: 'todos', items: [{ text: 'read', status: 'completed' }] });
  });

  it('file tools name the file, and how many lines they change (never the text)', () => {
    const tool = (input: Record<string, unknown>) =>
      readLine(
        'A1',
        JSON.stringify({
          type: 'assistant',
          message: { content: [{ type: 'tool_use', id: 'e', name: 'Edit', input }] },
        }),
      ).events;
    expect(tool({ file_path: '/w/a.ts', old_string: 'x' })).toEqual([
      { kind: 'tool', id: 'e', name: 'Edit', target: '/w/a.ts', lines: 1 },
    ]);
    expect(tool({ file_path: '/w/a.ts', old_string: 'a\nb', new_string: 'a\nb\nc\n' })[0]).toMatchObject({ lines: 3 });
    expect(tool({ file_path: '/w/a.ts', content: 'one\ntwo\n' })[0]).toMatchObject({ lines: 2 });
    expect(
      tool({ file_path: '/w/a.ts', edits: [{ old_string: 'a', new_string: 'b\nc' }, { old_string: 'd' }] })[0],
    ).toMatchObject({
      lines: 3,
    });
    const patch = '*** Begin Patch\n*** Update File: a.ts\n@@\n-old\n+new\n+more\n*** End Patch';
    expect(tool({ input: patch })[0]).toMatchObject({ lines: 3 });
    expect(tool({ command: 'ls -la' })[0]).not.toHaveProperty('lines');
  });

  it('completeLines keeps a last line without its newline for later', () => {
    expect(completeLines('a\nb\npar')).toEqual({ lines: ['a', 'b'], rest: 'par' });
    expect(completeLines('par')).toEqual({ lines: [], rest: 'par' });
  });
});

describe('following a transcript as it grows', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const lines = fixture('A4').split('\n').filter(Boolean);
  const prompts = (events: TranscriptEvent[]) =>
    events.filter((e) => e.kind === 'prompt').map((e) => (e as { text: string }).text);

  it('reads only what was added, waits for a line cut in the middle, and starts over when truncated or replaced', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-follow-'));
    dirs.push(dir);
    const file = join(dir, 'session.jsonl');
    writeFileSync(file, '');
    const follow = followTranscript('A4', () => file);
    expect(follow.poll()).toEqual({ events: [], reset: false, unknown: 0 });
    // the first four lines, the fourth (the first prompt) cut in the middle
    const prompt = lines[3]!;
    appendFileSync(file, `${lines.slice(0, 3).join('\n')}\n${prompt.slice(0, 20)}`);
    expect(prompts(follow.poll().events)).toEqual([]);
    appendFileSync(file, `${prompt.slice(20)}\n`);
    expect(prompts(follow.poll().events)).toEqual(['hello there']);
    // nothing new: nothing read again
    expect(follow.poll().events).toEqual([]);
    // truncated (the agent rewrote it shorter): read again from the start, and said so
    writeFileSync(file, `${lines.slice(0, 3).join('\n')}\n`);
    const again = follow.poll();
    expect(again.reset).toBe(true);
    expect(prompts(again.events)).toEqual([]);
    appendFileSync(file, `${lines[3]}\n`);
    expect(prompts(follow.poll().events)).toEqual(['hello there']);
    // replaced by another file of the same name (a new inode)
    writeFileSync(join(dir, 'next.jsonl'), `${lines.join('\n')}\n`);
    renameSync(join(dir, 'next.jsonl'), file);
    const replaced = follow.poll();
    expect(replaced.reset).toBe(true);
    expect(prompts(replaced.events)).toEqual(['hello there', 'run a command, svc-approve']);
  });

  it('moves to the session’s new file when the path changes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-follow-'));
    dirs.push(dir);
    const first = join(dir, 'a.jsonl');
    const second = join(dir, 'b.jsonl');
    writeFileSync(first, `${lines[3]}\n`);
    writeFileSync(second, `${lines[5]}\n`);
    let current = first;
    const follow = followTranscript('A4', () => current);
    expect(prompts(follow.poll().events)).toEqual(['hello there']);
    current = second;
    const moved = follow.poll();
    expect(moved.reset).toBe(true);
    expect(prompts(moved.events)).toEqual(['run a command, svc-approve']);
  });
});
