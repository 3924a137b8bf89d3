/**
 * What tmux 3.3a does with the arguments it is given and prints, as pure functions; `actors/tmux/tmux.ts` runs tmux.
 * Nonces come in as arguments (no randomness here).
 *
 * How tmux reads arguments (checked by hand and in `test/integration/tmux.test.ts`):
 * - An argument that ENDS in `;` is taken as a command separator (the `;` is stripped), even inside
 *   `send-keys -l`: `send-keys -l 'hi;'` types `hi` and `new-session -s 'x;'` breaks the command line.
 *   `tmuxArg` rewrites a trailing `;` as `\;`, which tmux turns back into `;`.
 * - `new-session -s` and `-c` are format-expanded: `#{…}` is substituted and `#(cmd)` RUNS `cmd`. `-t` targets,
 *   `-e` values, commands and `send-keys` text are not. `formatLiteral` doubles `#` in expanded arguments.
 * - `display-message` text is format-expanded AND run through strftime: `%4` prints as ` %4` (glibc pads `%3`…`%9`),
 *   `%d` as the day. No call puts a `%` (a pane id, a path) into it: pane ids come back from `#{pane_id}`.
 *   `-F` formats, `new-session -s`/`-c` and `set-option` values are not run through strftime (checked by hand;
 *   `test/integration/tmux.test.ts`).
 * - `-t =name` is an exact session match (`proj` never matches `proj-2`; `%1`, `@1` stay names); pane and
 *   window commands need the `=name:` form (`send-keys -t =name` fails with "can't find pane"). But `=$1` is still
 *   read as the session id `$1`, so names starting with `$` are refused (protocol names never start with `$`).
 * - tmux renames sessions: `.` and `:` become `_`, control characters and `\` are stored escaped (`\t`, `\\`), so
 *   `newSession` returns the name tmux really used (protocol names, `[A-Za-z0-9._-]+` minus `.`, are never changed).
 *
 * How it prints:
 * - Paths in `#{pane_current_path}` may hold tabs and newlines and titles may hold any printable text, so the
 *   inventory uses separators with a per-call random nonce (tmux prints control characters in the format
 *   itself as `_`, so they cannot be used).
 */
import type { PaneInfo, SessionMeta, SessionRecord } from '../protocol/index.js';

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

