/**
 * The tmux adapter: every tmux call the product makes goes through the `Tmux` interface.
 * `createTmux` runs `tmux -u -S <socket> …` with `execFile` (argument arrays, never a shell string).
 * `test/fakes/fakeTmux.ts` is the in-memory fake of the same interface.
 *
 * What tmux 3.3a does with the arguments it is given, and how this file copes (all checked by hand and in
 * `test/integration/tmux.test.ts`):
 * - An argument that ENDS in `;` is taken as a command separator (the `;` is stripped), even inside
 *   `send-keys -l`: `send-keys -l 'hi;'` types `hi` and `new-session -s 'x;'` breaks the command line.
 *   `tmuxArg` rewrites a trailing `;` as `\;`, which tmux turns back into `;`.
 * - `new-session -s` and `-c` are format-expanded: `#{…}` is substituted and `#(cmd)` RUNS `cmd`. `-t` targets,
 *   `-e` values, commands and `send-keys` text are not. `formatLiteral` doubles `#` in expanded arguments.
 * - `-t =name` is an exact session match (`proj` never matches `proj-2`; `%1`, `@1` stay names); pane and
 *   window commands need the `=name:` form (`send-keys -t =name` fails with "can't find pane"). But `=$1` is still
 *   read as the session id `$1`, so names starting with `$` are refused (protocol names never start with `$`).
 * - tmux renames sessions: `.` and `:` become `_`, control characters and `\` are stored escaped (`\t`, `\\`), so
 *   `newSession` returns the name tmux really used (protocol names, `[A-Za-z0-9._-]+` minus `.`, are never changed).
 * - A client that does not believe its locale is UTF-8 prints `_` for every non-ASCII or control character in
 *   format output; `-u` on every call avoids that (the daemon may run with no `LANG`).
 * - Paths in `#{pane_current_path}` may hold tabs and newlines and titles may hold any printable text, so the
 *   inventory uses separators with a per-call random nonce (tmux prints control characters in the format
 *   itself as `_`, so they cannot be used).
 * - tmux refuses a command line of about 16 KiB or more ("command too long"); long text goes through
 *   `paste` (stdin to `load-buffer`), which has no such limit.
 * - `new-session` runs the command with the *client's* PATH, not the one given with `-e PATH=…`; when `env`
 *   carries PATH, the client is run with that PATH too.
 * - A pane in a mode (copy mode after scrolling back, view, clock, choose-tree, customize) takes `send-keys` as
 *   that mode's keys: `q` or Escape ends it, Space pages, vi's Enter copies; the text never reaches the program.
 *   `paste-buffer` still writes to the program, but `-p` asks the MODE's screen whether bracketed paste is on, so
 *   the markers are dropped and each line break submits. `send-keys -X cancel` ends copy and view mode only and
 *   fails ("not in a mode") otherwise, which stops the rest of a command list; `copy-mode -q` ends any mode and
 *   does nothing when there is none, so `leaveMode` chains that.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { PaneInfo, SessionMeta, SessionRecord } from '../core/protocol.js';

export type TmuxErrorCode = 'no_server' | 'no_session' | 'duplicate_session' | 'no_tmux' | 'failed';

/** A tmux call that failed; `code` says why in terms callers act on. */
export class TmuxError extends Error {
  override readonly name = 'TmuxError';
  constructor(
    readonly code: TmuxErrorCode,
    message: string,
    readonly stderr = '',
  ) {
    super(message);
  }
}

/** A session name (its active pane is meant) or an explicit pane id such as `%3`. */
export type PaneTarget = string | { pane: string };

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
  /** `send-keys -l` (text typed as is); with `enter`, chained with `send-keys Enter` in the same call. */
  sendLiteral(target: PaneTarget, text: string, opts?: { enter?: boolean } & TypingOptions): Promise<void>;
  /** Named keys: `Enter`, `Escape`, `C-c`, `Up`, … */
  sendKeys(target: PaneTarget, keys: readonly string[], opts?: TypingOptions): Promise<void>;
  /** `load-buffer` from stdin into a fresh buffer, then `paste-buffer -d`: one call, one paste. */
  paste(target: PaneTarget, text: string, opts: PasteOptions): Promise<void>;
  /** Create a detached session; resolves to the name tmux used and its first pane. */
  newSession(opts: NewSessionOptions): Promise<{ name: string; paneId: string }>;
  killSession(name: string): Promise<void>;
  /** Ends the server; no server is not an error. */
  killServer(): Promise<void>;
  /**
   * `attach-session -t =name` with this process's terminal (stdio inherited; needs a TTY); resolves with tmux's
   * exit code when the client detaches or the session ends.
   */
  attach(name: string): Promise<number>;
}

