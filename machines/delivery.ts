/**
 * Delivery, the root's own work (machines/listener.ts): what comes from the relay goes where core/sessions/routing.ts
 * decides; input waits for a tmux reading newer than itself, then goes to its session's actor; what it acted on is
 * recorded in the ledger before anything is typed, so nothing is typed twice (DESIGN.md, "Delivery semantics"); what
 * a child was handed and has not answered is kept (machines/owed.ts). Each `Step` is the root's answer to one event,
 * written against `RootEnqueue` (machines/listenerTypes.ts).
 */
import type { AnyActorRef } from 'xstate';
import type { ContactOutcome } from '../core/devices/devices.js';
import type { SessionRecord, WirePush } from '../core/protocol/index.js';
import { describeSessions, forRelay } from '../core/sessions/inventory.js';
import type { Ledger } from '../core/sessions/ledger.js';
import { acknowledge, recordOutcome } from '../core/sessions/ledger.js';
import {
  type Contact,
  decideOpenedKeys,
  decideOpenedPush,
  decidePaneRequest,
  decidePush,
  keysResultFrame,
  paneStatusFrame,
  pushResultFrame,
  releaseHeld,
} from '../core/sessions/routing.js';
import type { AsksEvent } from './asks.js';
import { type DevicesEvent, deviceActorId } from './devices.js';
import { promptsDue, promptTyped } from './firstPrompts.js';
import { isUp, type ListenerContext, type Owed, type Step, toRelay } from './listenerTypes.js';
import { logLine } from './log.js';
import { owe, paid, refuseOwed, sameRef } from './owed.js';
import type { SchedulerEvent } from './scheduler.js';
import {
  isPhoneRef,
  type SessionContext,
  type SessionKeys,
  type SessionKeysResult,
  type SessionResult,
} from './session.js';
import { actorDown, type HeldInput, type SessionsEvent, sessionId, sessionShown } from './sessions.js';
import type { WatchesEvent } from './watches.js';
import type { WorktreesEvent } from './worktrees.js';

/**
 * A push for its session (a sealed one already opened: `body` is its text). It may wait for its agent's turn to end
 * until what was left of the replay window when it came is over (`typeBy`, counted from its arrival, not from its
 * opening, which may take long): the relay gives up on a push unanswered for twice the window.
 */
function heldPush(push: WirePush, receivedAt: number, context: ListenerContext): HeldInput {
  const addressedToThisComputer = push.targetComputer === context.hookId;
  const typeBy = receivedAt + Math.max(0, context.replayWindowMs - push.ageMs);
  const body = { id: push.id, body: push.body, addressedToThisComputer, receivedAt, typeBy };
  const event = { type: 'PUSH' as const, push: body };
  return { kind: 'push', session: push.agentSessionName, id: push.id, event };
}

/** The answer for held input whose session the fresh reading does not show. */
function notFound(h: HeldInput): SessionResult | SessionKeysResult {
  const refused = { session: h.session, state: 'refused', code: 'session_not_found' } as const;
  return h.kind === 'push'
    ? { type: 'SESSION.RESULT', id: h.id, ...refused }
    : { type: 'SESSION.KEYS_RESULT', ref: h.event.keys.ref, ...refused };
}

/** An actor's children as its last snapshot lists them. */
export const childrenOf = (ref: AnyActorRef | undefined) =>
  (ref?.getSnapshot() as { children?: Record<string, AnyActorRef> } | undefined)?.children ?? {};

/** The devices that have an actor, as the devices' supervisor lists them (none while it is down). */
const devicesNow = (system: { get(id: string): AnyActorRef | undefined }): string[] =>
  (system.get('devices')?.getSnapshot().context as { devices?: string[] } | undefined)?.devices ?? [];

