import { homedir } from 'node:os';
import { ControlUnavailable } from '../../../actors/daemon/controlSocket.js';
import { svcPaths } from '../../../core/daemon/paths.js';
import { fail } from '../../output.js';

/** `~/.svc`, where the control socket is. */
export const svcDir = () => svcPaths(homedir()).dir;

/** One line for "nothing answers", with what to do about it. */
export function failControl(err: unknown): void {
  if (err instanceof ControlUnavailable)
    fail(`${err.message}: is the listener running? (\`svc listener --status\`, start it with \`svc listener\`)`);
  else fail(err);
}