export interface CreateTmuxOptions {
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
// Argument helpers (exported for tests)

/** Protect an argument from tmux's "ends with `;` = separator" rule. */
export function tmuxArg(arg: string): string {
  return arg.endsWith(';') ? `${arg.slice(0, -1)}\\;` : arg;
}

/** For arguments tmux format-expands (`new-session -s`, `-c`): `#` must be `##`. */
export function formatLiteral(arg: string): string {
  return arg.replaceAll('#', '##');
}

/** Join commands into one tmux argv with `;` separators; every argument protected. */
export function chain(commands: readonly (readonly string[])[]): string[] {
  const out: string[] = [];
  for (const [i, cmd] of commands.entries()) {
    if (i > 0) out.push(';');
    for (const arg of cmd) out.push(tmuxArg(arg));
  }
  return out;
}

/**
 * `=name` matches exactly that session name. tmux 3.3a reads `$…` as a session id even after `=`, so a session
 * whose name starts with `$` cannot be addressed exactly (it could hit another session): refused.
 */
export function sessionTargetArg(name: string): string {
  if (name === '' || name.startsWith('$'))
    throw new TmuxError('failed', `cannot target a session named ${JSON.stringify(name)}`);
  return `=${name}`;
}

/** `=name:` addresses the active pane of exactly that session; `%N` is a pane id. */
export function paneTargetArg(target: PaneTarget): string {
  if (typeof target === 'string') return `${sessionTargetArg(target)}:`;
  if (!/^%\d+$/.test(target.pane)) throw new TmuxError('failed', `not a pane id: ${target.pane}`);
  return target.pane;
}

/** Quote one word for `sh -c`, so a one-element argv runs exactly that program. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** The commands that end any mode the pane is in, to run before typing when `leaveMode` is set. */
export function leaveModeCommands(target: string, opts: TypingOptions = {}): string[][] {
  return opts.leaveMode ? [['copy-mode', '-q', '-t', target]] : [];
}

export function classifyTmuxError(stderr: string): TmuxErrorCode {
  if (/no server running|error connecting to|server exited unexpectedly|lost server/i.test(stderr)) return 'no_server';
  if (/can't find (session|window|pane)|no current (session|target|client)/i.test(stderr)) return 'no_session';
  if (/duplicate session/i.test(stderr)) return 'duplicate_session';
  return 'failed';
}

// ---------------------------------------------------------------------------
// Inventory parsing (exported for tests)

const PANE_FIELDS = [
  'session_name',
  'session_attached',
  'session_created',
  'session_activity',
  'pane_id',
  'pane_current_command',
  'pane_start_command',
  'pane_current_path',
  'pane_title',
  '@svc-kind',
  '@svc-agent',
  '@svc-project',
  '@svc-label',
  '@svc-worktree',
  'pane_in_mode',
  'window_index',
  'pane_index',
] as const;

/** The `-F` format for the inventory; records start with `recordMark`, fields are split by `fieldMark`. */
export function inventoryFormat(nonce: string): { format: string; recordMark: string; fieldMark: string } {
  const recordMark = `<svc:${nonce}>`;
  const fieldMark = `<|${nonce}|>`;
  const fields = [...PANE_FIELDS.map((f) => `#{${f}}`), '#{&&:#{pane_active},#{window_active}}'];
  return { format: recordMark + fields.join(fieldMark), recordMark, fieldMark };
}

const clip = (s: string, max: number): string => (s.length > max ? s.slice(0, max) : s);
const toInt = (s: string): number => {
  const n = Number.parseInt(s, 10);
  return Number.isFinite(n) ? n : 0;
};

/** Group `list-panes -a` output into session records. Lines that do not parse are skipped. */
export function parseInventory(stdout: string, nonce: string): SessionRecord[] {
  const { recordMark, fieldMark } = inventoryFormat(nonce);
  const sessions = new Map<string, SessionRecord>();
  for (const chunk of stdout.split(recordMark).slice(1)) {
    const record = chunk.endsWith('\n') ? chunk.slice(0, -1) : chunk;
    const f = record.split(fieldMark);
    if (f.length !== PANE_FIELDS.length + 1) continue;
    const [name, attached, created, activity, id, command, startCommand, path, title, ...rest] = f as string[] as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      ...string[],
    ];
    const [kind, agent, project, label, worktree, inMode, windowIndex, paneIndex, active] = rest as string[];
    let session = sessions.get(name);
    if (!session) {
      session = {
        name,
        attached: toInt(attached) > 0,
        createdAt: toInt(created),
        activityAt: toInt(activity),
        panes: [],
      };
      const meta: SessionMeta = {};
      if (kind === 'agent' || kind === 'shell') meta.kind = kind;
      if (agent) meta.agent = clip(agent, 16);
      if (project) meta.project = clip(project, 128);
      if (label) meta.label = clip(label, 128);
      if (worktree) meta.worktree = clip(worktree, 4096);
      if (Object.keys(meta).length > 0) session.meta = meta;
      sessions.set(name, session);
    }
    if (session.panes.length >= 64) continue; // the wire schema's cap
    const pane: PaneInfo = { id: clip(id, 32), command: clip(command, 256), active: active === '1' };
    if (startCommand) pane.startCommand = clip(startCommand, 1024);
    if (path) pane.path = clip(path, 4096);
    if (title) pane.title = clip(title, 256);
    if (windowIndex && paneIndex) pane.index = `${windowIndex}.${paneIndex}`;
    if (inMode === '1') pane.inMode = true;
    session.panes.push(pane);
  }
  return [...sessions.values()];
}

/** Trailing blank lines dropped, then the last `lines` lines. */
export function lastScreenLines(captured: string, lines: number): string {
  const rows = captured.split('\n');
  if (rows.at(-1) === '') rows.pop();
  while (rows.length > 0 && rows.at(-1)?.trim() === '') rows.pop();
  return rows.slice(Math.max(0, rows.length - Math.max(0, Math.floor(lines)))).join('\n');
}

// ---------------------------------------------------------------------------
// The real adapter

let bufferCounter = 0;

function resolveOnPath(bin: string, pathVar: string | undefined): string {
  if (bin.includes('/')) return bin;
  for (const dir of (pathVar ?? '').split(':')) {
    const candidate = `${dir || '.'}/${bin}`;
    if (existsSync(candidate)) return candidate;
  }
  return bin;
}

export function createTmux(options: CreateTmuxOptions): Tmux & { readonly socketPath: string } {
  const { socketPath, bin = 'tmux', configFile, timeoutMs = 10_000 } = options;
  const baseEnv = options.env ?? process.env;

  function run(
    args: readonly string[],
    opts: { input?: string; env?: NodeJS.ProcessEnv } = {},
    pathChanged = false,
  ): Promise<string> {
    const argv = ['-u', '-S', socketPath, ...(configFile ? ['-f', configFile] : []), ...args];
    // execFile looks the program up in the PATH of `env`: with a PATH changed for the session, find tmux first
    const program = pathChanged ? resolveOnPath(bin, baseEnv.PATH) : bin;
    return new Promise((resolve, reject) => {
      const child = execFile(
        program,
        argv,
        { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs, env: opts.env ?? baseEnv },
        (error, stdout, stderr) => {
          if (!error) return resolve(stdout);
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
      const { format } = inventoryFormat(nonce);
      try {
        return parseInventory(await run(chain([['list-panes', '-a', '-F', format]])), nonce);
      } catch (e) {
        // no server, or a server with no session at all ("no current target")
        if (e instanceof TmuxError && (e.code === 'no_server' || e.code === 'no_session')) return [];
        throw e;
      }
    },

    async hasSession(name) {
      try {
        await run(chain([['has-session', '-t', sessionTargetArg(name)]]));
        return true;
      } catch (e) {
        if (e instanceof TmuxError && (e.code === 'no_session' || e.code === 'no_server')) return false;
        throw e;
      }
    },

    async capture(target, lines) {
      const out = await run(chain([['capture-pane', '-p', '-t', paneTargetArg(target)]]));
      return lastScreenLines(out, lines);
    },

    async captureScreen(target) {
      const t = paneTargetArg(target);
      const out = await run(
        chain([
          ['display-message', '-p', '-t', t, '#{pane_width} #{pane_height}'],
          ['capture-pane', '-p', '-t', t],
        ]),
      );
      const newline = out.indexOf('\n');
      const [width = 0, height = 0] = out.slice(0, newline).split(' ').map(Number);
      return { text: lastScreenLines(out.slice(newline + 1), height), width, height };
    },

    async captureMany(paneIds, lines) {
      const ids = paneIds.filter((id) => /^%\d+$/.test(id));
      if (ids.length === 0) return {};
      const mark = `<svc-screen:${randomBytes(6).toString('hex')}>`;
      const commands = ids.flatMap((id) => [
        ['display-message', '-p', `${mark}${id}`],
        ['capture-pane', '-p', '-t', id],
      ]);
      let out: string;
      try {
        out = await run(chain(commands));
      } catch (e) {
        // A pane that went away between the inventory and this call stops tmux's command list: ask one by one.
        if (!(e instanceof TmuxError) || e.code === 'no_server') throw e;
        const each = await Promise.all(
          ids.map(async (id) => [id, await this.capture({ pane: id }, lines).catch(() => null)] as const),
        );
        return Object.fromEntries(each.filter((pair): pair is readonly [string, string] => pair[1] !== null));
      }
      const screens: Record<string, string> = {};
      for (const part of out.split(mark).slice(1)) {
        const newline = part.indexOf('\n');
        if (newline < 0) continue;
        screens[part.slice(0, newline)] = lastScreenLines(part.slice(newline + 1), lines);
      }
      return screens;
    },

    async sendLiteral(target, text, opts = {}) {
      const t = paneTargetArg(target);
      const commands: string[][] = [...leaveModeCommands(t, opts), ['send-keys', '-t', t, '-l', '--', text]];
      if (opts.enter) commands.push(['send-keys', '-t', t, 'Enter']);
      await run(chain(commands));
    },

    async sendKeys(target, keys, opts = {}) {
      if (keys.length === 0) return;
      const t = paneTargetArg(target);
      await run(chain([...leaveModeCommands(t, opts), ['send-keys', '-t', t, '--', ...keys]]));
    },

    async paste(target, text, opts) {
      const t = paneTargetArg(target);
      bufferCounter += 1;
      const buffer = `svc-${process.pid}-${bufferCounter}-${randomBytes(4).toString('hex')}`;
      const pasteCmd = ['paste-buffer', '-d', ...(opts.bracketed ? ['-p'] : []), ...(opts.raw ? ['-r'] : [])];
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
      const sep = `<|${nonce}|>`;
      const args = ['new-session', '-d', '-P', '-F', `#{session_name}${sep}#{pane_id}`, '-s', formatLiteral(opts.name)];
      if (opts.cwd !== undefined) args.push('-c', formatLiteral(opts.cwd));
      if (opts.width !== undefined) args.push('-x', String(opts.width));
      if (opts.height !== undefined) args.push('-y', String(opts.height));
      for (const [k, v] of Object.entries(opts.env ?? {})) args.push('-e', `${k}=${v}`);
      const { command } = opts;
      if (typeof command === 'string') args.push('--', command);
      else if (command && command.length === 1) args.push('--', shellQuote(command[0]!));
      else if (command && command.length > 1) args.push('--', ...command);
      const commands: string[][] = [args];
      for (const [option, value] of Object.entries(opts.options ?? {}))
        commands.push(['set-option', '-t', paneTargetArg(opts.name), option, value]);
      const path = opts.env?.PATH;
      const out = await run(
        chain(commands),
        path === undefined ? {} : { env: { ...baseEnv, PATH: path } },
        path !== undefined,
      );
      const line = out.replace(/\n$/, '');
      const at = line.lastIndexOf(sep);
      if (at < 0) throw new TmuxError('failed', `unexpected new-session output: ${JSON.stringify(line)}`);
      return { name: line.slice(0, at), paneId: line.slice(at + sep.length) };
    },

    async killSession(name) {
      await run(chain([['kill-session', '-t', sessionTargetArg(name)]]));
    },

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
