/**
 * What the root listener (machines/listener.ts) is started with, keeps and hears, and the one way its steps act
 * (`RootEnqueue`): the delivery steps (machines/delivery.ts, firstPrompts.ts) are written against these.
 */
import type { AnyActorRef } from 'xstate';
import type { ApprovalPrompt } from '../core/agents/approvals.js';
import type { PinsFile } from '../core/devices/devices.js';
import type { LeaseLeft } from '../core/panes/watchLeases.js';
import type { PhoneRequest } from '../core/protocol/bodies.js';
import type { ClientFrame, RelayFrame, SessionRecord } from '../core/protocol/index.js';
import type { FirstPrompt } from '../core/sessions/firstPrompt.js';
import type { Ledger } from '../core/sessions/ledger.js';
import type { RemoteSessions } from '../core/sessions/remoteMode.js';
import type { ContactRef } from '../core/sessions/routing.js';
import type { Failures } from '../core/supervision.js';
import type { AsksEvent, AsksToListener } from './asks.js';
import type { DevicesEvent, DevicesToListener } from './devices.js';
import type { InventoryEvent, ReadingCause } from './inventory.js';
import type { LogParams } from './log.js';
import type { RelayLinkEvent } from './relayLink.js';
import type { ScheduleKeys } from './schedule.js';
import type { SchedulerEvent } from './scheduler.js';
import type { KeysRef, PhoneRef, SessionKeysResult, SessionResult } from './session.js';
import type { HeldInput, SessionsEvent, SessionsToListener } from './sessions.js';
import type { WatchesEvent } from './watches.js';
import type { WorktreesEvent } from './worktrees.js';

export interface ListenerInput {
  hookId: string;
  wsUrl: string;
  apiKey: string;
  version: string;
  ledger: Ledger;
  /** Pushes older than this (relay clock) are reported expired, never typed (the relay uses the same window). */
  replayWindowMs: number;
  /** This computer's host name (tmux's default pane title). */
  hostname?: string;
  random?: () => number;
  /** The clock failures are timed by (core/supervision.ts); Date.now when absent. */
  now?: () => number;
  /** ~/.svc/devices.json as it was at start: a `device.<id>` actor for each pinned device. */
  pins?: PinsFile;
  /** devices.json exists but cannot be read: fail closed (plaintext refused) until it can. */
  pinsUnreadable?: boolean;
  /** Live panes that were streaming when the listener last stopped, still inside their leases (~/.svc/watches.json). */
  resumeWatches?: LeaseLeft[];
  /**
   * The sessions in sticky REMOTE as last saved (actors/sessions/remoteBook.ts), asked when the sessions' supervisor
   * starts and each time it is started again: they start in REMOTE.
   */
  remote?: () => RemoteSessions;
}

/** `ask`: the number of the REFRESH sent for it; a snapshot that answers it began after the input arrived. */
export type Held = HeldInput & { ask: number };

export interface ListenerContext {
  hookId: string;
  input: ListenerInput;
  ledger: Ledger;
  /** Sessions tmux reported last, by name; each has a `session.<name>` actor under `sessions`. */
  sessions: Record<string, SessionRecord>;
  /** Input waiting for an inventory reading taken after it arrived (see `Held`). */
  held: Held[];
  /** REFRESH requests sent to the inventory. */
  asked: number;
  online: boolean;
  /** Starts from the input; the relay's own window replaces it once the link is up. */
  replayWindowMs: number;
  stopReason: string | null;
  /** The pinned devices as last read from ~/.svc/devices.json or decided by a device actor. */
  pins: PinsFile;
  pinsUnreadable: boolean;
  /** Live panes to start again once connected (core/panes/watchLeases.ts), for the watches; emptied then. */
  resume: LeaseLeft[];
  /** Past sessions (core/sessions/control.ts), as records for the report; the IO side keeps the book. */
  past: SessionRecord[];
  /** The schedules, sealed for the phones (SchedulesBody), reported with the inventory; null: none. */
  schedules: Record<string, unknown> | null;
  /** First prompts of sessions the phone started, by session, until typed (core/sessions/firstPrompt.ts). */
  firstPrompts: Record<string, FirstPrompt>;
  /** How many first prompts were kept: their ids are the negatives of it. */
  launched: number;
  /** The root's own children that failed, by id (core/supervision.ts): when, why, whether given up. */
  supervision: Record<string, Failures>;
  /**
   * Input handed to a session or device actor and not answered yet, by actor id. A child that fails mid-step keeps
   * the snapshot from before the event it failed on, so what it owed is known here, not from it.
   */
  owed: Record<string, Owed[]>;
  /** The records a failed supervisor kept of its children's failures, by its id: for the one started in its place. */
  inherited: Record<string, Record<string, Failures>>;
}

/** Something a child was given and owes an answer for (see `owed`). */
export type Owed =
  | { kind: 'push'; session: string; id: number }
  | { kind: 'keys'; session: string; ref: KeysRef }
  | { kind: 'contact'; deviceId: string; ref: ContactRef };

