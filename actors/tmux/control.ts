/**
 * One long-lived tmux control-mode client (`tmux -C attach-session -f ignore-size,no-output`): the listener's tmux
 * calls go through it as lines on its stdin, so a call costs no process start (core/tmux/control.ts has the format).
 *
 * - It attaches to the session tmux picks for `attach-session` without `-t` (the most recently used one: attaching
 *   marks a session used, and this keeps the order the listener routes by). `ignore-size` keeps it out of every
 *   window-size decision; `no-output` means tmux sends it no pane output. It is a control-mode client that shows
 *   nothing to anyone, which is how the inventory leaves it out of "attached" (core/tmux/tmux.ts).
 * - `ready` resolves once tmux says it is attached (`%session-changed`); it rejects when the client cannot attach
 *   (no server, no session) or exits first.
 * - Replies are taken in order; a call that gets no reply within `timeoutMs`, or a reply that does not fit, ends
 *   the client (`closed`): whoever owns it starts another.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { type ControlEvent, ControlParser, controlLine, ReplyReader } from '../../core/tmux/control.js';
import { classifyTmuxError, TmuxError } from '../../core/tmux/tmux.js';

export interface ControlClientOptions {
  bin: string;
  socketPath: string;
  env?: NodeJS.ProcessEnv;
  /** A call without a reply this long ends the client. */
  timeoutMs: number;
}

/** A call that may or may not have reached tmux: the client went away before it answered. */
export class ControlLost extends Error {
  override readonly name = 'ControlLost';
  /** Whether the line was written to tmux (it may have run). */
  constructor(
    message: string,
    readonly written: boolean,
  ) {
    super(message);
  }
}

interface Pending {
  reader: ReplyReader;
  resolve: (stdout: string) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export interface ControlClient {
  readonly pid: number | undefined;
  readonly ready: Promise<void>;
  /** Resolves with the reason once the client is gone (exited, killed, or ended for a fault). */
  readonly closed: Promise<string>;
  run(commands: readonly (readonly string[])[]): Promise<string>;
  close(): void;
}

export function startControlClient(options: ControlClientOptions): ControlClient {
  const child = spawn(
    options.bin,
    ['-u', '-S', options.socketPath, '-C', 'attach-session', '-f', 'ignore-size,no-output'],
    { stdio: ['pipe', 'pipe', 'pipe'], env: options.env ?? process.env },
  );
  const parser = new ControlParser();
  const queue: Pending[] = [];
  let gone: string | null = null;
  let stderr = '';
  let attached = false;

  let markReady: () => void = () => {};
  let failReady: (err: Error) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  ready.catch(() => {}); // a caller that never waited must not see an unhandled rejection
  let markClosed: (reason: string) => void = () => {};
  const closed = new Promise<string>((resolve) => {
    markClosed = resolve;
  });

  function end(reason: string): void {
    if (gone !== null) return;
    gone = reason;
    failReady(new TmuxError(classifyTmuxError(reason), reason));
    for (const p of queue.splice(0)) {
      clearTimeout(p.timer);
      p.reject(new ControlLost(`tmux control client: ${reason}`, true));
    }
    if (child.exitCode === null) child.kill();
    markClosed(reason);
  }

  function onEvent(event: ControlEvent): void {
    if (event.kind === 'exit') {
      end(event.reason || 'exited');
      return;
    }
    if (event.kind === 'notification') {
      if (event.name === 'session-changed' && !attached) {
        attached = true;
        markReady();
      }
      return;
    }
    if (!event.block.fromClient) return; // the attach itself, hooks
    const head = queue[0];
    if (!head) {
      end('a reply nobody asked for');
      return;
    }
    const step = head.reader.push(event.block);
    if (step.kind === 'more') return;
    queue.shift();
    clearTimeout(head.timer);
    if (step.kind === 'done') head.resolve(step.stdout);
    else if (step.kind === 'failed')
      head.reject(new TmuxError(classifyTmuxError(step.stderr), step.stderr || 'tmux failed', step.stderr));
    else {
      head.reject(new ControlLost(`tmux control client: ${step.why}`, true));
      end(step.why);
    }
  }

  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    for (const event of parser.feed(chunk)) onEvent(event);
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-2000);
  });
  child.stdin.on('error', () => {}); // EPIPE after an exit: the exit says why
  child.on('error', (err: NodeJS.ErrnoException) =>
    end(err.code === 'ENOENT' ? `tmux not found (${options.bin})` : err.message),
  );
  child.on('exit', (code, signal) => {
    const text = stderr.trim() || `exited (${signal ?? code})`;
    end(text);
  });

  return {
    pid: child.pid,
    ready,
    closed,
    run(commands) {
      if (gone !== null) return Promise.reject(new ControlLost(`tmux control client: ${gone}`, false));
      const nonce = randomBytes(8).toString('hex');
      const line = controlLine(commands, nonce);
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => end(`no reply within ${options.timeoutMs} ms`), options.timeoutMs);
        queue.push({ reader: new ReplyReader(nonce), resolve, reject, timer });
        child.stdin.write(line);
      });
    },
    close() {
      end('closed');
    },
  };
}
