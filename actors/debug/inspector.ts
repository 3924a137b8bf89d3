/**
 * What a running listener shows of itself: fed by XState's inspection API (`createActor(machine, { inspect })`), it
 * keeps the live actor tree and a ring buffer of recent transitions, for the control socket (`svc debug state`,
 * `svc debug events`, `svc debug ui`).
 *
 * It keeps event *types* only, never payloads, and shows each actor's context through a summariser per machine
 * that picks counts, flags and codes: no key, no push body, no typed text, no screen. A machine without a
 * summariser (one added later) shows only its top-level numbers, booleans and list lengths.
 */
import type { AnyActorRef, InspectionEvent } from 'xstate';
import type { ActorView, StateValue, Summary, TransitionRecord } from '../../core/daemon/control.js';
import { TRANSITIONS_KEPT } from '../../core/daemon/control.js';
import { activePane } from '../../core/sessions/inventory.js';
import type { AsksContext } from '../../machines/asks.js';
import type { InventoryContext } from '../../machines/inventory.js';
import type { ListenerContext } from '../../machines/listener.js';
import type { RelayLinkContext } from '../../machines/relayLink.js';
import type { SessionContext } from '../../machines/session.js';
import type { WatchesContext } from '../../machines/watches.js';
import type { WorktreeContext } from '../../machines/worktree.js';
import type { WorktreesContext } from '../../machines/worktrees.js';

export type Summariser = (context: never) => Summary;

const short = (text: string | null | undefined, max = 120): string | null =>
  text === null || text === undefined ? null : text.length > max ? `${text.slice(0, max - 1)}…` : text;

function hostOf(url: string): string | null {
  try {
    return new URL(url).host;
  } catch {
    return null;
  }
}

/** Per machine id. Each returns facts only; adding a field here is a decision about what a person may see. */
export const SUMMARISERS: Record<string, Summariser> = {
  listener: (c: ListenerContext) => ({
    online: c.online,
    sessions: Object.keys(c.sessions).length,
    held: c.held.length,
    lastPushId: c.ledger.lastPushId,
    stopReason: short(c.stopReason),
  }),
  relayLink: (c: RelayLinkContext) => ({
    relay: hostOf(c.wsUrl),
    attempt: c.attempt,
    unacked: c.unacked.length,
    lastPushId: c.lastPushId,
    lastError: short(c.lastError),
  }),
  inventory: (c: InventoryContext) => ({
    seq: c.seq,
    reported: c.reported?.length ?? null,
    owed: c.owed,
    failures: c.failures,
    noAgent: c.missing.length,
  }),
  session: (c: SessionContext) => {
    const pane = c.record.panes.length > 0 ? activePane(c.record) : undefined;
    return {
      agent: c.record.agent ?? null,
      state: c.record.state ?? null,
      attached: c.record.attached,
      foreground: short(pane?.command ?? null, 40),
      panes: c.record.panes.length,
      queued: c.queue.length,
      // pushes held until the agent's turn is over (machines/session.ts `turn`)
      afterTurn: c.parked.length,
      typing: c.current?.id ?? null,
      tokens: c.bucket ? Math.floor(c.bucket.tokens) : null,
    };
  },
  worktrees: (c: WorktreesContext) => ({
    worktrees: Object.keys(c.worktrees).length,
    failed: Object.keys(c.failures).length,
  }),
  watches: (c: WatchesContext) => ({
    live: Object.keys(c.watches).length,
    failed: Object.keys(c.failures).length,
  }),
  asks: (c: AsksContext) => ({
    waiting: Object.keys(c.asks).length,
    finished: Object.keys(c.finished).length,
    failed: Object.keys(c.failures).length,
  }),
  worktree: (c: WorktreeContext) => ({
    slug: c.slug,
    branch: short(c.branch, 80),
    reason: short(c.reason),
  }),
};

/** For machines without a summariser: numbers and booleans, and list/record sizes; strings and objects left out. */
export function genericSummary(context: unknown): Summary {
  const out: Summary = {};
  if (typeof context !== 'object' || context === null) return out;
  for (const [k, v] of Object.entries(context)) {
    if (typeof v === 'number' || typeof v === 'boolean') out[k] = v;
    else if (Array.isArray(v)) out[k] = v.length;
  }
  return out;
}

interface Entry {
  ref: AnyActorRef;
  key: string;
  parent: string | null;
  machine: string | null;
  value: StateValue | null;
  status: ActorView['status'];
  isRoot: boolean;
}

export interface Inspector {
  /** Give this to `createActor(machine, { inspect })`. */
  inspect(event: InspectionEvent): void;
  /** The live tree, parents before children. */
  actors(): ActorView[];
  /** The newest transitions, oldest first. */
  recent(limit?: number): TransitionRecord[];
  /** The type of the last event actor `id` was given (also one it failed on), or null. */
  lastEvent(id: string): string | null;
  /** Called with every transition from now on; returns the unsubscribe. */
  subscribe(listener: (t: TransitionRecord) => void): () => void;
}

/** How many actors' last event is kept (the oldest forgotten first). */
const LAST_EVENTS_KEPT = 1_000;

