/**
 * The listener's machines driven together with a simulated clock: a fake socket stands in for the relay, a fake
 * inventory for tmux, a fake inject for typing. Integration tests do the same against the real things.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { AnyActorRef } from 'xstate';
import { createActor, fromCallback, fromPromise, SimulatedClock } from 'xstate';
import { createFaults, type FaultRule, parseFaults } from '../../../actors/debug/faults.js';
import type { ClientFrame, RelayFrame, SessionRecord, WirePush } from '../../../core/protocol/index.js';
import { emptyLedger, type Ledger, STOPPED_WHILE_TYPING } from '../../../core/sessions/ledger.js';
import type { RemoteSessions } from '../../../core/sessions/remoteMode.js';
import { FREE_FACTS, type WorktreeFacts } from '../../../core/worktrees/worktree.js';
import { askMachine, type SettledAsk } from '../../../machines/ask.js';
import { asksMachine } from '../../../machines/asks.js';
import { inventoryMachine } from '../../../machines/inventory.js';
import { ACTOR_FAILED, listenerMachine } from '../../../machines/listener.js';
import type { LogParams } from '../../../machines/log.js';
import type { RelayLinkEvent, RelaySocketCommand, RelaySocketInput } from '../../../machines/relayLink.js';
import { MAX_HELD_FRAMES, relayLinkMachine } from '../../../machines/relayLink.js';
import type { InjectInput, InjectOutput } from '../../../machines/session.js';
import { sessionMachine } from '../../../machines/session.js';
import { ACTOR_DOWN, type SessionsContext, sessionsMachine } from '../../../machines/sessions.js';
import type { RemoveOutcome, WorktreeInput } from '../../../machines/worktree.js';
import { worktreeMachine } from '../../../machines/worktree.js';
import { worktreesMachine } from '../../../machines/worktrees.js';
import { readableScreens } from '../../fakes/fakeTmux.js';

const flush = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

function session(name: string, command = 'claude', extra: Partial<SessionRecord> = {}): SessionRecord {
  return {
    name,
    attached: false,
    createdAt: 1,
    activityAt: 1,
    panes: [{ id: `%${name.length}`, command, path: `/work/${name}`, active: true }],
    ...extra,
  };
}

interface HarnessOptions {
  ledger?: Ledger;
  sessions?: SessionRecord[];
  injectFails?: boolean;
  /** Leave the session machine's own `inject` in place, as a listener wired without one would. */
  injectUnwired?: boolean;
  deaf?: boolean;
  /** The relay never acknowledges a result. */
  forgetful?: boolean;
  worktrees?: (WorktreeInput & { repoName: string })[];
  worktreeFacts?: WorktreeFacts;
  /** SVC_FAULT's text: children made to fail by the listener's own switch (actors/debug/faults.ts). */
  faults?: string;
  /** The ask actors throw once an answer that did not open is refused (a fake bug in machines/ask.ts). */
  askFails?: boolean;
  /** The root's `pinsWatch` (a callback actor): by default it does nothing. */
  pinsWatch?: ReturnType<typeof fromCallback>;
  /** ~/.svc/remote.json as the listener before this one left it (core/sessions/remoteMode.ts). */
  remote?: RemoteSessions;
}

type Rooted = { actor: { system: { get(id: string): AnyActorRef | undefined } } };
/** The sessions' supervisor's context (machines/sessions.ts). */
const sessionsContext = (h: Rooted) =>
  h.actor.system.get('sessions')?.getSnapshot().context as SessionsContext | undefined;
/** A session's actor, a child of the sessions' supervisor. */
const sessionActor = (h: Rooted, id: string) =>
  (h.actor.system.get('sessions')?.getSnapshot() as { children: Record<string, AnyActorRef> } | undefined)?.children[
    id
  ];

function harness(opts: HarnessOptions = {}) {
  const clock = new SimulatedClock();
  const state = {
    sockets: [] as {
      input: RelaySocketInput;
      sendBack: (e: RelayLinkEvent) => void;
      sent: RelaySocketCommand[];
      closed: boolean;
    }[],
    sessions: opts.sessions ?? [session('svc-proj')],
    typed: [] as InjectInput[],
    logs: [] as LogParams[],
    persisted: [] as Ledger[],
    markers: [] as string[],
    audits: [] as unknown[],
    removed: [] as string[],
    /** By pane id: what the agent's pane shows (fixtures captured from the real programs). */
    screens: {} as Record<string, string>,
    /** Pane ids whose screen the reading leaves out (tmux could not read it). */
    unreadable: [] as string[],
    hold: null as Promise<void> | null,
    /** While set, typing waits on it (a push being typed when its session ends). */
    typing: null as Promise<void> | null,
    staleOnce: null as SessionRecord[] | null,
    settled: [] as SettledAsk[],
    failures: [] as { id: string; what: string }[],
    /** How many times every waiting ask was ended failed (the asks' supervisor failed). */
    abandoned: 0,
    /** The sessions' supervisor throws at its next log line (a bug in it, not in a session's actor). */
    breakSessions: false,
    /** The sessions in sticky REMOTE as last saved (actors/sessions/remoteBook.ts), and how many saves. */
    remote: opts.remote ?? ({} as RemoteSessions),
    remoteSaves: 0,
  };
  const log = (_: unknown, params: LogParams) => {
    state.logs.push(params);
  };
  const faults = createFaults(opts.faults ? (parseFaults(opts.faults) as { rules: FaultRule[] }).rules : []);
  const machine = listenerMachine.provide({
    actors: faults.children({
      ...(opts.pinsWatch ? { pinsWatch: faults.callback(opts.pinsWatch) } : {}),
      asks: asksMachine.provide({
        actors: opts.askFails
          ? {
              ask: askMachine.provide({
                actions: {
                  nextQueued: () => {
                    throw new Error('a bug in the ask');
                  },
                },
              }),
            }
          : {},
        actions: {
          log,
          settleAsk: (_, params) => {
            state.settled.push(params.output);
          },
          reportFailure: (_, params) => {
            state.failures.push({ id: params.id, what: params.what });
          },
        },
      }),
      relayLink: relayLinkMachine.provide({
        actors: {
          relaySocket: faults.callback(
            fromCallback<RelaySocketCommand, RelaySocketInput>(({ input, sendBack, receive }) => {
              const sock = {
                input,
                sendBack: sendBack as (e: RelayLinkEvent) => void,
                sent: [] as RelaySocketCommand[],
                closed: false,
              };
              state.sockets.push(sock);
              receive((cmd) => {
                sock.sent.push(cmd);
                // A healthy relay answers pings; a `deaf` one leaves the socket half-open.
                if (cmd.type === 'PING' && !opts.deaf) sendBack({ type: 'SOCKET.PONG' });
                // A healthy relay acknowledges each result (a `forgetful` one never does: they are sent again).
                if (cmd.type === 'SEND' && cmd.frame.type === 'push.result' && !opts.forgetful) {
                  sendBack({ type: 'SOCKET.FRAME', frame: { type: 'push.ack', id: cmd.frame.id }, receivedAt: 0 });
                }
              });
              return () => {
                sock.closed = true;
              };
            }),
          ),
        },
        actions: { log },
      }),
      inventory: inventoryMachine.provide({
        actors: {
          listSessions: fromPromise(async () => {
            // A held query answers with what tmux had when it started (`staleOnce`), like a real one in flight.
            if (state.hold) await state.hold;
            const sessions = state.staleOnce ?? state.sessions;
            state.staleOnce = null;
            const screens = readableScreens(sessions, state.screens);
            for (const id of state.unreadable) delete screens[id];
            return { sessions, screens, takenAt: clock.now() };
          }),
        },
        actions: { log },
      }),
      sessions: sessionsMachine.provide({
        actors: {
          session: sessionMachine.provide({
            actors: opts.injectUnwired
              ? {}
              : {
                  inject: fromPromise<InjectOutput, InjectInput>(async ({ input }) => {
                    if (opts.injectFails) throw new Error('tmux said no');
                    if (state.typing) await state.typing;
                    state.typed.push(input);
                    return { submitted: true };
                  }),
                },
            actions: {
              log,
              writeMarker: (_, params) => {
                state.markers.push(params.text);
              },
              auditShellInput: (_, params) => {
                state.audits.push(params);
              },
            },
          }),
        },
        actions: {
          log: (_, params) => {
            if (state.breakSessions) {
              state.breakSessions = false;
              throw new Error('a bug in the sessions supervisor');
            }
            log(_, params);
          },
          reportFailure: (_, params) => {
            state.failures.push({ id: params.id, what: params.what });
          },
          saveRemote: (_, params) => {
            state.remote = params.remote;
            state.remoteSaves++;
          },
        },
      }),
      worktrees: worktreesMachine.provide({
        actors: {
          worktree: worktreeMachine.provide({
            actors: {
              checkWorktree: fromPromise<WorktreeFacts, WorktreeInput>(async () => opts.worktreeFacts ?? FREE_FACTS),
              removeWorktree: fromPromise<RemoveOutcome, WorktreeInput>(async ({ input }) => {
                state.removed.push(input.path);
                return { removed: true };
              }),
            },
            actions: { log },
          }),
          findWorktrees: fromPromise(async () => opts.worktrees ?? []),
        },
        actions: {
          log,
          reportFailure: (_, params) => {
            state.failures.push({ id: params.id, what: params.what });
          },
        },
      }),
    }),
    actions: {
      log,
      persistLedger: (_, params) => {
        state.persisted.push(params.ledger);
      },
      reportFailure: (_, params) => {
        state.failures.push({ id: params.id, what: params.what });
      },
      abandonAsks: () => {
        state.abandoned++;
      },
    },
  });
  const actor = createActor(machine, {
    clock,
    input: {
      hookId: 'c_me',
      wsUrl: 'ws://relay/ws',
      apiKey: 'k',
      version: '0.1.0',
      ledger: opts.ledger ?? emptyLedger(),
      replayWindowMs: 120_000,
      random: () => 0.5,
      now: () => clock.now(),
      remote: () => state.remote,
    },
  });
  const current = () => state.sockets[state.sockets.length - 1]!;
  const frame = (f: RelayFrame) =>
    current().sendBack({ type: 'SOCKET.FRAME', frame: f, receivedAt: 1_000 + clock.now() } as RelayLinkEvent);
  const connect = async () => {
    current().sendBack({ type: 'SOCKET.OPEN' });
    frame({ type: 'subscribed', role: 'listener', computer: 'c_me', replayed: 0, expired: 0, replayWindowMs: 120_000 });
    await flush();
  };
  const push = (p: Partial<WirePush> & { id: number }) =>
    frame({
      type: 'push.new',
      push: {
        type: 'agent.command',
        agentSessionName: 'svc-proj',
        body: `message ${p.id}`,
        targetComputer: null,
        createdAt: 0,
        ageMs: 10,
        replay: false,
        ...p,
      },
    });
  const sentFrames = (): ClientFrame[] =>
    state.sockets.flatMap((s) =>
      s.sent.filter((c) => c.type === 'SEND').map((c) => (c as { frame: ClientFrame }).frame),
    );
  const results = () => sentFrames().filter((f) => f.type === 'push.result');
  actor.start();
  return { actor, clock, state, connect, push, frame, sentFrames, results, current };
}

