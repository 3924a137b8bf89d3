/**
 * The session inventory: one tmux query per `inventoryPoll` tick (5 s) whatever the number of sessions (spec 1.4).
 * Every snapshot goes to the listener (which spawns and stops session actors); a report for the relay is asked
 * for only when something changed, when the link comes back, or as a heartbeat every 2 minutes.
 */
import { assign, enqueueActions, fromPromise, setup } from 'xstate';
import { inventoryChanged } from '../core/inventory.js';
import type { SessionRecord } from '../core/protocol.js';
import type { LogParams } from './log.js';

export interface InventoryContext {
  /** The snapshot last reported to the relay (null: never reported). */
  reported: SessionRecord[] | null;
  seq: number;
  /** A report is owed at the next snapshot, whatever it contains. */
  owed: 'heartbeat' | 'connect' | null;
  failures: number;
}

export type InventoryEvent =
  | { type: 'REFRESH' } // look now (a push named a session we have not seen yet)
  | { type: 'FORCE_REPORT' } // the relay link came back: it must hear the inventory again
  | { type: 'REPORTED' }; // internal: a report went out, so the heartbeat counts from now

/** Events the inventory sends its parent. */
export type InventoryOutEvent =
  | { type: 'INVENTORY.SNAPSHOT'; sessions: SessionRecord[] }
  | { type: 'INVENTORY.REPORT'; sessions: SessionRecord[]; seq: number; reason: 'change' | 'heartbeat' | 'connect' };

export const inventoryMachine = setup({
  types: { context: {} as InventoryContext, events: {} as InventoryEvent },
  actors: {
    listSessions: fromPromise<SessionRecord[]>(async () => []),
  },
  actions: {
    log: (_, _params: LogParams) => {},
  },
  delays: {
    inventoryPoll: 5_000,
    heartbeat: 120_000,
  },
}).createMachine({
  id: 'inventory',
  type: 'parallel',
  context: { reported: null, seq: 0, owed: null, failures: 0 },
  states: {
    poll: {
      initial: 'querying',
      states: {
        querying: {
          invoke: {
            src: 'listSessions',
            onDone: {
              target: 'waiting',
              actions: enqueueActions(({ context, event, enqueue }) => {
                const sessions = event.output;
                enqueue.sendParent({ type: 'INVENTORY.SNAPSHOT', sessions });
                const changed = inventoryChanged(context.reported, sessions);
                if (changed || context.owed) {
                  const seq = context.seq + 1;
                  enqueue.sendParent({
                    type: 'INVENTORY.REPORT',
                    sessions,
                    seq,
                    reason: changed ? 'change' : (context.owed ?? 'change'),
                  });
                  enqueue.assign({ reported: sessions, seq, owed: null });
                  enqueue.raise({ type: 'REPORTED' });
                }
                enqueue.assign({ failures: 0 });
              }),
            },
            onError: {
              target: 'waiting',
              actions: [
                assign({ failures: ({ context }) => context.failures + 1 }),
                {
                  type: 'log',
                  params: ({ event }) => ({ level: 'warn', message: `tmux inventory failed: ${String(event.error)}` }),
                },
              ],
            },
          },
        },
        waiting: {
          after: { inventoryPoll: 'querying' },
          on: { REFRESH: 'querying' },
        },
      },
      on: {
        FORCE_REPORT: { actions: assign({ owed: 'connect' }), target: '.querying' },
      },
    },
    heartbeat: {
      description: 'Counts from the last report; when it runs out the next snapshot is reported even if unchanged.',
      initial: 'counting',
      states: {
        counting: {
          after: {
            heartbeat: {
              actions: assign({ owed: ({ context }) => context.owed ?? 'heartbeat' }),
              target: 'counting',
              reenter: true,
            },
          },
          on: { REPORTED: { target: 'counting', reenter: true } },
        },
      },
    },
  },
});