/** A frame from the relay: routed (pushes, pane requests, ask answers), or taken note of (acks, errors). */
export const linkFrame: Step<'LINK.FRAME'> = ({ context, event, enqueue, system }) => {
  const { frame, receivedAt } = event;
  // a sealed contact goes to the devices' supervisor, and is owed an answer until its device gives one
  const toDevice = ({ deviceId, contact }: { deviceId: string; contact: Contact }) => {
    const item = { kind: 'contact', deviceId, ref: contact.ref } as const;
    if (!isUp(context, 'devices')) return refuseOwed(enqueue, [item]);
    const pin = context.pins.devices[deviceId];
    enqueue.sendTo('devices', { type: 'CONTACT', deviceId, pin, contact } satisfies DevicesEvent);
    enqueue.assign({ owed: owe(context.owed, deviceActorId(deviceId), item) });
  };
  const devices = devicesNow(system);
  switch (frame.type) {
    case 'sessions.result':
      enqueue(
        frame.ok
          ? logLine('info', `server persisted listener.sessions (seq ${frame.seq})`)
          : logLine('warn', `server rejected listener.sessions: ${frame.reason ?? 'no reason given'}`),
      );
      enqueue.sendTo('inventory', { type: frame.ok ? 'PERSISTED' : 'REJECTED' });
      return;
    case 'error':
      enqueue(logLine('warn', `relay error ${frame.code}: ${frame.message}`));
      return;
    case 'ask.answer': {
      const { id, deviceId, connection, envelope } = frame;
      if (isUp(context, 'asks')) {
        enqueue.sendTo('asks', {
          type: 'ASK.ANSWER',
          id,
          deviceId,
          connection,
          envelope,
        } satisfies AsksEvent);
        return;
      }
      // the asks were given up: every ask ended failed, so this answer is late
      const code = 'ask_expired';
      enqueue.sendTo('relay', toRelay({ type: 'ask.result', id, deviceId, connection, state: 'refused', code }));
      enqueue(logLine('warn', `answer to ask ${id} from ${deviceId ?? '-'}: refused ${code} (asks given up)`));
      return;
    }
    case 'notify.ack':
      enqueue({
        type: 'notifyAcked',
        params: {
          id: frame.id,
          delivered: frame.delivered ?? true,
          ...(frame.reason ? { reason: frame.reason } : {}),
        },
      });
      return;
    case 'push.ack': {
      // The relay has this outcome: it is not sent again, after a restart either.
      const ledger = acknowledge(context.ledger, frame.id);
      if (ledger === context.ledger) return;
      enqueue.assign({ ledger });
      enqueue({ type: 'persistLedger', params: { ledger } });
      return;
    }
    case 'pane.stop':
      // the live panes' supervisor stops it (machines/watches.ts)
      if (isUp(context, 'watches')) enqueue.sendTo('watches', { type: 'PANE.STOP', frame } satisfies WatchesEvent);
      return;
    case 'pane.watch':
    case 'pane.keys': {
      // the live panes are the watches' business: their device opens the request first
      const d = decidePaneRequest(frame, receivedAt, { devices, watches: {} });
      if (d.kind === 'contact') toDevice(d);
      if (d.kind === 'refuse') {
        const answer = frame.type === 'pane.watch' ? paneStatusFrame : keysResultFrame;
        enqueue.sendTo('relay', toRelay(answer(frame, 'refused', d.code)));
      }
      return;
    }
    case 'push.new': {
      const push = frame.push;
      const d = decidePush(push, receivedAt, { ...context, devices });
      const settle = (outcome: Ledger['entries'][string]) => {
        const ledger = recordOutcome(context.ledger, push.id, outcome);
        enqueue.assign({ ledger });
        enqueue({ type: 'persistLedger', params: { ledger } });
        enqueue.sendTo('relay', { type: 'ACTED', lastPushId: ledger.lastPushId });
      };
      const answer = (state: 'injected' | 'refused' | 'expired', code?: string, message?: string) =>
        enqueue.sendTo('relay', toRelay(pushResultFrame(push.id, state, code, message)));
      switch (d.kind) {
        case 'ignore':
          return enqueue(logLine('debug', `push ${push.id}: type ${push.type}, ignored`));
        case 'inHand':
          return enqueue(logLine('debug', `push ${push.id}: sent again while in hand; answered when it is done`));
        case 'resend':
          return answer(d.state, d.code, d.message);
        case 'expire':
          settle({ state: 'expired' });
          answer('expired');
          return enqueue(
            logLine('info', `push ${push.id}: expired (${Math.round(push.ageMs / 1000)} s old), not typed`),
          );
        case 'refuse':
          settle({ state: 'refused', code: d.code });
          answer('refused', d.code);
          return enqueue(logLine('warn', `push ${push.id}: refused ${d.code}`));
      }
      // Claimed before it is opened or typed: whatever happens next, it is never typed twice.
      settle({ state: 'claimed' });
      if (d.kind === 'contact') toDevice(d);
      else if (d.kind === 'hold') enqueue.raise({ type: 'HOLD', held: heldPush(push, receivedAt, context) });
      else {
        const { id, agentSessionName: session } = push;
        enqueue.raise({ type: 'SESSION.RESULT', session, id, state: 'refused', code: d.code });
      }
    }
  }
};