describe('listener machine', () => {
  it('subscribes with the last acted-on push id and reports the inventory once online', async () => {
    const h = harness({ ledger: { lastPushId: 41, entries: {} } });
    await flush();
    expect(h.current().input.subscribe).toMatchObject({
      type: 'subscribe',
      role: 'listener',
      hookId: 'c_me',
      lastPushId: 41,
    });
    await h.connect();
    const reports = h.sentFrames().filter((f) => f.type === 'listener.sessions');
    expect(reports.length).toBeGreaterThanOrEqual(1);
    expect(reports.at(-1)).toMatchObject({ sessions: [{ name: 'svc-proj' }] });
    expect(h.state.logs.some((l) => l.message === 'reported 1 session(s): svc-proj')).toBe(true);
  });

  it('types an agent.command into its session and answers injected, writing the marker first', async () => {
    const h = harness();
    await flush();
    await h.connect();
    h.push({ id: 1, body: 'fix the tests' });
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['fix the tests']);
    expect(h.state.markers).toEqual(['fix the tests']);
    expect(h.results()).toEqual([{ type: 'push.result', id: 1, state: 'injected' }]);
    // The claim was persisted before typing, the outcome after.
    expect(h.state.persisted[0]!.entries['1']).toEqual({ state: 'claimed' });
    expect(h.state.persisted.at(-1)!.entries['1']).toEqual({ state: 'injected' });
  });

  it('ignores pushes that are not agent.command', async () => {
    const h = harness();
    await flush();
    await h.connect();
    h.push({ id: 1, type: 'note' });
    await flush();
    expect(h.state.typed).toEqual([]);
    expect(h.results()).toEqual([]);
  });

  it('never types the same push twice, and repeats its result instead', async () => {
    const h = harness();
    await flush();
    await h.connect();
    h.push({ id: 7 });
    await flush();
    h.push({ id: 7 });
    await flush();
    expect(h.state.typed).toHaveLength(1);
    expect(h.results().map((r) => r.type === 'push.result' && r.state)).toEqual(['injected', 'injected']);
  });

  it('does not retype a push it was typing when it stopped (claimed in the ledger), and reports it at once', async () => {
    const h = harness({
      ledger: { lastPushId: 3, entries: { '2': { state: 'injected' }, '3': { state: 'claimed' } } },
    });
    await flush();
    // Recorded before anything else, so a second crash cannot lose it either.
    expect(h.state.persisted[0]!.entries['3']).toEqual({ state: 'refused', code: 'inject_failed' });
    expect(h.state.persisted[0]!.unacked).toEqual([3]);
    // The relay will not replay it (the subscribe point is past it): it is reported without being asked.
    await h.connect();
    expect(h.results()).toEqual([
      { type: 'push.result', id: 3, state: 'refused', code: 'inject_failed', message: STOPPED_WHILE_TYPING },
    ]);
    expect(h.state.persisted.at(-1)!.unacked).toEqual([]);
    // Replayed anyway: answered again from the ledger, never typed.
    h.push({ id: 3 });
    await flush();
    expect(h.state.typed).toEqual([]);
    expect(h.results().slice(1)).toMatchObject([{ id: 3, state: 'refused', code: 'inject_failed' }]);
  });

  it('sends a result again until the relay acknowledges it, across a reconnect and a restart', async () => {
    const h = harness({ forgetful: true });
    await flush();
    await h.connect();
    h.push({ id: 4 });
    await flush();
    expect(h.results()).toEqual([{ type: 'push.result', id: 4, state: 'injected' }]);
    expect(h.state.persisted.at(-1)!.unacked).toEqual([4]);
    h.clock.increment(5_000);
    await flush();
    expect(h.results()).toHaveLength(2);
    // The socket drops: the result is sent when the next one is subscribed.
    h.current().sendBack({ type: 'SOCKET.CLOSED', code: 1006, reason: '' });
    h.clock.increment(2_000);
    await flush();
    await h.connect();
    expect(h.results()).toHaveLength(3);
    h.frame({ type: 'push.ack', id: 4 });
    await flush();
    expect(h.state.persisted.at(-1)!.unacked).toEqual([]);
    h.clock.increment(10_000);
    await flush();
    expect(h.results()).toHaveLength(3);
    expect(h.state.typed).toHaveLength(1);

    // A listener that starts from a ledger with an unacknowledged outcome sends it first.
    const again = harness({ ledger: { lastPushId: 9, entries: { '9': { state: 'expired' } }, unacked: [9] } });
    await flush();
    await again.connect();
    expect(again.results()).toEqual([{ type: 'push.result', id: 9, state: 'expired' }]);
  });

  it('reports a push older than the replay window as expired, untyped', async () => {
    const h = harness();
    await flush();
    await h.connect();
    h.push({ id: 2, ageMs: 120_001, replay: true });
    await flush();
    expect(h.state.typed).toEqual([]);
    expect(h.results()).toEqual([{ type: 'push.result', id: 2, state: 'expired' }]);
  });

  it.each([
    ['invalid_target', { agentSessionName: 'svc proj;rm' }, [session('svc-proj')]],
    ['session_not_found', { agentSessionName: 'svc-nope' }, [session('svc-proj')]],
    ['shell_in_front', {}, [session('svc-proj', 'bash')]],
    ['shell_in_front', {}, [session('svc-proj', '-zsh')]],
    ['empty_body', { body: '' }, [session('svc-proj')]],
    [
      'subagent_view_only',
      { agentSessionName: 'svc-proj.1' },
      [session('svc-proj.1', 'claude', { parent: 'svc-proj' })],
    ],
  ] as const)('refuses with %s', async (code, override, sessions) => {
    const h = harness({ sessions: [...sessions] });
    await flush();
    await h.connect();
    h.push({ id: 5, ...override });
    await flush();
    // session_not_found is decided on the second snapshot after the push (the first may predate the session).
    h.clock.increment(5_000);
    await flush();
    expect(h.state.typed).toEqual([]);
    expect(h.results()).toMatchObject([{ id: 5, state: 'refused', code }]);
  });

  it('types a push for a session that appears while an inventory query is already running', async () => {
    const h = harness({ sessions: [session('svc-proj')] });
    await flush();
    await h.connect();
    // Hold the next query: it started before the new session existed, and answers with what it saw then.
    const stale = [...h.state.sessions];
    let release: (() => void) | undefined;
    h.state.hold = new Promise<void>((r) => {
      release = r;
    });
    h.clock.increment(5_000); // the tick starts that query
    await flush();
    h.state.sessions = [...stale, session('svc-new')];
    h.state.staleOnce = stale;
    h.push({ id: 6, agentSessionName: 'svc-new', body: 'for the new one' });
    await flush();
    h.state.hold = null;
    release!();
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['for the new one']);
    expect(h.results()).toMatchObject([{ id: 6, state: 'injected' }]);
  });

  it('judges a push on tmux as it is after the push came: a shell now in front is refused, a program just started is typed', async () => {
    const h = harness({ sessions: [session('svc-proj', 'claude')] });
    await flush();
    await h.connect();
    // The agent quit since the last tick and a shell is in front: its text would run as a command.
    h.state.sessions = [session('svc-proj', 'bash')];
    h.push({ id: 1, body: 'rm -rf build' });
    await flush();
    expect(h.state.typed).toEqual([]);
    expect(h.results()).toMatchObject([{ id: 1, state: 'refused', code: 'shell_in_front' }]);
    // The last tick caught `sh -c cat` before it became cat; by the time the push comes, cat is in front.
    h.state.sessions = [session('svc-proj', 'sh')];
    h.clock.increment(5_000);
    await flush();
    h.state.sessions = [session('svc-proj', 'cat')];
    h.push({ id: 2, body: 'hello' });
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['hello']);
    expect(h.results()).toMatchObject([{ id: 1 }, { id: 2, state: 'injected' }]);
  });

  it('answers everything a session still held when its tmux session ends', async () => {
    const h = harness();
    await flush();
    await h.connect();
    let finishTyping: (() => void) | undefined;
    h.state.typing = new Promise<void>((r) => {
      finishTyping = r;
    });
    h.push({ id: 1 });
    h.push({ id: 2 });
    await flush();
    expect(h.results()).toEqual([]);
    h.state.sessions = [];
    h.clock.increment(5_000);
    await flush();
    expect(h.results()).toMatchObject([
      { id: 1, state: 'refused', code: 'inject_failed' },
      { id: 2, state: 'refused', code: 'session_not_found' },
    ]);
    finishTyping!();
    await flush();
    expect(h.results()).toHaveLength(2);
  });

  it('rate-limits a burst into one session with its token bucket', async () => {
    const h = harness();
    await flush();
    await h.connect();
    for (let id = 1; id <= 13; id++) h.push({ id });
    await flush();
    const states = h.results().map((r) => (r.type === 'push.result' ? (r.code ?? r.state) : ''));
    expect(states.filter((s) => s === 'injected')).toHaveLength(10);
    expect(states.filter((s) => s === 'rate_limited')).toHaveLength(3);
    // In order: the first ten are the ones typed.
    expect(h.state.typed.map((t) => t.text)).toEqual(Array.from({ length: 10 }, (_, i) => `message ${i + 1}`));
  });

  it('reports inject_failed when tmux refuses the keys, and keeps serving', async () => {
    const h = harness({ injectFails: true });
    await flush();
    await h.connect();
    h.push({ id: 1 });
    await flush();
    expect(h.results()).toMatchObject([{ id: 1, state: 'refused', code: 'inject_failed' }]);
    expect(h.actor.getSnapshot().status).toBe('active');
  });

  it('never reports a message typed when no inject is wired: inject_failed', async () => {
    const h = harness({ injectUnwired: true });
    await flush();
    await h.connect();
    h.push({ id: 1 });
    await flush();
    expect(h.results()).toMatchObject([{ id: 1, state: 'refused', code: 'inject_failed' }]);
  });

  it('spawns and stops one session actor per tmux session', async () => {
    const h = harness({ sessions: [session('svc-a'), session('svc-b')] });
    await flush();
    const children = () =>
      Object.keys(h.actor.system.get('sessions')?.getSnapshot().children ?? {}).filter((k) => k.startsWith('session.'));
    expect(children().sort()).toEqual(['session.svc-a', 'session.svc-b']);
    h.state.sessions = [session('svc-b'), session('svc-c')];
    h.clock.increment(5_000);
    await flush();
    expect(children().sort()).toEqual(['session.svc-b', 'session.svc-c']);
  });

  it('reports on change and otherwise only as a heartbeat every 2 minutes', async () => {
    const h = harness();
    await flush();
    await h.connect();
    const count = () => h.sentFrames().filter((f) => f.type === 'listener.sessions').length;
    const afterConnect = count();
    for (let i = 0; i < 23; i++) {
      h.clock.increment(5_000);
      await flush();
    }
    expect(count()).toBe(afterConnect); // 115 s unchanged: nothing
    h.clock.increment(5_000);
    await flush();
    h.clock.increment(5_000);
    await flush();
    expect(count()).toBe(afterConnect + 1); // the heartbeat
    h.state.sessions = [session('svc-proj'), session('svc-new')];
    h.clock.increment(5_000);
    await flush();
    expect(count()).toBe(afterConnect + 2); // the change
  });

  it('reconnects with backoff after a dropped socket, subscribing from the last acted-on id', async () => {
    const h = harness();
    await flush();
    await h.connect();
    h.push({ id: 9 });
    await flush();
    h.current().sendBack({ type: 'SOCKET.CLOSED', code: 1006, reason: '' });
    await flush();
    expect(h.state.sockets[0]!.closed).toBe(true);
    expect(h.state.sockets).toHaveLength(1);
    h.clock.increment(30_000);
    await flush();
    expect(h.state.sockets).toHaveLength(2);
    expect(h.current().input.subscribe).toMatchObject({ lastPushId: 9 });
  });

  it('treats a missed pong as a half-open socket and reconnects', async () => {
    const h = harness({ deaf: true });
    await flush();
    await h.connect();
    h.clock.increment(25_000);
    await flush();
    expect(h.current().sent.some((c) => c.type === 'PING')).toBe(true);
    h.clock.increment(10_000);
    await flush();
    expect(h.state.sockets[0]!.closed).toBe(true);
    expect(h.state.logs.some((l) => l.message.includes('half-open'))).toBe(true);
  });

  it('acts on a push that arrives while a ping waits for its pong', async () => {
    const h = harness({ deaf: true });
    await flush();
    await h.connect();
    h.clock.increment(25_000);
    await flush();
    expect(h.current().sent.some((c) => c.type === 'PING')).toBe(true);
    // Any frame proves the socket alive; this one must also reach the listener.
    h.push({ id: 12, body: 'while pinging' });
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['while pinging']);
    expect(h.results()).toEqual([{ type: 'push.result', id: 12, state: 'injected' }]);
  });

  it('stops for good when the relay refuses the key', async () => {
    const h = harness();
    await flush();
    h.current().sendBack({ type: 'SOCKET.REJECTED', status: 401 });
    await flush();
    h.clock.increment(60_000);
    await flush();
    expect(h.state.sockets).toHaveLength(1);
    expect(h.actor.getSnapshot().status).toBe('done');
    expect(h.state.logs.some((l) => l.level === 'error' && l.message.includes('not retrying'))).toBe(true);
  });

  it('keeps results produced while offline and sends them once back online', async () => {
    const h = harness();
    await flush();
    await h.connect();
    h.current().sendBack({ type: 'SOCKET.CLOSED', code: 1006, reason: '' });
    await flush();
    // A result produced while offline (the session finished typing after the drop).
    h.actor.send({ type: 'SESSION.RESULT', session: 'svc-proj', id: 4, state: 'injected' });
    await flush();
    h.clock.increment(30_000);
    await flush();
    await h.connect();
    expect(h.current().sent).toContainEqual({ type: 'SEND', frame: { type: 'push.result', id: 4, state: 'injected' } });
  });

  it('keeps the end of an ask that came while offline and sends it once back online', async () => {
    const h = harness();
    await flush();
    await h.connect();
    h.current().sendBack({ type: 'SOCKET.CLOSED', code: 1006, reason: '' });
    await flush();
    const closed: ClientFrame = { type: 'ask.closed', id: 'a_0123456789abcdef', state: 'expired' };
    (h.actor.getSnapshot().children as Record<string, AnyActorRef>).relay!.send({ type: 'SEND', frame: closed });
    await flush();
    h.clock.increment(30_000);
    await flush();
    await h.connect();
    h.clock.increment(12_000); // past a result retry: sent once, not again
    await flush();
    expect(h.sentFrames().filter((f) => f.type === 'ask.closed')).toEqual([closed]);
  });

  it('keeps a notification made before the link is up (a missed run at start) and sends it once online', async () => {
    const h = harness();
    await flush();
    // not connected yet: the scheduler's first look found a run missed while the computer slept
    const note: ClientFrame = {
      type: 'notify.new',
      id: 'n_0123456789abcdef',
      session: 'svc-proj',
      kind: 'schedule',
      envelope: { v: 1 } as never,
    };
    h.actor.send({ type: 'NOTIFY.SEND', frame: note as Extract<ClientFrame, { type: 'notify.new' }> });
    await flush();
    await h.connect();
    h.clock.increment(12_000);
    await flush();
    expect(h.sentFrames().filter((f) => f.type === 'notify.new')).toEqual([note]);
  });

  it('holds at most MAX_HELD_FRAMES while offline, the newest', async () => {
    const h = harness();
    await flush();
    await h.connect();
    h.current().sendBack({ type: 'SOCKET.CLOSED', code: 1006, reason: '' });
    await flush();
    const relay = (h.actor.getSnapshot().children as Record<string, AnyActorRef>).relay!;
    for (let i = 0; i < MAX_HELD_FRAMES + 5; i++)
      relay.send({
        type: 'SEND',
        frame: { type: 'ask.closed', id: `a_${String(i).padStart(16, '0')}`, state: 'expired' },
      });
    await flush();
    h.clock.increment(30_000);
    await flush();
    await h.connect();
    const sent = h.sentFrames().filter((f) => f.type === 'ask.closed');
    expect(sent).toHaveLength(MAX_HELD_FRAMES);
    expect(sent.at(-1)).toMatchObject({ id: `a_${String(MAX_HELD_FRAMES + 4).padStart(16, '0')}` });
  });
});

