/**
 * The questions agents ask through `svc_ask` and the notifications of `svc_notify` (docs/mcp.md), as this phone
 * sees them: `ask.new` frames opened with the computer's pinned key, answers sealed for it and sent as
 * `ask.answer`, `ask.closed` and `ask.result` applied. Kept in memory: the relay shows the phone every ask still
 * waiting when it subscribes again, and keeps every notification in its inbox (`GET /notifications`, fetched at
 * each connection), so nothing here needs to survive a reload.
 */
import type { RelayFrame } from '../../../core/protocol/index.js';
import { parseBody, request } from './api.js';
import { unopenedText } from './device.js';
import type { App } from './state.js';

type AskNewFrame = Extract<RelayFrame, { type: 'ask.new' }>;

export interface AskView {
  computer: string;
  id: string;
  session: string;
  /** Phone clock: when the ask ends, from the `leftMs` of the latest frame. */
  endsAt: number;
  envelope: unknown;
  /** Opened; null until the computer's key is known and it opened. */
  question: string | null;
  choices: string[];
  state: 'waiting' | 'sending' | 'answered' | 'expired';
  /** What this phone answered, when it did. */
  answer: string | null;
  /** Why the answer was not taken, or why the question does not open. */
  problem: string | null;
}

export interface NoteView {
  computer: string;
  id: string;
  session: string;
  kind: string;
  title: string | null;
  message: string | null;
  /** Why it did not open, when it did not. */
  problem?: string;
  at: number;
  /** Arrived while the app ran (shown under Needs you); false: from the relay's inbox, while the app was closed. */
  live: boolean;
  /** Sealed, until the computer's key is known and it opened. */
  envelope?: unknown;
}

/** The inbox keeps this many on the phone (the relay's page, core/notify/push.ts INBOX_PAGE). */
const INBOX_KEPT = 100;

const PROBLEM_TEXT: Record<string, string> = {
  ask_expired: 'Too late: the question had expired.',
  already_answered: 'Already answered.',
  computer_offline: 'The computer is offline; answer again when it is back.',
  not_for_you: 'This question was not sealed for this phone.',
  bad_seal: 'The computer could not open the answer.',
  ask_unknown: 'The computer no longer knows this question.',
  forbidden: 'Not allowed: answering needs a key that may send (push:write).',
};

const apps = new WeakMap<App, Asks>();

/** The asks of an app, made (and listening to frames) the first time. */
export function asksOf(app: App): Asks {
  let asks = apps.get(app);
  if (!asks) {
    asks = new Asks(app);
    apps.set(app, asks);
  }
  return asks;
}

export class Asks {
  readonly asks = new Map<string, AskView>();
  readonly notes: NoteView[] = [];
  private readonly app: App;
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(app: App) {
    this.app = app;
    app.onFrames((frame) => this.onFrame(frame));
    // Keys arrive with the inventory: questions and notifications that came first open then.
    app.subscribe(() => {
      void this.openPending();
      void this.openNotes();
    });
    // The relay's inbox, at each connection: what came while the app was closed or offline.
    app.onSubscribed(() => void this.loadInbox());
  }

  /** Fetches the relay's inbox and keeps what this phone has not seen, newest first (opened once keys are known). */
  private async loadInbox(): Promise<void> {
    let page: Awaited<ReturnType<typeof request<'InboxPage'>>>;
    try {
      page = await request('InboxPage', 'GET', '/notifications', { token: this.app.device.token });
    } catch {
      return; // offline again: the next connection asks again
    }
    const seen = new Set(this.notes.map((n) => `${n.computer}/${n.id}`));
    for (const n of page.notifications) {
      if (seen.has(`${n.computer}/${n.id}`)) continue;
      const { computer, id, session, kind, envelope, at } = n;
      this.notes.push({ computer, id, session, kind, title: null, message: null, at, live: false, envelope });
    }
    this.notes.sort((a, b) => b.at - a.at);
    this.notes.length = Math.min(this.notes.length, INBOX_KEPT);
    await this.openNotes();
    this.app.changed();
  }

  private openingNotes = false;
  /** Opens the notifications still sealed whose computer's key is known (again while new ones came meanwhile). */
  private async openNotes(): Promise<void> {
    if (this.openingNotes) return;
    this.openingNotes = true;
    try {
      const { openFrom } = await import('./crypto.js');
      for (;;) {
        const sealed = this.notes.filter((n) => n.envelope !== undefined && this.app.keyFor(n.computer));
        if (sealed.length === 0) break;
        await this.openSome(sealed, openFrom);
      }
    } finally {
      this.openingNotes = false;
    }
  }

  private async openSome(sealed: NoteView[], openFrom: typeof import('./crypto.js')['openFrom']): Promise<void> {
    for (const note of sealed) {
      try {
        const opened = await openFrom(this.app.device, this.app.keyFor(note.computer)!, 'notify', note.envelope);
        const body = await parseBody('NotifyBody', opened);
        note.title = body.title ?? null;
        note.message = body.message;
      } catch (error) {
        note.problem = unopenedText('This notification', error);
      }
      delete note.envelope;
    }
    this.app.changed();
  }

  /** Waiting first (soonest to end first), then the ones that ended, newest first. */
  /** Every question that was answered or ran out while the app ran, the oldest first. */
  ended(): AskView[] {
    return [...this.asks.values()]
      .filter((a) => a.state === 'answered' || a.state === 'expired')
      .sort((a, b) => a.endsAt - b.endsAt);
  }

  list(): AskView[] {
    const all = [...this.asks.values()];
    const open = all.filter((a) => a.state === 'waiting' || a.state === 'sending').sort((a, b) => a.endsAt - b.endsAt);
    const done = all.filter((a) => a.state === 'answered' || a.state === 'expired').sort((a, b) => b.endsAt - a.endsAt);
    return [...open, ...done.slice(0, 5)];
  }

