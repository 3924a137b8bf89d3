/**
 * `svc new-session off`, `svc new-session on`, `svc new-session` (issue 30): starting agents from the phone refused or
 * allowed on this computer, and which it is. Stored in `~/.svc/new-session.json`; the listener reads it at each
 * request, so it holds at once (docs/new-session.md).
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { defineCommand } from 'citty';
import { readNewSessionSetting, writeNewSessionSetting } from '../../actors/sessions/newSession.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { fail } from '../output.js';

const settings = () => join(svcPaths(homedir()).dir, 'new-session.json');

const state = (off: boolean) =>
  off ? 'new sessions from the phone: off on this computer' : 'new sessions from the phone: on';

const switchTo = (kind: 'on' | 'off') =>
  defineCommand({
    meta: {
      name: kind,
      description: kind === 'off' ? 'Refuse new sessions from the phone here' : 'Allow new sessions from the phone',
    },
    run() {
      try {
        writeNewSessionSetting(settings(), kind === 'off');
        console.log(state(kind === 'off'));
      } catch (err) {
        fail(err);
      }
    },
  });

export default defineCommand({
  meta: {
    name: 'new-session',
    description: 'Allow or refuse starting agents from the phone on this computer (on by default)',
  },
  subCommands: { off: switchTo('off'), on: switchTo('on') },
  run({ args }) {
    if (args._[0]) return;
    const setting = readNewSessionSetting(settings());
    if (setting.problem) console.error(`svc: ${setting.problem}`);
    console.log(state(setting.off));
  },
});