describe('session actor', () => {
  /** A screen captured from the real Claude Code (test/fixtures/screens/A1). */
  const fixture = (name: string) =>
    readFileSync(new URL(`../../fixtures/screens/A1/${name}.txt`, import.meta.url), 'utf8');
  const sessionState = (h: ReturnType<typeof harness>, name: string) =>
    sessionActor(h, `session.${name}`)?.getSnapshot().value;

  it('reads the agent state from the screen, and refuses messages while an approval prompt is up', async () => {
    const claude = session('svc-proj', 'claude', { meta: { kind: 'agent', agent: 'A1', project: 'proj' } });
    const pane = claude.panes[0]!.id;
    const h = harness({ sessions: [claude] });
    const tick = async (screen: string) => {
      h.state.screens[pane] = screen;
      h.clock.increment(5_000);
      await flush();
    };
    await flush();
    await h.connect();
    expect(sessionState(h, 'svc-proj')).toMatchObject({ agent: 'unknown' });
    await tick(fixture('working-1'));
    expect(sessionState(h, 'svc-proj')).toMatchObject({ agent: 'unknown' }); // seen once: not yet trusted
    await tick(fixture('working-1'));
    expect(sessionState(h, 'svc-proj')).toMatchObject({ agent: 'working', approval: 'none' });
    await tick(fixture('awaiting_approval-1'));
    await tick(fixture('awaiting_approval-1'));
    expect(sessionState(h, 'svc-proj')).toMatchObject({ agent: 'awaitingApproval', approval: 'shown' });
    const reported = h
      .sentFrames()
      .filter((f) => f.type === 'listener.sessions')
      .at(-1);
    expect(reported).toMatchObject({
      sessions: [{ name: 'svc-proj', state: 'awaiting_approval', label: 'proj · Claude Code' }],
    });

    h.push({ id: 1, body: '2' });
    await flush();
    expect(h.state.typed).toEqual([]);
    expect(h.results()).toMatchObject([{ id: 1, state: 'refused', code: 'approval_pending' }]);

    await tick(fixture('idle-1'));
    await tick(fixture('idle-1'));
    await tick(fixture('idle-1'));
    expect(sessionState(h, 'svc-proj')).toMatchObject({ agent: 'idle', approval: 'none' });
    h.push({ id: 2, body: 'now go on' });
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['now go on']);
  });

  it('refuses a message into an approval prompt that came up since the last tick, before the picker shows it', async () => {
    const claude = session('svc-proj', 'claude', { meta: { kind: 'agent', agent: 'A1', project: 'proj' } });
    const pane = claude.panes[0]!.id;
    const h = harness({ sessions: [claude] });
    h.state.screens[pane] = fixture('working-1');
    await flush();
    await h.connect();
    h.clock.increment(5_000);
    await flush();
    expect(sessionState(h, 'svc-proj')).toMatchObject({ agent: 'working', approval: 'none' });
    // Claude Code now asks; "yes, go on" and an Enter would pick its highlighted option.
    h.state.screens[pane] = fixture('awaiting_approval-1');
    h.push({ id: 1, body: 'yes, go on' });
    await flush();
    expect(h.state.typed).toEqual([]);
    expect(h.results()).toMatchObject([{ id: 1, state: 'refused', code: 'approval_pending' }]);
    // The picker still waits for a second reading to say so.
    expect(sessionState(h, 'svc-proj')).toMatchObject({ agent: 'working' });
  });

  it('types a message at once after the prompt was answered, while the picker still shows the prompt', async () => {
    const claude = session('svc-proj', 'claude', { meta: { kind: 'agent', agent: 'A1', project: 'proj' } });
    const pane = claude.panes[0]!.id;
    const h = harness({ sessions: [claude] });
    h.state.screens[pane] = fixture('awaiting_approval-1');
    await flush();
    await h.connect();
    h.clock.increment(5_000);
    await flush();
    expect(sessionState(h, 'svc-proj')).toMatchObject({ agent: 'awaitingApproval', approval: 'shown' });
    h.push({ id: 1, body: 'while it asks' });
    await flush();
    expect(h.results()).toMatchObject([{ id: 1, state: 'refused', code: 'approval_pending' }]);
    // The person answered at the keyboard: the agent works on. The picker waits for a second reading to say so;
    // the approval region follows the fresh reading, and the message waits for the turn to end (Claude Code may
    // lose one typed during it).
    h.state.screens[pane] = fixture('working-1');
    h.push({ id: 2, body: 'and then this' });
    await flush();
    expect(sessionState(h, 'svc-proj')).toMatchObject({ agent: 'awaitingApproval', approval: 'none' });
    expect(h.state.typed).toEqual([]);
    expect(h.results()).toMatchObject([{ id: 1 }]);
    h.state.screens[pane] = fixture('idle-1');
    h.clock.increment(5_000);
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['and then this']);
    expect(h.results()).toMatchObject([{ id: 1 }, { id: 2, state: 'injected' }]);
  });

  describe('a message for Claude Code while it works waits for its turn to end (AgentSpec.typeAfterTurn)', () => {
    const start = async (command: string, agent: string, screen: string) => {
      const s = session('svc-proj', command, { meta: { kind: 'agent', agent, project: 'proj' } });
      const h = harness({ sessions: [s] });
      h.state.screens[s.panes[0]!.id] = screen;
      await flush();
      await h.connect();
      return { h, pane: s.panes[0]!.id };
    };

    it('typed once the turn is read over and the screen has been quiet a moment, messages in their order', async () => {
      const { h, pane } = await start('claude', 'A1', fixture('working-1'));
      h.push({ id: 1, body: 'first' });
      h.push({ id: 2, body: 'second' });
      await flush();
      h.clock.increment(5_000);
      await flush();
      expect(h.state.typed).toEqual([]);
      expect(h.results()).toEqual([]);
      h.state.screens[pane] = fixture('working-2');
      h.clock.increment(5_000);
      await flush();
      expect(h.state.typed).toEqual([]);
      h.state.screens[pane] = fixture('idle-1');
      h.clock.increment(5_000);
      await flush();
      // the first reading without the turn: the picker still says working until a second one, a quiet screen; a
      // push that comes now, as the turn has just ended, waits too (its fresh reading is this same moment)
      expect(h.state.typed).toEqual([]);
      h.push({ id: 3, body: 'third, just after the turn' });
      await flush();
      expect(h.state.typed).toEqual([]);
      h.clock.increment(5_000);
      await flush();
      expect(h.state.typed.map((t) => t.text)).toEqual(['first', 'second', 'third, just after the turn']);
      expect(h.results()).toMatchObject([
        { id: 1, state: 'injected' },
        { id: 2, state: 'injected' },
        { id: 3, state: 'injected' },
      ]);
    });

    it('an approval prompt in the turn keeps it waiting, nothing typed into the prompt; typed after the turn', async () => {
      const { h, pane } = await start('claude', 'A1', fixture('working-1'));
      h.push({ id: 1, body: 'yes' });
      await flush();
      h.state.screens[pane] = fixture('awaiting_approval-1');
      h.clock.increment(5_000);
      await flush();
      expect(h.state.typed).toEqual([]);
      expect(h.results()).toEqual([]);
      h.state.screens[pane] = fixture('idle-1');
      h.clock.increment(5_000);
      await flush();
      expect(h.state.typed.map((t) => t.text)).toEqual(['yes']);
      expect(h.results()).toMatchObject([{ id: 1, state: 'injected' }]);
    });

    it("typed, still mid-turn, once what was left of the relay's replay window is over (the relay gives up at twice it)", async () => {
      const { h } = await start('claude', 'A1', fixture('working-1'));
      // received at 1 s on the harness's clock, 100 s old: it may wait until 21 s
      h.push({ id: 1, body: 'are you stuck?', ageMs: 100_000 });
      await flush();
      h.clock.increment(20_000);
      await flush();
      expect(h.state.typed).toEqual([]);
      h.clock.increment(1_000);
      await flush();
      expect(h.state.typed.map((t) => t.text)).toEqual(['are you stuck?']);
      expect(h.results()).toMatchObject([{ id: 1, state: 'injected' }]);
      // the next one waits its own time: a whole window, as it is new (received at 22 s, until 142 s)
      h.push({ id: 2, body: 'still there?' });
      await flush();
      h.clock.increment(119_000);
      await flush();
      expect(h.state.typed).toHaveLength(1);
      h.clock.increment(2_000);
      await flush();
      expect(h.state.typed.map((t) => t.text)).toEqual(['are you stuck?', 'still there?']);
    });

    it('refused session_not_found when the session ends before its turn does', async () => {
      const { h } = await start('claude', 'A1', fixture('working-1'));
      h.push({ id: 1, body: 'never typed' });
      await flush();
      h.state.sessions = [];
      h.clock.increment(5_000);
      await flush();
      expect(h.state.typed).toEqual([]);
      expect(h.results()).toMatchObject([{ id: 1, state: 'refused', code: 'session_not_found' }]);
    });

    it('stopped while they wait: recorded refused listener_stopped, reported so at the next start', async () => {
      const { h } = await start('claude', 'A1', fixture('working-1'));
      h.push({ id: 7, body: 'never typed' });
      await flush();
      h.actor.send({ type: 'STOP' });
      await flush();
      expect(h.state.typed).toEqual([]);
      expect(h.state.persisted.at(-1)!.entries['7']).toEqual({ state: 'refused', code: 'listener_stopped' });
      // the next listener starts from that ledger: its first result, not inject_failed
      const next = harness({ ledger: h.state.persisted.at(-1)! });
      await flush();
      await next.connect();
      expect(next.results()).toEqual([{ type: 'push.result', id: 7, state: 'refused', code: 'listener_stopped' }]);
    });

    it('Codex queues a message itself: typed while it works', async () => {
      const codex = readFileSync(new URL('../../fixtures/screens/A2/working-1.txt', import.meta.url), 'utf8');
      const { h } = await start('codex', 'A2', codex);
      h.push({ id: 1, body: 'and the docs' });
      await flush();
      expect(h.state.typed.map((t) => t.text)).toEqual(['and the docs']);
    });
  });

  it('refuses a message when the agent’s screen could not be read, and says so in its log once', async () => {
    const claude = session('svc-proj', 'claude', { meta: { kind: 'agent', agent: 'A1', project: 'proj' } });
    const pane = claude.panes[0]!.id;
    const h = harness({ sessions: [claude] });
    h.state.screens[pane] = fixture('idle-1');
    await flush();
    await h.connect();
    // Readable: typed. This proves the refusal below is the unread screen's doing.
    h.push({ id: 1, body: 'first' });
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['first']);
    h.state.unreadable.push(pane);
    h.push({ id: 2, body: 'second' });
    await flush();
    h.push({ id: 3, body: 'third' });
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['first']);
    expect(h.results()).toMatchObject([
      { id: 1, state: 'injected' },
      { id: 2, state: 'refused', code: 'screen_unreadable' },
      { id: 3, state: 'refused', code: 'screen_unreadable' },
    ]);
    const lines = h.state.logs.filter((l) => /svc-proj: its screen could not be read/.test(l.message));
    expect(lines).toHaveLength(1);
    expect(h.state.logs.map((l) => l.message)).toContain('push 2: refused screen_unreadable for svc-proj');
    // Readable again: typed again.
    h.state.unreadable.length = 0;
    h.push({ id: 4, body: 'fourth' });
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['first', 'fourth']);
  });

  it('logs once when the agent the wrapper started is no longer in its pane', async () => {
    // The pane's start command was dropped and only an interpreter is left (spec 7, e.g. A7).
    const gone = session('svc-proj', 'python3', { meta: { kind: 'agent', agent: 'A7' } });
    const h = harness({ sessions: [gone] });
    await flush();
    h.clock.increment(5_000);
    await flush();
    const lines = h.state.logs.filter((l) => l.message.includes('no agent in pane'));
    expect(lines.map((l) => l.message)).toEqual(['svc-proj: no agent in pane (start=?, current=python3)']);
  });

  it('tells inject that the pane is in a tmux mode, and logs that it leaves it', async () => {
    const scrolled = session('svc-proj');
    scrolled.panes[0]!.inMode = true;
    const h = harness({ sessions: [scrolled, session('svc-other')] });
    await flush();
    await h.connect();
    h.push({ id: 1 });
    h.push({ id: 2, agentSessionName: 'svc-other' });
    await flush();
    expect(h.state.typed.map((t) => [t.session, t.inMode])).toEqual([
      ['svc-proj', true],
      ['svc-other', undefined],
    ]);
    expect(h.state.logs.filter((l) => l.message.includes('tmux mode')).map((l) => l.message)).toEqual([
      `svc-proj: pane ${scrolled.panes[0]!.id} was in a tmux mode (copy mode after scrolling back, …); leaving it to type push 1`,
    ]);
    expect(h.results()).toMatchObject([
      { id: 1, state: 'injected' },
      { id: 2, state: 'injected' },
    ]);
  });

  it('tracks attachment from the inventory', async () => {
    const h = harness({ sessions: [session('svc-proj')] });
    await flush();
    expect(sessionState(h, 'svc-proj')).toMatchObject({ attachment: 'detached' });
    h.state.sessions = [session('svc-proj', 'claude', { attached: true })];
    h.clock.increment(5_000);
    await flush();
    expect(sessionState(h, 'svc-proj')).toMatchObject({ attachment: 'attached' });
  });

  it('audits input into a shell session, addressed to this computer, and types it', async () => {
    const shell = session('svc-proj-sh', 'bash', { shell: true, meta: { kind: 'shell' } });
    const h = harness({ sessions: [shell] });
    await flush();
    await h.connect();
    h.push({ id: 1, agentSessionName: 'svc-proj-sh', body: 'ls -la', targetComputer: 'c_me' });
    h.push({ id: 2, agentSessionName: 'svc-proj-sh', body: 'ls', targetComputer: null });
    h.push({ id: 3, agentSessionName: 'svc-proj-sh', body: 'ls\u001b[A', targetComputer: 'c_me' });
    await flush();
    expect(h.results()).toMatchObject([
      { id: 1, state: 'injected' },
      { id: 2, state: 'refused', code: 'not_for_this_computer' },
      { id: 3, state: 'refused', code: 'shell_input_forbidden' },
    ]);
    expect(h.state.audits).toEqual([
      { session: 'svc-proj-sh', paneId: shell.panes[0]!.id, foreground: 'bash', text: 'ls -la' },
    ]);
  });
});

