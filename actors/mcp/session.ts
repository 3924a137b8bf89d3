/**
 * Which tmux session `svc mcp` serves: the session of the agent's pane (`TMUX_PANE`, on the server `TMUX` names),
 * so the phone shows a question on that session's card. Outside tmux: `svc-<project>`, the name `svc cc` gives
 * the project's first session (core/sessions/project.ts).
 */
import { execFile } from 'node:child_process';
import { SESSION_NAME_RE } from '../../core/protocol/codes.js';
import { projectSlug, resolveProject } from '../../core/sessions/project.js';
import { findGitRoot } from '../sessions/wrapper.js';

export async function servedSession(env: NodeJS.ProcessEnv, cwd: string): Promise<{ name: string; from: string }> {
  const pane = env.TMUX_PANE;
  if (pane && /^%\d+$/.test(pane)) {
    const socket = env.TMUX?.split(',')[0];
    const args = [...(socket ? ['-S', socket] : []), 'display-message', '-p', '-t', pane, '#{session_name}'];
    const name = await new Promise<string | null>((resolve) => {
      execFile('tmux', args, { timeout: 3000, env }, (err, stdout) => resolve(err ? null : stdout.trim()));
    });
    if (name && SESSION_NAME_RE.test(name)) return { name, from: `tmux pane ${pane}` };
  }
  const project = resolveProject({ env, gitRoot: findGitRoot(cwd), cwd });
  return { name: `svc-${projectSlug(project.name)}`, from: `project ${project.name}` };
}