export function classifyTmuxError(stderr: string): TmuxErrorCode {
  if (/no server running|error connecting to|server exited unexpectedly|lost server/i.test(stderr)) return 'no_server';
  if (/can't find (session|window|pane)|no current (session|target|client)/i.test(stderr)) return 'no_session';
  if (/duplicate session/i.test(stderr)) return 'duplicate_session';
  return 'failed';
}

// ---------------------------------------------------------------------------
// Arguments

/** A session name (its active pane is meant) or an explicit pane id such as `%3`. */
export type PaneTarget = string | { pane: string };

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

/**
 * The commands that end any mode the pane is in, to run before typing when `leaveMode` is set: `copy-mode -q`
 * ends any mode and does nothing when there is none (`send-keys -X cancel` fails outside copy and view mode,
 * which would stop the rest of the command list).
 */
export function leaveModeCommands(target: string, opts: { leaveMode?: boolean } = {}): string[][] {
  return opts.leaveMode ? [['copy-mode', '-q', '-t', target]] : [];
}

// ---------------------------------------------------------------------------
// The inventory: one `list-panes -a` for every pane of every session

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
  '@svc-transcript',
  '@svc-agent-session',
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

const clientMark = (nonce: string) => `<svc-client:${nonce}>`;

/**
 * The inventory's one call: every pane (`list-panes -a`), then every client (`list-clients`), so that "attached"
 * can leave out a client that shows nothing to anyone (`personClient`).
 */
export function inventoryCommands(nonce: string): string[][] {
  const { format, fieldMark } = inventoryFormat(nonce);
  const clients = `${clientMark(nonce)}#{client_session}${fieldMark}#{client_control_mode}${fieldMark}#{client_flags}`;
  return [
    ['list-panes', '-a', '-F', format],
    ['list-clients', '-F', clients],
  ];
}

/**
 * Whether a client may show a session to a person: every client but one in control mode that asked for no pane
 * output (`-f no-output`), such as the listener's own persistent client. A control-mode client that gets output
 * (iTerm2's `tmux -CC`) is a person's.
 */
export function personClient(controlMode: string, flags: string): boolean {
  return !(controlMode === '1' && flags.split(',').includes('no-output'));
}

/**
 * Group the inventory's output (`inventoryCommands`) into session records. Lines that do not parse are skipped.
 * Without client records (older output), a session is attached as `session_attached` says.
 */
export function parseInventory(stdout: string, nonce: string): SessionRecord[] {
  const { recordMark, fieldMark } = inventoryFormat(nonce);
  const marker = clientMark(nonce);
  const at = stdout.indexOf(marker);
  const panesOut = at < 0 ? stdout : stdout.slice(0, at);
  const clientsOut = at < 0 ? null : stdout.slice(at);
  let watched: Set<string> | null = null;
  if (clientsOut !== null) {
    watched = new Set();
    for (const chunk of clientsOut.split(marker).slice(1)) {
      const [session, controlMode, flags] = chunk.replace(/\n$/, '').split(fieldMark);
      if (session !== undefined && flags !== undefined && personClient(controlMode ?? '', flags)) watched.add(session);
    }
  }
  const sessions = new Map<string, SessionRecord>();
  for (const chunk of panesOut.split(recordMark).slice(1)) {
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
    const [kind, agent, project, label, worktree, inMode, windowIndex, paneIndex, transcript, agentSession, active] =
      rest as string[];
    let session = sessions.get(name);
    if (!session) {
      session = {
        name,
        attached: watched ? watched.has(name) : toInt(attached) > 0,
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
      if (transcript && transcript.length <= 4096) meta.transcript = transcript;
      if (agentSession && agentSession.length <= 128) meta.agentSession = agentSession;
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

// ---------------------------------------------------------------------------
// Screens and other output

/** Trailing blank lines dropped, then the last `lines` lines. */
export function lastScreenLines(captured: string, lines: number): string {
  const rows = captured.split('\n');
  if (rows.at(-1) === '') rows.pop();
  while (rows.length > 0 && rows.at(-1)?.trim() === '') rows.pop();
  return rows.slice(Math.max(0, rows.length - Math.max(0, Math.floor(lines)))).join('\n');
}

/** `display-message` of the pane's size, then `capture-pane`: read in one call by `parseSizedScreen`. */
export function sizedScreenCommands(target: string): string[][] {
  return [
    ['display-message', '-p', '-t', target, '#{pane_width} #{pane_height}'],
    ['capture-pane', '-p', '-t', target],
  ];
}

/** The output of `sizedScreenCommands`: the screen (trailing blank lines dropped, at most `height` rows) and size. */
export function parseSizedScreen(out: string): { text: string; width: number; height: number } {
  // Output cut short after the size line has no screen (not the size line read as one).
  const newline = out.includes('\n') ? out.indexOf('\n') : out.length;
  const [width = 0, height = 0] = out.slice(0, newline).split(' ').map(Number);
  return { text: lastScreenLines(out.slice(newline + 1), height), width, height };
}

const screenMark = (nonce: string): string => `<svc-screen:${nonce}>`;

/**
 * Each pane's screen behind a marked line naming the pane; `parseScreens` reads the output.
 * The pane id in the marked line is tmux's own `#{pane_id}`, never the id written into the text: `display-message`
 * runs its text through strftime, and glibc reads `%4` as a conversion (`<m>%4` prints `<m> %4`), so no `%` may
 * appear in it. The nonce is hex and the mark has no `%` either.
 */
export function screensCommands(paneIds: readonly string[], nonce: string): string[][] {
  if (!/^[0-9a-f]+$/.test(nonce)) throw new TmuxError('failed', `not a hex nonce: ${nonce}`);
  const mark = screenMark(nonce);
  return paneIds.flatMap((id) => {
    const target = paneTargetArg({ pane: id });
    return [
      ['display-message', '-p', '-t', target, `${mark}#{pane_id}`],
      ['capture-pane', '-p', '-t', target],
    ];
  });
}

/**
 * Pane id → its last `lines` lines, from the output of `screensCommands`. A marked line that names no pane id
 * (`%N`, blanks around it forgiven) files nothing: its pane reads as unreadable, never as some other pane.
 */
export function parseScreens(out: string, nonce: string, lines: number): Record<string, string> {
  const screens: Record<string, string> = {};
  for (const part of out.split(screenMark(nonce)).slice(1)) {
    const newline = part.indexOf('\n');
    if (newline < 0) continue;
    const id = part.slice(0, newline).trim();
    if (!/^%\d+$/.test(id)) continue;
    screens[id] = lastScreenLines(part.slice(newline + 1), lines);
  }
  return screens;
}

/** The `-F` of `new-session -P`: the name tmux used and the first pane, split by `parseNewSession`. */
export function newSessionFormat(nonce: string): string {
  return `#{session_name}<|${nonce}|>#{pane_id}`;
}

/**
 * tmux may exit 0 having done nothing: given `-S` in a directory it cannot create, it prints `error creating …` on
 * stderr and nothing on stdout. So an answer without the marks is an error that carries what tmux said.
 */
export function parseNewSession(out: string, nonce: string, stderr = ''): { name: string; paneId: string } {
  const sep = `<|${nonce}|>`;
  const line = out.replace(/\n$/, '');
  const at = line.lastIndexOf(sep);
  if (at < 0) {
    const said = stderr.trim().split('\n').filter(Boolean).join('; ');
    const answer = line.trim() === '' ? 'tmux created no session' : `tmux answered ${JSON.stringify(line)}`;
    throw new TmuxError('failed', `${answer} (${said ? `tmux said: ${said}` : 'and said nothing on stderr'})`, said);
  }
  return { name: line.slice(0, at), paneId: line.slice(at + sep.length) };
}