export type ListenerEvent =
  | { type: 'LINK.FRAME'; frame: RelayFrame; receivedAt: number }
  | { type: 'LINK.ONLINE'; replayWindowMs?: number | null }
  | { type: 'LINK.OFFLINE'; reason: string }
  | { type: 'LINK.STOPPED'; reason: string }
  | {
      type: 'INVENTORY.SNAPSHOT';
      sessions: SessionRecord[];
      answers: number;
      approvalOnScreen: string[];
      approvals?: Record<string, ApprovalPrompt>;
      unreadable?: string[];
      midTurn?: string[];
      /** Why the reading was taken (machines/inventory.ts); absent: a tick. */
      cause?: ReadingCause;
      /** When it was read (epoch ms). */
      takenAt?: number;
    }
  | { type: 'HOLD'; held: HeldInput }
  /** The past sessions changed (actors/sessions/pastSessions.ts): reported with the live ones. */
  | { type: 'PAST.CHANGED'; past: SessionRecord[] }
  /** A phone made or removed a schedule: the scheduler reads the file now, not at the next tick. */
  | { type: 'SCHEDULES.CHANGED' }
  /** The schedules changed and were sealed again (actors/schedules/runs.ts); null: there are none. */
  | { type: 'SCHEDULES.SEALED'; envelope: Record<string, unknown> | null }
  /** A session's approval card, sealed (actors/listener.ts `sealCard`): for its session actor. */
  | { type: 'APPROVAL.SEALED'; session: string; fingerprint: string; envelope: Record<string, unknown> }
  | { type: 'INVENTORY.REPORT'; sessions: SessionRecord[]; seq: number; reason: string }
  | SessionResult
  | SessionKeysResult
  /** A scheduled run's prompt or its end at max-runtime (machines/schedule.ts), typed through its session actor. */
  | ScheduleKeys
  /** The first prompt of a session the phone started, its agent now idle (actors/sessions/newSession.ts). */
  | { type: 'LAUNCH.PROMPT'; session: string; agent: string; text: string; startedAt: number }
  | { type: 'FIRST_PROMPT.EXPIRE'; session: string; id: number }
  /** A child failed (xstate sends this for a child's uncaught error; core/supervision.ts says what is done). */
  | { type: `xstate.error.actor.${string}`; error: unknown }
  /** What a device opened (machines/devices.ts), what a session did (machines/sessions.ts). */
  | DevicesToListener
  | SessionsToListener
  /** A session's or device's actor is down (`session.<name>`, `device.<id>`): what it owes is refused. */
  | { type: 'CHILD.DOWN'; id: string }
  /** A whole family is down (`session`, `device`): its supervisor failed or was given up. */
  | { type: 'FAMILY.DOWN'; family: 'session' | 'device' }
  /** ~/.svc/devices.json changed on disk (`svc devices verify` / `forget`). */
  | { type: 'PINS.LOADED'; pins: PinsFile; unreadable?: boolean }
  /** An ask started, left by the listener before, or cancelled by its asker: for the asks (machines/asks.ts). */
  | Extract<AsksEvent, { type: 'ASK.START' | 'ASK.LEFTOVER' | 'ASK.CANCEL' }>
  /** A frame a supervisor sends to the relay through the link (machines/asks.ts), or an ask's REMOTE. */
  | AsksToListener
  /** `svc_notify` or a listener event, sealed for the phones (actors/mcp/asks.ts). */
  | { type: 'NOTIFY.SEND'; frame: Extract<ClientFrame, { type: 'notify.new' }> }
  /**
   * Sticky REMOTE (spec 4.13, docs/agents.md): `svc remote-hook` saw the phone's prompt (`hook`) or one typed at the
   * keyboard (`keyboard`), or an svc_ask answer said `svcState: REMOTE` (`ask`).
   */
  | { type: 'SESSION.REMOTE'; session: string; on: boolean; why: 'hook' | 'keyboard' | 'ask' }
  | { type: 'STOP' }
  /** Raised after STOP's bookkeeping: the listener ends. */
  | { type: 'HALT' };

/** The root's own actions a step may enqueue (implemented in actors/listener.ts; see machines/listener.ts setup). */
export type RootAction =
  | { type: 'log'; params: LogParams }
  | { type: 'persistLedger'; params: { ledger: Ledger } }
  | { type: 'phoneRequest'; params: { session: string; request: PhoneRequest; ref: PhoneRef; live: boolean } }
  | { type: 'notifyAcked'; params: { id: string; delivered: boolean; reason?: string } }
  | 'abandonAsks';

/** What a step of the root may do, in order: xstate's `enqueue` of the root, as far as the steps use it. */
export interface RootEnqueue {
  (action: RootAction): void;
  assign(values: Partial<ListenerContext>): void;
  raise(event: ListenerEvent, options?: { delay: 'firstPromptWait' }): void;
  sendTo(to: 'relay', event: RelayLinkEvent): void;
  sendTo(to: 'inventory', event: InventoryEvent): void;
  sendTo(to: 'sessions', event: SessionsEvent): void;
  sendTo(to: 'devices', event: DevicesEvent): void;
  sendTo(to: 'watches', event: WatchesEvent): void;
  sendTo(to: 'worktrees', event: WorktreesEvent): void;
  sendTo(to: 'scheduler', event: SchedulerEvent): void;
  sendTo(to: 'asks', event: AsksEvent): void;
}

/** One step of the root for event `E`: what xstate hands an `enqueueActions` of the root machine. */
export type Step<E extends ListenerEvent['type']> = (args: {
  context: ListenerContext;
  event: Extract<ListenerEvent, { type: E }>;
  enqueue: RootEnqueue;
  system: { get(id: string): AnyActorRef | undefined };
}) => void;

/** The supervisor `id` runs: it was not given up (core/supervision.ts). */
export const isUp = (context: ListenerContext, id: string) => !context.supervision[id]?.givenUp;

/** A frame for the relay, as the link takes it. */
export const toRelay = (frame: ClientFrame) => ({ type: 'SEND' as const, frame });
