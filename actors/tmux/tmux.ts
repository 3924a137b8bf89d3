/**
 * The tmux adapter: every tmux call the product makes goes through the `Tmux` interface.
 * `createTmux` runs `tmux -u -S <socket> …` with `execFile` (argument arrays, never a shell string).
 * `test/fakes/fakeTmux.ts` is the in-memory fake of the same interface. The pure parts (arguments, the inventory
 * format and the other output it parses, error codes from stderr) are in `core/tmux/tmux.ts`, with what tmux does to
 * arguments and output.
 *
 * What tmux 3.3a does when it runs, and how this file copes (checked by hand and in
 * `test/integration/tmux.test.ts`):
 * - A client that does not believe its locale is UTF-8 prints `_` for every non-ASCII or control character in
 *   format output; `-u` on every call avoids that (the daemon may run with no `LANG`).
 * - tmux refuses a command line of about 16 KiB or more ("command too long"); long text goes through
 *   `paste` (stdin to `load-buffer`), which has no such limit.
 * - `new-session` runs the command with the *client's* PATH, not the one given with `-e PATH=…`; when `env`
 *   carries PATH, the client is run with that PATH too.
 * - A pane in a mode (copy mode after scrolling back, view, clock, choose-tree, customize) takes `send-keys` as
 *   that mode's keys: `q` or Escape ends it, Space pages, vi's Enter copies; the text never reaches the program.
 *   `paste-buffer` still writes to the program, but `-p` asks the MODE's screen whether bracketed paste is on, so
 *   the markers are dropped and each line break submits. So `leaveMode` chains `copy-mode -q` before typing.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { SessionRecord } from '../../core/protocol/index.js';
import { type DirFacts, decideSocketDir } from '../../core/tmux/socket.js';
import {
  chain,
  classifyTmuxError,
  formatLiteral,
  inventoryCommands,
  lastScreenLines,
  leaveModeCommands,
  newSessionFormat,
  type PaneTarget,
  paneTargetArg,
  parseInventory,
  parseNewSession,
  parseScreens,
  parseSizedScreen,
  screensCommands,
  sessionTargetArg,
  shellQuote,
  sizedScreenCommands,
  TmuxError,
} from '../../core/tmux/tmux.js';
import { type ControlClient, ControlLost, startControlClient } from './control.js';

// Part of this adapter's interface: its calls take these targets and fail with these errors.
export { type PaneTarget, TmuxError, type TmuxErrorCode } from '../../core/tmux/tmux.js';

/** For the calls that type into a pane. */
export interface TypingOptions {
  /** Leave whatever mode the pane is in first (`copy-mode -q`), in the same tmux call. */
  leaveMode?: boolean;
}

export interface PasteOptions extends TypingOptions {
  /** Wrap the text in bracketed-paste markers (`paste-buffer -p`; tmux adds them only if the program asked). */
  bracketed: boolean;
  /** Keep LF as LF (`-r`). By default tmux turns LF into CR, as a terminal does for a paste. */
  raw?: boolean;
}

export interface NewSessionOptions {
  name: string;
  cwd?: string;
  /** A string runs through `sh -c`; an array is run as argv, no shell. Omitted: the default shell. */
  command?: string | readonly string[];
  env?: Readonly<Record<string, string>>;
  width?: number;
  height?: number;
  /**
   * Session options set in the same tmux call (`new-session … ; set-option -t =name: @svc-kind agent ; …`), e.g.
   * the wrapper's `@svc-*` metadata. The name must be one tmux keeps as is (no `.` or `:`). A failed `new-session`
   * (duplicate name) sets nothing: tmux skips the rest of the command list.
   */
  options?: Readonly<Record<string, string>>;
}

