/**
 * `svc file-view off [--global]`, `svc file-view on [--global]`, `svc file-view log` (spec 4.5, 4.11.3): file view
 * from the phone turned off for this project (its git top level, else this folder) or everywhere, on again, and
 * the last 50 reads. Stored in `~/.svc/file-view.json`; the log is `~/.local/state/svc/file-view.log`.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { defineCommand } from 'citty';
import { changeFileViewSettings, readFileViewLog } from '../../actors/files/view.js';
import { projectHere } from '../../actors/hooks/projectHere.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { isBroadRoot, readLine } from '../../core/files/view.js';
import { fail } from '../output.js';

const paths = () => svcPaths(homedir());
const settings = () => join(paths().dir, 'file-view.json');
const global = { type: 'boolean', description: 'every project, not only this one' } as const;

const switchTo = (kind: 'on' | 'off') =>
  defineCommand({
    meta: {
      name: kind,
      description: kind === 'off' ? 'Turn file view off for this project (or --global)' : 'Turn file view on again',
    },
    args: { global },
    run({ args }) {
      try {
        const project = projectHere();
        const broad = isBroadRoot(project, homedir());
        const next = changeFileViewSettings(settings(), { kind, global: args.global === true, project, broad });
        if (args.global) console.log(`file view ${kind} for every project`);
        else console.log(`file view ${kind}: ${project}`);
        if (kind === 'on' && next.global) console.log('it stays off everywhere (svc file-view on --global lifts it)');
        else if (kind === 'on' && broad && !args.global)
          console.log('this is a broad folder: the phone may browse all of it (never ~/.svc, ~/.ssh or key files)');
      } catch (err) {
        fail(err);
      }
    },
  });

export default defineCommand({
  meta: { name: 'file-view', description: 'Turn file view from the phone off or on, and print the last 50 reads' },
  subCommands: {
    off: switchTo('off'),
    on: switchTo('on'),
    log: defineCommand({
      meta: { name: 'log', description: 'The last 50 reads from the phone: when, which device, session, what' },
      run() {
        const reads = readFileViewLog(join(paths().stateDir, 'file-view.log'));
        if (reads.length === 0) console.log('no reads yet');
        for (const r of reads) console.log(readLine(r));
      },
    }),
  },
  run({ args }) {
    if (!args._[0]) console.log('svc file-view off [--global] | on [--global] | log');
  },
});
