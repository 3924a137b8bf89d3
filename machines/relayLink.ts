/**
 * The listener's link to the relay: connecting → online ⇄ backoff; authentication failures stop retrying.
 *
 * The socket itself is the `relaySocket` callback actor (actors/relay/socket.ts), invoked while the machine is in
 * `connection`, so leaving that state always closes the socket. A ping/pong watchdog catches half-open sockets.
 */
import { assign, enqueueActions, fromCallback, sendParent, sendTo, setup } from 'xstate';
import { backoffDelay, RELAY_BACKOFF } from '../core/backoff.js';
import type { ClientFrame, RelayFrame } from '../core/protocol/index.js';
import { AUTH_CLOSE_CODES, CLOSE } from '../core/protocol/index.js';
import type { LogParams } from './log.js';

export interface RelayLinkInput {
  wsUrl: string;
  apiKey: string;
  hookId: string;
  version: string;
  lastPushId: number;
  /** push.result frames the relay has not acknowledged yet (from the ledger at start): sent once online. */
  unacked?: ClientFrame[];
  /** In [0, 1): jitter source, swapped in tests. */
  random?: () => number;
}

/** What the `relaySocket` actor is started with. */
export interface RelaySocketInput {
  wsUrl: string;
  apiKey: string;
  subscribe: ClientFrame;
}

export interface RelayLinkContext {
  wsUrl: string;
  apiKey: string;
  hookId: string;
  version: string;
  lastPushId: number;
  random: () => number;
  /** Failures in a row; reset when a subscription succeeds. */
  attempt: number;
  /**
   * push.result frames the relay has not acknowledged (`push.ack`), one per push id, oldest first: they must reach
   * the sender, so they are kept while offline, sent when online, and sent again every resultRetry until acked.
   */
  unacked: PushResultFrame[];
  /**
   * The ends of asks (`ask.closed`, machines/ask.ts) that came while offline: the phones must learn an ask is over,
   * so they are kept and sent once when online (the relay acknowledges none of them).
   */
  held: ClientFrame[];
  lastError: string | null;
  /** The relay's replay window, learnt from its `subscribed` frame. */
  replayWindowMs: number | null;
}

export type RelayLinkEvent =
  // from the socket actor
  | { type: 'SOCKET.OPEN' }
  /** `receivedAt`: when the socket read it (epoch ms); the per-session rate limit counts arrivals. */
  | { type: 'SOCKET.FRAME'; frame: RelayFrame; receivedAt: number }
  | { type: 'SOCKET.PONG' }
  | { type: 'SOCKET.CLOSED'; code: number; reason: string }
  | { type: 'SOCKET.REJECTED'; status: number }
  | { type: 'SOCKET.ERROR'; message: string }
  | { type: 'SOCKET.BAD_FRAME'; message: string }
  // from the listener
  | { type: 'SEND'; frame: ClientFrame }
  | { type: 'ACTED'; lastPushId: number }
  | { type: 'RECONNECT_NOW' };

type PushResultFrame = Extract<ClientFrame, { type: 'push.result' }>;

/** The unacknowledged results with `frame` added (replacing an older one for the same push). */
function withResult(unacked: readonly PushResultFrame[], frame: ClientFrame): PushResultFrame[] {
  if (frame.type !== 'push.result') return [...unacked];
  return [...unacked.filter((f) => f.id !== frame.id), frame];
}

/** At most this many frames are held while offline; the oldest go first (a link down for a day holds no backlog). */
export const MAX_HELD_FRAMES = 50;

/** Frames the socket actor accepts. */
export type RelaySocketCommand = { type: 'SEND'; frame: ClientFrame } | { type: 'PING' };

/** Close codes after which retrying cannot help, in words a person can act on. */
export function closeExplanation(code: number): string {
  switch (code) {
    case CLOSE.unauthorized:
      return 'relay refused the API key (4401); run `svc login` with a valid key';
    case CLOSE.forbidden:
      return (
        'relay refused this key as the listener of this computer (4403): it lacks push:read, or the computer ' +
        'belongs to the key it first logged in with; run `svc login` with that key (or another --name)'
      );
    case CLOSE.unknownComputer:
      return 'relay does not know this computer (4404); run `svc login` again';
    case CLOSE.replaced:
      return 'another listener subscribed as this computer (4409)';
    default:
      return `relay closed the link (${code})`;
  }
}

const isAuthFailure = (code: number) => AUTH_CLOSE_CODES.has(code) || code === CLOSE.replaced;

