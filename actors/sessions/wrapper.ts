/**
 * `svc <agent>` and `svc sh`, the IO half: gather the facts (project, tmux sessions and their svc metadata, PATH,
 * terminal), ask core/sessions/launch.ts `decideLaunch` what to do, and do it (create, attach, run here, refuse), then make
 * sure the background listener runs (actors/daemon/daemon.ts).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { type AgentSpec, agentById } from '../../core/agents/registry.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { VERSION } from '../../core/daemon/version.js';
import {
  decideLaunch,
  type ExistingSession,
  type LaunchFlags,
  type LaunchPlan,
  type LaunchTarget,
  metaOptions,
  unusedArgsLine,
  type WorktreeFact,
  wrapperSocket,
} from '../../core/sessions/launch.js';
import { resolveProject } from '../../core/sessions/project.js';
import { defaultEntry, ensureListener } from '../daemon/daemon.js';
import { createTmux, type Tmux, TmuxError } from '../tmux/tmux.js';
import { onPath } from '../which.js';
import { createGit } from '../worktrees/git.js';
import { ensureWorktree } from '../worktrees/worktrees.js';

export interface WrapperRun {
  target: { kind: 'agent'; agent: AgentSpec; args: readonly string[] } | { kind: 'shell' };
  flags: LaunchFlags;
  /** `--wt <branch>`. */
  wt?: string | undefined;
  env: NodeJS.ProcessEnv;
  cwd: string;
  home: string;
  platform: string;
  /** stdin is a terminal. */
  tty: boolean;
  uid: number;
  /** The tmux server to use (the listener's, for a session the phone started); else wrapperSocket's choice. */
  socketPath?: string | undefined;
  /** false: do not check or start the background listener (the listener itself runs the wrapper). */
  checkListener?: boolean | undefined;
  stdout(line: string): void;
  stderr(line: string): void;
}

/** The enclosing git working tree: the nearest directory up from `dir` holding a `.git` (directory or file). */
export function findGitRoot(dir: string): string | null {
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(join(d, '.git'))) return d;
    if (dirname(d) === d) return null;
  }
}

/** How many times a create that lost a race for its name (another run took it) is decided again. */
const CREATE_ATTEMPTS = 5;

/** Runs the wrapper; resolves with the process exit code. */
export async function runWrapper(run: WrapperRun): Promise<number> {
  const { env, cwd } = run;
  const socket = run.socketPath ? { path: run.socketPath } : wrapperSocket(env, run.uid);
  const tmuxFound = onPath('tmux', env.PATH) !== null;
  const tmux = createTmux({ socketPath: socket.path, env });
  const project = resolveProject({ env, gitRoot: findGitRoot(cwd), cwd });
  const target: LaunchTarget =
    run.target.kind === 'agent'
      ? { kind: 'agent', agent: run.target.agent, args: run.target.args }
      : { kind: 'shell', shell: env.SHELL?.trim() || '/bin/sh' };
  const commandFound = run.target.kind === 'shell' || onPath(run.target.agent.command, env.PATH) !== null;
  let worktree: WorktreeFact | undefined = run.wt === undefined ? undefined : { status: 'pending', branch: run.wt };

  for (let attempt = 0; attempt < CREATE_ATTEMPTS; ) {
    const sessions: ExistingSession[] = tmuxFound
      ? (await tmux.listSessions()).map((s) => ({ name: s.name, attached: s.attached, meta: s.meta }))
      : [];
    const plan = decideLaunch(
      {
        target,
        flags: run.flags,
        worktree,
        project,
        cwd,
        insideTmux: Boolean(env.TMUX),
        platform: run.platform,
        tty: run.tty,
        tmuxFound,
        commandFound,
        sessions,
      },
      (id) => agentById(id)?.name ?? id,
    );
    switch (plan.action) {
      case 'refuse':
        run.stderr(`svc: ${plan.message}`);
        return 1;
      case 'prepare-worktree':
        worktree = await prepareWorktree(cwd, plan.branch, env);
        continue;
      case 'run-here':
        run.stderr(plan.note);
        return runHere(plan, env, run.stderr);
      case 'create':
        attempt++;
        try {
          await tmux.newSession({
            name: plan.name,
            cwd: plan.cwd,
            command: [plan.command, ...plan.args],
            options: metaOptions(plan.meta),
          });
        } catch (err) {
          // Another run took the name a moment ago: look again.
          if (err instanceof TmuxError && err.code === 'duplicate_session') continue;
          run.stderr(`svc: could not create ${plan.name}: ${(err as Error).message}`);
          return 1;
        }
        return finish(run, tmux, socket.path, plan);
      case 'attach': {
        const line =
          plan.unused && run.target.kind === 'agent'
            ? unusedArgsLine(plan.name, run.target.agent.subcommand, plan.unused, run.wt !== undefined)
            : null;
        // Said when the person is back on their own screen: tmux, taking over the terminal, discards what was
        // written to it and not yet read (tcflush), and its alternate screen would hide the line anyway.
        if (line && plan.then !== 'attach') run.stderr(line);
        const code = await finish(run, tmux, socket.path, plan);
        if (line && plan.then === 'attach') run.stderr(line);
        return code;
      }
    }
  }
  run.stderr('svc: other svc runs kept taking the session name; try again');
  return 1;
}

async function prepareWorktree(cwd: string, branch: string, env: NodeJS.ProcessEnv): Promise<WorktreeFact> {
  const result = await ensureWorktree({ git: createGit({ env }), cwd, branch });
  return result.ok
    ? { status: 'ready', branch, path: result.path, sessionName: result.sessionName, repoName: result.repoName }
    : { status: 'refused', message: result.message };
}

/** The session exists: start the listener if needed, then attach, print the name, or print the switch line. */
async function finish(
  run: WrapperRun,
  tmux: Tmux,
  socketPath: string,
  plan: Extract<LaunchPlan, { action: 'create' | 'attach' }>,
): Promise<number> {
  if (plan.startListener && run.checkListener !== false) {
    try {
      const result = await ensureListener({
        home: run.home,
        paths: svcPaths(run.home),
        env: run.env,
        cliVersion: VERSION,
        entry: defaultEntry(),
        socketPath,
      });
      for (const line of result.lines) run.stderr(line);
    } catch (err) {
      run.stderr(`svc: the listener was not checked: ${(err as Error).message}`);
    }
  }
  if (plan.then === 'print-name') {
    run.stdout(plan.name);
    return 0;
  }
  if (plan.then === 'switch-hint') {
    run.stdout(`tmux switch-client -t ${plan.name}`);
    return 0;
  }
  return tmux.attach(plan.name);
}

/** Inside tmux without --detach: the agent in this pane, this terminal, until it exits. */
function runHere(
  plan: Extract<LaunchPlan, { action: 'run-here' }>,
  env: NodeJS.ProcessEnv,
  stderr: (line: string) => void,
): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(plan.command, plan.args, { cwd: plan.cwd, env, stdio: 'inherit' });
    // The agent handles Ctrl-C itself; the wrapper waits for it.
    const ignore = () => {};
    process.on('SIGINT', ignore);
    child.on('error', (err) => {
      stderr(`svc: could not run ${plan.command}: ${err.message}`);
      resolve(1);
    });
    child.on('exit', (code, signal) => {
      process.off('SIGINT', ignore);
      resolve(code ?? 128 + (signal ? (constants.signals[signal] ?? 0) : 0));
    });
  });
}
