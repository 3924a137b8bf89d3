/**
 * The live listener: reads the config once, finds tmux, and starts the root machine with the real adapters
 * (WebSocket, tmux, files under ~/.svc) provided for the names the machines use.
 */
import { createHash } from 'node:crypto';
import { homedir, hostname } from 'node:os';
import { join } from 'node:path';
import { createActor, fromPromise } from 'xstate';
import { approvalCardBody } from '../core/agents/approvalCard.js';
import { submitStrategyFor } from '../core/agents/registry.js';
import { normalizeSubmitText } from '../core/agents/submit.js';
import type { ResolvedConfig } from '../core/daemon/config.js';
import { resolveConfig } from '../core/daemon/config.js';
import { svcPaths } from '../core/daemon/paths.js';
import { proxyLabel } from '../core/daemon/proxy.js';
import { stageMismatch } from '../core/daemon/verify.js';
import { VERSION } from '../core/daemon/version.js';
import { TypedTexts } from '../core/hooks/control.js';
import { MARKER_FRESH_SECONDS } from '../core/hooks/remoteOrigin.js';
import { sessionEvents } from '../core/notify/events.js';
import { HistoryChunkBody, SchedulesBody } from '../core/protocol/bodies.js';
import type { AgentState, SessionRecord } from '../core/protocol/index.js';
import { pastRecord } from '../core/sessions/control.js';
import { failingChildren } from '../core/supervision.js';
import { defaultSocketPath } from '../core/tmux/socket.js';
import { askMachine } from '../machines/ask.js';
import { asksMachine } from '../machines/asks.js';
import { deviceMachine } from '../machines/device.js';
import { devicesMachine } from '../machines/devices.js';
import { type InventoryReading, inventoryMachine } from '../machines/inventory.js';
import { listenerMachine } from '../machines/listener.js';
import type { LogParams } from '../machines/log.js';
import { paneWatchMachine } from '../machines/paneWatch.js';
import { relayLinkMachine } from '../machines/relayLink.js';
import { scheduleMachine } from '../machines/schedule.js';
import { schedulerMachine } from '../machines/scheduler.js';
import type { InjectInput, InjectOutput } from '../machines/session.js';
import { sessionMachine } from '../machines/session.js';
import { sessionsMachine } from '../machines/sessions.js';
import { watchesMachine } from '../machines/watches.js';
import { type WorktreeInput, worktreeMachine } from '../machines/worktree.js';
import { worktreesMachine } from '../machines/worktrees.js';
import { injectText, realSleep } from './agents/inject.js';
import { createPaneTurns } from './agents/paneTurns.js';
import { readConfigFile } from './daemon/configFile.js';
import { runningListener, startListenerControl } from './daemon/controlSocket.js';
import { isListenerProcess, readPid, removePidFile, writeDaemonFiles } from './daemon/daemonFiles.js';
import { startKeepAwake } from './daemon/keepAwake.js';
import type { Logger } from './daemon/logger.js';
import { createLogger } from './daemon/logger.js';
import { faultsFromEnv } from './debug/faults.js';
import { createInspector } from './debug/inspector.js';
import { loadDeviceIdentity } from './devices/deviceKey.js';
import { pinPairedPhones } from './devices/pairings.js';
import { readPinsSafely, updatePins, watchPins } from './devices/pins.js';
import { ensurePrivateDir } from './files.js';
import { createListenerHooks } from './hooks/listenerHooks.js';
import { createAskService, openAnswerLogic } from './mcp/asks.js';
import { createLeaseBook } from './panes/watchLeases.js';
import { relayProxy } from './relay/proxy.js';
import { relaySocketLogic } from './relay/socket.js';
import { createRootHandle } from './rootHandle.js';
import { scheduleAdapters } from './schedules/runs.js';
import {
  capturePaneLogic,
  createDeviceDirectory,
  openSealedLogic,
  relayDeviceList,
  typeKeysLogic,
} from './seal/e2ee.js';
import { createOutbox, sealedRecord, sealFrameLogic } from './seal/outbox.js';
import { readInventory, SCREEN_LINES } from './sessions/inventoryReading.js';
import { loadLedger, saveLedger } from './sessions/ledgerFile.js';
import { writeMarker } from './sessions/marker.js';
import { createNewSessions } from './sessions/newSession.js';
import { createPastSessions } from './sessions/pastSessions.js';
import { createPhoneRequests } from './sessions/phoneRequests.js';
import { createRemoteBook } from './sessions/remoteBook.js';
import { appendShellAudit } from './sessions/shellAudit.js';
import { discoverTmuxSocket } from './tmux/socket.js';
import { createTmux } from './tmux/tmux.js';
import { createHistory } from './transcripts/history.js';
import { createPinning } from './transcripts/pinning.js';
import { createGit } from './worktrees/git.js';
import {
  checkWorktreeActor,
  createWorktreeIndex,
  findSvcWorktrees,
  removeWorktreeActor,
} from './worktrees/worktrees.js';