/** A tmux reading: the sessions' actors and the supervisors that follow the sessions are told; first prompts due. */
export const reading: Step<'INVENTORY.SNAPSHOT'> = ({ context, event, enqueue }) => {
  const next: Record<string, SessionRecord> = {};
  for (const record of event.sessions) next[record.name] = record;
  // the session actors follow the reading (machines/sessions.ts); an ended session's answers come from it
  if (isUp(context, 'sessions')) {
    const { approvalOnScreen, approvals, unreadable, midTurn } = event;
    const screens = {
      approvalOnScreen,
      ...(approvals ? { approvals } : {}),
      ...(unreadable ? { unreadable } : {}),
      ...(midTurn ? { midTurn } : {}),
    };
    enqueue.sendTo('sessions', { type: 'READING', sessions: next, ...screens } satisfies SessionsEvent);
  }
  enqueue.assign({ sessions: next });
  // the phone's first prompts: typed once their own session reads idle (machines/firstPrompts.ts)
  promptsDue(context, next, event.takenAt ?? 0, enqueue);
  // the supervisors that follow the sessions: live panes of an ended session stop, worktrees are freed
  if (isUp(context, 'watches')) enqueue.sendTo('watches', { type: 'SESSIONS', sessions: next } satisfies WatchesEvent);
  if (isUp(context, 'worktrees'))
    enqueue.sendTo('worktrees', { type: 'SESSIONS', sessions: next } satisfies WorktreesEvent);
  // schedules are decided at the inventory's 5 s ticks, not at every push's or screen change's reading
  if ((event.cause ?? 'tick') === 'tick' && isUp(context, 'scheduler'))
    enqueue.sendTo('scheduler', { type: 'TICK', sessions: event.sessions } satisfies SchedulerEvent);
};

/** Input the reading releases: to its session's actor (owed until answered), the IO side, or refused. */
export const released: Step<'INVENTORY.SNAPSHOT'> = ({ context, event, enqueue }) => {
  if (context.held.length === 0) return;
  // A reading that began before the input arrived may predate what it is about; the inventory reads
  // again at once (it was asked to), so such input waits for that reading.
  const { waiting, released } = releaseHeld(context.held, event.answers, context.sessions);
  let owed = context.owed;
  for (const { held, found } of released) {
    // what a phone asks of the IO side instead of typing (resume, forget, schedules, files, a new
    // session): answered there; a schedule's key input carries none
    const input = held.kind === 'keys' ? held.event.keys.input : undefined;
    const request = input?.kind === 'request' ? input.request : undefined;
    const phone = held.kind === 'keys' && isPhoneRef(held.event.keys.ref) ? held.event.keys.ref : null;
    if (phone && request) {
      enqueue({
        type: 'phoneRequest',
        params: { session: held.session, request, ref: phone, live: found },
      });
    } else if (found && !isUp(context, 'sessions'))
      // the sessions' supervisor was given up: nothing to send to
      enqueue.raise(actorDown(held));
    else if (found) {
      // after the reading that released it: its actor is there, or it is refused as down
      enqueue.sendTo('sessions', { type: 'INPUT', held } satisfies SessionsEvent);
      const item: Owed =
        held.kind === 'push'
          ? { kind: 'push', session: held.session, id: held.id }
          : { kind: 'keys', session: held.session, ref: held.event.keys.ref };
      owed = owe(owed, sessionId(held.session), item);
    } else enqueue.raise(notFound(held));
  }
  enqueue.assign({ held: waiting, owed });
};

