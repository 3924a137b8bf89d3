/**
 * The one way the listener's IO code reaches its root machine (machines/listener.ts): the root's own events, typed;
 * a look at its context; and frames for the relay, through the relay link it supervises. The IO adapters are made
 * before the root runs, so the handle is made first and the running root attached to it; until then (and after the
 * root stopped) events are dropped and nothing reaches the relay.
 */
import type { ActorRefFrom } from 'xstate';
import type { ClientFrame } from '../core/protocol/index.js';
import type { Failures } from '../core/supervision.js';
import { type ListenerContext, type ListenerEvent, type listenerMachine, SUPERVISORS } from '../machines/listener.js';

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
      const { supervision, inherited } = root.getSnapshot().context;
      const records: Record<string, Failures> = { ...supervision };
      for (const id of SUPERVISORS) {
        // a supervisor that is off (given up) shows the records it kept last
        const running = root.system.get(id)?.getSnapshot().context as
          | { failures: Record<string, Failures> }
          | undefined;
        Object.assign(records, running ? running.failures : inherited[id]);
      }
      return records;
    },
    toRelay(frame) {
      const relay = root?.system.get('relay');
      if (!relay) return false;
      relay.send({ type: 'SEND', frame });
      return true;
    },
  };
}
