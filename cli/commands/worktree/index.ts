/**
 * `svc worktree`: the worktrees made by `--wt` and what holds each (`held: uncommitted changes`, `free`, …).
 * `svc worktree clean [--dry-run]` removes the free ones (clean.ts).
 */
import { defineCommand } from 'citty';
import { gatherWorktreeFacts } from '../../../actors/worktrees/worktrees.js';
import { listLine, worktreeHold } from '../../../core/worktrees/worktree.js';
import { fail } from '../../output.js';
import { jsonArg, liveSessions, survey } from './_shared.js';

export default defineCommand({
  meta: { name: 'worktree', description: 'List the worktrees made by --wt and what holds each' },
  args: { json: jsonArg },
  subCommands: {
    clean: () => import('./clean.js').then((m) => m.default),
  },
  async run({ args }) {
    // citty runs a parent's `run` after its subcommand's: `svc worktree clean` must not list as well.
    if (args._[0] === 'clean') return;
    try {
      const { git, worktrees, problems } = await survey();
      const known = await liveSessions();
      const rows = [];
      for (const wt of worktrees) {
        let reasons: string[];
        try {
          reasons = worktreeHold(await gatherWorktreeFacts(git, wt, known))?.reasons ?? [];
        } catch (e) {
          reasons = [`check failed: ${e instanceof Error ? e.message : String(e)}`];
        }
        rows.push({
          path: wt.path,
          repo: wt.repo,
          branch: wt.branch,
          slug: wt.slug,
          sessionName: wt.sessionName,
          free: reasons.length === 0,
          reasons,
        });
      }
      if (args.json) {
        process.stdout.write(`${JSON.stringify({ worktrees: rows, problems })}\n`);
      } else {
        for (const r of rows) {
          const hold = r.free ? null : { reason: r.reasons.join(', '), reasons: r.reasons };
          process.stdout.write(`${listLine({ path: r.path, branch: r.branch, hold })}\n`);
        }
        if (rows.length === 0 && problems.length === 0) process.stdout.write('no worktrees made by --wt\n');
        for (const p of problems) process.stderr.write(`svc: ${p}\n`);
      }
      if (problems.length > 0) process.exitCode = 1;
    } catch (e) {
      fail(e);
    }
  },
});