describe('worktree actors', () => {
  const wt = {
    repoName: 'app',
    slug: 'feat-x',
    path: '/src/app-wt-feat-x',
    repo: '/src/app',
    branch: 'feat/x',
    sessionName: 'svc-app-wt-feat-x',
  };
  const wtSession = session('svc-app-wt-feat-x', 'claude', { meta: { kind: 'agent', agent: 'A1', worktree: wt.path } });
  const children = (h: ReturnType<typeof harness>) =>
    Object.keys(h.actor.system.get('worktrees')?.getSnapshot().children ?? {}).filter((k) => k.startsWith('worktree.'));

  it('spawns one per worktree made by --wt and removes it once its session has ended and nothing holds it', async () => {
    const h = harness({ sessions: [wtSession], worktrees: [wt] });
    await flush();
    expect(children(h)).toEqual(['worktree.app-wt-feat-x']);
    h.clock.increment(60_000);
    await flush();
    expect(h.state.removed).toEqual([]); // its session is alive
    h.state.sessions = [];
    h.clock.increment(5_000);
    await flush();
    h.clock.increment(30_000); // the grace period
    await flush();
    expect(h.state.removed).toEqual([wt.path]);
    expect(children(h)).toEqual([]);
    expect(h.state.logs.some((l) => l.message.includes(`removed worktree ${wt.path}`))).toBe(true);
  });

  it('keeps a worktree that holds work', async () => {
    const h = harness({ sessions: [], worktrees: [wt], worktreeFacts: { ...FREE_FACTS, untracked: 2 } });
    await flush();
    h.clock.increment(31_000);
    await flush();
    expect(h.state.removed).toEqual([]);
    expect(children(h)).toEqual(['worktree.app-wt-feat-x']);
  });
});