export interface Tmux {
  /** Every pane of every session, ONE tmux call, grouped by session. No server: `[]`. */
  listSessions(): Promise<SessionRecord[]>;
  hasSession(name: string): Promise<boolean>;
  /** The last `lines` lines of the pane's visible screen (trailing blank lines dropped first). */
  capture(target: PaneTarget, lines: number): Promise<string>;
  /** The pane's visible screen (trailing blank lines dropped) and its size, read in the same tmux call. */
  captureScreen(target: PaneTarget): Promise<{ text: string; width: number; height: number }>;
  /**
   * The last `lines` lines of several panes in one tmux call (the inventory's screen read). A pane that vanished
   * is left out of the result.
   */
  captureMany(paneIds: readonly string[], lines: number): Promise<Record<string, string>>;
  /**
   * `send-keys -l` (text typed as is); then, in the same call, `Enter` with `enter`, and the named `keys` (one
   * process for text and keys: each tmux process start costs more than tmux's work).
   */
  sendLiteral(
    target: PaneTarget,
    text: string,
    opts?: { enter?: boolean; keys?: readonly string[] } & TypingOptions,
  ): Promise<void>;
  /** Named keys: `Enter`, `Escape`, `C-c`, `Up`, … */
  sendKeys(target: PaneTarget, keys: readonly string[], opts?: TypingOptions): Promise<void>;
  /** `load-buffer` from stdin into a fresh buffer, then `paste-buffer -d`: one call, one paste. */
  paste(target: PaneTarget, text: string, opts: PasteOptions): Promise<void>;
  /** Create a detached session; resolves to the name tmux used and its first pane. */
  newSession(opts: NewSessionOptions): Promise<{ name: string; paneId: string }>;
  killSession(name: string): Promise<void>;
  /** Sets session options (`set-option -t =name: @svc-transcript …`) in one call. */
  setSessionOptions(name: string, options: Readonly<Record<string, string>>): Promise<void>;
  /** The process a pane runs (`#{pane_pid}`); null when the pane is gone. */
  panePid(paneId: string): Promise<number | null>;
  /** Ends the server; no server is not an error. */
  killServer(): Promise<void>;
  /** Ends the persistent client, if any (the listener's at its end). */
  close?(): void;
  /**
   * `attach-session -t =name` with this process's terminal (stdio inherited; needs a TTY); resolves with tmux's
   * exit code when the client detaches or the session ends.
   */
  attach(name: string): Promise<number>;
}

