/** Session control decisions (core/sessions/control.ts): end, kill, resume, forget; the past-sessions book. */
import { describe, expect, it } from 'vitest';
import type { SessionRecord } from '../../../core/protocol/index.js';
import {
  claudeProjectDir,
  decideControl,
  emptyPast,
  MAX_PAST_SESSIONS,
  type PastSession,
  pastRecord,
  pastSessions,
  rememberSessions,
  resumeArgv,
  startedProgram,
} from '../../../core/sessions/control.js';

const record = (name: string, extra: Partial<SessionRecord> = {}): SessionRecord => ({
  name,
  attached: false,
  createdAt: 100,
  activityAt: 100,
  panes: [{ id: '%1', command: 'claude', path: '/w/proj', active: true, startCommand: "exec '/opt/bin/claude'" }],
  meta: { kind: 'agent', agent: 'A1', project: 'proj' },
  ...extra,
});
const past = (name: string, agent = 'A1'): PastSession => ({
  name,
  agent,
  cwd: '/w/proj',
  createdAt: 100,
  lastSeenAt: 200,
});

describe('decideControl', () => {
  it.each([
    [
      'end a running Claude Code: its /exit',
      'end',
      'svc-proj',
      record('svc-proj'),
      undefined,
      { kind: 'live', action: 'end', text: '/exit' },
    ],
    [
      'end a running Codex: its /quit',
      'end',
      'svc-x',
      record('svc-x', { meta: { kind: 'agent', agent: 'A2' } }),
      undefined,
      { kind: 'live', action: 'end', text: '/quit' },
    ],
    [
      'end a running pi: its /quit (seen ending the real pi 0.73.1)',
      'end',
      'svc-x',
      record('svc-x', { meta: { kind: 'agent', agent: 'A4' } }),
      undefined,
      { kind: 'live', action: 'end', text: '/quit' },
    ],
    [
      'end an agent with no known exit command',
      'end',
      'svc-x',
      record('svc-x', { meta: { kind: 'agent', agent: 'A8' } }),
      undefined,
      { kind: 'refuse', code: 'not_supported' },
    ],
    [
      'kill any running session',
      'kill',
      'svc-x',
      record('svc-x', { meta: undefined }),
      undefined,
      { kind: 'live', action: 'kill' },
    ],
    [
      'end a session that is not running',
      'end',
      'svc-gone',
      undefined,
      past('svc-gone'),
      { kind: 'refuse', code: 'session_not_found' },
    ],
    [
      'resume a past Claude Code session',
      'resume',
      'svc-gone',
      undefined,
      past('svc-gone'),
      { kind: 'resume', past: past('svc-gone') },
    ],
    [
      'resume a past Gemini CLI session',
      'resume',
      'svc-g',
      undefined,
      past('svc-g', 'A3'),
      { kind: 'resume', past: past('svc-g', 'A3') },
    ],
    [
      'resume a past session of an agent with no known resume',
      'resume',
      'svc-q',
      undefined,
      past('svc-q', 'A9'),
      { kind: 'refuse', code: 'not_supported' },
    ],
    [
      'resume a session that is running again',
      'resume',
      'svc-proj',
      record('svc-proj'),
      past('svc-proj'),
      { kind: 'refuse', code: 'session_not_found' },
    ],
    [
      'resume an unknown session',
      'resume',
      'svc-none',
      undefined,
      undefined,
      { kind: 'refuse', code: 'session_not_found' },
    ],
    ['forget a past session', 'forget', 'svc-gone', undefined, past('svc-gone'), { kind: 'forget', name: 'svc-gone' }],
    [
      'end a subagent',
      'end',
      'svc-proj.1',
      record('svc-proj.1', { parent: 'svc-proj' }),
      undefined,
      { kind: 'refuse', code: 'subagent_view_only' },
    ],
    [
      'kill a subagent',
      'kill',
      'svc-proj.1',
      record('svc-proj.1', { parent: 'svc-proj' }),
      undefined,
      { kind: 'refuse', code: 'subagent_view_only' },
    ],
    ['resume a subagent', 'resume', 'svc-proj.2', undefined, undefined, { kind: 'refuse', code: 'subagent_view_only' }],
    [
      'forget a subagent',
      'forget',
      'svc-proj.2',
      undefined,
      past('svc-proj.2'),
      { kind: 'refuse', code: 'subagent_view_only' },
    ],
  ] as const)('%s', (_what, action, name, live, pastOne, expected) => {
    expect(decideControl(action, name, live, pastOne)).toEqual(expected);
  });
});

