/**
 * An in-memory `Tmux` for unit tests: sessions with panes, each pane a screen of text lines, and a record of
 * every call. Errors follow the real adapter: a missing session is `TmuxError('no_session')`, a stopped server
 * `TmuxError('no_server')` (and `listSessions()` is `[]`).
 *
 * A pane may model an agent's input line (`prompt`, default `› `): typed and pasted text collects in `input`,
 * which is drawn as the pane's last screen line; Enter moves it to `submitted` and prints `you said: …`.
 * `swallowEnters` / `newlineEnters` make the next Enters be swallowed or become newlines, like Gemini and Codex.
 * A pane `inMode` (copy mode, …) loses typed keys to the mode, as real tmux does, until a call with `leaveMode`.
 */

import {
  type NewSessionOptions,
  type PaneTarget,
  type PasteOptions,
  type Tmux,
  TmuxError,
  type TypingOptions,
} from '../../actors/tmux/tmux.js';
import type { SessionRecord } from '../../core/protocol/index.js';
import { lastScreenLines } from '../../core/tmux/tmux.js';

export interface FakePane {
  id: string;
  command: string;
  startCommand?: string;
  path?: string;
  title?: string;
  active: boolean;
  /** Screen lines above the input line. */
  screen: string[];
  /** The agent's input line prefix; `null`: no input line (a plain program, text lands on the screen as typed). */
  prompt: string | null;
  /** Lines that stay right above the input line, below the screen (Claude Code's and Gemini CLI's rule). */
  frame?: string[];
  input: string;
  submitted: string[];
  /** Enters still to swallow (Gemini-like). */
  swallowEnters: number;
  /** Enters still to take as newlines (Codex paste-burst-like). */
  newlineEnters: number;
  /** In a tmux mode (copy mode after scrolling back, …): keys go to the mode and are lost. */
  inMode: boolean;
  /** Columns and rows; unset: 80 × 24, tmux's size for a session no client has attached. */
  width?: number;
  height?: number;
}

export interface FakeSession {
  name: string;
  attached: boolean;
  createdAt: number;
  activityAt: number;
  panes: FakePane[];
}

export type FakeTmuxCall =
  | { op: 'listSessions' }
  | { op: 'hasSession'; name: string }
  | { op: 'capture'; target: PaneTarget; lines: number }
  | { op: 'captureScreen'; target: PaneTarget }
  | { op: 'sendLiteral'; target: PaneTarget; text: string; enter: boolean; keys?: string[]; leaveMode?: true }
  | { op: 'sendKeys'; target: PaneTarget; keys: string[]; leaveMode?: true }
  | { op: 'paste'; target: PaneTarget; text: string; bracketed: boolean; leaveMode?: true }
  | { op: 'newSession'; opts: NewSessionOptions }
  | { op: 'killSession'; name: string }
  | { op: 'killServer' }
  | { op: 'setSessionOptions'; name: string; options: Readonly<Record<string, string>> }
  | { op: 'attach'; name: string };

export interface AddSessionOptions {
  attached?: boolean;
  createdAt?: number;
  activityAt?: number;
  /** Pane fields; `command` defaults to `bash`. More than one element: several panes (first active). */
  panes?: Partial<Omit<FakePane, 'id'>>[];
}

export class FakeTmux implements Tmux {
  readonly sessions = new Map<string, FakeSession>();
  readonly calls: FakeTmuxCall[] = [];
  serverRunning = true;
  /** Epoch seconds used for new sessions. */
  now = 1_700_000_000;
  private nextPane = 0;
  private failures: { op: FakeTmuxCall['op']; error: Error }[] = [];

  addSession(name: string, opts: AddSessionOptions = {}): FakeSession {
    const specs = opts.panes?.length ? opts.panes : [{}];
    const session: FakeSession = {
      name,
      attached: opts.attached ?? false,
      createdAt: opts.createdAt ?? this.now,
      activityAt: opts.activityAt ?? opts.createdAt ?? this.now,
      panes: specs.map((p, i) => this.makePane({ active: i === 0, ...p })),
    };
    this.sessions.set(name, session);
    this.serverRunning = true;
    return session;
  }

  removeSession(name: string): void {
    this.sessions.delete(name);
  }

  /** The pane a target addresses (the active pane of a session), or undefined. */
  pane(target: PaneTarget): FakePane | undefined {
    if (typeof target !== 'string') {
      for (const s of this.sessions.values()) {
        const p = s.panes.find((x) => x.id === target.pane);
        if (p) return p;
      }
      return undefined;
    }
    const s = this.sessions.get(target);
    return s?.panes.find((p) => p.active) ?? s?.panes[0];
  }

  setScreen(target: PaneTarget, screen: string | string[]): void {
    const p = this.mustPane(target);
    p.screen = typeof screen === 'string' ? screen.split('\n') : [...screen];
  }