/** What a device opened (machines/devices.ts): held for its session, handed to the live panes, or refused. */
export const deviceResult: Step<'DEVICE.RESULT'> = ({ context, event, enqueue }) => {
  const { ref, outcome, deviceId } = event;
  const answered = (o: Owed) => o.kind === 'contact' && sameRef(o.ref, ref);
  enqueue.assign({ owed: paid(context.owed, deviceActorId(deviceId), answered) });
  const devices = { ...context.pins.devices };
  if (event.pin) devices[deviceId] = event.pin;
  else delete devices[deviceId];
  enqueue.assign({ pins: { version: 1, devices } });
  const watchesUp = isUp(context, 'watches');
  if (watchesUp) enqueue.sendTo('watches', { type: 'PIN', deviceId, ...(event.pin ? { pin: event.pin } : {}) });
  // refused until a person verifies: its live panes stop too
  if (watchesUp && event.trust === 'unverified')
    enqueue.sendTo('watches', { type: 'DEVICE.UNTRUSTED', deviceId } satisfies WatchesEvent);
  const why = (code: string, message?: string) =>
    enqueue(logLine('warn', `${ref.kind} from ${deviceId}: refused ${code}${message ? ` (${message})` : ''}`));

  if (ref.kind === 'push') {
    const { push, receivedAt } = ref;
    const d = decideOpenedPush(push, outcome as ContactOutcome<'agent.command'>);
    if (d.kind === 'hold') enqueue.raise({ type: 'HOLD', held: heldPush(d.push, receivedAt, context) });
    else {
      const { kind: _, ...refused } = d;
      enqueue.raise({
        type: 'SESSION.RESULT',
        session: push.agentSessionName,
        id: push.id,
        state: 'refused',
        ...refused,
      });
    }
    return;
  }
  const to = { session: ref.session, deviceId, connection: ref.connection };
  if (ref.kind === 'watch') {
    // what the opened request does is the live panes' supervisor's to decide (machines/watches.ts)
    if (watchesUp) {
      const opened = outcome as ContactOutcome<'pane.watch'>;
      enqueue.sendTo('watches', {
        type: 'WATCH.OPENED',
        ref,
        deviceId,
        outcome: opened,
      } satisfies WatchesEvent);
      return;
    }
    why('inject_failed', 'live panes are off: their supervisor failed');
    enqueue.sendTo('relay', toRelay(paneStatusFrame(to, 'refused', 'inject_failed')));
    return;
  }
  const d = decideOpenedKeys(ref, deviceId, outcome as ContactOutcome<'pane.keys'>);
  if (d.kind === 'hold') {
    enqueue.raise({
      type: 'HOLD',
      held: { kind: 'keys', session: ref.session, event: { type: 'KEYS', keys: d.keys } },
    });
    return;
  }
  why(d.code, d.message);
  enqueue.sendTo('relay', toRelay(keysResultFrame(to, 'refused', d.code, d.seq)));
};

/** A scheduled run's keys wait for a fresh reading like the phone's, then go to its session actor. */
export const scheduleKeys: Step<'SCHEDULE.KEYS'> = ({ event, enqueue }) => {
  const keys: SessionKeys = {
    kind: 'keys',
    ref: { schedule: event.id },
    receivedAt: event.at,
    input: event.control
      ? { kind: 'control', action: event.control }
      : { kind: 'type', keys: event.keys, text: event.text },
  };
  enqueue.raise({
    type: 'HOLD',
    held: { kind: 'keys', session: event.session, event: { type: 'KEYS', keys } },
  });
};

/** A session actor's answer to keys: to the phone that sent them, or to the scheduler. */
export const keysResult: Step<'SESSION.KEYS_RESULT'> = ({ context, event, enqueue }) => {
  const answered = (o: Owed) => o.kind === 'keys' && sameRef(o.ref, event.ref);
  enqueue.assign({ owed: paid(context.owed, sessionId(event.session), answered) });
  if (!isPhoneRef(event.ref)) {
    const code = event.code;
    const result = { type: 'SCHEDULE.KEYS_RESULT', id: event.ref.schedule, ok: event.state === 'typed' };
    if (isUp(context, 'scheduler'))
      enqueue.sendTo('scheduler', { ...result, ...(code ? { code } : {}) } as SchedulerEvent);
    if (event.state === 'refused') enqueue(logLine('warn', `scheduled input for ${event.session}: refused ${code}`));
    return;
  }
  const to = { session: event.session, deviceId: event.ref.deviceId, connection: event.ref.connection };
  enqueue.sendTo('relay', toRelay(keysResultFrame(to, event.state, event.code, event.ref.seq)));
  if (event.state === 'refused') {
    enqueue(logLine('warn', `keys from ${event.ref.deviceId}: refused ${event.code} for ${event.session}`));
  }
};