describe('a new session’s first prompt (LAUNCH.PROMPT)', () => {
  const fixture = (name: string) =>
    readFileSync(new URL(`../../fixtures/screens/A1/${name}.txt`, import.meta.url), 'utf8');
  const claude = (name: string, createdAt: number) =>
    session(name, 'claude', { createdAt, meta: { kind: 'agent', agent: 'A1', project: 'web' } });
  const logged = (h: ReturnType<typeof harness>, text: string) =>
    h.state.logs.filter((l) => l.message.includes(text)).length;
  /** One inventory tick (or `ms` of the clock) passed. */
  const ticker =
    (h: ReturnType<typeof harness>) =>
    async (ms = 5_000) => {
      h.clock.increment(ms);
      await flush();
    };

  it('waits for its own session to read idle, types it once as the phone’s message, and tells the relay nothing', async () => {
    const h = harness({ sessions: [] });
    const tick = ticker(h);
    await flush();
    await h.connect();
    h.actor.send({ type: 'LAUNCH.PROMPT', session: 'svc-web-2', agent: 'A1', text: 'look at it', startedAt: 0 });
    await tick();
    const web = claude('svc-web-2', 1);
    h.state.sessions = [web];
    h.state.screens[web.panes[0]!.id] = fixture('working-1');
    await tick();
    await tick();
    expect(h.state.typed).toEqual([]); // starting, not idle: waits
    h.state.screens[web.panes[0]!.id] = fixture('idle-1');
    for (let i = 0; i < 5; i++) await tick();
    expect(h.state.typed.map((t) => t.text)).toEqual(['look at it']);
    expect(h.state.markers).toEqual(['look at it']); // as a message from the phone: its hook sees it as remote
    expect(logged(h, 'svc-web-2: first prompt typed')).toBe(1);
    expect(h.results()).toEqual([]); // not a relay push: no push.result
    expect(h.state.persisted.every((l) => Object.keys(l.entries).length === 0)).toBe(true);
    // idle again and again: never typed twice
    for (let i = 0; i < 5; i++) await tick();
    expect(h.state.typed).toHaveLength(1);
  });

  it('is never typed again after tmux failed while typing it (it may be half typed)', async () => {
    const h = harness({ sessions: [], injectFails: true });
    const tick = ticker(h);
    await flush();
    await h.connect();
    h.actor.send({ type: 'LAUNCH.PROMPT', session: 'svc-web-2', agent: 'A1', text: 'look at it', startedAt: 0 });
    const web = claude('svc-web-2', 1);
    h.state.sessions = [web];
    h.state.screens[web.panes[0]!.id] = fixture('idle-1');
    for (let i = 0; i < 8; i++) await tick();
    expect(logged(h, 'svc-web-2: first prompt not typed (inject_failed); not tried again')).toBe(1);
    expect(h.actor.getSnapshot().context.firstPrompts).toEqual({});
  });

  it('is given up when its session ends first, when the name is another session’s, or after firstPromptWait', async () => {
    const h = harness({ sessions: [] });
    const tick = ticker(h);
    await flush();
    await h.connect();
    // the name belongs to a session made before the start
    const older = claude('svc-web-2', 0);
    h.state.sessions = [older];
    h.state.screens[older.panes[0]!.id] = fixture('idle-1');
    h.actor.send({ type: 'LAUNCH.PROMPT', session: 'svc-web-2', agent: 'A1', text: 'one', startedAt: 100 });
    // its own session, seen while starting, then gone
    const ended = claude('svc-web-3', 101);
    h.state.sessions = [older, ended];
    h.actor.send({ type: 'LAUNCH.PROMPT', session: 'svc-web-3', agent: 'A1', text: 'two', startedAt: 100 });
    await tick();
    h.state.sessions = [older];
    await tick();
    // never appears: given up after firstPromptWait
    h.actor.send({ type: 'LAUNCH.PROMPT', session: 'svc-web-4', agent: 'A1', text: 'three', startedAt: 100 });
    await tick(180_000);
    const late = claude('svc-web-4', 101);
    h.state.sessions = [older, late];
    h.state.screens[late.panes[0]!.id] = fixture('idle-1');
    for (let i = 0; i < 4; i++) await tick();
    expect(h.state.typed).toEqual([]);
    expect(logged(h, 'svc-web-2: first prompt not typed')).toBe(1);
    expect(logged(h, 'svc-web-3: first prompt not typed: the session ended before it read idle')).toBe(1);
    expect(logged(h, 'svc-web-4: first prompt not typed: its agent did not read idle in time')).toBe(1);
  });
});

