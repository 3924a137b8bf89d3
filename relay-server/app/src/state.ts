/**
 * The app's state and what changes it: the inventory (fetched, then refreshed on `computers.changed`), computer
 * keys, the messages sent and their outbox, and the link. Views read it and subscribe to `changed`.
 */

import type { CommandBody } from '../../../core/protocol/bodies.js';
import type { RelayFrame } from '../../../core/protocol/index.js';
import { type RelayError, request } from './api.js';
import {
  allMessages,
  type DeviceRecord,
  getKv,
  type Message,
  nextSeq,
  pruneMessages,
  putMessage,
  setKv,
} from './db.js';
import { type KeyView, refreshKeys } from './device.js';
import type { ComputerInfo } from './inventory.js';
import { Link, type LinkState } from './link.js';
import { FINAL, takesStatus } from './messageState.js';

/** An unsent message older than this is not sent by itself any more: the relay would not type it either. */
export const STALE_UNSENT_MS = 120_000;

interface InventoryCache {
  computers: ComputerInfo[];
  /** When the relay last answered (the phone's clock). */
  fetchedAt: number;
  /** The computers' keys as last compared with the pins, so a message can be sealed before the relay answers. */
  keys?: KeyView[];
  /** Computers whose device changed (refused until accepted), kept for the same reason. */
  moved?: KeyView[];
}

type FrameHandler = (frame: RelayFrame) => void;

export class App {
  readonly device: DeviceRecord;
  computers: ComputerInfo[] = [];
  /** When the inventory shown was fetched; null before the first answer. */
  inventoryAt: number | null = null;
  inventoryError: string | null = null;
  keys = new Map<string, KeyView>();
  /** Computers the relay names another device for than the one pinned here, by hookId (device.ts). */
  moved = new Map<string, KeyView>();
  messages: Message[] = [];
  linkState: LinkState = 'connecting';
  /** Set when the relay refused the token: the phone was unpaired. */
  revoked = false;
  readonly link: Link;
  private readonly listeners = new Set<() => void>();
  private readonly frameHandlers = new Set<FrameHandler>();
  private readonly subscribedHandlers = new Set<() => void>();
  /** push.status frames that arrived before the POST that made the push answered. */
  private readonly earlyStatus = new Map<number, { state: Message['state']; code: string | null }>();
  private refreshing: Promise<void> | null = null;
  private refreshAgain = false;
  private pumping = false;
  private pumpTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(device: DeviceRecord) {
    this.device = device;
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    this.link = new Link({
      url: `${scheme}://${location.host}/ws`,
      token: device.token,
      deviceId: device.deviceId,
      onFrame: (frame) => this.onFrame(frame),
      onState: (state) => {
        this.linkState = state;
        this.changed();
      },
      onSubscribed: () => {
        void this.refresh();
        void this.resync();
        this.pump();
        for (const fn of this.subscribedHandlers) fn();
      },
      checkToken: async () => {
        try {
          await request('DeviceListResponse', 'GET', '/devices', { token: device.token });
          return false;
        } catch (error) {
          return (error as RelayError).status === 401;
        }
      },
      onUnauthorized: () => {
        this.revoked = true;
        this.changed();
      },
    });
  }

  async start(): Promise<void> {
    const cached = await getKv<InventoryCache>('inventory');
    if (cached) {
      this.computers = cached.computers;
      this.inventoryAt = cached.fetchedAt;
      this.keys = new Map((cached.keys ?? []).map((k) => [k.deviceId, k]));
      this.moved = new Map((cached.moved ?? []).map((k) => [k.hookId ?? '', k]));
    }
    this.messages = await allMessages();
    // A request cut off by closing the page: try again (same clientId, so never stored twice).
    for (const m of this.messages) if (m.state === 'sending') m.state = 'unsent';
    this.changed();
    this.link.start();
    void this.refresh();
  }

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  onFrames(fn: FrameHandler): () => void {
    this.frameHandlers.add(fn);
    return () => this.frameHandlers.delete(fn);
  }

  /**
   * Each time the link (re)subscribes: frames sent while it was down are not sent again, so a view kept live by
   * frames reads what the relay stored meanwhile.
   */
  onSubscribed(fn: () => void): () => void {
    this.subscribedHandlers.add(fn);
    return () => this.subscribedHandlers.delete(fn);
  }

  changed(): void {
    for (const fn of this.listeners) fn();
  }

  /** The computer's key for sealing (its device in the relay's list, pinned here); a moved computer's is `changed`. */
  keyFor(hookId: string): KeyView | undefined {
    const moved = this.moved.get(hookId);
    if (moved) return moved;
    const deviceId = this.computers.find((c) => c.hookId === hookId)?.deviceId;
    return deviceId ? this.keys.get(deviceId) : undefined;
  }

