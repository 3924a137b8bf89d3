/**
 * `svc listener --status/--stop/--restart`: through the running daemon's control socket when it answers
 * (actors/daemon/controlSocket.ts), else the pid file and signals of actors/daemon/daemon.ts (a daemon from before the socket
 * existed, or one whose socket could not be made).
 */
import type { StatusReply } from '../../core/daemon/control.js';
import { ControlUnavailable, controlRequest, stopThroughControl } from './controlSocket.js';
import {
  type DaemonContext,
  type EnsureResult,
  findListener,
  isLoggedIn,
  NOT_LOGGED_IN_LINE,
  restartListener,
  stopListener,
  withListenerLock,
} from './daemon.js';

function duration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export interface ListenerStatus {
  running: boolean;
  pid: number | null;
  via: 'socket' | 'pidfile' | 'ps' | null;
  /** The daemon's own answer, when its socket answered. */
  status: StatusReply | null;
  lines: string[];
}

export async function listenerStatus(ctx: DaemonContext): Promise<ListenerStatus> {
  try {
    const status = await controlRequest(ctx.paths.dir, { type: 'status' }, 'status');
    return {
      running: true,
      pid: status.pid,
      via: 'socket',
      status,
      lines: [
        `listener ${status.pid} running${status.host === 'up' ? ' inside `svc up`' : ''} v${status.version} for ${duration(status.uptimeMs)}; ` +
          `relay ${status.relay ?? '-'}; ${status.sessions} session(s); tmux ${status.tmuxSocket}`,
      ],
    };
  } catch (err) {
    if (!(err instanceof ControlUnavailable)) throw err;
  }
  const found = await findListener(ctx);
  if (!found) return { running: false, pid: null, via: null, status: null, lines: ['svc: no listener is running'] };
  return {
    running: true,
    pid: found.pid,
    via: found.via,
    status: null,
    lines: [
      `listener ${found.pid} running v${found.version ?? '?'} (found by ${found.via === 'ps' ? 'the process list' : 'its pid file'}; its control socket does not answer)`,
    ],
  };
}

/** Ask the daemon to stop through its socket; when nothing answers there, or it does not exit, signals. */
export async function stopListenerVia(ctx: DaemonContext): Promise<{ pid: number | null; lines: string[] }> {
  const viaSocket = await withListenerLock(
    ctx.paths,
    () => stopThroughControl(ctx.paths.dir, ctx.stopTimeoutMs ?? 10_000),
    ctx.lockTimeoutMs,
  );
  if (viaSocket?.exited)
    return {
      pid: viaSocket.pid,
      lines: [
        viaSocket.host === 'up'
          ? `svc: the listener inside \`svc up\` (pid ${viaSocket.pid}) stopped; \`svc up\` keeps serving the relay`
          : `svc: listener ${viaSocket.pid} stopped`,
      ],
    };
  const signalled = await stopListener(ctx);
  if (viaSocket && !viaSocket.exited)
    signalled.lines.unshift(`svc: listener ${viaSocket.pid} did not stop when asked on its control socket`);
  return signalled;
}

/** Stop through the socket when it answers, then start one on this CLI the way the wrapper does. */
export async function restartListenerVia(ctx: DaemonContext): Promise<EnsureResult> {
  // Not logged in: leave the running one alone, as restartListener does.
  if (!isLoggedIn(ctx.paths, ctx.env)) return { status: 'not-logged-in', pid: null, lines: [NOT_LOGGED_IN_LINE] };
  const viaSocket = await withListenerLock(
    ctx.paths,
    () => stopThroughControl(ctx.paths.dir, ctx.stopTimeoutMs ?? 10_000),
    ctx.lockTimeoutMs,
  );
  const result = await restartListener(ctx);
  if (viaSocket?.exited && result.status === 'started') result.status = 'restarted';
  return result;
}