export const relayLinkMachine = setup({
  types: {
    context: {} as RelayLinkContext,
    input: {} as RelayLinkInput,
    events: {} as RelayLinkEvent,
  },
  actors: {
    // Replaced by the real WebSocket in actors/relay/socket.ts, and by a fake in unit tests.
    relaySocket: fromCallback<RelaySocketCommand, RelaySocketInput>(() => () => {}),
  },
  actions: {
    log: (_, _params: LogParams) => {},
    hold: assign({
      held: ({ context, event }) =>
        event.type === 'SEND' ? [...context.held, event.frame].slice(-MAX_HELD_FRAMES) : context.held,
    }),
    /** A frame from the relay while online: an ack settles a result; every frame goes to the listener. */
    takeFrame: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'SOCKET.FRAME') return;
      const { frame } = event;
      if (frame.type === 'push.ack') enqueue.assign({ unacked: context.unacked.filter((f) => f.id !== frame.id) });
      enqueue.sendParent({ type: 'LINK.FRAME', frame, receivedAt: event.receivedAt });
    }),
  },
  delays: {
    openTimeout: 15_000,
    pingInterval: 25_000,
    pongTimeout: 10_000,
    resultRetry: 5_000,
    reconnect: ({ context }) => backoffDelay(context.attempt, RELAY_BACKOFF, context.random()),
  },
  guards: {
    authRejected: ({ event }) => event.type === 'SOCKET.REJECTED' && (event.status === 401 || event.status === 403),
    authClosed: ({ event }) => event.type === 'SOCKET.CLOSED' && isAuthFailure(event.code),
    isSubscribed: ({ event }) => event.type === 'SOCKET.FRAME' && event.frame.type === 'subscribed',
    isResult: ({ event }) => event.type === 'SEND' && event.frame.type === 'push.result',
    /**
     * Kept while offline (or not online yet, at start) and sent once online: the end of an ask (machines/ask.ts),
     * and a notification (a scheduled run missed while the computer slept is found at the listener's first look,
     * before its link is up; a `svc_notify` while the relay restarts).
     */
    isHeld: ({ event }) =>
      event.type === 'SEND' && (event.frame.type === 'ask.closed' || event.frame.type === 'notify.new'),
  },
}).createMachine({
  id: 'relayLink',
  context: ({ input }) => ({
    wsUrl: input.wsUrl,
    apiKey: input.apiKey,
    hookId: input.hookId,
    version: input.version,
    lastPushId: input.lastPushId,
    random: input.random ?? Math.random,
    attempt: 0,
    unacked: (input.unacked ?? []).filter((f): f is PushResultFrame => f.type === 'push.result'),
    held: [],
    lastError: null,
    replayWindowMs: null,
  }),
  initial: 'connection',
  on: {
    ACTED: { actions: assign({ lastPushId: ({ context, event }) => Math.max(context.lastPushId, event.lastPushId) }) },
  },
  states: {
    connection: {
      description: 'A socket is open or opening; leaving this state closes it.',
      invoke: {
        id: 'socket',
        src: 'relaySocket',
        input: ({ context }) => ({
          wsUrl: context.wsUrl,
          apiKey: context.apiKey,
          subscribe: {
            type: 'subscribe',
            role: 'listener',
            hookId: context.hookId,
            lastPushId: context.lastPushId,
            version: context.version,
          },
        }),
      },
      initial: 'opening',
      on: {
        'SOCKET.REJECTED': [
          {
            guard: 'authRejected',
            target: 'stopped',
            actions: assign({
              lastError: ({ event }) =>
                `relay refused the API key (HTTP ${event.status}); run \`svc login\` with a valid key`,
            }),
          },
          { target: 'backoff', actions: assign({ lastError: ({ event }) => `relay answered HTTP ${event.status}` }) },
        ],
        'SOCKET.CLOSED': [
          {
            guard: 'authClosed',
            target: 'stopped',
            actions: assign({ lastError: ({ event }) => closeExplanation(event.code) }),
          },
          {
            target: 'backoff',
            actions: assign({ lastError: ({ event }) => `socket closed (${event.code} ${event.reason})`.trim() }),
          },
        ],
        'SOCKET.ERROR': { target: 'backoff', actions: assign({ lastError: ({ event }) => event.message }) },
        'SOCKET.BAD_FRAME': {
          actions: { type: 'log', params: ({ event }) => ({ level: 'warn', message: event.message }) },
        },
        RECONNECT_NOW: { target: 'backoff', actions: assign({ lastError: 'reconnect requested' }) },
      },
      states: {
        opening: {
          after: {
            openTimeout: {
              target: '#relayLink.backoff',
              actions: assign({ lastError: 'timed out opening the socket' }),
            },
          },
          on: {
            'SOCKET.FRAME': [
              {
                guard: 'isSubscribed',
                target: 'online',
                actions: [
                  assign({
                    attempt: 0,
                    lastError: null,
                    replayWindowMs: ({ event }) =>
                      event.type === 'SOCKET.FRAME' && event.frame.type === 'subscribed'
                        ? event.frame.replayWindowMs
                        : null,
                  }),
                  {
                    type: 'log',
                    params: ({ context }) => ({ level: 'info', message: `connected to ${context.wsUrl}` }),
                  },
                ],
              },
              {
                actions: sendParent(({ event }) => ({
                  type: 'LINK.FRAME',
                  frame: event.frame,
                  receivedAt: event.receivedAt,
                })),
              },
            ],
            SEND: [
              {
                guard: 'isResult',
                actions: assign({ unacked: ({ context, event }) => withResult(context.unacked, event.frame) }),
              },
              { guard: 'isHeld', actions: 'hold' },
            ],
          },
        },
        online: {
          description:
            'Subscribed: frames flow both ways; a ping every pingInterval must be answered within pongTimeout.',
          entry: [
            sendParent(({ context }) => ({ type: 'LINK.ONLINE', replayWindowMs: context.replayWindowMs })),
            enqueueActions(({ context, enqueue }) => {
              for (const frame of context.unacked) enqueue.sendTo('socket', { type: 'SEND', frame });
              for (const frame of context.held) enqueue.sendTo('socket', { type: 'SEND', frame });
              enqueue.assign({ held: [] });
            }),
          ],
          exit: sendParent(({ context }) => ({ type: 'LINK.OFFLINE', reason: context.lastError ?? 'link lost' })),
          on: {
            'SOCKET.FRAME': { actions: 'takeFrame' },
            SEND: [
              {
                guard: 'isResult',
                actions: [
                  assign({ unacked: ({ context, event }) => withResult(context.unacked, event.frame) }),
                  sendTo('socket', ({ event }) => ({ type: 'SEND', frame: event.frame })),
                ],
              },
              { actions: sendTo('socket', ({ event }) => ({ type: 'SEND', frame: event.frame })) },
            ],
          },
          type: 'parallel',
          states: {
            watchdog: {
              initial: 'quiet',
              states: {
                quiet: {
                  after: { pingInterval: 'awaitingPong' },
                },
                awaitingPong: {
                  entry: sendTo('socket', { type: 'PING' }),
                  // A frame proves the socket alive, and is taken like any other: a region's own transition
                  // stands in for the parallel state's, so this one must take it too.
                  on: { 'SOCKET.PONG': 'quiet', 'SOCKET.FRAME': { target: 'quiet', actions: 'takeFrame' } },
                  after: {
                    pongTimeout: {
                      target: '#relayLink.backoff',
                      actions: assign({ lastError: 'no pong from the relay: the socket is half-open' }),
                    },
                  },
                },
              },
            },
            results: {
              description:
                'Results the relay has not acknowledged (dropped by a rate limit, lost with a socket) are sent again.',
              initial: 'waiting',
              states: {
                waiting: {
                  after: {
                    resultRetry: {
                      target: 'waiting',
                      reenter: true,
                      actions: enqueueActions(({ context, enqueue }) => {
                        for (const frame of context.unacked) enqueue.sendTo('socket', { type: 'SEND', frame });
                      }),
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
    backoff: {
      description: 'Waiting before the next attempt: exponential from 1 s, capped at 30 s, with jitter.',
      entry: [
        {
          type: 'log',
          params: ({ context }) => ({ level: 'warn', message: `relay link down: ${context.lastError}; retrying` }),
        },
      ],
      exit: assign({ attempt: ({ context }) => context.attempt + 1 }),
      after: { reconnect: 'connection' },
      on: {
        RECONNECT_NOW: 'connection',
        SEND: [
          {
            guard: 'isResult',
            actions: assign({ unacked: ({ context, event }) => withResult(context.unacked, event.frame) }),
          },
          { guard: 'isHeld', actions: 'hold' },
        ],
      },
    },
    stopped: {
      description: 'The relay refused this key or another listener took over: retrying cannot help.',
      entry: [
        {
          type: 'log',
          params: ({ context }) => ({
            level: 'error',
            message: `${context.lastError}; not retrying`,
          }),
        },
        sendParent(({ context }) => ({ type: 'LINK.STOPPED', reason: context.lastError ?? 'stopped' })),
      ],
    },
  },
});