  /** Fetch computers and keys; calls made while one runs are folded into one more run. */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        try {
          const { computers } = await request('ComputerListResponse', 'GET', '/computers', {
            token: this.device.token,
          });
          const { keys, moved } = await refreshKeys(this.device.token, computers);
          this.computers = computers;
          this.keys = keys;
          this.moved = moved;
          this.inventoryAt = Date.now();
          this.inventoryError = null;
          await setKv('inventory', {
            computers,
            fetchedAt: this.inventoryAt,
            keys: [...keys.values()],
            moved: [...moved.values()],
          } satisfies InventoryCache);
        } catch (error) {
          if ((error as RelayError).status === 401) this.revoked = true;
          this.inventoryError = (error as Error).message;
        }
        this.changed();
      } while (this.refreshAgain);
    })().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private onFrame(frame: RelayFrame): void {
    if (frame.type === 'computers.changed') void this.refresh();
    else if (frame.type === 'push.status') void this.applyStatus(frame.id, frame.state, frame.code);
    for (const fn of this.frameHandlers) fn(frame);
  }

  // -------------------------------------------------------------------------
  // Sending

  /** The message of a session still waiting for the relay to take it, if any. */
  unsentFor(computer: string, session: string): Message | undefined {
    return this.messages.find(
      (m) => m.computer === computer && m.session === session && (m.state === 'unsent' || m.state === 'sending'),
    );
  }

  /**
   * Seal and queue a message. It is in IndexedDB (the outbox) before anything goes out; the same clientId is used
   * for every try, so the relay stores it once however often the request is repeated.
   */
  async send(computer: string, session: string, text: string): Promise<Message> {
    // Sealing's chunk brings the limit (and zod) with it: checked before a stamp is spent.
    const { sealFor, commandTextProblem } = await import('./crypto.js');
    const problem = commandTextProblem(text);
    if (problem) throw new Error(problem.message);
    const seq = await nextSeq('agent.command');
    const body: CommandBody = { text, seq, sentAt: Date.now(), session };
    const envelope = await sealFor(this.device, this.keyFor(computer), 'agent.command', body);
    const message: Message = {
      clientId: `${this.device.deviceId}:${seq}`,
      computer,
      session,
      text,
      seq,
      createdAt: Date.now(),
      envelope,
      state: 'unsent',
      code: null,
      pushId: null,
      updatedAt: Date.now(),
    };
    await this.save(message);
    this.pump();
    return message;
  }

  /** Drop a message the relay has not taken (its text stays in the box). */
  async cancel(clientId: string): Promise<void> {
    const m = this.messages.find((x) => x.clientId === clientId);
    if (m?.state !== 'unsent') return;
    await this.save({ ...m, state: 'expired', code: 'cancelled', envelope: null });
  }

  /**
   * The message as it is now, here at once and then in IndexedDB: what the next status is judged against is never a
   * put behind (two saves in flight used to finish in IndexedDB's order, the stale one last). IndexedDB keeps the
   * puts in the order they were made, so it ends as this list does.
   */
  private async save(message: Message): Promise<void> {
    const i = this.messages.findIndex((m) => m.clientId === message.clientId);
    if (i >= 0) this.messages[i] = message;
    else this.messages.push(message);
    this.changed();
    await putMessage(message);
  }

  /** Send the outbox, oldest first, one at a time (sequence stamps must reach the computer in order). */
  pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    void (async () => {
      try {
        for (;;) {
          const next = this.messages.filter((m) => m.state === 'unsent').sort((a, b) => a.seq - b.seq)[0];
          if (!next) return;
          if (Date.now() - next.createdAt > STALE_UNSENT_MS) {
            await this.save({ ...next, state: 'expired', code: 'never_sent', envelope: null, updatedAt: Date.now() });
            continue;
          }
          if (!(await this.sendOne(next))) {
            if (this.pumpTimer) clearTimeout(this.pumpTimer);
            this.pumpTimer = setTimeout(() => this.pump(), 5_000);
            return;
          }
        }
      } finally {
        this.pumping = false;
      }
    })();
  }

  /** One try; false when it should be tried again later (the relay could not be reached). */
  private async sendOne(m: Message): Promise<boolean> {
    await this.save({ ...m, state: 'sending', updatedAt: Date.now() });
    try {
      const answer = await request('PushSendResponse', 'POST', '/pushes/send', {
        token: this.device.token,
        body: {
          type: 'agent.command',
          agentSessionName: m.session,
          body: '',
          sealed: m.envelope,
          targetComputer: m.computer,
          clientId: m.clientId,
        },
      });
      const early = this.earlyStatus.get(answer.id);
      this.earlyStatus.delete(answer.id);
      await this.save({
        ...m,
        state: early?.state ?? answer.state,
        code: early?.code ?? null,
        pushId: answer.id,
        envelope: null,
        updatedAt: Date.now(),
      });
      // A status may have changed between the answer and our frames: ask once.
      setTimeout(() => void this.poll(answer.id), 1_500);
      return true;
    } catch (error) {
      const e = error as RelayError;
      if (e.status === 0 || e.status >= 500 || e.status === 429) {
        await this.save({ ...m, state: 'unsent', updatedAt: Date.now() });
        return false;
      }
      await this.save({ ...m, state: 'refused', code: e.code, envelope: null, updatedAt: Date.now() });
      return true;
    }
  }

  private async applyStatus(id: number, state: Message['state'], code: string | null): Promise<void> {
    const m = this.messages.find((x) => x.pushId === id);
    if (!m) {
      this.earlyStatus.set(id, { state, code });
      if (this.earlyStatus.size > 100) this.earlyStatus.delete(this.earlyStatus.keys().next().value!);
      return;
    }
    if (!takesStatus(m, state)) return;
    await this.save({ ...m, state, code, updatedAt: Date.now() });
  }

  private async poll(id: number): Promise<void> {
    try {
      const status = await request('PushStatusResponse', 'GET', `/pushes/${id}`, { token: this.device.token });
      await this.applyStatus(id, status.state, status.code);
    } catch {}
  }

  /** After a reconnect: ask for every message whose final state we may have missed. */
  private async resync(): Promise<void> {
    for (const m of this.messages) if (m.pushId !== null && !FINAL.has(m.state)) await this.poll(m.pushId);
    await pruneMessages();
  }
}
