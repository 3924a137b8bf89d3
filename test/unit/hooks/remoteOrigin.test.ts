import { describe, expect, it } from 'vitest';
import {
  hookOutput,
  isHookAgent,
  MARKER_FRESH_SECONDS,
  matchRemote,
  parseHookInput,
  REMOTE_CONTEXT,
} from '../../../core/hooks/remoteOrigin.js';

const SHA = 'a'.repeat(64);
const marker = { epoch: 1000, sha256: SHA, projectDir: '/p', session: 'svc-p' };
const base = { marker, promptSha256: SHA, projectDir: '/p', nowSeconds: 1005, muted: false };

describe('matchRemote', () => {
  it.each([
    ['the exact text, fresh', base, { remote: true, session: 'svc-p' }],
    ['the hash in capitals', { ...base, promptSha256: SHA.toUpperCase() }, { remote: true, session: 'svc-p' }],
    [
      'at the freshness limit',
      { ...base, nowSeconds: 1000 + MARKER_FRESH_SECONDS },
      { remote: true, session: 'svc-p' },
    ],
    ['no marker', { ...base, marker: null }, { remote: false, why: 'no marker' }],
    ['text typed at the keyboard', { ...base, promptSha256: 'b'.repeat(64) }, { remote: false, why: 'different text' }],
    ['a marker too old', { ...base, nowSeconds: 1001 + MARKER_FRESH_SECONDS }, { remote: false, why: 'stale' }],
    ['a marker from the future', { ...base, nowSeconds: 999 }, { remote: false, why: 'stale' }],
    ['another project', { ...base, projectDir: '/q' }, { remote: false, why: 'other project' }],
    ['a muted project, even with the exact text', { ...base, muted: true }, { remote: false, why: 'muted' }],
  ])('%s', (_name, facts, expected) => {
    expect(matchRemote(facts)).toEqual(expected);
  });
});

describe('parseHookInput', () => {
  it.each([
    [
      'Claude Code UserPromptSubmit',
      '{"session_id":"s","cwd":"/p","hook_event_name":"UserPromptSubmit","prompt":"hi"}',
      { kind: 'prompt', prompt: 'hi', cwd: '/p', agentSession: 's' },
    ],
    [
      'Gemini CLI BeforeAgent',
      '{"session_id":"s","transcript_path":"","cwd":"/p","hook_event_name":"BeforeAgent","timestamp":"t","prompt":"a\\nb"}',
      { kind: 'prompt', prompt: 'a\nb', cwd: '/p', agentSession: 's' },
    ],
    [
      'pi extension before_agent_start',
      '{"hook_event_name":"before_agent_start","cwd":"/p","prompt":"x","session_id":"s"}',
      { kind: 'prompt', prompt: 'x', cwd: '/p', agentSession: 's' },
    ],
    ['an earlier setup: no event name', '{"cwd":"/p","prompt":"x"}', { kind: 'prompt', prompt: 'x', cwd: '/p' }],
    [
      'Claude Code Stop',
      '{"session_id":"s","cwd":"/p","hook_event_name":"Stop","stop_hook_active":false}',
      { kind: 'stop', cwd: '/p', agentSession: 's' },
    ],
    [
      'Gemini CLI AfterAgent',
      '{"cwd":"/p","hook_event_name":"AfterAgent","prompt":"x","prompt_response":"y"}',
      { kind: 'stop', cwd: '/p' },
    ],
    ['pi agent_end', '{"cwd":"/p","hook_event_name":"agent_end"}', { kind: 'stop', cwd: '/p' }],
    [
      'Claude Code SessionStart (its transcript named before the file exists)',
      '{"session_id":"s","transcript_path":"/h/.claude/projects/-p/s.jsonl","cwd":"/p","hook_event_name":"SessionStart","source":"startup"}',
      { kind: 'start', cwd: '/p', agentSession: 's', transcript: '/h/.claude/projects/-p/s.jsonl' },
    ],
    ['an event that is not ours', '{"cwd":"/p","hook_event_name":"PreToolUse","prompt":"x"}', null],
    ['an event name that is not text', '{"cwd":"/p","hook_event_name":7,"prompt":"x"}', null],
    ['a stop without cwd', '{"hook_event_name":"Stop"}', null],
    ['no prompt', '{"cwd":"/p"}', null],
    ['no cwd', '{"prompt":"x"}', null],
    ['not JSON', 'hello', null],
    ['null', 'null', null],
  ])('%s', (_n, raw, expected) => {
    expect(parseHookInput(raw)).toEqual(expected);
  });
});

describe('hookOutput', () => {
  it.each([
    ['claude', 'UserPromptSubmit'],
    ['codex', 'UserPromptSubmit'],
    ['gemini', 'BeforeAgent'],
    ['pi', 'before_agent_start'],
  ] as const)('%s answers with its own event name and the REMOTE context', (agent, event) => {
    expect(JSON.parse(hookOutput(agent))).toEqual({
      hookSpecificOutput: { hookEventName: event, additionalContext: REMOTE_CONTEXT },
    });
  });

  it('the context asks for svc_ask at the end of every response', () => {
    expect(REMOTE_CONTEXT).toMatch(/every response with a call to the svc_ask tool/);
    expect(isHookAgent('claude')).toBe(true);
    expect(isHookAgent('toString')).toBe(false);
  });
});
