/**
 * The session inventory: one tmux query per `inventoryPoll` tick (5 s) whatever the number of sessions (spec 1.4).
 * Every snapshot goes to the listener (which spawns and stops session actors); a report for the relay is asked
 * for only when something changed, when the link comes back, or as a heartbeat every 2 minutes.
 *
 * Between ticks, every `screenWatch` (250 ms) it looks at the agents' screens alone (`watchScreens`: one call
 * through the persistent tmux client, nothing when that client is not up) and takes a full reading at once when a
 * screen changed or a state waits for confirmation (`readingDue`): a state reaches the phone within about a
 * second of the screen showing it. At most one reading per look whatever the panes print; the poll stays the
 * safety net. A reading taken for a look reports a change of state, sessions or panes at once, and leaves what
 * only animates (titles, activity times) to the poll.
 */
import { assign, enqueueActions, fromPromise, setup } from 'xstate';
import type { ApprovalPrompt } from '../core/agents/approvals.js';
import { type DebounceState, readingDue } from '../core/agents/screens.js';
import type { SessionRecord } from '../core/protocol/index.js';
import { inventoryChanged, inventoryChangedMuch } from '../core/sessions/inventory.js';
import { agentPanes, applyScreens, describeInventory, missingAgent } from '../core/sessions/view.js';
import type { LogParams } from './log.js';

/** What one tick read from tmux: the sessions, and the screens of the agent panes worth reading. */
export interface InventoryReading {
  sessions: SessionRecord[];
  /** By pane id: the last lines of the pane. */
  screens: Record<string, string>;
  /** When it was read (epoch ms): the screen debounce counts from it. */
  takenAt: number;
}

export interface InventoryInput {
  /** tmux's default pane title is the host name: a title equal to it is not the agent's own. */
  hostname: string;
  /**
   * The REFRESHes the root sent before this inventory started: one restarted after a failure counts on from there,
   * so input held for a reading is released by its first one (machines/listener.ts `held`).
   */
  asked?: number;
}

export interface InventoryContext {
  hostname: string;
  /** Per session: the screen-state debounce (core/agents/screens.ts). */
  debounce: Record<string, DebounceState>;
  /** Sessions already logged as `no agent in pane`, so the line is written once. */
  missing: string[];
  /** Sessions already logged as having a screen that could not be read, so the line is written once. */
  unreadable: string[];
  /** The snapshot last reported to the relay (null: never reported). */
  reported: SessionRecord[] | null;
  seq: number;
  /** A report is owed at the next snapshot, whatever it contains. */
  owed: 'heartbeat' | 'connect' | 'retry' | null;
  /** Reports the relay rejected in a row: the first is sent again at the next poll, later ones wait for a change. */
  rejected: number;
  /** A REFRESH came while a query was running: that query may predate what was asked about, so run another. */
  again: boolean;
  /** REFRESH requests received so far, and how many had come when the running query began. */
  asked: number;
  answering: number;
  failures: number;
  /** The agent panes the last reading found, which the screen watch looks at. */
  watched: { session: string; pane: string }[];
  /** What started the running query: the poll's tick (or the first, or the link back), a look, or a REFRESH. */
  cause: ReadingCause;
}

export type ReadingCause = 'tick' | 'look' | 'ask';

export type InventoryEvent =
  | { type: 'REFRESH' } // look now (a push named a session we have not seen yet)
  | { type: 'LOOK' } // internal: the screen watch saw a change; unlike REFRESH it answers no request
  | { type: 'WATCH' } // internal: a reading found agent panes to watch
  | { type: 'FORCE_REPORT' } // the relay link came back: it must hear the inventory again
  | { type: 'REJECTED' } // the relay rejected a report (spec 7): it does not hold what was sent
  | { type: 'PERSISTED' } // the relay kept a report
  | { type: 'REPORTED' }; // internal: a report went out, so the heartbeat counts from now

/** Events the inventory sends its parent. */
export type InventoryOutEvent =
  /**
   * `answers`: how many REFRESH requests had come when this reading began; it is newer than each of them.
   * `approvalOnScreen`: the sessions showing an approval prompt in this reading (before any debounce).
   * `unreadable`: the sessions whose screen should have been read and could not be (messages are refused).
   * `midTurn`: the sessions whose agent is in a turn in this reading and types a message only after it
   * (`AgentSpec.typeAfterTurn`): their pushes wait.
   */
  | {
      type: 'INVENTORY.SNAPSHOT';
      sessions: SessionRecord[];
      answers: number;
      approvalOnScreen: string[];
      /** What each of those prompts asks (core/agents/approvals.ts). */
      approvals: Record<string, ApprovalPrompt>;
      unreadable: string[];
      midTurn: string[];
      /** Why it was taken: the listener ticks the scheduler only on the poll's readings. */
      cause: ReadingCause;
      /** When it was read (epoch ms). */
      takenAt: number;
    }
  | {
      type: 'INVENTORY.REPORT';
      sessions: SessionRecord[];
      seq: number;
      reason: 'change' | 'heartbeat' | 'connect' | 'retry';
    };

