/**
 * The one way the listener's IO code reaches its root machine (machines/listener.ts): the root's own events, typed;
 * a look at its context; and frames for the relay, through the relay link it supervises. The IO adapters are made
 * before the root runs, so the handle is made first and the running root attached to it; until then (and after the
 * root stopped) events are dropped and nothing reaches the relay.
 */
import type { ActorRefFrom } from 'xstate';
import type { ClientFrame } from '../core/protocol/index.js';
import type { Failures } from '../core/supervision.js';
import type { asksMachine } from '../machines/asks.js';
import type { devicesMachine } from '../machines/devices.js';
import type { ListenerContext, ListenerEvent, listenerMachine } from '../machines/listener.js';
import type { schedulerMachine } from '../machines/scheduler.js';
import type { sessionsMachine } from '../machines/sessions.js';
import type { watchesMachine } from '../machines/watches.js';
import type { worktreesMachine } from '../machines/worktrees.js';

export interface RootHandle {
  /** Tell the root something (an event of its own). */
  send(event: ListenerEvent): void;
  /** The root's context now, or null before it runs. */
  context(): ListenerContext | null;
  /** Send a frame to the relay; false when no relay link is up to take it. */
  toRelay(frame: ClientFrame): boolean;
  /** The children that failed, by actor id: the root's records and its supervisors' (core/supervision.ts). */
  failures(): Record<string, Failures>;
}

export function createRootHandle(): RootHandle & { attach(root: ActorRefFrom<typeof listenerMachine>): void } {
  let root: ActorRefFrom<typeof listenerMachine> | null = null;
  return {
    attach(actor) {
      root = actor;
    },
    send(event) {
      root?.send(event);
    },
    context() {
      return root?.getSnapshot().context ?? null;
    },
    failures() {
      if (!root) return {};
      const asks = root.system.get('asks') as ActorRefFrom<typeof asksMachine> | undefined;
      const devices = root.system.get('devices') as ActorRefFrom<typeof devicesMachine> | undefined;
      const sessions = root.system.get('sessions') as ActorRefFrom<typeof sessionsMachine> | undefined;
      const worktrees = root.system.get('worktrees') as ActorRefFrom<typeof worktreesMachine> | undefined;
      const scheduler = root.system.get('scheduler') as ActorRefFrom<typeof schedulerMachine> | undefined;
      const watches = root.system.get('watches') as ActorRefFrom<typeof watchesMachine> | undefined;
      return {
        ...root.getSnapshot().context.supervision,
        ...asks?.getSnapshot().context.failures,
        ...devices?.getSnapshot().context.failures,
        ...sessions?.getSnapshot().context.failures,
        ...worktrees?.getSnapshot().context.failures,
        ...scheduler?.getSnapshot().context.failures,
        ...watches?.getSnapshot().context.failures,
      };
    },
    toRelay(frame) {
      const relay = root?.system.get('relay');
      if (!relay) return false;
      relay.send({ type: 'SEND', frame });
      return true;
    },
  };
}