/**
 * The listener is stopping: the pushes its session actors hold for an agent's turn (never typed) are recorded refused
 * `listener_stopped`, so the next start reports them as they are (its first results, unacknowledged ones), not as
 * cut off while typed (core/sessions/ledger.ts `recoverLedger`). Nothing is sent now, though the link is still up:
 * HALT follows at once and stops it. The ledger keeps each outcome unacknowledged, and the next start sends it.
 */
export const stopping: Step<'STOP'> = ({ context, enqueue, system }) => {
  let ledger = context.ledger;
  const ids: number[] = [];
  for (const child of Object.values(childrenOf(system.get('sessions')))) {
    const parked = (child.getSnapshot().context as Partial<SessionContext>).parked ?? [];
    for (const push of parked) {
      if (push.id < 0) continue; // a first prompt: no relay push
      ledger = recordOutcome(ledger, push.id, { state: 'refused', code: 'listener_stopped' });
      ids.push(push.id);
    }
  }
  if (ids.length === 0) return;
  enqueue.assign({ ledger });
  enqueue({ type: 'persistLedger', params: { ledger } });
  enqueue(
    logLine('warn', `stopping: push(es) ${ids.join(', ')} waited for their agent's turn; refused listener_stopped`),
  );
};

/** A session actor's answer to a push: recorded in the ledger and sent to the relay. */
export const sessionResult: Step<'SESSION.RESULT'> = ({ context, event, enqueue, system }) => {
  const answered = (o: Owed) => o.kind === 'push' && o.id === event.id;
  enqueue.assign({ owed: paid(context.owed, sessionId(event.session), answered) });
  // a first prompt (LAUNCH.PROMPT): not a relay push, nothing for the ledger or the relay
  if (event.id < 0) return promptTyped({ context, event, enqueue, system });
  const ledger = recordOutcome(
    context.ledger,
    event.id,
    event.state === 'injected' ? { state: 'injected' } : { state: 'refused', code: event.code ?? 'inject_failed' },
  );
  enqueue.assign({ ledger });
  enqueue({ type: 'persistLedger', params: { ledger } });
  enqueue.sendTo('relay', toRelay(pushResultFrame(event.id, event.state, event.code, event.message)));
  const how =
    event.state === 'injected'
      ? `typed into ${event.session}${event.submitted === false ? ' (submit not confirmed)' : ''}`
      : `refused ${event.code} for ${event.session}`;
  enqueue(logLine(event.state === 'injected' ? 'info' : 'warn', `push ${event.id}: ${how}`));
};

/** The inventory's report, with what the session actors know (sticky REMOTE, cards), the past sessions and schedules. */
export const report: Step<'INVENTORY.REPORT'> = ({ context, event, enqueue, system }) => {
  const sessions = [
    ...event.sessions.map((r) => {
      const { remote, card } = sessionShown(childrenOf(system.get('sessions')), r.name);
      const approval = card?.envelope;
      return forRelay({ ...r, ...(remote ? { remote: true } : {}), ...(approval ? { approval } : {}) });
    }),
    // sessions that ended, or were there before the computer restarted: offered to resume
    ...context.past.filter((p) => !event.sessions.some((r) => r.name === p.name)).map(forRelay),
  ];
  const schedules = context.schedules ? { schedules: context.schedules } : {};
  enqueue.sendTo('relay', toRelay({ type: 'listener.sessions', seq: event.seq, sessions, ...schedules }));
  enqueue(logLine('info', `reported ${event.sessions.length} session(s): ${describeSessions(event.sessions) || '-'}`));
};
