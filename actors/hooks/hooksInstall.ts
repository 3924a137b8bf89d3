/**
 * The hooks part of `svc install` (spec 4.5, 4.13.2): the remote-origin hooks and the stop-hook notice for every
 * agent found on PATH. Claude Code gets `UserPromptSubmit`, `Stop` and `SessionStart` entries in its user settings
 * running svc's plugin script (plugins/claude/scripts/svc-remote.sh), Codex `UserPromptSubmit` and `Stop` entries in
 * its hooks.json (trusted in its config.toml with the hashes Codex itself lists), Gemini CLI `BeforeAgent` and
 * `AfterAgent` entries, pi an extension file; all of them run `svc remote-hook <agent>`. Same rules as the MCP
 * wiring (configFiles.ts): the person's entries and comments kept, a backup on the first change, idempotent,
 * recorded for `svc uninstall`.
 */
import { homedir } from 'node:os';
import { codexHooksToTrust, codexTrustWiring, wiringWhat } from '../../core/hooks/wiring.js';
import { onPath } from '../which.js';
import { hooksFound } from './agentsFound.js';
import { listCodexHooks } from './codexTrust.js';
import { type InstallOutcome, installFile, installOne } from './configFiles.js';

export interface HooksInstalled {
  /** One per entry or file, with what it is (`the Stop hook`, `the svc-remote extension`, `trust for …`). */
  hooks: (InstallOutcome & { what: string })[];
  /** Agents on PATH whose hooks svc does not write, and why. */
  elsewhere: { agentId: string; name: string; why: string }[];
  /** Why Codex's hooks could not be trusted (its own listing failed), with what to do; null when fine. */
  codexTrust: string | null;
}

export async function installHooks(
  home: string = homedir(),
  dryRun = false,
  env: NodeJS.ProcessEnv = process.env,
): Promise<HooksInstalled> {
  const found = hooksFound(home, env);
  const hooks: HooksInstalled['hooks'] = [
    ...found.entries.map((w) => ({ ...installOne(home, w, dryRun), what: wiringWhat(w) })),
    ...found.files.map((f) => ({ ...installFile(home, f, dryRun), what: 'the svc-remote extension' })),
  ];
  // Codex runs the hooks svc wrote only once they are trusted: ask Codex for their keys and hashes
  const codexEntries = found.entries.filter((w) => w.agentId === 'A2');
  const codex = onPath('codex', env.PATH);
  let codexTrust: string | null = null;
  if (codexEntries.length > 0 && codex && !dryRun && !hooks.some((o) => o.agentId === 'A2' && o.result === 'refused')) {
    try {
      const listed = await listCodexHooks(codex, { cwd: home, env });
      const toTrust = codexHooksToTrust(listed, {
        file: codexEntries[0]!.file,
        commands: codexEntries.map((w) => (w.value as { hooks: { command: string }[] }).hooks[0]!.command),
      });
      for (const h of toTrust)
        hooks.push({
          ...installOne(home, codexTrustWiring({ home, CODEX_HOME: env.CODEX_HOME }, h), false),
          what: `trust for its ${h.key.split(':').at(-3) ?? ''} hook`,
        });
    } catch (err) {
      codexTrust = `${(err as Error).message}; open codex and trust svc's hooks with /hooks`;
    }
  }
  return { hooks, elsewhere: found.elsewhere, codexTrust };
}