describe('supervision (core/supervision.ts)', () => {
  const wt = {
    slug: 'feat-x',
    path: '/w/app-wt-feat-x',
    repo: '/w/app',
    branch: 'feat-x',
    repoName: 'app',
    sessionName: 'svc-app-wt-feat-x',
  };
  const two = () => [session('svc-a'), session('svc-b')];
  const tick = async (h: ReturnType<typeof harness>, ms = 5_000) => {
    h.clock.increment(ms);
    await flush();
  };
  const result = (h: ReturnType<typeof harness>, id: number) =>
    h.results().find((r) => r.type === 'push.result' && r.id === id);

  it('a session actor that throws is rebuilt from tmux after its backoff; what it held is refused, another session is typed into', async () => {
    const h = harness({ sessions: two(), faults: 'action:session.svc-a' });
    await flush();
    await h.connect();
    h.push({ id: 1, agentSessionName: 'svc-a', body: 'into a' });
    h.push({ id: 2, agentSessionName: 'svc-b', body: 'into b' });
    await flush();
    expect(h.actor.getSnapshot().status).toBe('active');
    expect(result(h, 1)).toMatchObject({ state: 'refused', code: 'inject_failed', message: ACTOR_FAILED });
    expect(result(h, 2)).toMatchObject({ state: 'injected' });
    expect(h.state.persisted.at(-1)!.entries['1']).toEqual({ state: 'refused', code: 'inject_failed' });
    expect(sessionActor(h, 'session.svc-a')).toBeUndefined();
    expect(h.state.failures).toEqual([
      {
        id: 'session.svc-a',
        what: 'rebuilt from tmux at the first reading after 1 s; what it held is refused, not typed again',
      },
    ]);
    await tick(h);
    expect(sessionActor(h, 'session.svc-a')).toBeDefined();
    h.push({ id: 3, agentSessionName: 'svc-a', body: 'into a again' });
    await flush();
    expect(result(h, 3)).toMatchObject({ state: 'injected' });
    expect(h.state.typed.map((t) => t.text)).toEqual(['into b', 'into a again']);
  });

  it('input for a session whose actor waits for its restart is refused, not typed later', async () => {
    const h = harness({ sessions: two(), faults: 'action:session.svc-a' });
    await flush();
    await h.connect();
    h.push({ id: 1, agentSessionName: 'svc-a' });
    await flush();
    // the reading this push waits for comes before the backoff has passed
    h.push({ id: 2, agentSessionName: 'svc-a' });
    await flush();
    expect(result(h, 2)).toMatchObject({ state: 'refused', code: 'inject_failed', message: ACTOR_DOWN });
    expect(h.state.typed).toEqual([]);
  });

  it("the sessions' supervisor that fails refuses what its sessions held, and comes back at the next reading", async () => {
    const h = harness({ sessions: two() });
    await flush();
    await h.connect();
    let release = () => {};
    h.state.typing = new Promise<void>((resolve) => {
      release = resolve;
    });
    h.push({ id: 1, agentSessionName: 'svc-a', body: 'being typed' });
    await flush();
    const before = sessionActor(h, 'session.svc-a');
    // a new session's actor is made, and the supervisor throws as it logs that
    h.state.sessions = [...two(), session('svc-c')];
    h.state.breakSessions = true;
    h.push({ id: 2, agentSessionName: 'svc-c', body: 'into the new one' });
    await flush();
    expect(h.actor.getSnapshot().status).toBe('active');
    expect(h.state.failures).toEqual([{ id: 'sessions', what: 'restarted at once' }]);
    // what was typing and what was handed over in the failing step: refused, never typed later
    expect(result(h, 1)).toMatchObject({ state: 'refused', code: 'inject_failed', message: ACTOR_FAILED });
    expect(result(h, 2)).toMatchObject({ state: 'refused', code: 'inject_failed', message: ACTOR_FAILED });
    expect(before?.getSnapshot().status).toBe('stopped');
    release();
    await tick(h);
    expect(sessionActor(h, 'session.svc-c')).toBeDefined();
    h.push({ id: 3, agentSessionName: 'svc-c', body: 'after the restart' });
    await flush();
    expect(result(h, 3)).toMatchObject({ state: 'injected' });
    expect(h.state.typed.map((t) => t.text).at(-1)).toBe('after the restart');
    expect(h.state.typed.map((t) => t.text)).not.toContain('into the new one');
  });

  it('sessions whose supervisor keeps failing are left off: input is refused, the sessions are still reported', async () => {
    const h = harness({ sessions: two(), faults: 'action:sessions!' });
    await flush();
    await h.connect();
    // each restart fails at the next reading, as it makes the sessions' actors
    for (let i = 0; i < 6; i++) await tick(h);
    expect(h.actor.getSnapshot().context.supervision.sessions).toMatchObject({ givenUp: true });
    expect(h.actor.system.get('sessions')).toBeUndefined();
    h.push({ id: 1, agentSessionName: 'svc-a' });
    await flush();
    expect(result(h, 1)).toMatchObject({ state: 'refused', code: 'inject_failed', message: ACTOR_DOWN });
    expect(h.state.typed).toEqual([]);
    expect(h.actor.getSnapshot().status).toBe('active');
    // a report after it was given up (a session ended) still lists the sessions tmux has
    h.state.sessions = [session('svc-b')];
    await tick(h);
    const reports = h.sentFrames().filter((f) => f.type === 'listener.sessions');
    expect(reports.at(-1)).toMatchObject({ sessions: [{ name: 'svc-b' }] });
    expect(h.actor.getSnapshot().status).toBe('active');
    // sticky REMOTE cannot be set: said in the log
    h.actor.send({ type: 'SESSION.REMOTE', session: 'svc-b', on: true, why: 'hook' });
    expect(h.state.logs.at(-1)?.message).toMatch(/svc-b not put in REMOTE mode: the sessions' supervisor failed/);
  });

  it('a session that keeps failing is given up at its fifth failure in ten minutes, until its tmux session ends', async () => {
    const h = harness({ sessions: two(), faults: 'action:session.svc-a!' });
    await flush();
    await h.connect();
    for (let id = 1; id <= 5; id++) {
      h.push({ id, agentSessionName: 'svc-a' });
      await flush();
      for (let i = 0; i < 4; i++) await tick(h);
    }
    const record = () => sessionsContext(h)?.failures['session.svc-a'];
    expect(record()).toMatchObject({ givenUp: true, retryAt: null });
    expect(record()!.at).toHaveLength(5);
    expect(h.state.failures.at(-1)!.what).toBe(
      'failed 5 times in ten minutes: not restarted until the listener is; input for it is refused',
    );
    for (let i = 0; i < 4; i++) await tick(h);
    expect(sessionActor(h, 'session.svc-a')).toBeUndefined();
    h.push({ id: 6, agentSessionName: 'svc-a' });
    h.push({ id: 7, agentSessionName: 'svc-b', body: 'b still works' });
    await flush();
    expect(result(h, 6)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    expect(h.state.typed.map((t) => t.text)).toEqual(['b still works']);
    // the session is still reported to the phones: tmux has it
    const reports = h.sentFrames().filter((f) => f.type === 'listener.sessions');
    expect(reports.at(-1)).toMatchObject({ sessions: [{ name: 'svc-a' }, { name: 'svc-b' }] });
    // the sessions' supervisor failing does not bring it back: the new one starts from the old one's records
    h.state.sessions = [...two(), session('svc-c')];
    h.state.breakSessions = true;
    await tick(h);
    expect(h.state.failures.at(-1)).toEqual({ id: 'sessions', what: 'restarted at once' });
    for (let i = 0; i < 2; i++) await tick(h);
    expect(sessionActor(h, 'session.svc-c')).toBeDefined();
    expect(sessionActor(h, 'session.svc-a')).toBeUndefined();
    expect(record()).toMatchObject({ givenUp: true });
    h.push({ id: 8, agentSessionName: 'svc-a' });
    await flush();
    expect(result(h, 8)).toMatchObject({ state: 'refused', code: 'inject_failed', message: ACTOR_DOWN });
    h.state.sessions = [session('svc-b')];
    await tick(h);
    expect(record()).toBeUndefined();
  });

  it('an ask whose actor fails ends failed for its asker and closed for the phones; a late answer is refused', async () => {
    const h = harness({ askFails: true });
    await flush();
    await h.connect();
    const recipients = [{ deviceId: 'd_phone', publicKey: 'K' }];
    const ask = { id: 'a1', session: 'svc-proj', deadline: 600_000, leftMs: 600_000, choices: [], recipients };
    h.actor.send({ type: 'ASK.START', ask });
    await flush();
    h.frame({ type: 'ask.answer', id: 'a1', deviceId: 'd_phone', connection: 'c1', envelope: {} });
    await flush();
    expect(h.actor.getSnapshot().status).toBe('active');
    expect(h.state.settled).toEqual([{ id: 'a1', state: 'failed' }]);
    expect(h.sentFrames()).toContainEqual({ type: 'ask.closed', id: 'a1', state: 'expired' });
    expect(h.actor.system.get('asks')?.getSnapshot().context.asks).toEqual({});
    h.actor.send({ type: 'ASK.CANCEL', id: 'a1' });
    h.frame({ type: 'ask.answer', id: 'a1', deviceId: 'd_phone', connection: 'c1', envelope: {} });
    await flush();
    expect(
      h
        .sentFrames()
        .filter((f) => f.type === 'ask.result')
        .at(-1),
    ).toMatchObject({
      state: 'refused',
      code: 'ask_expired',
    });
    h.push({ id: 1, body: 'still typed' });
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['still typed']);
  });

  it("the asks' supervisor is restarted when it fails, its asks ended failed; given up, every ask ends failed at once", async () => {
    const recipients = [{ deviceId: 'd_phone', publicKey: 'K' }];
    const ask = (id: string) => ({
      id,
      session: 'svc-proj',
      deadline: 600_000,
      leftMs: 600_000,
      choices: [],
      recipients,
    });
    const asksOf = (h: ReturnType<typeof harness>) => h.actor.system.get('asks')?.getSnapshot().context.asks;
    // once: announcing a1 throws in the supervisor itself
    const once = harness({ faults: 'action:asks' });
    await flush();
    await once.connect();
    once.actor.send({ type: 'ASK.START', ask: ask('a1') });
    await flush();
    expect(once.state.failures).toEqual([{ id: 'asks', what: 'restarted at once' }]);
    expect(once.state.abandoned).toBe(1);
    once.actor.send({ type: 'ASK.START', ask: ask('a2') });
    await flush();
    expect(Object.keys(asksOf(once) ?? {})).toEqual(['a2']);

    const always = harness({ faults: 'action:asks!' });
    await flush();
    await always.connect();
    for (const id of ['a1', 'a2', 'a3', 'a4', 'a5']) {
      always.actor.send({ type: 'ASK.START', ask: ask(id) });
      await flush();
    }
    expect(always.actor.getSnapshot().value).toMatchObject({ running: { asks: 'off' } });
    expect(always.state.failures.at(-1)!.what).toBe(
      'failed 5 times in ten minutes: left off until the listener restarts',
    );
    expect(always.state.abandoned).toBe(5);
    always.actor.send({ type: 'ASK.START', ask: ask('a6') });
    always.frame({ type: 'ask.answer', id: 'a6', deviceId: 'd_phone', connection: 'c1', envelope: {} });
    await flush();
    expect(always.state.abandoned).toBe(6);
    expect(
      always
        .sentFrames()
        .filter((f) => f.type === 'ask.result')
        .at(-1),
    ).toMatchObject({
      id: 'a6',
      state: 'refused',
      code: 'ask_expired',
    });
    always.push({ id: 1, body: 'still typed' });
    await flush();
    expect(always.state.typed.map((t) => t.text)).toEqual(['still typed']);
  });

  it('a worktrees supervisor started again after it failed tells each worktree that its session still holds it', async () => {
    const h = harness({ sessions: [session('svc-app-wt-feat-x')], worktrees: [wt] });
    await flush();
    await tick(h);
    const state = () =>
      h.actor.system.get('worktrees')?.getSnapshot().children['worktree.app-wt-feat-x']?.getSnapshot().value;
    expect(state()).toBe('active');
    h.actor.send({ type: 'xstate.error.actor.worktrees', error: new Error('a bug in the supervisor') });
    await flush();
    expect(h.state.failures).toEqual([{ id: 'worktrees', what: 'restarted at once' }]);
    expect(state()).toBe('active');
  });

  it('a worktree actor that fails comes back at the next scan', async () => {
    const h = harness({ sessions: [], worktrees: [wt], faults: 'action:worktree.app-wt-feat-x' });
    await flush();
    const child = () => h.actor.system.get('worktrees')?.getSnapshot().children['worktree.app-wt-feat-x'];
    // its first log line (the session is gone) throws
    await tick(h, 31_000);
    expect(h.state.failures.map((f) => f.id)).toEqual(['worktree.app-wt-feat-x']);
    expect(h.actor.getSnapshot().status).toBe('active');
    await tick(h, 30_000);
    expect(child()).toBeDefined();
  });

  it('the relay link is restarted at once when it fails; at the fifth failure the listener stops, saying why', async () => {
    const once = harness({ faults: 'callback:relay' });
    await flush();
    expect(once.actor.getSnapshot().status).toBe('active');
    expect(once.state.failures).toEqual([{ id: 'relay', what: 'restarted at once' }]);
    await once.connect();
    once.push({ id: 1, body: 'typed after the restart' });
    await flush();
    expect(once.state.typed.map((t) => t.text)).toEqual(['typed after the restart']);

    const always = harness({ faults: 'callback:relay!' });
    await flush();
    expect(always.actor.getSnapshot().status).toBe('done');
    expect(always.actor.getSnapshot().context.stopReason).toBe('relay failed 5 times in ten minutes');
    expect(always.state.failures.at(-1)!.what).toBe('failed 5 times in ten minutes: the listener stops');
  });

  it('input after the inventory was restarted is typed: the new one counts its readings on from the old one', async () => {
    const h = harness();
    await flush();
    await h.connect();
    h.push({ id: 1, body: 'before' });
    await flush();
    // as xstate tells the root when its inventory throws
    h.actor.send({ type: 'xstate.error.actor.inventory', error: new Error('a bug in the inventory') });
    await flush();
    expect(h.state.failures).toEqual([{ id: 'inventory', what: 'restarted at once' }]);
    h.push({ id: 2, body: 'after' });
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['before', 'after']);
    expect(h.actor.getSnapshot().context.held).toEqual([]);
  });

  it('a relay link that failed is offline until the new one is up', async () => {
    const h = harness();
    await flush();
    await h.connect();
    expect(h.actor.getSnapshot().context.online).toBe(true);
    h.actor.send({ type: 'xstate.error.actor.relay', error: new Error('a bug in the link') });
    await flush();
    expect(h.actor.getSnapshot().context.online).toBe(false);
    await h.connect();
    expect(h.actor.getSnapshot().context.online).toBe(true);
  });

  it('the devices.json watch is restarted when it fails, and left off at the fifth failure while the listener serves', async () => {
    let starts = 0;
    const pinsWatch = fromCallback(() => {
      starts++;
      return () => {};
    });
    const h = harness({ pinsWatch, faults: 'callback:pinsWatch!' });
    await flush();
    expect(starts).toBe(0); // each start threw before it began watching
    expect(h.actor.getSnapshot().value).toMatchObject({ running: { pins: 'off' } });
    expect(h.actor.getSnapshot().context.supervision.pinsWatch).toMatchObject({ givenUp: true });
    await h.connect();
    h.push({ id: 1, body: 'typed' });
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['typed']);
  });
});

