/**
 * `svc worktree clean [--dry-run]`: remove the worktrees made by `--wt` that nothing holds, one line each.
 * Each is looked at again right before plain `git worktree remove` (never `--force`); the branch is kept.
 */
import { defineCommand } from 'citty';
import { gatherWorktreeFacts, removeIfFree } from '../../../actors/worktrees/worktrees.js';
import { type CleanOutcome, cleanLine, worktreeHold } from '../../../core/worktrees/worktree.js';
import { fail } from '../../output.js';
import { jsonArg, liveSessions, survey } from './_shared.js';

export default defineCommand({
  meta: { name: 'clean', description: 'Remove the worktrees made by --wt that nothing holds' },
  args: {
    'dry-run': { type: 'boolean', description: 'Only report what would be removed' },
    json: jsonArg,
  },
  async run({ args }) {
    try {
      const { git, worktrees, problems } = await survey();
      const known = await liveSessions();
      const results: { path: string; branch: string; outcome: CleanOutcome }[] = [];
      for (const wt of worktrees) {
        let outcome: CleanOutcome;
        try {
          if (args['dry-run']) {
            const hold = worktreeHold(await gatherWorktreeFacts(git, wt, known));
            outcome = hold ? { kind: 'kept', reason: hold.reason } : { kind: 'would_remove' };
          } else {
            const done = await removeIfFree(git, wt, known);
            outcome = done.removed ? { kind: 'removed' } : { kind: 'kept', reason: done.reason };
          }
        } catch (e) {
          outcome = { kind: 'failed', message: `check failed: ${e instanceof Error ? e.message : String(e)}` };
        }
        results.push({ path: wt.path, branch: wt.branch, outcome });
        if (!args.json) process.stdout.write(`${cleanLine(wt.path, outcome)}\n`);
      }
      if (args.json) process.stdout.write(`${JSON.stringify({ results, problems })}\n`);
      else {
        if (worktrees.length === 0 && problems.length === 0) process.stdout.write('no worktrees made by --wt\n');
        for (const p of problems) process.stderr.write(`svc: ${p}\n`);
      }
      if (problems.length > 0 || results.some((r) => r.outcome.kind === 'failed')) process.exitCode = 1;
    } catch (e) {
      fail(e);
    }
  },
});
