import { describe, expect, it } from 'vitest';
import { KeysBody, LaunchRequest } from '../../../core/protocol/bodies.js';
import type { SessionRecord } from '../../../core/protocol/index.js';
import { decideFirstPrompt, type FirstPrompt } from '../../../core/sessions/firstPrompt.js';
import {
  decideLaunchRequest,
  MAX_OFFERED_PROJECTS,
  offeredAgents,
  offeredProjects,
} from '../../../core/sessions/newSession.js';

const seen = (cwd: string, lastSeenAt: number, agent = 'A1', project?: string) => ({ cwd, lastSeenAt, agent, project });

describe('core/sessions/newSession: what the phone is offered', () => {
  it('folders svc ran agents in, newest first, one entry each with the agents run there, newest first', () => {
    const projects = offeredProjects(
      [seen('/w/api', 100, 'A1'), seen('/w/web', 300, 'A1', 'web app'), seen('/w/api', 200, 'A2'), seen('/w/web', 50)],
      () => true,
    );
    expect(projects).toEqual([
      { cwd: '/w/web', name: 'web app', at: 300, agents: ['A1'] },
      { cwd: '/w/api', name: 'api', at: 200, agents: ['A2', 'A1'] },
    ]);
  });

  it('leaves out folders gone from the disk, and offers at most the newest MAX_OFFERED_PROJECTS', () => {
    expect(offeredProjects([seen('/gone', 10), seen('/here', 5)], (d) => d !== '/gone').map((p) => p.cwd)).toEqual([
      '/here',
    ]);
    const many = Array.from({ length: 45 }, (_, i) => seen(`/p/${i}`, i));
    const offered = offeredProjects(many, () => true);
    expect(offered).toHaveLength(MAX_OFFERED_PROJECTS);
    expect(offered[0]?.cwd).toBe('/p/44');
  });

  it('agents: the registry agents whose program is installed, saying which take a first prompt', () => {
    const agents = offeredAgents((a) => a.command === 'claude' || a.command === 'opencode');
    expect(agents).toEqual([
      { id: 'A1', name: 'Claude Code', prompt: true },
      { id: 'A5', name: 'opencode', prompt: false },
    ]);
  });
});

describe('core/sessions/newSession: decideLaunchRequest', () => {
  const facts = {
    off: false,
    projects: [{ cwd: '/w/api', name: 'api', at: 1, agents: ['A1'] }],
    agents: [
      { id: 'A1', name: 'Claude Code', prompt: true },
      { id: 'A5', name: 'opencode', prompt: false },
    ],
  };
  const cases: [string, LaunchRequest, Partial<typeof facts>, ReturnType<typeof decideLaunchRequest>][] = [
    ['options', { op: 'options' }, {}, { kind: 'options' }],
    [
      'a known folder and an installed agent, with a branch and a prompt',
      { op: 'start', cwd: '/w/api', agent: 'A1', branch: 'fix-login', prompt: 'run the tests' },
      {},
      { kind: 'start', cwd: '/w/api', agent: 'A1', branch: 'fix-login', prompt: 'run the tests' },
    ],
    [
      'off on this computer: even the options are refused',
      { op: 'options' },
      { off: true },
      {
        kind: 'refuse',
        code: 'not_supported',
        message: 'new sessions from the phone are off on this computer',
        off: true,
      },
    ],
    [
      'a folder svc never ran an agent in',
      { op: 'start', cwd: '/etc', agent: 'A1' },
      {},
      { kind: 'refuse', code: 'not_supported', message: 'svc has not run an agent in that folder' },
    ],
    [
      'a folder named through a path trick is not the folder offered',
      { op: 'start', cwd: '/w/api/../../etc', agent: 'A1' },
      {},
      { kind: 'refuse', code: 'not_supported', message: 'svc has not run an agent in that folder' },
    ],
    [
      'an agent svc knows but that is not installed',
      { op: 'start', cwd: '/w/api', agent: 'A2' },
      {},
      { kind: 'refuse', code: 'not_supported', message: "codex is not on the computer's PATH" },
    ],
    [
      'an agent id svc does not know',
      { op: 'start', cwd: '/w/api', agent: 'A99' },
      {},
      { kind: 'refuse', code: 'not_supported', message: 'not an agent svc knows' },
    ],
    [
      'a first prompt for an agent svc types none into',
      { op: 'start', cwd: '/w/api', agent: 'A5', prompt: 'hi' },
      {},
      { kind: 'refuse', code: 'not_supported', message: 'svc types no first prompt into opencode' },
    ],
  ];
  it.each(cases)('%s', (_, request, change, expected) => {
    expect(decideLaunchRequest(request, { ...facts, ...change })).toEqual(expected);
  });

  it('the wire shape names no command or arguments: anything else in the request is refused', () => {
    expect(LaunchRequest.safeParse({ op: 'start', cwd: '/w', agent: 'A1', command: 'rm -rf /' }).success).toBe(false);
    expect(LaunchRequest.safeParse({ op: 'start', cwd: '/w', agent: 'claude; rm' }).success).toBe(false);
    expect(LaunchRequest.safeParse({ op: 'start', cwd: '', agent: 'A1' }).success).toBe(false);
    // a launch is one request of its own, never with keys to type
    const both = { session: 'svc-new-session', seq: 1, launch: { op: 'options' }, text: 'hi' };
    expect(KeysBody.safeParse(both).success).toBe(false);
    expect(KeysBody.safeParse({ ...both, text: undefined }).success).toBe(true);
  });
});

describe('core/sessions/firstPrompt: decideFirstPrompt', () => {
  const idle = (createdAt: number, command = 'claude'): SessionRecord => ({
    name: 'svc-web-2',
    attached: false,
    createdAt,
    activityAt: createdAt,
    state: 'idle',
    meta: { kind: 'agent', agent: 'A1' },
    panes: [{ id: '%1', command, path: '/w/web', active: true, index: '0.0' }],
  });
  const prompt = (change: Partial<FirstPrompt> = {}): FirstPrompt => ({
    id: -1,
    agent: 'A1',
    text: 'hi',
    startedAt: 1000,
    seen: null,
    typing: false,
    ...change,
  });
  const cases: [string, FirstPrompt, SessionRecord | undefined, ReturnType<typeof decideFirstPrompt>][] = [
    ['not in a reading yet: waits', prompt(), undefined, 'wait'],
    ['its own session, its agent in front and idle: typed', prompt(), idle(1001), 'type'],
    ['idle but another program in front: waits', prompt(), idle(1001, 'bash'), 'wait'],
    ['not idle yet (starting, a trust question): waits', prompt(), { ...idle(1001), state: 'unknown' }, 'wait'],
    ['handed to the session already: waits for its result', prompt({ typing: true }), idle(1001), 'wait'],
    ['seen, then gone from a reading: given up', prompt({ seen: 1001 }), undefined, 'gone'],
    ['being typed, then gone: its session’s answer ends it', prompt({ seen: 1001, typing: true }), undefined, 'wait'],
    ['the name is a session made before the start: never typed there', prompt(), idle(900), 'gone'],
    ['the name is a session made again after it ended: never typed there', prompt({ seen: 1001 }), idle(1050), 'gone'],
    ['tmux rounded its creation a second early: still its own', prompt(), idle(999), 'type'],
  ];
  it.each(cases)('%s', (_, p, record, expected) => {
    expect(decideFirstPrompt(p, record)).toBe(expected);
  });
});