  /** What `capture` would return for the whole screen. */
  screenOf(target: PaneTarget): string {
    const p = this.mustPane(target);
    const input = p.prompt === null ? [] : [...(p.frame ?? []), `${p.prompt}${p.input.replaceAll('\n', '⏎')}`];
    return [...p.screen, ...input].join('\n');
  }

  /** Make the next call of `op` fail with `error` (once). */
  failNext(op: FakeTmuxCall['op'], error: Error = new TmuxError('failed', `${op} failed`)): void {
    this.failures.push({ op, error });
  }

  callsOf<K extends FakeTmuxCall['op']>(op: K): Extract<FakeTmuxCall, { op: K }>[] {
    return this.calls.filter((c): c is Extract<FakeTmuxCall, { op: K }> => c.op === op);
  }

  // -------------------------------------------------------------------------
  // Tmux

  async listSessions(): Promise<SessionRecord[]> {
    this.record({ op: 'listSessions' });
    if (!this.serverRunning) return [];
    return [...this.sessions.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((s) => ({
        name: s.name,
        attached: s.attached,
        createdAt: s.createdAt,
        activityAt: s.activityAt,
        panes: s.panes.map((p) => ({
          id: p.id,
          command: p.command,
          active: p.active,
          ...(p.startCommand ? { startCommand: p.startCommand } : {}),
          ...(p.path ? { path: p.path } : {}),
          ...(p.title ? { title: p.title } : {}),
          ...(p.inMode ? { inMode: true } : {}),
        })),
      }));
  }

  async hasSession(name: string): Promise<boolean> {
    this.record({ op: 'hasSession', name });
    return this.serverRunning && this.sessions.has(name);
  }

  async capture(target: PaneTarget, lines: number): Promise<string> {
    this.record({ op: 'capture', target, lines });
    this.mustPane(target);
    return lastScreenLines(this.screenOf(target), lines);
  }

  async captureScreen(target: PaneTarget): Promise<{ text: string; width: number; height: number }> {
    this.record({ op: 'captureScreen', target });
    const p = this.mustPane(target);
    const height = p.height ?? 24;
    return { text: lastScreenLines(this.screenOf(target), height), width: p.width ?? 80, height };
  }

  async captureMany(paneIds: readonly string[], lines: number): Promise<Record<string, string>> {
    const screens: Record<string, string> = {};
    for (const id of paneIds) {
      const screen = await this.capture({ pane: id }, lines).catch(() => null);
      if (screen !== null) screens[id] = screen;
    }
    return screens;
  }

  async sendLiteral(
    target: PaneTarget,
    text: string,
    opts: { enter?: boolean; keys?: readonly string[] } & TypingOptions = {},
  ): Promise<void> {
    const keys = opts.keys && opts.keys.length > 0 ? { keys: [...opts.keys] } : {};
    this.record({ op: 'sendLiteral', target, text, enter: opts.enter ?? false, ...keys, ...leaving(opts) });
    const p = this.typingPane(target, opts);
    if (p.inMode) return;
    this.typeInto(p, text);
    if (opts.enter) this.pressEnter(p);
    this.pressKeys(p, opts.keys ?? []);
  }

  async sendKeys(target: PaneTarget, keys: readonly string[], opts: TypingOptions = {}): Promise<void> {
    this.record({ op: 'sendKeys', target, keys: [...keys], ...leaving(opts) });
    const p = this.typingPane(target, opts);
    if (p.inMode) return;
    this.pressKeys(p, keys);
  }

  private pressKeys(p: FakePane, keys: readonly string[]): void {
    for (const key of keys) {
      if (key === 'Enter' || key === 'C-m') this.pressEnter(p);
      else if (key === 'C-u' || key === 'C-c') p.input = '';
    }
  }

  async paste(target: PaneTarget, text: string, opts: PasteOptions): Promise<void> {
    this.record({ op: 'paste', target, text, bracketed: opts.bracketed, ...leaving(opts) });
    const p = this.typingPane(target, opts);
    if (p.prompt !== null) p.input += text;
    else p.screen.push(...text.split('\n'));
  }

  async newSession(opts: NewSessionOptions): Promise<{ name: string; paneId: string }> {
    this.record({ op: 'newSession', opts });
    const name = opts.name.replace(/[.:]/g, '_');
    if (this.serverRunning && this.sessions.has(name)) {
      throw new TmuxError('duplicate_session', `duplicate session: ${name}`);
    }
    const cmd = typeof opts.command === 'string' ? opts.command : opts.command?.join(' ');
    const first = cmd?.split(/\s+/)[0] ?? 'bash';
    const session = this.addSession(name, {
      panes: [
        {
          command: first.slice(first.lastIndexOf('/') + 1),
          ...(cmd ? { startCommand: cmd } : {}),
          ...(opts.cwd ? { path: opts.cwd } : {}),
        },
      ],
    });
    return { name, paneId: session.panes[0]!.id };
  }

  async killSession(name: string): Promise<void> {
    this.record({ op: 'killSession', name });
    if (!this.sessions.delete(name)) throw new TmuxError('no_session', `can't find session: ${name}`);
  }

  /** Recorded only: the fake's sessions carry no `@svc-*` options. */
  async setSessionOptions(name: string, options: Readonly<Record<string, string>>): Promise<void> {
    this.record({ op: 'setSessionOptions', name, options });
    if (!this.sessions.has(name)) throw new TmuxError('no_session', `can't find session: ${name}`);
  }

  /** The fake's panes run no process. */
  async panePid(): Promise<number | null> {
    return null;
  }

  async killServer(): Promise<void> {
    this.record({ op: 'killServer' });
    this.sessions.clear();
    this.serverRunning = false;
  }

  /** Marks the session attached and returns 0 at once (a real client would stay until it detaches). */
  async attach(name: string): Promise<number> {
    this.record({ op: 'attach', name });
    const session = this.sessions.get(name);
    if (!this.serverRunning || !session) throw new TmuxError('no_session', `can't find session: ${name}`);
    session.attached = true;
    return 0;
  }

  // -------------------------------------------------------------------------

  private makePane(p: Partial<Omit<FakePane, 'id'>>): FakePane {
    const pane: FakePane = {
      id: `%${this.nextPane++}`,
      command: p.command ?? 'bash',
      active: p.active ?? false,
      screen: p.screen ?? [],
      prompt: p.prompt === undefined ? null : p.prompt,
      input: p.input ?? '',
      submitted: p.submitted ?? [],
      swallowEnters: p.swallowEnters ?? 0,
      newlineEnters: p.newlineEnters ?? 0,
      inMode: p.inMode ?? false,
    };
    if (p.frame !== undefined) pane.frame = p.frame;
    if (p.startCommand !== undefined) pane.startCommand = p.startCommand;
    if (p.path !== undefined) pane.path = p.path;
    if (p.title !== undefined) pane.title = p.title;
    return pane;
  }

  private record(call: FakeTmuxCall): void {
    this.calls.push(call);
    const i = this.failures.findIndex((f) => f.op === call.op);
    if (i >= 0) {
      const [failure] = this.failures.splice(i, 1);
      throw failure!.error;
    }
  }

  private mustPane(target: PaneTarget): FakePane {
    if (!this.serverRunning) throw new TmuxError('no_server', 'no server running');
    const p = this.pane(target);
    if (!p) {
      const what = typeof target === 'string' ? `session: ${target}` : `pane: ${target.pane}`;
      throw new TmuxError('no_session', `can't find ${what}`);
    }
    return p;
  }

  /** The pane a typing call reaches, out of its mode when the call asks to leave it. */
  private typingPane(target: PaneTarget, opts: TypingOptions): FakePane {
    const p = this.mustPane(target);
    if (opts.leaveMode) p.inMode = false;
    return p;
  }

  private typeInto(p: FakePane, text: string): void {
    if (p.prompt === null) {
      p.screen.push(text);
      return;
    }
    // typed with send-keys -l, a newline is an Enter
    const parts = text.split(/\r\n|\r|\n/);
    for (const [i, part] of parts.entries()) {
      if (i > 0) this.pressEnter(p);
      p.input += part;
    }
  }

  private pressEnter(p: FakePane): void {
    if (p.prompt === null) return;
    if (p.swallowEnters > 0) {
      p.swallowEnters -= 1;
      return;
    }
    if (p.newlineEnters > 0) {
      p.newlineEnters -= 1;
      p.input += '\n';
      return;
    }
    if (p.input === '') return;
    p.submitted.push(p.input);
    p.screen.push(`you said: ${p.input.replaceAll('\n', '⏎')}`);
    p.input = '';
  }
}

const leaving = (opts: TypingOptions) => (opts.leaveMode ? { leaveMode: true as const } : {});

/** A fresh fake with one session per name, each running `command` in a pane with an input line. */
export function fakeTmuxWithAgents(agents: Record<string, string>): FakeTmux {
  const fake = new FakeTmux();
  for (const [name, command] of Object.entries(agents)) fake.addSession(name, { panes: [{ command, prompt: '› ' }] });
  return fake;
}

/**
 * What a reading of these sessions' screens gives when tmux could read every pane: a blank screen each, with
 * `shown` (by pane id) in front. A test leaves a pane out on purpose to make its screen unreadable.
 */
export function readableScreens(
  sessions: readonly SessionRecord[],
  shown: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const blank = sessions.flatMap((s) => s.panes.map((p) => [p.id, ''] as const));
  return { ...Object.fromEntries(blank), ...shown };
}