  private onFrame(frame: RelayFrame): void {
    if (frame.type === 'ask.new') this.onNew(frame);
    else if (frame.type === 'ask.closed') {
      const ask = this.asks.get(`${frame.computer}/${frame.id}`);
      if (ask && ask.state !== 'answered') this.update(ask, { state: frame.state });
    } else if (frame.type === 'ask.result') {
      const ask = this.asks.get(`${frame.computer}/${frame.id}`);
      if (!ask) return;
      if (frame.state === 'accepted') this.update(ask, { state: 'answered', problem: null });
      else {
        const code = frame.code ?? 'refused';
        const over = code === 'ask_expired' || code === 'already_answered' || code === 'ask_unknown';
        const state = over ? (code === 'already_answered' ? 'answered' : 'expired') : 'waiting';
        this.update(ask, { state, problem: PROBLEM_TEXT[code] ?? `Not taken (${code}).` });
      }
    } else if (frame.type === 'notify.new') void this.onNote(frame);
  }

  private onNew(frame: AskNewFrame): void {
    const key = `${frame.computer}/${frame.id}`;
    const endsAt = Date.now() + frame.leftMs;
    const known = this.asks.get(key);
    if (known) {
      known.endsAt = endsAt;
      this.arm(key, known);
      this.app.changed();
      return;
    }
    const ask: AskView = {
      computer: frame.computer,
      id: frame.id,
      session: frame.session,
      endsAt,
      envelope: frame.envelope,
      question: null,
      choices: [],
      state: 'waiting',
      answer: null,
      problem: null,
    };
    this.asks.set(key, ask);
    this.arm(key, ask);
    void this.openPending();
    this.app.changed();
  }

  /** Ended on this phone's clock too, should the relay's word not come. */
  private arm(key: string, ask: AskView): void {
    clearTimeout(this.timers.get(key));
    this.timers.set(
      key,
      setTimeout(
        () => {
          if (ask.state === 'waiting') this.update(ask, { state: 'expired' });
        },
        Math.max(0, ask.endsAt - Date.now()) + 1_000,
      ),
    );
  }

  private update(ask: AskView, change: Partial<AskView>): void {
    Object.assign(ask, change);
    this.app.changed();
  }

  private opening = false;
  private async openPending(): Promise<void> {
    if (this.opening) return;
    const pending = [...this.asks.values()].filter((a) => a.question === null && this.app.keyFor(a.computer));
    if (pending.length === 0) return;
    this.opening = true;
    try {
      const { openFrom } = await import('./crypto.js');
      for (const ask of pending) {
        const key = this.app.keyFor(ask.computer)!;
        try {
          const body = await parseBody(
            'QuestionBody',
            await openFrom(this.app.device, key, 'ask.question', ask.envelope),
          );
          if (body.id !== ask.id || body.session !== ask.session) throw new Error('not this question');
          this.update(ask, { question: body.question, choices: body.choices });
        } catch (error) {
          this.update(ask, { question: '', problem: unopenedText('This question', error) });
        }
      }
    } finally {
      this.opening = false;
    }
  }

  private async onNote(frame: Extract<RelayFrame, { type: 'notify.new' }>): Promise<void> {
    const key = this.app.keyFor(frame.computer);
    // the inbox may have it already (a reconnect that raced the frame): kept once
    const known = this.notes.findIndex((n) => n.computer === frame.computer && n.id === frame.id);
    if (known >= 0) this.notes.splice(known, 1);
    const note: NoteView = {
      computer: frame.computer,
      id: frame.id,
      session: frame.session,
      kind: frame.kind,
      title: null,
      message: null,
      at: Date.now(),
      live: true,
    };
    try {
      if (!key) throw Object.assign(new Error('no key'), { code: 'no_key' });
      const { openFrom } = await import('./crypto.js');
      const body = await parseBody('NotifyBody', await openFrom(this.app.device, key, 'notify', frame.envelope));
      note.title = body.title ?? null;
      note.message = body.message;
    } catch (error) {
      // shown without its text, and why
      note.problem = unopenedText('This notification', error);
    }
    // the inbox may have brought it while this one opened: kept once, this one
    const again = this.notes.findIndex((n) => n.computer === frame.computer && n.id === frame.id);
    if (again >= 0) this.notes.splice(again, 1);
    this.notes.unshift(note);
    this.notes.length = Math.min(this.notes.length, INBOX_KEPT);
    this.app.changed();
  }

  /** Seal the answer for the computer and send it; the result comes back as `ask.result`. */
  async answer(ask: AskView, text: string, choice?: number, remote = false): Promise<void> {
    if (ask.state !== 'waiting') return;
    const { sealFor } = await import('./crypto.js');
    const body = {
      id: ask.id,
      session: ask.session,
      text,
      sentAt: Date.now(),
      ...(choice === undefined ? {} : { choice }),
      // The person keeps driving this session from the phone (spec 4.13.4): the agent ends each turn with svc_ask.
      ...(remote ? { svcState: 'REMOTE' as const } : {}),
    };
    try {
      const envelope = await sealFor(this.app.device, this.app.keyFor(ask.computer), 'ask.answer', body);
      this.update(ask, { state: 'sending', answer: choice === undefined ? text : (ask.choices[choice] ?? text) });
      const sent = this.app.link.send({
        type: 'ask.answer',
        computer: ask.computer,
        id: ask.id,
        envelope: envelope as never,
      });
      if (!sent) this.update(ask, { state: 'waiting', problem: 'Offline: answer again when the phone is online.' });
    } catch (error) {
      this.update(ask, { problem: (error as Error).message });
    }
  }
}