describe('the past-sessions book', () => {
  it('remembers agent sessions svc made, with where they run and the program; never a subagent or a shell', () => {
    const book = rememberSessions(
      emptyPast(),
      [
        record('svc-proj'),
        record('svc-proj.1', { parent: 'svc-proj' }),
        record('svc-sh', { shell: true, meta: { kind: 'shell' } }),
        record('plain', { meta: undefined }),
      ],
      300,
    );
    expect(Object.keys(book.sessions)).toEqual(['svc-proj']);
    expect(book.sessions['svc-proj']).toEqual({
      name: 'svc-proj',
      agent: 'A1',
      cwd: '/w/proj',
      project: 'proj',
      label: undefined,
      createdAt: 100,
      lastSeenAt: 300,
      program: '/opt/bin/claude',
    });
  });

  it('offers a remembered session once it no longer runs, newest first, as a record with no panes', () => {
    let book = rememberSessions(emptyPast(), [record('svc-a'), record('svc-b')], 300);
    book = rememberSessions(book, [record('svc-b')], 400);
    expect(pastSessions(book, [record('svc-b')]).map((p) => p.name)).toEqual(['svc-a']);
    // after a restart nothing runs: both are offered, the one seen last first
    expect(pastSessions(book, []).map((p) => p.name)).toEqual(['svc-b', 'svc-a']);
    expect(pastRecord(book.sessions['svc-a']!)).toMatchObject({
      name: 'svc-a',
      panes: [],
      ended: 300,
      resumable: true,
    });
  });

  it(`keeps at most ${MAX_PAST_SESSIONS}, dropping the ones seen longest ago`, () => {
    let book = emptyPast();
    for (let i = 0; i < MAX_PAST_SESSIONS + 5; i++) book = rememberSessions(book, [record(`svc-${i}`)], i);
    expect(Object.keys(book.sessions)).toHaveLength(MAX_PAST_SESSIONS);
    expect(book.sessions['svc-0']).toBeUndefined();
  });
});

describe('resuming', () => {
  it('runs the agent’s own resume with the session id, the same program when it was absolute', () => {
    const id = '9f7cad6b-8561-4da3-baa0-ecdb6906eb73';
    expect(resumeArgv({ agent: 'A1', program: '/opt/bin/claude' }, id)).toEqual(['/opt/bin/claude', '--resume', id]);
    expect(resumeArgv({ agent: 'A1' }, id)).toEqual(['claude', '--resume', id]);
    expect(resumeArgv({ agent: 'A2' }, id)).toEqual(['codex', 'resume', id]);
    expect(resumeArgv({ agent: 'A3' }, id)).toEqual(['gemini', '--resume', id]);
    expect(resumeArgv({ agent: 'A4' }, id)).toEqual(['pi', '--session', id]);
    expect(resumeArgv({ agent: 'A5', program: '/o/opencode' }, 'ses_1aB')).toEqual([
      '/o/opencode',
      '--session',
      'ses_1aB',
    ]);
    expect(resumeArgv({ agent: 'A9' }, id)).toBeNull();
  });

  it('passes on only an id of the agent’s own shape', () => {
    const id = '9f7cad6b-8561-4da3-baa0-ecdb6906eb73';
    // an option, a path, words the resume reads otherwise (Gemini's `latest` or a list number, pi's file name)
    for (const bad of ['--dangerously-skip-permissions x', '--yolo', '../x', 'latest', '5', `${id}.jsonl`, 'b0c1-22'])
      for (const agent of ['A1', 'A2', 'A3', 'A4', 'A5'])
        expect(resumeArgv({ agent }, bad), `${agent} ${bad}`).toBeNull();
    // each agent's ids are its own
    expect(resumeArgv({ agent: 'A5' }, id)).toBeNull();
    expect(resumeArgv({ agent: 'A3' }, 'ses_1aB')).toBeNull();
  });

  it('reads the program from the pane’s start command', () => {
    expect(startedProgram("exec '/opt/bin/claude'")).toBe('/opt/bin/claude');
    expect(startedProgram('"/opt/bin/claude --resume"')).toBe('/opt/bin/claude');
    expect(startedProgram('claude')).toBeUndefined();
    expect(startedProgram(undefined)).toBeUndefined();
  });

  it('files a Claude Code project under its directory with every other character as -', () => {
    expect(claudeProjectDir('/tmp/svc-agent-A1-x1/proj')).toBe('-tmp-svc-agent-A1-x1-proj');
    expect(claudeProjectDir('/home/a.b/my_proj')).toBe('-home-a-b-my-proj');
  });
});
