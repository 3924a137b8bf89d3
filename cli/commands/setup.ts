/**
 * `svc setup [--dry-run] [--json]` (spec 4.5, 4.13.2): the remote-origin hooks and the stop-hook notice for every
 * agent found on PATH. Claude Code gets `UserPromptSubmit` and `Stop` entries in its user settings running svc's
 * plugin script (plugins/claude/scripts/svc-remote.sh), Gemini CLI `BeforeAgent` and `AfterAgent` entries, pi an
 * extension file; all of them run `svc remote-hook <agent>`. Same rules as `svc install` (actors/hooks/configFiles.ts):
 * the user's entries and comments kept, a backup on the first change, idempotent, recorded for `svc uninstall`.
 */
import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { hooksFound } from '../../actors/hooks/agentsFound.js';
import { type InstallOutcome, installFile, installOne } from '../../actors/hooks/configFiles.js';
import { fail } from '../output.js';
import { outcomeLine } from './install.js';

export default defineCommand({
  meta: {
    name: 'setup',
    description: 'Install the agents’ hooks: a message from the phone is known as remote, a finished turn is told',
  },
  args: {
    'dry-run': { type: 'boolean', description: 'Print what would change, change nothing' },
    json: { type: 'boolean', description: 'Print the outcome as JSON' },
  },
  run({ args }) {
    try {
      const home = homedir();
      const dryRun = Boolean(args['dry-run']);
      const found = hooksFound(home);
      const outcomes: (InstallOutcome & { hook: string })[] = [
        ...found.entries.map((w) => ({ ...installOne(home, w, dryRun), hook: String(w.path.at(-1)) })),
        ...found.files.map((f) => ({ ...installFile(home, f, dryRun), hook: 'extension' })),
      ];
      if (args.json) {
        process.stdout.write(`${JSON.stringify({ dryRun, hooks: outcomes, notWired: found.elsewhere }, null, 2)}\n`);
      } else {
        for (const o of outcomes) process.stdout.write(`${outcomeLine(o).replace(': ', ` ${o.hook}: `)}\n`);
        for (const n of found.elsewhere) process.stdout.write(`${n.name}: hooks not wired: ${n.why}\n`);
        if (outcomes.length === 0 && found.elsewhere.length === 0)
          process.stdout.write('no agent whose hooks svc sets up was found on PATH\n');
      }
      process.exitCode = outcomes.some((o) => o.result === 'refused') ? 1 : 0;
    } catch (err) {
      fail(err);
    }
  },
});
