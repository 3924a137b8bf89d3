/**
 * The root of the listener daemon. It invokes the relay link and the inventory, spawns one `session.<name>` actor
 * per tmux session, and routes each `agent.command` push to its session, recording what it acted on so nothing is
 * typed twice (DESIGN.md, "Delivery semantics").
 */
import { assign, enqueueActions, fromCallback, fromPromise, sendTo, setup } from 'xstate';
import { anyPinned, emptyPins, MAX_DEVICE_ACTORS, type PinsFile } from '../core/devices.js';
import { activePane, describeSessions } from '../core/inventory.js';
import { badKeyName } from '../core/keys.js';
import type { Ledger } from '../core/ledger.js';
import { recordOutcome, triagePush } from '../core/ledger.js';
import type { ClientFrame, RelayFrame, SessionRecord, WirePush } from '../core/protocol.js';
import { isValidSessionName } from '../core/refusals.js';
import { DEVICE_ID_RE } from '../core/seal.js';
import type { CommandBody, KeysBody, WatchBody } from '../core/sealedBodies.js';
import { sessionsHolding } from '../core/worktree.js';
import type { Contact, DeviceResult } from './device.js';
import { deviceMachine } from './device.js';
import { inventoryMachine } from './inventory.js';
import type { LogParams } from './log.js';
import { type PaneWatchInput, type PaneWatchOutput, paneWatchMachine, type WatchFrameEvent } from './paneWatch.js';
import { relayLinkMachine } from './relayLink.js';
import type { SessionContext, SessionKeys, SessionKeysResult, SessionResult } from './session.js';
import { sessionMachine, unanswered } from './session.js';
import type { WorktreeInput } from './worktree.js';
import { worktreeMachine } from './worktree.js';

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
  /** ~/.svc/devices.json as it was at start: a `device.<id>` actor for each pinned device. */
  pins?: PinsFile;
  /** devices.json exists but cannot be read: fail closed (plaintext refused) until it can. */
  pinsUnreadable?: boolean;
}

/**
 * Input for a session, held until the inventory has read tmux after it arrived: whether a program or a shell is in
 * front, or the session is there at all, is judged on a reading newer than the input (a five-second-old one could
 * show an agent where a shell now waits for commands).
 */
type HeldInput =
  | { kind: 'push'; session: string; id: number; event: ReturnType<typeof sessionPushEvent> }
  | { kind: 'keys'; session: string; event: { type: 'KEYS'; keys: SessionKeys } };
/** `ask`: the number of the REFRESH sent for it; a snapshot that answers it began after the input arrived. */
type Held = HeldInput & { ask: number };

export interface ListenerContext {
  hookId: string;
  input: ListenerInput;
  ledger: Ledger;
  /** Sessions tmux reported last, by name; each has a `session.<name>` child. */
  sessions: Record<string, SessionRecord>;
  /** Input waiting for an inventory reading taken after it arrived (see `Held`). */
  held: Held[];
  /** REFRESH requests sent to the inventory. */
  asked: number;
  online: boolean;
  /** Worktrees made by `--wt`, by actor id (`worktree.<repo>-wt-<slug>`); each has a child actor. */
  worktrees: Record<string, WorktreeInput>;
  /** Starts from the input; the relay's own window replaces it once the link is up. */
  replayWindowMs: number;
  stopReason: string | null;
  /** The pinned devices as last read from ~/.svc/devices.json or decided by a device actor. */
  pins: PinsFile;
  pinsUnreadable: boolean;
  /** Device ids that have a `device.<id>` child. */
  devices: string[];
  /** Live panes by actor id (`watch.<deviceId>/<session>`); each has a child. */
  watches: Record<string, Pick<PaneWatchInput, 'session' | 'deviceId' | 'connection'>>;
}

export type ListenerEvent =
  | { type: 'LINK.FRAME'; frame: RelayFrame; receivedAt: number }
  | { type: 'LINK.ONLINE'; replayWindowMs?: number | null }
  | { type: 'LINK.OFFLINE'; reason: string }
  | { type: 'LINK.STOPPED'; reason: string }
  | { type: 'INVENTORY.SNAPSHOT'; sessions: SessionRecord[]; answers: number }
  | { type: 'HOLD'; held: HeldInput }
  | { type: 'INVENTORY.REPORT'; sessions: SessionRecord[]; seq: number; reason: string }
  | SessionResult
  | SessionKeysResult
  | DeviceResult
  | WatchFrameEvent
  /** ~/.svc/devices.json changed on disk (`svc devices verify` / `forget`). */
  | { type: 'PINS.LOADED'; pins: PinsFile; unreadable?: boolean }
  | { type: 'STOP' };

