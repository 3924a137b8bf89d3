/**
 * `svc mute` / `svc unmute` (spec 3, 4.13.3): prompts in a muted project are never flagged as typed by the phone, so
 * the agent there is never told to end its answers with svc_ask. The project is the git top level of the current
 * directory (else the directory itself); `--all` mutes every project. Stored in `~/.svc/muted.json`.
 */
import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { changeMutes, readMutes } from '../../actors/hooks/muteFile.js';
import { projectHere } from '../../actors/hooks/projectHere.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { muteLines } from '../../core/hooks/mute.js';
import { fail } from '../output.js';

const all = { type: 'boolean', description: 'every project, not only this one' } as const;

export const muteCommand = defineCommand({
  meta: {
    name: 'mute',
    description: 'Never flag prompts in this project (or --all) as sent from the phone; --list shows what is muted',
  },
  args: { all, list: { type: 'boolean', description: 'print what is muted' } },
  run({ args }) {
    try {
      const dir = svcPaths(homedir()).dir;
      if (args.list) {
        for (const line of muteLines(readMutes(dir))) console.log(line);
        return;
      }
      if (args.all) {
        changeMutes(dir, { kind: 'mute-all' });
        console.log('muted every project: no prompt is flagged as from the phone (svc unmute --all to undo)');
        return;
      }
      const project = projectHere();
      const { changed } = changeMutes(dir, { kind: 'mute', project });
      console.log(`${changed ? 'muted' : 'already muted'}: ${project}`);
    } catch (err) {
      fail(err);
    }
  },
});

export const unmuteCommand = defineCommand({
  meta: { name: 'unmute', description: 'Flag prompts from the phone again in this project (or --all)' },
  args: { all },
  run({ args }) {
    try {
      const dir = svcPaths(homedir()).dir;
      if (args.all) {
        changeMutes(dir, { kind: 'unmute-all' });
        console.log('no project is muted');
        return;
      }
      const project = projectHere();
      const { changed, list } = changeMutes(dir, { kind: 'unmute', project });
      console.log(`${changed ? 'unmuted' : 'was not muted'}: ${project}`);
      if (list.all) console.log('every project stays muted (svc mute --all); svc unmute --all lifts it');
    } catch (err) {
      fail(err);
    }
  },
});
