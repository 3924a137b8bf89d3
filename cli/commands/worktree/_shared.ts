/** Pieces `svc worktree` and `svc worktree clean` share: the git adapter, the index, and what tmux says is alive. */

import { discoverTmuxSocket } from '../../../actors/tmux/socket.js';
import { createTmux, TmuxError } from '../../../actors/tmux/tmux.js';
import { createGit } from '../../../actors/worktrees/git.js';
import { createWorktreeIndex, findSvcWorktrees, type SessionsKnown } from '../../../actors/worktrees/worktrees.js';

/** The live tmux sessions: `SVC_TMUX_SOCKET`, or the server discovery finds (spec 4.15). No server: none alive. */
export async function liveSessions(env: NodeJS.ProcessEnv = process.env): Promise<SessionsKnown> {
  try {
    const choice = await discoverTmuxSocket({ env, uid: process.getuid?.() ?? 0 });
    if (!choice) return { sessions: [] };
    return { sessions: await createTmux({ socketPath: choice.path }).listSessions() };
  } catch (e) {
    // No tmux program at all: no session can be running in one.
    if (e instanceof TmuxError && e.code === 'no_tmux') return { sessions: [] };
    return { unknown: e instanceof Error ? e.message : String(e) };
  }
}

/** Every worktree made by `--wt` that this computer knows of (the index, and the repository of the cwd). */
export async function survey() {
  const git = createGit();
  const found = await findSvcWorktrees({ git, index: createWorktreeIndex(), cwd: process.cwd() });
  return { git, ...found };
}

export const jsonArg = { type: 'boolean', description: 'Print JSON for scripts' } as const;