export const sessionId = (name: string) => `session.${name}`;

/** The event a session actor takes for a push (a sealed one already opened: `body` is its text). */
function sessionPushEvent(push: WirePush, receivedAt: number, hookId: string) {
  return {
    type: 'PUSH' as const,
    push: { id: push.id, body: push.body, addressedToThisComputer: push.targetComputer === hookId, receivedAt },
  };
}
function heldPush(push: WirePush, receivedAt: number, hookId: string): HeldInput {
  const event = sessionPushEvent(push, receivedAt, hookId);
  return { kind: 'push', session: push.agentSessionName, id: push.id, event };
}

/** The answer for held input whose session the fresh reading does not show. */
function notFound(h: HeldInput): SessionResult | SessionKeysResult {
  const refused = { session: h.session, state: 'refused', code: 'session_not_found' } as const;
  return h.kind === 'push'
    ? { type: 'SESSION.RESULT', id: h.id, ...refused }
    : { type: 'SESSION.KEYS_RESULT', ref: h.event.keys.ref, ...refused };
}

/** Slugs repeat across repositories, so the repository is part of the id. */
export const worktreeId = (repoName: string, slug: string) => `worktree.${repoName}-wt-${slug}`;
export const deviceActorId = (deviceId: string) => `device.${deviceId}`;
export const watchId = (deviceId: string, session: string) => `watch.${deviceId}/${session}`;
/** Live panes at once, over all devices: each is a tmux capture every paneInterval. */
export const MAX_WATCHES = 8;

/** A pane.status or keys.result for the app that asked. */
function paneAnswer(
  kind: 'pane.status',
  to: { session: string; deviceId: string | null; connection: string },
  state: 'streaming' | 'stopped' | 'refused',
  code?: string,
): { type: 'SEND'; frame: ClientFrame };
function paneAnswer(
  kind: 'keys.result',
  to: { session: string; deviceId: string | null; connection: string },
  state: 'typed' | 'refused',
  code?: string,
  seq?: number | null,
): { type: 'SEND'; frame: ClientFrame };
function paneAnswer(
  kind: 'pane.status' | 'keys.result',
  to: { session: string; deviceId: string | null; connection: string },
  state: string,
  code?: string,
  seq: number | null = null,
): { type: 'SEND'; frame: ClientFrame } {
  const base = { session: to.session, deviceId: to.deviceId, connection: to.connection, ...(code ? { code } : {}) };
  const frame =
    kind === 'pane.status'
      ? { type: kind, ...base, state: state as 'streaming' | 'stopped' | 'refused' }
      : { type: kind, ...base, seq, state: state as 'typed' | 'refused' };
  return { type: 'SEND', frame };
}

