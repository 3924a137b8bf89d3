/**
 * `svc uninstall [--dry-run] [--json]` (spec 4.5): takes out of each agent's config exactly what `svc install`
 * added (as recorded in ~/.svc/installed.json), also after the user edited those files; an entry the user changed
 * since is left alone. Exit 1 when a file was refused.
 */
import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { svcMcpCommand } from '../../actors/hooks/agentsFound.js';
import { uninstallAll } from '../../actors/hooks/configFiles.js';
import { isServiceInstalled, serviceFacts, uninstallService } from '../../actors/service/service.js';
import { fail } from '../output.js';
import { outcomeLine } from './install.js';

export default defineCommand({
  meta: {
    name: 'uninstall',
    description: 'Take out of the agents’ configs exactly what svc install added',
  },
  args: {
    'dry-run': { type: 'boolean', description: 'Print what would change, change nothing' },
    json: { type: 'boolean', description: 'Print the outcome as JSON' },
  },
  run({ args }) {
    try {
      const dryRun = Boolean(args['dry-run']);
      const outcomes = uninstallAll(homedir(), dryRun);
      if (args.json) process.stdout.write(`${JSON.stringify({ dryRun, agents: outcomes }, null, 2)}\n`);
      else {
        for (const o of outcomes)
          process.stdout.write(
            `${outcomeLine(o.result === 'changed' ? { ...o, result: 'changed by you since install: left as it is' } : o)}\n`,
          );
        if (outcomes.length === 0) process.stdout.write('nothing that svc install added is left\n');
      }
      // and the login service, when there is one
      const service = serviceFacts(homedir(), svcMcpCommand());
      if (service && !dryRun) {
        const done = uninstallService(service);
        if (!args.json) for (const line of done.lines) process.stdout.write(`${line}\n`);
        if (!done.ok) process.exitCode = 1;
      } else if (service && !args.json && isServiceInstalled(service)) {
        process.stdout.write('login service: would remove\n');
      }
      if (outcomes.some((o) => o.result === 'refused')) process.exitCode = 1;
    } catch (err) {
      fail(err);
    }
  },
});
