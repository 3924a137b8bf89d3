/**
 * The desktop notice (spec 4.11.4: "a desktop banner reports the location"): `notify-send` on Linux where it is
 * installed, `osascript` on macOS; nothing where neither is (a line in the listener's log says where the file is
 * either way). One adapter, so tests put a fake `notify-send` on PATH.
 */
import { execFile } from 'node:child_process';
import { onPath } from '../which.js';

export function desktopNotice(
  env: Readonly<Record<string, string | undefined>> = process.env,
  platform: NodeJS.Platform = process.platform,
): (title: string, body: string) => void {
  return (title, body) => {
    if (platform === 'darwin') {
      const quote = (s: string) => `"${s.replace(/["\\\\]/g, '\\\\$&')}"`;
      execFile('osascript', ['-e', `display notification ${quote(body)} with title ${quote(title)}`], () => {});
      return;
    }
    const program = onPath('notify-send', env.PATH);
    if (program) execFile(program, ['--app-name=svc', title, body], { env: { ...process.env, ...env } }, () => {});
  };
}
