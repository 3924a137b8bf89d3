/**
 * `svc setup [--dry-run] [--json]` (spec 4.5, 4.13.2): the remote-origin hooks and the stop-hook notice for every
 * agent found on PATH. Claude Code gets `UserPromptSubmit` and `Stop` entries in its user settings running svc's
 * plugin script (plugins/claude/scripts/svc-remote.sh), Codex `UserPromptSubmit` and `Stop` entries in its
 * hooks.json (trusted in its config.toml with the hashes Codex itself lists), Gemini CLI `BeforeAgent` and
 * `AfterAgent` entries, pi an extension file; all of them run `svc remote-hook <agent>`. Same rules as `svc install` (actors/hooks/configFiles.ts):
 * the user's entries and comments kept, a backup on the first change, idempotent, recorded for `svc uninstall`.
 */
import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { hooksFound } from '../../actors/hooks/agentsFound.js';
import { listCodexHooks } from '../../actors/hooks/codexTrust.js';
import { type InstallOutcome, installFile, installOne } from '../../actors/hooks/configFiles.js';
import { onPath } from '../../actors/which.js';
import { codexHooksToTrust, codexTrustWiring } from '../../core/hooks/wiring.js';
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
  async run({ args }) {
    try {
      const home = homedir();
      const dryRun = Boolean(args['dry-run']);
      const found = hooksFound(home);
      const outcomes: (InstallOutcome & { hook: string })[] = [
        ...found.entries.map((w) => ({ ...installOne(home, w, dryRun), hook: String(w.path.at(-1)) })),
        ...found.files.map((f) => ({ ...installFile(home, f, dryRun), hook: 'extension' })),
      ];
      // Codex runs the hooks svc wrote only once they are trusted: ask Codex for their keys and hashes
      const codexEntries = found.entries.filter((w) => w.agentId === 'A2');
      const codex = onPath('codex');
      let trustProblem: string | null = null;
      if (
        codexEntries.length > 0 &&
        codex &&
        !dryRun &&
        !outcomes.some((o) => o.agentId === 'A2' && o.result === 'refused')
      ) {
        try {
          const listed = await listCodexHooks(codex, { cwd: home });
          const env = { home, CODEX_HOME: process.env.CODEX_HOME };
          const toTrust = codexHooksToTrust(listed, {
            file: codexEntries[0]!.file,
            commands: codexEntries.map((w) => (w.value as { hooks: { command: string }[] }).hooks[0]!.command),
          });
          for (const h of toTrust)
            outcomes.push({
              ...installOne(home, codexTrustWiring(env, h), false),
              hook: `trust ${h.key.split(':').at(-3) ?? ''}`,
            });
        } catch (err) {
          trustProblem = `${(err as Error).message}; open codex and trust svc's hooks with /hooks`;
        }
      }
      if (args.json) {
        process.stdout.write(
          `${JSON.stringify({ dryRun, hooks: outcomes, notWired: found.elsewhere, codexTrust: trustProblem }, null, 2)}\n`,
        );
      } else {
        for (const o of outcomes) process.stdout.write(`${outcomeLine(o).replace(': ', ` ${o.hook}: `)}\n`);
        for (const n of found.elsewhere) process.stdout.write(`${n.name}: hooks not wired: ${n.why}\n`);
        if (trustProblem) process.stdout.write(`Codex: hooks not trusted: ${trustProblem}\n`);
        if (outcomes.length === 0 && found.elsewhere.length === 0)
          process.stdout.write('no agent whose hooks svc sets up was found on PATH\n');
      }
      process.exitCode = outcomes.some((o) => o.result === 'refused') || trustProblem ? 1 : 0;
    } catch (err) {
      fail(err);
    }
  },
});