export const listenerMachine = setup({
  types: {
    context: {} as ListenerContext,
    input: {} as ListenerInput,
    events: {} as ListenerEvent,
  },
  actors: {
    relayLink: relayLinkMachine,
    inventory: inventoryMachine,
    session: sessionMachine,
    worktree: worktreeMachine,
    device: deviceMachine,
    paneWatch: paneWatchMachine,
    /** Reports ~/.svc/devices.json whenever it changes on disk (actors/devicePins.ts). */
    pinsWatch: fromCallback(() => () => {}),
    /** Every worktree made by `--wt` that git still lists (actors/git.ts findSvcWorktrees). */
    findWorktrees: fromPromise<(WorktreeInput & { repoName: string })[]>(async () => []),
  },
  delays: {
    worktreeScan: 60_000,
  },
  guards: {
    isOnline: ({ context }) => context.online,
  },
  actions: {
    log: (_, _params: LogParams) => {},
    /** Write the ledger to disk before anything is typed (actors/ledgerFile.ts). */
    persistLedger: (_, _params: { ledger: Ledger }) => {},
  },
}).createMachine({
  id: 'listener',
  context: ({ input }) => ({
    hookId: input.hookId,
    input,
    ledger: input.ledger,
    sessions: {},
    held: [],
    asked: 0,
    online: false,
    worktrees: {},
    replayWindowMs: input.replayWindowMs,
    stopReason: null,
    pins: input.pins ?? emptyPins(),
    pinsUnreadable: input.pinsUnreadable ?? false,
    devices: [],
    watches: {},
  }),
  initial: 'running',
  states: {
    running: {
      // Rebuilt from the file, not from a snapshot: one device actor per pinned device.
      entry: enqueueActions(({ context, enqueue }) => {
        const ids = Object.keys(context.pins.devices).slice(0, MAX_DEVICE_ACTORS);
        for (const deviceId of ids) {
          enqueue.spawnChild('device', {
            id: deviceActorId(deviceId),
            systemId: deviceActorId(deviceId),
            input: { deviceId, pin: context.pins.devices[deviceId] },
          });
        }
        enqueue.assign({ devices: ids });
      }),
      initial: 'scanningWorktrees',
      states: {
        scanningWorktrees: {
          description: 'Looks for worktrees made by --wt, so each gets a worktree actor (also after a restart).',
          invoke: {
            src: 'findWorktrees',
            onDone: {
              target: 'waitingToScan',
              actions: enqueueActions(({ context, event, enqueue }) => {
                const next = { ...context.worktrees };
                for (const wt of event.output) {
                  const id = worktreeId(wt.repoName, wt.slug);
                  if (next[id]) continue;
                  const input: WorktreeInput = {
                    slug: wt.slug,
                    path: wt.path,
                    repo: wt.repo,
                    branch: wt.branch,
                    sessionName: wt.sessionName,
                  };
                  next[id] = input;
                  enqueue.spawnChild('worktree', { id, systemId: id, input });
                  const alive =
                    sessionsHolding(Object.values(context.sessions), input.sessionName, input.path).length > 0;
                  enqueue.sendTo(id, { type: alive ? 'SESSION.ALIVE' : 'SESSION.GONE' });
                }
                enqueue.assign({ worktrees: next });
              }),
            },
            onError: {
              target: 'waitingToScan',
              actions: {
                type: 'log',
                params: ({ event }) => ({ level: 'warn', message: `could not list worktrees: ${String(event.error)}` }),
              },
            },
          },
        },
        waitingToScan: { after: { worktreeScan: 'scanningWorktrees' } },
      },
      invoke: [
        {
          id: 'relay',
          systemId: 'relay',
          src: 'relayLink',
          input: ({ context }) => ({
            wsUrl: context.input.wsUrl,
            apiKey: context.input.apiKey,
            hookId: context.input.hookId,
            version: context.input.version,
            lastPushId: context.ledger.lastPushId,
            random: context.input.random,
          }),
        },
        {
          id: 'inventory',
          systemId: 'inventory',
          src: 'inventory',
          input: ({ context }) => ({ hostname: context.input.hostname ?? '' }),
        },
        { id: 'pinsWatch', systemId: 'pinsWatch', src: 'pinsWatch' },
      ],
      on: {
        'LINK.ONLINE': {
          actions: [
            assign({
              online: true,
              replayWindowMs: ({ context, event }) => event.replayWindowMs ?? context.replayWindowMs,
            }),
            sendTo('inventory', { type: 'FORCE_REPORT' }),
          ],
        },
        'LINK.OFFLINE': { actions: assign({ online: false }) },
        'LINK.STOPPED': { target: 'halted', actions: assign({ stopReason: ({ event }) => event.reason }) },
        'LINK.FRAME': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            if (event.type !== 'LINK.FRAME') return;
            const frame = event.frame;
            const receivedAt = event.receivedAt;
            if (frame.type === 'sessions.result') {
              enqueue({
                type: 'log',
                params: frame.ok
                  ? { level: 'info', message: `server persisted listener.sessions (seq ${frame.seq})` }
                  : {
                      level: 'warn',
                      message: `server rejected listener.sessions: ${frame.reason ?? 'no reason given'}`,
                    },
              });
              return;
            }
            if (frame.type === 'error') {
              enqueue({
                type: 'log',
                params: { level: 'warn', message: `relay error ${frame.code}: ${frame.message}` },
              });
              return;
            }
            // Stable references for the helpers below (narrowing does not reach into closures).
            const ctx = context;
            const contact = (deviceId: string, c: Contact, refuse: (code: string) => void) => {
              if (!DEVICE_ID_RE.test(deviceId)) return refuse('bad_seal');
              if (!ctx.devices.includes(deviceId)) {
                if (ctx.devices.length >= MAX_DEVICE_ACTORS) return refuse('subscriber_unverified');
                enqueue.spawnChild('device', {
                  id: deviceActorId(deviceId),
                  systemId: deviceActorId(deviceId),
                  input: { deviceId, pin: ctx.pins.devices[deviceId] },
                });
                enqueue.assign({ devices: [...ctx.devices, deviceId] });
              }
              enqueue.sendTo(deviceActorId(deviceId), { type: 'CONTACT', contact: c });
            };
            if (frame.type === 'pane.stop') {
              if (frame.deviceId === null) return;
              const id = watchId(frame.deviceId, frame.session);
              if (context.watches[id]) enqueue.sendTo(id, { type: 'STOP' });
              return;
            }
            if (frame.type === 'pane.watch' || frame.type === 'pane.keys') {
              const to = { session: frame.session, deviceId: frame.deviceId, connection: frame.connection };
              const refuse = (code: string) =>
                enqueue.sendTo(
                  'relay',
                  frame.type === 'pane.watch'
                    ? paneAnswer('pane.status', to, 'refused', code)
                    : paneAnswer('keys.result', to, 'refused', code),
                );
              // Screens and keystrokes never cross the relay in the clear: a connection without a device key is
              // refused whatever the pins (docs/security.md).
              if (frame.deviceId === null) return refuse('e2ee_required');
              // The device the relay says asked must be the one that sealed: the answer goes to that device.
              if (frame.envelope.from !== frame.deviceId) return refuse('bad_seal');
              contact(
                frame.deviceId,
                frame.type === 'pane.watch'
                  ? {
                      ref: { kind: 'watch', session: frame.session, connection: frame.connection },
                      purpose: 'pane.watch',
                      envelope: frame.envelope,
                    }
                  : {
                      ref: { kind: 'keys', session: frame.session, connection: frame.connection, receivedAt },
                      purpose: 'pane.keys',
                      envelope: frame.envelope,
                    },
                refuse,
              );
              return;
            }
            if (frame.type !== 'push.new') return;
            const push = frame.push;
            const triage = triagePush(push, context.ledger, context.replayWindowMs);
            const result = (state: 'injected' | 'refused' | 'expired', code?: string, message?: string) =>
              enqueue.sendTo('relay', {
                type: 'SEND',
                frame: {
                  type: 'push.result',
                  id: push.id,
                  state,
                  ...(code ? { code } : {}),
                  ...(message ? { message } : {}),
                },
              });
            const settle = (ledger: Ledger) => {
              enqueue.assign({ ledger });
              enqueue({ type: 'persistLedger', params: { ledger } });
              enqueue.sendTo('relay', { type: 'ACTED', lastPushId: ledger.lastPushId });
            };
            switch (triage.action) {
              case 'ignore':
                enqueue({
                  type: 'log',
                  params: { level: 'debug', message: `push ${push.id}: type ${push.type}, ignored` },
                });
                return;
              case 'resend': {
                const outcome = triage.outcome;
                if (outcome.state === 'claimed') {
                  // The listener stopped while typing it: it may or may not have been typed; never type it again.
                  result('refused', 'inject_failed', 'listener stopped while typing this push; not typed again');
                } else result(outcome.state, outcome.code);
                return;
              }
              case 'expire':
                settle(recordOutcome(context.ledger, push.id, { state: 'expired' }));
                result('expired');
                enqueue({
                  type: 'log',
                  params: {
                    level: 'info',
                    message: `push ${push.id}: expired (${Math.round(push.ageMs / 1000)} s old), not typed`,
                  },
                });
                return;
              case 'deliver': {
                if (!isValidSessionName(push.agentSessionName)) {
                  settle(recordOutcome(context.ledger, push.id, { state: 'refused', code: 'invalid_target' }));
                  result('refused', 'invalid_target');
                  enqueue({
                    type: 'log',
                    params: { level: 'warn', message: `push ${push.id}: refused invalid_target` },
                  });
                  return;
                }
                const refuseNow = (code: string) => {
                  settle(recordOutcome(context.ledger, push.id, { state: 'refused', code }));
                  result('refused', code);
                  enqueue({ type: 'log', params: { level: 'warn', message: `push ${push.id}: refused ${code}` } });
                };
                if (!push.sealed && (anyPinned(context.pins) || context.pinsUnreadable)) {
                  return refuseNow('e2ee_required');
                }
                if (push.sealed) {
                  const from = push.sealed.from;
                  if (typeof from !== 'string' || !DEVICE_ID_RE.test(from)) return refuseNow('bad_seal');
                  // Claimed before it is opened: whatever happens next, it is never typed twice.
                  settle(recordOutcome(context.ledger, push.id, { state: 'claimed' }));
                  contact(
                    from,
                    { ref: { kind: 'push', push, receivedAt }, purpose: 'agent.command', envelope: push.sealed },
                    (code) =>
                      enqueue.raise({
                        type: 'SESSION.RESULT',
                        session: push.agentSessionName,
                        id: push.id,
                        state: 'refused',
                        code: code as 'bad_seal',
                      }),
                  );
                  return;
                }
                settle(recordOutcome(context.ledger, push.id, { state: 'claimed' }));
                enqueue.raise({ type: 'HOLD', held: heldPush(push, receivedAt, context.hookId) });
              }
            }
          }),
        },
        HOLD: {
          description:
            'Input for a session waits for a tmux reading newer than itself; the inventory is asked for one.',
          actions: [
            assign(({ context, event }) =>
              event.type === 'HOLD'
                ? { held: [...context.held, { ...event.held, ask: context.asked + 1 }], asked: context.asked + 1 }
                : {},
            ),
            sendTo('inventory', { type: 'REFRESH' }),
          ],
        },
        'INVENTORY.SNAPSHOT': {
          actions: [
            enqueueActions(({ context, event, enqueue, system }) => {
              if (event.type !== 'INVENTORY.SNAPSHOT') return;
              const next: Record<string, SessionRecord> = {};
              for (const record of event.sessions) next[record.name] = record;
              for (const name of Object.keys(context.sessions)) {
                if (next[name]) continue;
                // Whatever it still held gets an answer before it goes: nothing a phone sent is left pending.
                const child = system.get(sessionId(name));
                if (child) for (const r of unanswered(child.getSnapshot().context as SessionContext)) enqueue.raise(r);
                enqueue.stopChild(sessionId(name));
              }
              for (const [id, w] of Object.entries(context.watches)) {
                if (!next[w.session]) enqueue.sendTo(id, { type: 'SESSION.GONE' });
              }
              for (const [name, record] of Object.entries(next)) {
                if (context.sessions[name]) enqueue.sendTo(sessionId(name), { type: 'UPDATE', record });
                else
                  enqueue.spawnChild('session', {
                    id: sessionId(name),
                    systemId: sessionId(name),
                    input: { name, record },
                  });
              }
              enqueue.assign({ sessions: next });
              for (const [id, wt] of Object.entries(context.worktrees)) {
                const alive = sessionsHolding(Object.values(next), wt.sessionName, wt.path).length > 0;
                enqueue.sendTo(id, { type: alive ? 'SESSION.ALIVE' : 'SESSION.GONE' });
              }
            }),
            enqueueActions(({ context, event, enqueue }) => {
              if (event.type !== 'INVENTORY.SNAPSHOT' || context.held.length === 0) return;
              // A reading that began before the input arrived may predate what it is about; the inventory reads
              // again at once (it was asked to), so such input waits for that reading.
              const still: Held[] = [];
              for (const h of context.held) {
                if (event.answers < h.ask) still.push(h);
                else if (context.sessions[h.session]) enqueue.sendTo(sessionId(h.session), h.event);
                else enqueue.raise(notFound(h));
              }
              enqueue.assign({ held: still });
            }),
          ],
        },
        'INVENTORY.REPORT': {
          // Offline, nothing can be sent; LINK.ONLINE asks the inventory for a fresh report anyway.
          guard: 'isOnline',
          actions: [
            sendTo('relay', ({ event }) => ({
              type: 'SEND',
              frame: { type: 'listener.sessions', seq: event.seq, sessions: event.sessions },
            })),
            {
              type: 'log',
              params: ({ event }) => ({
                level: 'info',
                message: `reported ${event.sessions.length} session(s): ${describeSessions(event.sessions) || '-'}`,
              }),
            },
          ],
        },
        'xstate.done.actor.worktree.*': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const id = event.type.slice('xstate.done.actor.'.length);
            const output = (event as { output?: { path?: string; outcome?: string } }).output;
            enqueue.stopChild(id);
            const { [id]: _gone, ...rest } = context.worktrees;
            enqueue.assign({ worktrees: rest });
            enqueue({
              type: 'log',
              params: {
                level: 'info',
                message:
                  output?.outcome === 'removed'
                    ? `removed worktree ${output.path} (its session ended and nothing held it)`
                    : `worktree ${output?.path ?? id} is gone`,
              },
            });
          }),
        },
        'DEVICE.RESULT': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            if (event.type !== 'DEVICE.RESULT') return;
            const { ref, outcome, deviceId } = event;
            const devices = { ...context.pins.devices };
            if (event.pin) devices[deviceId] = event.pin;
            else delete devices[deviceId];
            enqueue.assign({ pins: { version: 1, devices } });
            if (event.trust === 'unverified') {
              // Refused until a person verifies: its live panes stop too.
              for (const [id, w] of Object.entries(context.watches)) {
                if (w.deviceId === deviceId) enqueue.sendTo(id, { type: 'STOP' });
              }
            }
            const why = (code: string, message?: string) =>
              enqueue({
                type: 'log',
                params: {
                  level: 'warn',
                  message: `${ref.kind} from ${deviceId}: refused ${code}${message ? ` (${message})` : ''}`,
                },
              });

            if (ref.kind === 'push') {
              const { push, receivedAt } = ref;
              const refuse = (code: string, message?: string) =>
                enqueue.raise({
                  type: 'SESSION.RESULT',
                  session: push.agentSessionName,
                  id: push.id,
                  state: 'refused',
                  code: code as 'bad_seal',
                  ...(message ? { message: message.slice(0, 200) } : {}),
                });
              if (!outcome.accepted) return refuse(outcome.code, outcome.message);
              const body = outcome.body as CommandBody;
              // Bound to its session inside the envelope: the relay cannot point it at another one.
              if (body.session !== push.agentSessionName) return refuse('bad_seal', 'sealed for another session');
              const opened: WirePush = { ...push, body: body.text, sealed: undefined };
              enqueue.raise({ type: 'HOLD', held: heldPush(opened, receivedAt, context.hookId) });
              return;
            }

            const to = { session: ref.session, deviceId, connection: ref.connection };
            if (ref.kind === 'watch') {
              const refuse = (code: string, message?: string) => {
                why(code, message);
                enqueue.sendTo('relay', paneAnswer('pane.status', to, 'refused', code));
              };
              if (!outcome.accepted) return refuse(outcome.code, outcome.message);
              const body = outcome.body as WatchBody;
              if (body.session !== ref.session) return refuse('bad_seal', 'sealed for another session');
              const record = context.sessions[ref.session];
              const pane = record ? activePane(record) : undefined;
              if (!record || !pane) return refuse('session_not_found');
              const id = watchId(deviceId, ref.session);
              if (context.watches[id]) {
                enqueue.sendTo(id, { type: 'RENEW', leaseMs: body.leaseMs });
                return;
              }
              if (Object.keys(context.watches).length >= MAX_WATCHES)
                return refuse('rate_limited', 'too many live panes');
              const input: PaneWatchInput = {
                session: ref.session,
                deviceId,
                publicKey: outcome.publicKey,
                connection: ref.connection,
                paneId: pane.id,
                leaseMs: body.leaseMs,
              };
              enqueue.spawnChild('paneWatch', { id, systemId: id, input });
              enqueue.assign({
                watches: { ...context.watches, [id]: { session: ref.session, deviceId, connection: ref.connection } },
              });
              enqueue.sendTo('relay', paneAnswer('pane.status', to, 'streaming'));
              enqueue({
                type: 'log',
                params: {
                  level: 'info',
                  message: `live pane ${ref.session} for ${deviceId} (lease ${body.leaseMs} ms)`,
                },
              });
              return;
            }

            // key input
            const refuse = (code: string, seq: number | null, message?: string) => {
              why(code, message);
              enqueue.sendTo('relay', paneAnswer('keys.result', to, 'refused', code, seq));
            };
            if (!outcome.accepted) return refuse(outcome.code, null, outcome.message);
            const body = outcome.body as KeysBody;
            if (body.session !== ref.session) return refuse('bad_seal', body.seq, 'sealed for another session');
            const keys = body.keys ?? [];
            if (badKeyName(keys) !== undefined) return refuse('bad_key_name', body.seq);
            const held: HeldInput = {
              kind: 'keys',
              session: ref.session,
              event: {
                type: 'KEYS',
                keys: {
                  kind: 'keys',
                  ref: { deviceId, connection: ref.connection, seq: body.seq },
                  keys,
                  text: body.text ?? '',
                  receivedAt: ref.receivedAt,
                },
              },
            };
            enqueue.raise({ type: 'HOLD', held });
          }),
        },
        'SESSION.KEYS_RESULT': {
          actions: enqueueActions(({ event, enqueue }) => {
            if (event.type !== 'SESSION.KEYS_RESULT') return;
            const to = { session: event.session, deviceId: event.ref.deviceId, connection: event.ref.connection };
            enqueue.sendTo('relay', paneAnswer('keys.result', to, event.state, event.code, event.ref.seq));
            if (event.state === 'refused') {
              enqueue({
                type: 'log',
                params: {
                  level: 'warn',
                  message: `keys from ${event.ref.deviceId}: refused ${event.code} for ${event.session}`,
                },
              });
            }
          }),
        },
        'WATCH.FRAME': {
          actions: sendTo('relay', ({ event }) => ({ type: 'SEND', frame: event.frame })),
        },
        'xstate.done.actor.watch.*': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            const id = event.type.slice('xstate.done.actor.'.length);
            const output = (event as { output?: PaneWatchOutput }).output;
            const watch = context.watches[id];
            enqueue.stopChild(id);
            const { [id]: _gone, ...rest } = context.watches;
            enqueue.assign({ watches: rest });
            if (!watch) return;
            const reason = output?.reason ?? 'requested';
            enqueue.sendTo('relay', paneAnswer('pane.status', watch, 'stopped', reason));
            enqueue({
              type: 'log',
              params: {
                level: 'info',
                message: `live pane ${watch.session} for ${watch.deviceId} stopped (${reason})`,
              },
            });
          }),
        },
        'PINS.LOADED': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            if (event.type !== 'PINS.LOADED') return;
            enqueue.assign({ pins: event.pins, pinsUnreadable: event.unreadable === true });
            for (const deviceId of context.devices) {
              enqueue.sendTo(deviceActorId(deviceId), { type: 'PIN.SYNC', pin: event.pins.devices[deviceId] });
            }
            // A forgotten device sees no more of any screen.
            for (const [id, w] of Object.entries(context.watches)) {
              if (!event.pins.devices[w.deviceId]) enqueue.sendTo(id, { type: 'STOP' });
            }
          }),
        },
        'SESSION.RESULT': {
          actions: enqueueActions(({ context, event, enqueue }) => {
            if (event.type !== 'SESSION.RESULT') return;
            const ledger = recordOutcome(
              context.ledger,
              event.id,
              event.state === 'injected'
                ? { state: 'injected' }
                : { state: 'refused', code: event.code ?? 'inject_failed' },
            );
            enqueue.assign({ ledger });
            enqueue({ type: 'persistLedger', params: { ledger } });
            enqueue.sendTo('relay', {
              type: 'SEND',
              frame: {
                type: 'push.result',
                id: event.id,
                state: event.state,
                ...(event.code ? { code: event.code } : {}),
                ...(event.message ? { message: event.message } : {}),
              },
            });
            const how =
              event.state === 'injected'
                ? `typed into ${event.session}${event.submitted === false ? ' (submit not confirmed)' : ''}`
                : `refused ${event.code} for ${event.session}`;
            enqueue({
              type: 'log',
              params: { level: event.state === 'injected' ? 'info' : 'warn', message: `push ${event.id}: ${how}` },
            });
          }),
        },
        STOP: 'halted',
      },
    },
    halted: {
      description: 'The relay refused this computer, or the daemon was asked to stop.',
      type: 'final',
    },
  },
});
