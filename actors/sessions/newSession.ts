/**
 * A new session from the phone (issue 30 item 3), the IO half: the `svc new-session off|on` switch
 * (`~/.svc/new-session.json`), what the computer offers (core/sessions/newSession.ts), starting the agent exactly as
 * `svc <agent> --detach [--wt <branch>]` run in that folder would (actors/sessions/wrapper.ts: same naming, same
 * metadata), and the first prompt, typed through the session's actor once the agent reads idle.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { z } from 'zod';
import { agentById } from '../../core/agents/registry.js';
import type { SessionRecord } from '../../core/protocol/index.js';
import { promptable } from '../../core/schedules/book.js';
import type { OfferedAgent, OfferedProject } from '../../core/sessions/newSession.js';
import { offeredAgents, offeredProjects } from '../../core/sessions/newSession.js';
import { PROJECT_DIR_VARS } from '../../core/sessions/project.js';
import { writeFileAtomic } from '../files.js';
import { onPath } from '../which.js';
import { runWrapper } from './wrapper.js';

const Settings = z.strictObject({ off: z.boolean() });

/**
 * Whether new sessions from the phone are off here. No file: on. A file that is not one fails closed (off), and
 * says so: a person who turned it off is never overruled by a damaged file.
 */
export function readNewSessionSetting(path: string): { off: boolean; problem?: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { off: false };
    return { off: true, problem: `${path}: ${(err as Error).message}` };
  }
  try {
    const parsed = Settings.safeParse(JSON.parse(text));
    if (parsed.success) return { off: parsed.data.off };
  } catch {
    // not JSON
  }
  return { off: true, problem: `${path} is not a new-session settings file: new sessions stay off until it is fixed` };
}

/** Written whole (0600, in the private folder): nothing else is in the file. */
export function writeNewSessionSetting(path: string, off: boolean): void {
  writeFileAtomic(path, `${JSON.stringify({ off })}\n`);
}

/** How long a first prompt waits for its agent to read idle (an agent that is updating itself takes a while). */
export const FIRST_PROMPT_WAIT_MS = 180_000;
const LOOK_EVERY_MS = 1_000;

export interface NewSessionDeps {
  /** `~/.svc/new-session.json`. */
  settingsPath: string;
  home: string;
  env: Readonly<Record<string, string | undefined>>;
  /** The listener's tmux server. */
  socketPath: string;
  uid: number;
  platform: string;
  log: { info(m: string): void; warn(m: string): void };
  /** Every session the past-sessions book holds, running or not. */
  book: () => readonly { cwd: string; project?: string | undefined; lastSeenAt: number; agent: string }[];
  /** The newest reading of session `name` (null: not there). */
  reading: (name: string) => SessionRecord | null;
  /** Type `text` and Enter into session `name` through its actor (machines/listener.ts `LAUNCH.PROMPT`). */
  typePrompt: (name: string, text: string) => void;
}

export type StartOutcome = { ok: true; name: string } | { ok: false; message: string };

export function createNewSessions(deps: NewSessionDeps) {
  const isDir = (dir: string) => {
    try {
      return statSync(dir).isDirectory();
    } catch {
      return false;
    }
  };
  // the wrapper as a person runs it in that folder: no project variable of the listener's own, no $TMUX
  const wrapperEnv = (): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...deps.env };
    for (const v of PROJECT_DIR_VARS) delete env[v];
    delete env.TMUX;
    delete env.TMUX_PANE;
    return env;
  };

  /** Looks at the session each second until its agent reads idle, then types the prompt once. */
  const promptWhenIdle = (name: string, agent: string, prompt: string) => {
    const until = Date.now() + FIRST_PROMPT_WAIT_MS;
    const look = () => {
      const record = deps.reading(name);
      if (record && promptable({ agent }, record)) {
        deps.typePrompt(name, prompt);
        return;
      }
      if (Date.now() >= until) {
        deps.log.warn(
          `${name}: first prompt not typed: the agent did not read idle within ${FIRST_PROMPT_WAIT_MS / 1000} s`,
        );
        return;
      }
      setTimeout(look, LOOK_EVERY_MS).unref();
    };
    setTimeout(look, LOOK_EVERY_MS).unref();
  };

  return {
    setting: () => readNewSessionSetting(deps.settingsPath),
    offered(): { projects: OfferedProject[]; agents: OfferedAgent[] } {
      return {
        projects: offeredProjects(deps.book(), isDir),
        agents: offeredAgents((command) => onPath(command, deps.env.PATH) !== null),
      };
    },
    /** `svc <agent> --detach [--wt <branch>]` in `cwd`; the prompt waits for the agent to read idle. */
    async start(cwd: string, agentId: string, branch?: string, prompt?: string): Promise<StartOutcome> {
      const agent = agentById(agentId);
      if (!agent || !existsSync(cwd)) return { ok: false, message: 'that folder or agent is gone' };
      const out: string[] = [];
      const err: string[] = [];
      const code = await runWrapper({
        target: { kind: 'agent', agent, args: [] },
        flags: { detach: true },
        wt: branch,
        env: wrapperEnv(),
        cwd,
        home: deps.home,
        platform: deps.platform,
        tty: false,
        uid: deps.uid,
        socketPath: deps.socketPath,
        checkListener: false,
        stdout: (line) => out.push(line),
        stderr: (line) => err.push(line),
      });
      const name = out.at(-1)?.trim();
      if (code !== 0 || !name) {
        const message = (err.join(' ').replace(/^svc: /, '') || `svc ${agent.subcommand} exited ${code}`).slice(0, 300);
        return { ok: false, message };
      }
      if (prompt) promptWhenIdle(name, agent.id, prompt);
      return { ok: true, name };
    },
  };
}