export interface CreateTmuxOptions {
  /**
   * Send the calls that need no stdin and no changed environment through one long-lived control-mode client
   * (actors/tmux/control.ts) instead of a process each; plain calls whenever it is not attached. The listener's.
   */
  persistent?: boolean;
  /** Told when the persistent client attaches or goes away (one line each). */
  onControl?: (event: 'attached' | 'lost', detail: string) => void;
  socketPath: string;
  /** The tmux program; give an absolute path when PATH may not reach it (launchd, systemd). */
  bin?: string;
  /** Passed as `-f` (only matters when a call starts the server). Tests use `/dev/null`. */
  configFile?: string;
  /** Per call; a hung server must not hang the daemon. */
  timeoutMs?: number;
  /** Environment of the tmux client process. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
}

// ---------------------------------------------------------------------------
// The real adapter

/**
 * Before a call that may start a server: the per-user socket directory as tmux itself makes it
 * (core/tmux/socket.ts `decideSocketDir`); a directory tmux would refuse fails the call with one line.
 */
export function prepareSocketDir(socketPath: string, uid = process.getuid?.() ?? 0): void {
  const dir = dirname(socketPath);
  const facts = (): DirFacts | null => {
    try {
      const s = lstatSync(dir);
      return { directory: s.isDirectory(), owner: s.uid, mode: s.mode };
    } catch {
      return null;
    }
  };
  let decision = decideSocketDir(socketPath, facts(), uid);
  if (decision.action === 'create') {
    try {
      mkdirSync(dir, { mode: 0o700 });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new TmuxError('failed', `cannot create the tmux socket directory ${dir}: ${(err as Error).message}`);
    }
    // made by us or by a tmux a moment ago: the same rule either way
    decision = decideSocketDir(socketPath, facts(), uid);
    if (decision.action === 'create') throw new TmuxError('failed', `cannot create the tmux socket directory ${dir}`);
  }
  if (decision.action === 'refuse') throw new TmuxError('failed', decision.message);
}

let bufferCounter = 0;

function resolveOnPath(bin: string, pathVar: string | undefined): string {
  if (bin.includes('/')) return bin;
  for (const dir of (pathVar ?? '').split(':')) {
    const candidate = `${dir || '.'}/${bin}`;
    if (existsSync(candidate)) return candidate;
  }
  return bin;
}

/** After a persistent client could not attach (no server, no session), the next try is no sooner than this. */
const CONTROL_RETRY_MS = 5_000;

export function createTmux(
  options: CreateTmuxOptions,
): Tmux & { readonly socketPath: string; readonly controlPid: () => number | undefined; close(): void } {
  const { socketPath, bin = 'tmux', configFile, timeoutMs = 10_000 } = options;
  const baseEnv = options.env ?? process.env;

  // The persistent client: the one attached (`control`), one attaching (`starting`), or the time of the next try.
  let control: ControlClient | null = null;
  let starting: Promise<ControlClient | null> | null = null;
  let retryAt = 0;
  let closedForGood = false;

  function controlClient(): ControlClient | null | Promise<ControlClient | null> {
    if (!options.persistent || closedForGood) return null;
    if (control) return control;
    if (starting) return starting;
    if (Date.now() < retryAt) return null;
    starting = (async () => {
      const client = startControlClient({ bin, socketPath, env: baseEnv, timeoutMs });
      const attachTimer = setTimeout(() => client.close(), timeoutMs);
      try {
        await client.ready;
        if (closedForGood) throw new Error('closed');
        control = client;
        options.onControl?.('attached', `pid ${client.pid}`);
        client.closed.then((reason) => {
          if (control === client) control = null;
          if (!closedForGood) options.onControl?.('lost', reason);
        });
        return client;
      } catch {
        client.close();
        retryAt = Date.now() + CONTROL_RETRY_MS;
        return null;
      } finally {
        clearTimeout(attachTimer);
        starting = null;
      }
    })();
    return starting;
  }

  /**
   * One tmux call of `commands` (chained with `;`): through the persistent client when it is attached, else a
   * process. A read that the client lost on the way is asked again as a process; a call that changes something
   * (typing, killing) is not, since it may have run: it fails.
   */
  async function call(commands: readonly (readonly string[])[], changes: boolean): Promise<string> {
    const client = await controlClient();
    if (client) {
      try {
        return await client.run(commands);
      } catch (e) {
        if (!(e instanceof ControlLost)) throw e;
        if (changes && e.written) throw new TmuxError('failed', e.message);
      }
    }
    return run(chain(commands));
  }

  function run(
    args: readonly string[],
    opts: { input?: string; env?: NodeJS.ProcessEnv } = {},
    pathChanged = false,
  ): Promise<string> {
    return runBoth(args, opts, pathChanged).then((r) => r.stdout);
  }

  /** stdout and stderr of a call that succeeded (tmux may exit 0 with an error on stderr). */
  function runBoth(
    args: readonly string[],
    opts: { input?: string; env?: NodeJS.ProcessEnv } = {},
    pathChanged = false,
  ): Promise<{ stdout: string; stderr: string }> {
    const argv = ['-u', '-S', socketPath, ...(configFile ? ['-f', configFile] : []), ...args];
    // execFile looks the program up in the PATH of `env`: with a PATH changed for the session, find tmux first
    const program = pathChanged ? resolveOnPath(bin, baseEnv.PATH) : bin;
    return new Promise((resolve, reject) => {
      const child = execFile(
        program,
        argv,
        { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs, env: opts.env ?? baseEnv },
        (error, stdout, stderr) => {
          if (!error) return resolve({ stdout, stderr: String(stderr) });
          const err = error as NodeJS.ErrnoException & { killed?: boolean };
          if (err.code === 'ENOENT') return reject(new TmuxError('no_tmux', `tmux not found (${bin})`));
          const text = String(stderr).trim();
          const message = err.killed ? `tmux timed out after ${timeoutMs} ms` : text || err.message;
          reject(new TmuxError(err.killed ? 'failed' : classifyTmuxError(text), message, text));
        },
      );
      // tmux may exit before reading stdin (an error): ignore EPIPE, the exit status tells.
      child.stdin?.on('error', () => {});
      child.stdin?.end(opts.input ?? '');
    });
  }

  return {
    socketPath,

    async listSessions() {
      const nonce = randomBytes(8).toString('hex');
      try {
        return parseInventory(await call(inventoryCommands(nonce), false), nonce);
      } catch (e) {
        // no server, or a server with no session at all ("no current target")
        if (e instanceof TmuxError && (e.code === 'no_server' || e.code === 'no_session')) return [];
        throw e;
      }
    },

    async hasSession(name) {
      try {
        await call([['has-session', '-t', sessionTargetArg(name)]], false);
        return true;
      } catch (e) {
        if (e instanceof TmuxError && (e.code === 'no_session' || e.code === 'no_server')) return false;
        throw e;
      }
    },

    async capture(target, lines) {
      const out = await call([['capture-pane', '-p', '-t', paneTargetArg(target)]], false);
      return lastScreenLines(out, lines);
    },

    async captureScreen(target) {
      return parseSizedScreen(await call(sizedScreenCommands(paneTargetArg(target)), false));
    },

    async captureMany(paneIds, lines) {
      const ids = paneIds.filter((id) => /^%\d+$/.test(id));
      if (ids.length === 0) return {};
      const nonce = randomBytes(6).toString('hex');
      let out: string;
      try {
        out = await call(screensCommands(ids, nonce), false);
      } catch (e) {
        // A pane that went away between the inventory and this call stops tmux's command list: ask one by one.
        if (!(e instanceof TmuxError) || e.code === 'no_server') throw e;
        const each = await Promise.all(
          ids.map(async (id) => [id, await this.capture({ pane: id }, lines).catch(() => null)] as const),
        );
        return Object.fromEntries(each.filter((pair): pair is readonly [string, string] => pair[1] !== null));
      }
      return parseScreens(out, nonce, lines);
    },

    async sendLiteral(target, text, opts = {}) {
      const t = paneTargetArg(target);
      const commands: string[][] = [...leaveModeCommands(t, opts), ['send-keys', '-t', t, '-l', '--', text]];
      if (opts.enter) commands.push(['send-keys', '-t', t, 'Enter']);
      if (opts.keys && opts.keys.length > 0) commands.push(['send-keys', '-t', t, '--', ...opts.keys]);
      await call(commands, true);
    },

    async sendKeys(target, keys, opts = {}) {
      if (keys.length === 0) return;
      const t = paneTargetArg(target);
      await call([...leaveModeCommands(t, opts), ['send-keys', '-t', t, '--', ...keys]], true);
    },

    async paste(target, text, opts) {
      const t = paneTargetArg(target);
      bufferCounter += 1;
      const buffer = `svc-${process.pid}-${bufferCounter}-${randomBytes(4).toString('hex')}`;
      const pasteCmd = ['paste-buffer', '-d', ...(opts.bracketed ? ['-p'] : []), ...(opts.raw ? ['-r'] : [])];
      // Through the persistent client the text goes as an argument of `set-buffer` (a control-mode line has no
      // length limit; tmux takes no empty buffer, and an empty paste types nothing)
      if (text !== '' && (await controlClient())) {
        await call(
          [
            ['set-buffer', '-b', buffer, '--', text],
            ...leaveModeCommands(t, opts),
            [...pasteCmd, '-b', buffer, '-t', t],
          ],
          true,
        ).catch(async (e) => {
          await call([['delete-buffer', '-b', buffer]], true).catch(() => {});
          throw e;
        });
        return;
      }
      try {
        await run(
          chain([
            ['load-buffer', '-b', buffer, '-'],
            // before the paste: `-p` looks at the mode's screen, which never asked for bracketed paste
            ...leaveModeCommands(t, opts),
            [...pasteCmd, '-b', buffer, '-t', t],
          ]),
          { input: text },
        );
      } catch (e) {
        // The paste failed after the load: do not leave the text in a buffer.
        await run(chain([['delete-buffer', '-b', buffer]])).catch(() => {});
        throw e;
      }
    },

    async newSession(opts) {
      const nonce = randomBytes(6).toString('hex');
      const args = ['new-session', '-d', '-P', '-F', newSessionFormat(nonce), '-s', formatLiteral(opts.name)];
      if (opts.cwd !== undefined) args.push('-c', formatLiteral(opts.cwd));
      if (opts.width !== undefined) args.push('-x', String(opts.width));
      if (opts.height !== undefined) args.push('-y', String(opts.height));
      for (const [k, v] of Object.entries(opts.env ?? {})) args.push('-e', `${k}=${v}`);
      const { command } = opts;
      if (typeof command === 'string') args.push('--', command);
      // tmux runs one argument through `sh -c`: `exec` so the program, not a shell that some `sh` (dash) keeps
      // as its parent, is the pane's process (a shell in front refuses pushes: shell_in_front)
      else if (command && command.length === 1) args.push('--', `exec ${shellQuote(command[0]!)}`);
      else if (command && command.length > 1) args.push('--', ...command);
      const commands: string[][] = [args];
      for (const [option, value] of Object.entries(opts.options ?? {}))
        commands.push(['set-option', '-t', paneTargetArg(opts.name), option, value]);
      prepareSocketDir(socketPath);
      const path = opts.env?.PATH;
      const { stdout, stderr } = await runBoth(
        chain(commands),
        path === undefined ? {} : { env: { ...baseEnv, PATH: path } },
        path !== undefined,
      );
      return parseNewSession(stdout, nonce, stderr);
    },

    async killSession(name) {
      await call([['kill-session', '-t', sessionTargetArg(name)]], true);
    },

    async setSessionOptions(name, options) {
      const commands = Object.entries(options).map(([option, value]) => [
        'set-option',
        '-t',
        paneTargetArg(name),
        option,
        value,
      ]);
      if (commands.length > 0) await call(commands, true);
    },

    async panePid(paneId) {
      try {
        const out = await call(
          [['display-message', '-p', '-t', paneTargetArg({ pane: paneId }), '#{pane_pid}']],
          false,
        );
        const pid = Number.parseInt(out.trim(), 10);
        return Number.isInteger(pid) && pid > 0 ? pid : null;
      } catch (e) {
        if (e instanceof TmuxError) return null;
        throw e;
      }
    },

    close() {
      closedForGood = true;
      control?.close();
      control = null;
    },

    controlPid: () => control?.pid,

    async killServer() {
      try {
        await run(chain([['kill-server']]));
      } catch (e) {
        if (e instanceof TmuxError && e.code === 'no_server') return;
        throw e;
      }
    },

    attach(name) {
      // No -u here: the client should use the terminal's own locale.
      const argv = ['-S', socketPath, ...(configFile ? ['-f', configFile] : []), 'attach-session', '-t'];
      argv.push(sessionTargetArg(name));
      return new Promise((resolve, reject) => {
        const child = spawn(bin, argv, { stdio: 'inherit', env: baseEnv });
        child.on('error', (err: NodeJS.ErrnoException) =>
          reject(err.code === 'ENOENT' ? new TmuxError('no_tmux', `tmux not found (${bin})`) : err),
        );
        child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
      });
    },
  };
}