describe('sticky REMOTE across a restart (spec 4.13, core/sessions/remoteMode.ts)', () => {
  /** Whether the last report shows `name` in REMOTE. */
  const reportedRemote = (h: ReturnType<typeof harness>, name: string) => {
    const report = h
      .sentFrames()
      .filter((f) => f.type === 'listener.sessions')
      .at(-1) as { sessions: SessionRecord[] } | undefined;
    return report?.sessions.find((r) => r.name === name)?.remote === true;
  };
  const tick = async (h: ReturnType<typeof harness>, ms = 5_000) => {
    h.clock.increment(ms);
    await flush();
  };

  it('a session in REMOTE when the listener stopped is in REMOTE again; the others start local', async () => {
    const h = harness({ sessions: [session('svc-a'), session('svc-b')], remote: { 'svc-a': 1 } });
    await flush();
    await h.connect();
    await tick(h);
    expect(reportedRemote(h, 'svc-a')).toBe(true);
    expect(reportedRemote(h, 'svc-b')).toBe(false);
    // nothing changed: nothing written
    expect(h.state.remoteSaves).toBe(0);
  });

  it('is saved when it starts and when the keyboard ends it, and forgotten when its session ends', async () => {
    const h = harness({ sessions: [session('svc-a', 'claude', { createdAt: 7 }), session('svc-b')] });
    await flush();
    await h.connect();
    h.actor.send({ type: 'SESSION.REMOTE', session: 'svc-a', on: true, why: 'hook' });
    await flush();
    expect(h.state.remote).toEqual({ 'svc-a': 7 });
    expect(reportedRemote(h, 'svc-a')).toBe(true);
    h.actor.send({ type: 'SESSION.REMOTE', session: 'svc-a', on: false, why: 'keyboard' });
    await flush();
    expect(h.state.remote).toEqual({});
    h.actor.send({ type: 'SESSION.REMOTE', session: 'svc-b', on: true, why: 'ask' });
    await flush();
    expect(h.state.remote).toEqual({ 'svc-b': 1 });
    h.state.sessions = [session('svc-a', 'claude', { createdAt: 7 })];
    await tick(h);
    expect(h.state.remote).toEqual({});
  });

  it('a session made again under its name since (another creation time) starts local, and the entry is dropped', async () => {
    const h = harness({
      sessions: [session('svc-a', 'claude', { createdAt: 9 })],
      remote: { 'svc-a': 1, 'svc-gone': 1 },
    });
    await flush();
    await h.connect();
    await tick(h);
    expect(reportedRemote(h, 'svc-a')).toBe(false);
    expect(h.state.remote).toEqual({});
  });

  it('another session made under its name between two readings is local, in the file and on the phone', async () => {
    const h = harness({ sessions: [session('svc-a', 'claude', { createdAt: 7 })] });
    await flush();
    await h.connect();
    h.actor.send({ type: 'SESSION.REMOTE', session: 'svc-a', on: true, why: 'hook' });
    await flush();
    expect(reportedRemote(h, 'svc-a')).toBe(true);
    h.state.sessions = [session('svc-a', 'claude', { createdAt: 9 })];
    await tick(h);
    expect(h.state.remote).toEqual({});
    expect(reportedRemote(h, 'svc-a')).toBe(false);
  });

  it("the sessions' supervisor started again after it failed puts the session back in REMOTE", async () => {
    const h = harness({ sessions: [session('svc-a'), session('svc-b')] });
    await flush();
    await h.connect();
    h.actor.send({ type: 'SESSION.REMOTE', session: 'svc-a', on: true, why: 'hook' });
    await flush();
    h.state.breakSessions = true;
    h.state.sessions = [session('svc-a'), session('svc-b'), session('svc-c')];
    await tick(h);
    expect(h.state.failures).toEqual([{ id: 'sessions', what: 'restarted at once' }]);
    await tick(h);
    expect(sessionActor(h, 'session.svc-a')).toBeDefined();
    // its actor is back in REMOTE, and the phones are told at once (the tmux reading itself did not change)
    expect(reportedRemote(h, 'svc-a')).toBe(true);
    expect(h.state.remote).toEqual({ 'svc-a': 1 });
  });
});
