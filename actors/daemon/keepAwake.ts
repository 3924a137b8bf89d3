/**
 * Runs the keep-awake command of core/daemon/keepAwake.ts beside the listener, and ends it with the listener (the
 * command also ends by itself when the listener's pid is gone: `-w` / `tail --pid`). A command that fails to start
 * or ends early is a log line, never a listener failure.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { keepAwakeCommand } from '../../core/daemon/keepAwake.js';
import { onPath } from '../which.js';

export interface KeepAwake {
  stop(): void;
}

export function startKeepAwake(log: { info(m: string): void; warn(m: string): void }, env = process.env): KeepAwake {
  const cmd = keepAwakeCommand({
    platform: process.platform,
    pid: process.pid,
    has: (p) => onPath(p, env.PATH) !== null,
  });
  if (!cmd.argv) {
    log.info(`keep-awake: off (${cmd.why})`);
    return { stop() {} };
  }
  let child: ChildProcess | null = null;
  let stopping = false;
  try {
    child = spawn(cmd.argv[0]!, cmd.argv.slice(1), { stdio: 'ignore', env });
  } catch (err) {
    log.warn(`keep-awake: could not start ${cmd.argv[0]}: ${(err as Error).message}`);
    return { stop() {} };
  }
  child.on('error', (err) => log.warn(`keep-awake: ${cmd.argv[0]} failed: ${err.message}`));
  child.on('exit', (code, signal) => {
    if (!stopping) log.warn(`keep-awake: ${cmd.argv[0]} ended (${signal ?? code}); the computer may sleep`);
  });
  child.unref();
  log.info(`keep-awake: on, ${cmd.what}, pid ${child.pid ?? '?'}`);
  return {
    stop() {
      stopping = true;
      child?.kill();
    },
  };
}
