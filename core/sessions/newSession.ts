/**
 * A new session from the phone (issue 30 item 3), the pure half: which folders and agents the computer offers, and
 * whether a request to start one is carried out. Only registry agents in folders svc already ran an agent in: the
 * phone never names a command, arguments or a path svc has not seen (docs/new-session.md). Pure.
 */
import { AGENTS, agentById, PROMPT_AGENTS } from '../agents/registry.js';
import type { LaunchRequest, LaunchResultBody } from '../protocol/bodies.js';
import type { RefusalCode } from '../protocol/index.js';
import type { BucketConfig } from '../tokenBucket.js';
import type { PastSession } from './control.js';

/**
 * The `session` a launch request names (its `pane.keys` frame and body): the session does not exist yet; the answer
 * names the one started. A session of that very name is never typed into by a launch request.
 */
export const NEW_SESSION_TARGET = 'svc-new-session';

/** New sessions one device may start: five at once, then one a minute. */
export const LAUNCH_BUCKET: BucketConfig = { capacity: 5, refillPerSecond: 1 / 60 };

/** Most folders offered: the newest ones svc saw an agent in. */
export const MAX_OFFERED_PROJECTS = 30;

export type OfferedProject = NonNullable<LaunchResultBody['projects']>[number];
export type OfferedAgent = NonNullable<LaunchResultBody['agents']>[number];

/**
 * The folders svc ran agents in, newest first, one entry each (a `--wt` worktree is a folder of its own), from the
 * past-sessions book (which holds live sessions too) and the live sessions' folders; `exists` drops folders gone from
 * the disk.
 */
export function offeredProjects(
  book: readonly Pick<PastSession, 'cwd' | 'project' | 'lastSeenAt' | 'agent'>[],
  exists: (dir: string) => boolean,
): OfferedProject[] {
  const byCwd = new Map<string, OfferedProject>();
  for (const s of [...book].sort((a, b) => b.lastSeenAt - a.lastSeenAt)) {
    const known = byCwd.get(s.cwd);
    if (known) {
      if (!known.agents.includes(s.agent)) known.agents.push(s.agent);
      continue;
    }
    const name = s.project?.trim() || s.cwd.split('/').filter(Boolean).pop() || s.cwd;
    byCwd.set(s.cwd, { cwd: s.cwd, name: name.slice(0, 128), at: s.lastSeenAt, agents: [s.agent] });
  }
  return [...byCwd.values()].filter((p) => exists(p.cwd)).slice(0, MAX_OFFERED_PROJECTS);
}

/** The registry agents installed on the computer (`installed`: its program found), in registry order. */
export function offeredAgents(installed: (agent: { id: string; command: string }) => boolean): OfferedAgent[] {
  return AGENTS.filter((a) => /^A\d+$/.test(a.id) && installed(a)).map((a) => ({
    id: a.id,
    name: a.name,
    prompt: PROMPT_AGENTS.has(a.id),
  }));
}

export type LaunchDecision =
  | { kind: 'options' }
  | { kind: 'start'; cwd: string; agent: string; branch?: string; prompt?: string }
  | { kind: 'refuse'; code: RefusalCode; message: string; off?: true };

/**
 * What to do with a launch request: `off` is `svc new-session off` on this computer; `projects` and `agents` are
 * what the computer offers now (the request is checked against them, never trusted).
 */
export function decideLaunchRequest(
  request: LaunchRequest,
  facts: { off: boolean; projects: readonly OfferedProject[]; agents: readonly OfferedAgent[] },
): LaunchDecision {
  if (facts.off) {
    const message = 'new sessions from the phone are off on this computer';
    return { kind: 'refuse', code: 'not_supported', message, off: true };
  }
  if (request.op === 'options') return { kind: 'options' };
  if (!facts.projects.some((p) => p.cwd === request.cwd))
    return { kind: 'refuse', code: 'not_supported', message: 'svc has not run an agent in that folder' };
  const agent = facts.agents.find((a) => a.id === request.agent);
  if (!agent) {
    const known = agentById(request.agent);
    const message = known ? `${known.command} is not on the computer's PATH` : 'not an agent svc knows';
    return { kind: 'refuse', code: 'not_supported', message };
  }
  if (request.prompt !== undefined && !agent.prompt)
    return { kind: 'refuse', code: 'not_supported', message: `svc types no first prompt into ${agent.name}` };
  return {
    kind: 'start',
    cwd: request.cwd,
    agent: agent.id,
    ...(request.branch !== undefined ? { branch: request.branch } : {}),
    ...(request.prompt !== undefined ? { prompt: request.prompt } : {}),
  };
}
