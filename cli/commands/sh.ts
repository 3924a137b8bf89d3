/**
 * `svc sh [--detach] [--label x]` (spec 4.6): the login shell in `svc-<project>-sh` (or `svc-<project>-<x>`), a
 * session the phone may type into (audited). Inside tmux it does not attach: it prints the switch-client line.
 */
import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { runWrapper } from '../../actors/sessions/wrapper.js';
import { fail } from '../output.js';

export default defineCommand({
  meta: { name: 'sh', description: 'Your login shell in the session svc-<project>-sh, reachable from your phone' },
  args: {
    detach: { type: 'boolean', description: 'Create the session without attaching; print its name' },
    label: { type: 'string', description: 'Name the session svc-<project>-<x>' },
  },
  async run({ args }) {
    if (args._.length > 0) return fail(new Error(`svc sh takes no arguments (got ${JSON.stringify(args._[0])})`));
    process.exitCode = await runWrapper({
      target: { kind: 'shell' },
      flags: { detach: Boolean(args.detach), label: args.label },
      env: process.env,
      cwd: process.cwd(),
      home: homedir(),
      platform: process.platform,
      tty: Boolean(process.stdin.isTTY),
      uid: process.getuid?.() ?? 0,
      stdout: (line) => process.stdout.write(`${line}\n`),
      stderr: (line) => process.stderr.write(`${line}\n`),
    });
  },
});