export interface ListenerOptions {
  home?: string;
  env?: Record<string, string | undefined>;
  wsUrl?: string;
  keepAwake?: boolean;
  turnHistory?: boolean;
  debug?: boolean;
  /** Also write each log line to stderr (default); off for the background daemon, whose stderr is the log file. */
  logToStderr?: boolean;
  /** `up` when `svc up` runs this listener in its own process (said on the control socket). */
  host?: 'listener' | 'up';
  /**
   * The tmux server to watch, instead of discovering one (spec 4.15): `svc up` gives the one `svc cc` run from the
   * same shell uses, so a server that happens to answer elsewhere (found by lsof) is not taken instead.
   */
  tmuxSocket?: { path: string; source: string };
}

export class ListenerStartError extends Error {}

export interface RunningListener {
  config: ResolvedConfig;
  socketPath: string;
  log: Logger;
  /** Resolves with the exit code when the listener ends (stopped, or the relay refused it). */
  done: Promise<number>;
  stop(): void;
}

const REPLAY_WINDOW_MS = 120_000;

export async function startListener(opts: ListenerOptions = {}): Promise<RunningListener> {
  const env = opts.env ?? process.env;
  const paths = svcPaths(opts.home ?? homedir());
  ensurePrivateDir(paths.dir);

  const config = resolveConfig(
    readConfigFile(paths.config),
    env,
    { wsUrl: opts.wsUrl, keepAwake: opts.keepAwake, turnHistory: opts.turnHistory },
    paths.config,
  );
  const apiKey = config.apiKey.value;
  const hookId = config.hookId.value;
  if (!apiKey || !hookId) {
    for (const w of config.warnings) process.stderr.write(`warning: ${w}\n`);
    throw new ListenerStartError('not logged in: run `svc login --url <relay> --key <apiKey>` (or `svc up`) first');
  }

  // One listener per computer: the control socket is the witness (a listener inside `svc up` has one too).
  const other = await runningListener(paths.dir);
  const running = other?.pid ?? readPid(paths.pid);
  if (running && running !== process.pid && (other || isListenerProcess(running))) {
    throw new ListenerStartError(
      other?.host === 'up'
        ? `a listener is already running inside \`svc up\` (pid ${running}); stop that \`svc up\` first`
        : `a listener is already running (pid ${running}); stop it with \`svc listener --stop\``,
    );
  }

  const uid = process.getuid?.() ?? 0;
  // No tmux server yet: watch the default socket, where the first `tmux` or `svc cc` will start one.
  const found = opts.tmuxSocket ??
    (await discoverTmuxSocket({ env, uid })) ?? {
      path: defaultSocketPath(env, uid),
      source: 'default (no server yet)',
    };
  const socketPath = found.path;
  const log = createLogger({ file: paths.log, debug: opts.debug, stderr: opts.logToStderr !== false });
  // what the listener typed lately: only those texts may put a session in sticky REMOTE through a hook
  const typed = new TypedTexts(MARKER_FRESH_SECONDS * 1000);
  writeDaemonFiles(paths, VERSION);
  log.info(`listener starting v${VERSION} ${socketPath}`);
  log.info(`tmux socket from ${found.source}; relay ${config.wsUrl.value} (from ${config.wsUrl.source})`);
  try {
    const proxy = relayProxy(config.wsUrl.value);
    if (proxy)
      log.info(`relay through the proxy ${proxyLabel(proxy)} (config httpsProxy/httpProxy, or the environment)`);
  } catch (err) {
    log.error(`proxy setting: ${(err as Error).message}; the relay cannot be reached until it is fixed`);
  }
  for (const w of config.warnings) log.warn(w);
  const mismatch = stageMismatch(config.baseUrl.value, config.wsUrl.value);
  if (mismatch) log.warn(mismatch);

  // One long-lived control-mode client carries the tmux calls (no process per push); plain calls when it is not up.
  const tmux = createTmux({
    socketPath,
    persistent: process.env.SVC_TMUX_PERSISTENT !== '0',
    onControl: (event, detail) =>
      event === 'attached'
        ? log.info(`tmux control client attached (${detail})`)
        : log.info(`tmux control client gone: ${detail}; plain tmux calls until it is back`),
  });
  const host = hostname();
  const ledgerPath = paths.ledger(hookId);
  const ledger = loadLedger(ledgerPath, log.warn);
  const logAction = (_: unknown, params: LogParams) => log.line(params);
  // a test-only switch that makes chosen children fail (actors/debug/faults.ts); read once, here
  const faults = faultsFromEnv(process.env, (level, message) => log[level](message));
  // one typing at a time per pane, also across a session actor rebuilt after a failure
  const inTurn = createPaneTurns();

  // Sealing (docs/security.md): this computer's device key, the devices it pinned, the relay's device list.
  const me = await loadDeviceIdentity(paths.deviceKey, config.baseUrl.value).catch((err: Error) => {
    log.error(`cannot use the device key ${paths.deviceKey}: ${err.message}`);
    return null;
  });
  if (me) log.info(`device ${me.deviceId}: sealed messages and live panes are on`);
  else log.warn('no device key for this relay: sealed messages cannot be opened; run `svc login` again');
  const pinsReading = readPinsSafely(paths.devicePins);
  if (pinsReading.unreadable) {
    log.error(`${pinsReading.error}: plaintext is refused and sealed contacts fail until it is fixed`);
  }
  const directory = createDeviceDirectory({ fetchList: relayDeviceList(config.baseUrl.value, apiKey) });

  // Live panes a listener before this one was streaming: resumed within their leases (docs/protocol.md).
  const leases = createLeaseBook(join(paths.dir, 'watches.json'), { onError: (message) => log.error(message) });
  // Sessions the person drives from the phone stay in sticky REMOTE across a restart (core/sessions/remoteMode.ts).
  const remote = createRemoteBook(join(paths.dir, 'remote.json'), { onError: (message) => log.error(message) });

  // svc mcp: asks and notifications, sealed for the phones (actors/mcp/asks.ts). The root attaches once it runs.
  const root = createRootHandle();
  // everything sealed for the phones goes one way (actors/seal/outbox.ts)
  const outbox = createOutbox({
    me,
    readPins: () => readPinsSafely(paths.devicePins).pins,
    listDevices: relayDeviceList(config.baseUrl.value, apiKey),
    // a phone that paired with this computer's own link is sealed for from then on (core/devices/pairingProof.ts)
    pinPaired: async (pins, listed) => {
      if (!me) return pins;
      const after = await pinPairedPhones({
        pinsPath: paths.devicePins,
        pairingsPath: paths.pairings,
        pins,
        listed,
        myDeviceId: me.deviceId,
        log,
      });
      // a phone just pinned gets the schedules too, not only what is sealed from now on
      if (after !== pins && schedulesShown.length > 0) setTimeout(() => sealSchedules(schedulesShown), 0);
      return after;
    },
    log,
  });
  const asks = createAskService({
    outbox,
    asksPath: join(paths.dir, 'asks.json'),
    send: (event) => root.send(event),
    sendToRelay: (frame) => void root.toRelay(frame),
    log,
  });

  const past = createPastSessions(join(paths.dir, 'past-sessions.json'), log, () => history?.held() ?? new Set());
  const tellPast = () => {
    const live = Object.values(root.context()?.sessions ?? {});
    root.send({ type: 'PAST.CHANGED', past: past.past(live).map(pastRecord) });
  };

  let schedulesShown: SchedulesBody['schedules'] = [];
  const sealSchedules = (views: SchedulesBody['schedules']) => {
    if (views.length === 0) return root.send({ type: 'SCHEDULES.SEALED', envelope: null });
    // the body is built inside the chain: one that fails its schema is logged, never thrown into the scheduler
    Promise.resolve()
      .then(() => outbox.toPhones('schedules', SchedulesBody.parse({ schedules: views, at: Date.now() })))
      .then((envelope) => root.send({ type: 'SCHEDULES.SEALED', envelope: sealedRecord(envelope) }))
      .catch((err: Error) => log.warn(`could not seal the schedules for the phones: ${err.message}`));
  };

  // spec 4.8: the schedules file, read at each tick; runs start in this tmux server (actors/schedules/runs.ts)
  const schedules = scheduleAdapters({
    path: paths.schedules,
    tmux,
    log,
    notify: (session, message) => asks.event(session, 'schedule', message),
    env,
    // the phones' list (spec 4.8.9): sealed again whenever it changes, reported with the inventory
    onList: (views) => {
      schedulesShown = views;
      sealSchedules(views);
    },
  });

  // spec 4.11.1, 4.12: each agent session's transcript, sealed in chunks for the phones' history and timeline
  const history = config.turnHistory.value
    ? createHistory({
        positionsPath: join(paths.dir, 'history.json'),
        env,
        log,
        ready: () => root.context()?.online === true,
        send: async (chunk) => {
          const body = HistoryChunkBody.parse({ ...chunk, at: Date.now() });
          const envelope = sealedRecord(await outbox.toPhones('history.chunk', body));
          if (!envelope) {
            // no device to seal for: nothing leaves the computer (said, so a timeline with a gap can be explained)
            log.info(`history of ${chunk.session}: ${chunk.items.length} item(s) not sent: no device to seal for`);
            return;
          }
          if (!root.toRelay({ type: 'history.chunk', session: chunk.session, envelope }))
            throw new Error('the relay link is not up');
        },
      })
    : null;
  if (!history)
    log.info(
      `session history: off (${config.turnHistory.source === 'flag' ? '--no-turn-history' : 'turnHistory: false'})`,
    );

  // what the phone asks beyond typing: past sessions, schedules, files (actors/sessions/phoneRequests.ts)
  const newSessions = createNewSessions({
    settingsPath: join(paths.dir, 'new-session.json'),
    home: opts.home ?? homedir(),
    env,
    socketPath,
    uid: process.getuid?.() ?? 0,
    platform: process.platform,
    log,
    book: () => past.all(),
    firstPrompt: (session, agent, text, startedAt) =>
      root.send({ type: 'LAUNCH.PROMPT', session, agent, text, startedAt }),
  });
  const requests = createPhoneRequests({
    paths,
    home: opts.home,
    env,
    log,
    outbox,
    tmux,
    past,
    tellPast,
    schedules,
    newSessions,
    root,
  });

  const git = createGit();
  const worktreeIndex = createWorktreeIndex(join(paths.dir, 'worktrees.json'));

  const reportFailure = (_: unknown, { id, error, what }: { id: string; error: unknown; what: string }) => {
    // the event it failed on, from the inspector (its type only: never a payload)
    const last = inspector.lastEvent(id);
    const stack = error instanceof Error ? (error.stack ?? error.message) : String(error);
    log.error(`child ${id} failed${last ? ` handling ${last}` : ''}: ${what}\n${stack}`);
  };
  const machine = listenerMachine.provide({
    actors: faults.children({
      worktrees: worktreesMachine.provide({
        actors: {
          worktree: worktreeMachine.provide({
            actors: {
              checkWorktree: faults.promise(checkWorktreeActor(git)),
              removeWorktree: faults.promise(removeWorktreeActor(git)),
            },
            actions: { log: logAction },
          }),
          findWorktrees: fromPromise<(WorktreeInput & { repoName: string })[]>(async () => {
            const found = await findSvcWorktrees({ git, index: worktreeIndex });
            for (const problem of found.problems) log.warn(problem);
            return found.worktrees;
          }),
        },
        actions: { log: logAction, reportFailure },
      }),
      relayLink: relayLinkMachine.provide({
        actors: { relaySocket: faults.callback(relaySocketLogic) },
        actions: { log: logAction },
      }),
      devices: devicesMachine.provide({
        actors: {
          device: deviceMachine.provide({
            actors: { openSealed: faults.promise(openSealedLogic({ me, directory, pinsPath: paths.devicePins })) },
            actions: {
              log: logAction,
              persistPins: (_, params) => {
                try {
                  updatePins(paths.devicePins, params.ops);
                } catch (err) {
                  log.error(`could not save the device pins ${paths.devicePins}: ${(err as Error).message}`);
                }
              },
            },
          }),
        },
        actions: { log: logAction, reportFailure },
      }),
      watches: watchesMachine.provide({
        actors: {
          paneWatch: paneWatchMachine.provide({
            actors: {
              capturePane: faults.promise(capturePaneLogic(tmux)),
              sealFrame: faults.promise(sealFrameLogic(outbox)),
            },
            actions: {
              log: logAction,
              recordLease: (_, params) => leases.record(params),
              forgetLease: (_, params) => leases.forget(params),
            },
          }),
        },
        actions: { log: logAction, reportFailure },
      }),
      pinsWatch: faults.callback(watchPins(paths.devicePins)),
      scheduler: schedulerMachine.provide({
        actors: {
          readSchedules: faults.promise(schedules.readSchedules),
          schedule: scheduleMachine.provide({
            actors: { startRun: faults.promise(schedules.startRun) },
            actions: { log: logAction, persist: schedules.persist },
          }),
        },
        actions: {
          log: logAction,
          saveSeen: schedules.saveSeen,
          notifySkipped: schedules.notifySkipped,
          reportFailure,
        },
      }),
      asks: asksMachine.provide({
        actors: {
          ask: askMachine.provide({
            actors: { openAnswer: faults.promise(fromPromise(openAnswerLogic(me))) },
            actions: { log: logAction },
          }),
        },
        actions: {
          log: logAction,
          announceAsk: (_, params) => asks.announce(params.id),
          settleAsk: (_, params) => asks.settle(params.output),
          reportFailure,
        },
      }),
      inventory: inventoryMachine.provide({
        actors: {
          // Two tmux calls a tick whatever the number of sessions: the inventory, then the agent panes' screens.
          listSessions: faults.promise(fromPromise<InventoryReading>(() => readInventory(tmux, host))),
          // A look between ticks costs no process only through the persistent client: without it, the poll alone.
          watchScreens: fromPromise<Record<string, string> | null, { panes: string[] }>(({ input }) =>
            tmux.controlPid() === undefined ? Promise.resolve(null) : tmux.captureMany(input.panes, SCREEN_LINES),
          ),
        },
        actions: { log: logAction },
      }),
      sessions: sessionsMachine.provide({
        actors: {
          session: sessionMachine.provide({
            actors: {
              inject: faults.promise(
                fromPromise<InjectOutput, InjectInput>(({ input }) =>
                  inTurn(input.paneId, async () => {
                    const result = await injectText({
                      tmux,
                      target: { pane: input.paneId },
                      text: input.text,
                      strategy: submitStrategyFor(input),
                      pane: { inMode: input.inMode },
                      sleep: realSleep,
                    });
                    if (result.heldFor === 'approval')
                      log.warn(
                        `${input.session}: an approval prompt came up after the paste; its Enter was not sent (it would have answered the prompt)`,
                      );
                    return { submitted: result.submitted };
                  }),
                ),
              ),
              typeKeys: faults.promise(typeKeysLogic(tmux, undefined, inTurn)),
            },
            actions: {
              log: logAction,
              auditShellInput: (_, params) => {
                try {
                  appendShellAudit(paths.shellAudit, {
                    at: Date.now(),
                    session: params.session,
                    pane: params.paneId,
                    kind: params.kind ?? 'insert',
                    program: params.foreground,
                    text: params.text,
                  });
                } catch (err) {
                  log.error(`could not write the shell audit log ${paths.shellAudit}: ${(err as Error).message}`);
                }
              },
              sealCard: (_, { session, prompt }) => {
                // built inside the chain: a card that fails its schema is logged, never thrown into the session actor
                Promise.resolve()
                  .then(() => outbox.toPhones('approval', approvalCardBody(session, prompt, Date.now())))
                  .then((envelope) => {
                    const sealed = sealedRecord(envelope);
                    if (sealed)
                      root.send({
                        type: 'APPROVAL.SEALED',
                        session,
                        fingerprint: prompt.fingerprint,
                        envelope: sealed,
                      });
                  })
                  .catch((err: Error) => log.warn(`could not seal the approval card of ${session}: ${err.message}`));
              },
              writeMarker: (_, params) => {
                if (!params.projectDir) return;
                try {
                  // Hash what is really typed (normalized), so the agent-side hook's exact match holds.
                  const text = normalizeSubmitText(params.text);
                  writeMarker(paths.markers, params.session, params.projectDir, text);
                  typed.add(params.session, createHash('sha256').update(text).digest('hex'));
                } catch (err) {
                  log.warn(`could not write the remote-origin marker: ${(err as Error).message}`);
                }
              },
            },
          }),
        },
        actions: { log: logAction, reportFailure, saveRemote: (_, { remote: sessions }) => remote.save(sessions) },
      }),
    }),
    actions: {
      log: logAction,
      reportFailure,
      persistLedger: (_, params) => {
        try {
          saveLedger(ledgerPath, params.ledger);
        } catch (err) {
          log.error(`could not save the delivery ledger ${ledgerPath}: ${(err as Error).message}`);
        }
      },
      abandonAsks: () => asks.abandon(),
      notifyAcked: (_, params) => asks.acked(params.id, params.delivered, params.reason),
      phoneRequest: (_, params) => requests.handle(params),
    },
  });

  // spec 4.10: the computer stays awake while the listener lives (off with --no-keep-awake or keepAwake: false)
  const awake = config.keepAwake.value ? startKeepAwake(log) : { stop() {} };
  if (!config.keepAwake.value)
    log.info(`keep-awake: off (${config.keepAwake.source === 'flag' ? '--no-keep-awake' : 'keepAwake: false'})`);
  const inspector = createInspector();
  const actor = createActor(machine, {
    input: {
      hookId,
      wsUrl: config.wsUrl.value,
      apiKey,
      version: VERSION,
      ledger,
      replayWindowMs: REPLAY_WINDOW_MS,
      hostname: host,
      pins: pinsReading.pins,
      pinsUnreadable: pinsReading.unreadable,
      resumeWatches: leases.left(),
      remote: remote.sessions,
    },
    inspect: inspector.inspect,
  });
  root.attach(actor);
  // which transcript is whose: the agents' hooks say (actors/transcripts/pinning.ts)
  const pinning = createPinning({
    tmux,
    sessions: () => actor.getSnapshot().context.sessions,
    pinned: (session, transcript) => history?.pinned(session, transcript),
    log,
    env,
  });
  // svc remote-hook: sticky REMOTE and finished turns from the agents' own hooks (actors/hooks/listenerHooks.ts)
  const hooks = createListenerHooks({
    sessions: () => actor.getSnapshot().context.sessions,
    typed,
    setRemote: (session, on, why) => actor.send({ type: 'SESSION.REMOTE', session, on, why }),
    tell: (session, kind, message) => asks.event(session, kind, message),
    pin: (session, request) =>
      void pinning.pin(session, request).catch((err: Error) => log.warn(`${session}: not pinned: ${err.message}`)),
    log,
  });
  // `svc listener --status/--stop`, `svc debug state/events/ui` (actors/daemon/controlSocket.ts)
  const control = startListenerControl({
    dir: paths.dir,
    inspector,
    version: VERSION,
    tmuxSocket: socketPath,
    host: opts.host ?? 'listener',
    stop: () => actor.send({ type: 'STOP' }),
    log,
    mcp: asks.handle,
    hook: (request) => hooks.handle(request),
    failing: () => failingChildren(root.failures(), Date.now()),
  });

  const done = new Promise<number>((resolve) => {
    actor.subscribe({
      next: (snapshot) => {
        if (snapshot.status === 'done') {
          const reason = snapshot.context.stopReason;
          resolve(reason ? 1 : 0);
        }
      },
      error: (err) => {
        log.error(`listener machine failed: ${(err as Error).stack ?? String(err)}`);
        resolve(1);
      },
    });
  }).finally(() => {
    actor.stop();
    control.close();
    tmux.close();
    awake.stop();
    history?.stop();
    removePidFile(paths.pid);
  });

  // Sessions that end (or were there before a restart) are remembered, and offered to resume (core/sessions/control.ts).
  let liveSeen: Record<string, SessionRecord> | null = null;
  actor.subscribe((snapshot) => {
    const live = snapshot.context.sessions;
    if (live === liveSeen) return;
    liveSeen = live;
    if (past.seen(Object.values(live), Math.floor(Date.now() / 1000))) tellPast();
    history?.sessions(Object.values(live));
    hooks.seen(live);
  });

  // An approval waiting, a finished turn: told to the phones (core/notify/events.ts), sealed like svc_notify.
  let states: Record<string, AgentState | undefined> | null = null;
  actor.subscribe((snapshot) => {
    const next = Object.fromEntries(Object.entries(snapshot.context.sessions).map(([n, r]) => [n, r.state]));
    if (states) {
      for (const e of sessionEvents(states, next)) {
        if (e.kind === 'turn') hooks.turn(e.session);
        else asks.event(e.session, e.kind, e.message);
      }
    }
    states = next;
  });
  actor.start();
  for (const id of asks.leftovers()) actor.send({ type: 'ASK.LEFTOVER', id });
  return {
    config,
    socketPath,
    log,
    done,
    stop: () => actor.send({ type: 'STOP' }),
  };
}