export const inventoryMachine = setup({
  types: { context: {} as InventoryContext, events: {} as InventoryEvent, input: {} as InventoryInput },
  actors: {
    listSessions: fromPromise<InventoryReading>(async () => ({ sessions: [], screens: {}, takenAt: 0 })),
    /** The agent panes' screens by pane id, or null when no cheap look is possible (then only the poll reads). */
    watchScreens: fromPromise<Record<string, string> | null, { panes: string[] }>(async () => null),
  },
  actions: {
    log: (_, _params: LogParams) => {},
  },
  guards: {
    queryAgain: ({ context }) => context.again,
    watching: ({ context }) => context.watched.length > 0,
  },
  delays: {
    inventoryPoll: 5_000,
    screenWatch: 250,
    heartbeat: 120_000,
  },
}).createMachine({
  id: 'inventory',
  type: 'parallel',
  context: ({ input }) => ({
    hostname: input?.hostname ?? '',
    debounce: {},
    missing: [],
    unreadable: [],
    reported: null,
    seq: 0,
    owed: null,
    rejected: 0,
    again: false,
    asked: input.asked ?? 0,
    answering: input.asked ?? 0,
    failures: 0,
    watched: [],
    cause: 'tick',
  }),
  states: {
    poll: {
      initial: 'querying',
      states: {
        querying: {
          entry: assign({ answering: ({ context }) => context.asked }),
          on: { REFRESH: { actions: assign({ again: true, asked: ({ context }) => context.asked + 1 }) } },
          invoke: {
            src: 'listSessions',
            onDone: {
              target: 'waiting',
              actions: enqueueActions(({ context, event, enqueue }) => {
                const { screens, takenAt } = event.output;
                const described = describeInventory(event.output.sessions, context.hostname);
                const read = applyScreens(described, screens, context.debounce, takenAt);
                const sessions = read.sessions;
                const watched = agentPanes(described);
                enqueue.assign({ debounce: read.debounce, watched });
                if (watched.length > 0) enqueue.raise({ type: 'WATCH' });
                const missing: string[] = [];
                for (const record of event.output.sessions) {
                  const line = missingAgent(record);
                  if (!line) continue;
                  missing.push(record.name);
                  if (!context.missing.includes(record.name))
                    enqueue({ type: 'log', params: { level: 'warn', message: `${record.name}: ${line}` } });
                }
                enqueue.assign({ missing });
                for (const name of read.unreadable) {
                  if (context.unreadable.includes(name)) continue;
                  const message = `${name}: its screen could not be read; messages are refused (screen_unreadable) until it can`;
                  enqueue({ type: 'log', params: { level: 'warn', message } });
                }
                enqueue.assign({ unreadable: read.unreadable });
                enqueue.sendParent({
                  type: 'INVENTORY.SNAPSHOT',
                  sessions,
                  answers: context.answering,
                  approvalOnScreen: read.approvalOnScreen,
                  approvals: read.approvals,
                  unreadable: read.unreadable,
                  midTurn: read.midTurn,
                  cause: context.cause,
                  takenAt,
                });
                const changed = (context.cause === 'look' ? inventoryChangedMuch : inventoryChanged)(
                  context.reported,
                  sessions,
                );
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
          always: { guard: 'queryAgain', target: 'querying', actions: assign({ again: false, cause: 'ask' }) },
          after: { inventoryPoll: { target: 'querying', actions: assign({ cause: 'tick' }) } },
          on: {
            REFRESH: {
              target: 'querying',
              actions: assign({ asked: ({ context }) => context.asked + 1, cause: 'ask' }),
            },
            LOOK: { target: 'querying', actions: assign({ cause: 'look' }) },
          },
        },
      },
      on: {
        FORCE_REPORT: { actions: assign({ owed: 'connect', cause: 'tick' }), target: '.querying' },
        // A rejected report is sent once more at the next poll, not at the next change or heartbeat (minutes
        // later): the phone would show an old inventory. One that is rejected again waits for those, so a relay
        // that refuses every report is not sent the same one every 5 s.
        REJECTED: {
          actions: assign({
            owed: ({ context }) => (context.rejected === 0 ? (context.owed ?? 'retry') : context.owed),
            rejected: ({ context }) => context.rejected + 1,
          }),
        },
        PERSISTED: { actions: assign({ rejected: 0 }) },
      },
    },
    watch: {
      description:
        'Every screenWatch, a look at the agent panes alone; a screen that changed (or a state to confirm) asks ' +
        'for a full reading now. A look while a reading runs changes nothing: the next look sees what is left.',
      initial: 'off',
      states: {
        off: {
          description: 'No agent pane to look at: no timer runs until a reading finds one.',
          on: { WATCH: 'resting' },
        },
        resting: {
          after: {
            screenWatch: [{ guard: 'watching', target: 'looking' }, { target: 'off' }],
          },
        },
        looking: {
          invoke: {
            src: 'watchScreens',
            input: ({ context }) => ({ panes: context.watched.map((w) => w.pane) }),
            onDone: {
              target: 'resting',
              actions: enqueueActions(({ context, event, enqueue }) => {
                if (event.output && readingDue(context.watched, event.output, context.debounce))
                  enqueue.raise({ type: 'LOOK' });
              }),
            },
            onError: { target: 'resting' },
          },
        },
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
