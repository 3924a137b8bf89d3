/**
 * A new session from the phone (issue 30 item 3), the IO half: the `svc new-session off|on` switch
 * (`~/.svc/new-session.json`), what the computer offers (core/sessions/newSession.ts), starting the agent exactly as
 * `svc <agent> --detach [--wt <branch>]` run in that folder would (actors/sessions/wrapper.ts: same naming, same
 * metadata); its first prompt goes to the root machine, which types it once the agent reads idle.
 */
import { accessSync, constants, lstatSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod/v3';
import { agentById } from '../../core/agents/registry.js';
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
  book: () => readonly {
    cwd: string;
    project?: string | undefined;
    lastSeenAt: number;
    agent: string;
    program?: string | undefined;
  }[];
  /**
   * Keep `text` as session `name`'s first prompt, typed once its agent reads idle (machines/firstPrompts.ts,
   * `LAUNCH.PROMPT`); `startedAt`: epoch seconds, just before the session was made.
   */
  firstPrompt: (name: string, agent: string, text: string, startedAt: number) => void;
}

export type StartOutcome = { ok: true; name: string } | { ok: false; message: string };

export function createNewSessions(deps: NewSessionDeps) {
  // a real folder of this user: not a symlink put in its place, not a folder someone else made again at that path
  const uid = deps.uid;
  const isOwnDir = (dir: string) => {
    try {
      const st = lstatSync(dir);
      return st.isDirectory() && st.uid === uid;
    } catch {
      return false;
    }
  };
  /**
   * Each agent's program: on the listener's PATH, else the absolute path svc saw it run from (a listener started
   * as a login service has a short PATH; ~/.local/bin may not be on it).
   */
  const program = (agent: { id: string; command: string }): string | null => {
    const found = onPath(agent.command, deps.env.PATH);
    if (found) return found;
    for (const s of deps.book()) {
      if (s.agent !== agent.id || !s.program?.startsWith('/')) continue;
      try {
        accessSync(s.program, constants.X_OK);
        return s.program;
      } catch {
        // gone since
      }
    }
    return null;
  };
  // the wrapper as a person runs it in that folder: no project variable of the listener's own, no $TMUX
  const wrapperEnv = (): NodeJS.ProcessEnv => {
    const env: NodeJS.ProcessEnv = { ...deps.env };
    for (const v of PROJECT_DIR_VARS) delete env[v];
    delete env.TMUX;
    delete env.TMUX_PANE;
    return env;
  };

  return {
    setting: () => readNewSessionSetting(deps.settingsPath),
    offered(): { projects: OfferedProject[]; agents: OfferedAgent[] } {
      return {
        projects: offeredProjects(deps.book(), isOwnDir),
        agents: offeredAgents((a) => program(a) !== null),
      };
    },
    /** `svc <agent> --detach [--wt <branch>]` in `cwd`; the prompt waits for the agent to read idle. */
    async start(cwd: string, agentId: string, branch?: string, prompt?: string): Promise<StartOutcome> {
      const agent = agentById(agentId);
      const path = agent ? program(agent) : null;
      if (!agent || !path || !isOwnDir(cwd)) return { ok: false, message: 'that folder or agent is gone' };
      // found off PATH: its folder goes first on the wrapper's PATH, as if the person's shell had it
      const env = wrapperEnv();
      if (onPath(agent.command, env.PATH) === null) env.PATH = `${dirname(path)}:${env.PATH ?? ''}`;
      const out: string[] = [];
      const err: string[] = [];
      const startedAt = Math.floor(Date.now() / 1000);
      const code = await runWrapper({
        target: { kind: 'agent', agent, args: [] },
        flags: { detach: true },
        wt: branch,
        env,
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
      if (prompt) deps.firstPrompt(name, agent.id, prompt, startedAt);
      return { ok: true, name };
    },
  };
}