export interface InspectorOptions {
  capacity?: number;
  now?: () => number;
  summarisers?: Record<string, Summariser>;
}

function logicOf(ref: AnyActorRef): unknown {
  return (ref as { logic?: unknown }).logic;
}

function machineIdOf(ref: AnyActorRef): string | null {
  const logic = logicOf(ref) as { root?: unknown; id?: unknown } | undefined;
  return logic && typeof logic === 'object' && 'root' in logic && typeof logic.id === 'string' ? logic.id : null;
}

export function createInspector(options: InspectorOptions = {}): Inspector {
  const capacity = options.capacity ?? TRANSITIONS_KEPT;
  const now = options.now ?? Date.now;
  const summarisers = options.summarisers ?? SUMMARISERS;
  const entries = new Map<string, Entry>();
  const ring: TransitionRecord[] = [];
  /** The type of the last event each actor (by id) was given, newest last. */
  const lastEvents = new Map<string, string>();
  const listeners = new Set<(t: TransitionRecord) => void>();
  let seq = 0;

  const summarise = (entry: Entry, context: unknown): Summary => {
    if (context === undefined) return {};
    const fn = entry.machine ? summarisers[entry.machine] : undefined;
    try {
      return fn ? fn(context as never) : genericSummary(context);
    } catch {
      return {};
    }
  };

  const displayId = (e: Entry): string => {
    const systemId = (e.ref as { systemId?: string }).systemId;
    if (systemId) return systemId;
    if (e.isRoot) return e.machine ?? e.ref.id;
    return e.ref.id;
  };

  const register = (ref: AnyActorRef): Entry => {
    const existing = entries.get(ref.sessionId);
    if (existing) return existing;
    const entry: Entry = {
      ref,
      key: ref.sessionId,
      parent: ref._parent?.sessionId ?? null,
      machine: machineIdOf(ref),
      value: null,
      status: 'active',
      isRoot: !ref._parent,
    };
    entries.set(ref.sessionId, entry);
    return entry;
  };

  const record = (t: TransitionRecord) => {
    ring.push(t);
    if (ring.length > capacity) ring.splice(0, ring.length - capacity);
    for (const l of listeners) {
      try {
        l(t);
      } catch {
        // a listener's failure is its own
      }
    }
  };

  return {
    inspect(event) {
      try {
        if (event.type === '@xstate.actor') {
          register(event.actorRef as AnyActorRef);
          return;
        }
        if (event.type === '@xstate.event') {
          // the event an actor is about to take: what a child that fails on it was handling (its type only)
          const id = displayId(register(event.actorRef as AnyActorRef));
          lastEvents.delete(id);
          lastEvents.set(id, String((event.event as { type?: unknown } | undefined)?.type ?? 'unknown'));
          if (lastEvents.size > LAST_EVENTS_KEPT) lastEvents.delete(lastEvents.keys().next().value as string);
          return;
        }
        if (event.type !== '@xstate.snapshot') return;
        const entry = register(event.actorRef as AnyActorRef);
        const snapshot = event.snapshot as { status?: ActorView['status']; value?: StateValue; context?: unknown };
        const status = snapshot.status ?? 'active';
        const from = entry.value;
        if (entry.machine) {
          const to = snapshot.value ?? entry.value ?? '';
          entry.value = to;
          entry.status = status;
          record({
            seq: ++seq,
            at: now(),
            actor: displayId(entry),
            key: entry.key,
            parent: entry.parent,
            machine: entry.machine,
            event: String((event.event as { type?: unknown } | undefined)?.type ?? 'unknown'),
            from,
            to,
            status,
            summary: summarise(entry, snapshot.context),
          });
        }
        if (status !== 'active') entries.delete(entry.key);
      } catch {
        // inspection must never disturb the listener
      }
    },
    actors() {
      const out: ActorView[] = [];
      // an actor that threw, and one made in the step it threw in (never started), say no more of themselves: they
      // and what hangs under them are dropped here, not shown as live (xstate 5.33 keeps their last snapshot)
      const running = (e: Entry) => (e.ref as unknown as { _processingStatus?: number })._processingStatus === 1;
      const live = (e: Entry): boolean => {
        if (!running(e)) return false;
        if (e.parent === null) return true;
        const parent = entries.get(e.parent);
        return parent !== undefined && live(parent);
      };
      for (const e of [...entries.values()]) {
        if (!live(e)) {
          if (!running(e)) entries.delete(e.key);
          continue;
        }
        let snapshot: { status?: ActorView['status']; value?: StateValue; context?: unknown };
        try {
          snapshot = e.ref.getSnapshot() ?? {};
        } catch {
          continue;
        }
        const status = snapshot.status ?? e.status;
        if (status !== 'active') continue;
        out.push({
          key: e.key,
          id: displayId(e),
          parent: e.parent,
          machine: e.machine,
          value: e.machine ? (snapshot.value ?? e.value) : null,
          status,
          summary: e.machine ? summarise(e, snapshot.context) : {},
        });
      }
      return out;
    },
    lastEvent(id) {
      return lastEvents.get(id) ?? null;
    },
    recent(limit = capacity) {
      return limit <= 0 ? [] : ring.slice(-limit);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
}
