/**
 * One tmux session: `session.<name>`. Parallel regions for attachment, agent state, remote mode and approval,
 * and a delivery region that types queued pushes one at a time, checking the refusal rules (spec 7) right before
 * each one, because the pane may have changed while the push waited.
 */
import { assign, enqueueActions, fromPromise, not, raise, sendParent, setup } from 'xstate';
import { type ApprovalPrompt, decideApprovalInput, PromptChangedError } from '../core/agents/approvals.js';
import { TURN_WAIT_MS } from '../core/agents/registry.js';
import { keysRefusal } from '../core/panes/keys.js';
import type { PhoneInput } from '../core/protocol/bodies.js';
import type { PaneInfo, RefusalCode, SessionRecord } from '../core/protocol/index.js';
import { type ControlAction, decideControl, EXIT_COMMANDS } from '../core/sessions/control.js';
import { activePane } from '../core/sessions/inventory.js';
import { refusalFor } from '../core/sessions/refusals.js';
import { mainPane } from '../core/sessions/view.js';
import type { BucketState } from '../core/tokenBucket.js';
import { fullBucket, SESSION_INPUT_BUCKET, takeToken } from '../core/tokenBucket.js';
import type { LogParams } from './log.js';

/** A push as a session sees it. */
export interface SessionPush {
  kind?: 'push';
  id: number;
  body: string;
  /** Whether the push named this computer explicitly (spec 7.2). */
  addressedToThisComputer: boolean;
  /** When the listener received it (epoch ms): the rate limit counts arrivals, not typing. */
  receivedAt: number;
  /**
   * Until when (the listener's clock, epoch ms) it may wait for the agent's turn to end (the `turn` region): the end
   * of what was left of the relay's replay window when it came, so it is typed or refused before the relay gives up
   * on it (at twice the window). Absent: `receivedAt + TURN_WAIT_MS`.
   */
  typeBy?: number;
  /** Its time to wait is over: typed whatever the screen shows. */
  waited?: true;
}

/** A phone's key input: the device, its connection and its stamp, for the answer (`keys.result`). */
export type PhoneRef = { deviceId: string; connection: string; seq: number };
/** A scheduled run's keys (machines/schedule.ts): its answer goes to the scheduler, by schedule id. */
export type ScheduleRef = { schedule: string };
export const isPhoneRef = (ref: KeysRef): ref is PhoneRef => 'deviceId' in ref;

/**
 * What key input asks of a session: a phone's, decoded once (core/protocol/bodies.ts PhoneInput), or a scheduled
 * run's, which may also be `term`, its max-runtime: SIGTERM to the pane's process (machines/schedule.ts). A phone's
 * `request` is answered by the listener's IO and never reaches a session actor (machines/delivery.ts).
 */
export type KeysInput = PhoneInput | { kind: 'control'; action: 'term' };

/**
 * Key input from a live pane (core/panes/keys.ts), already opened and checked for its stamp by `device.<id>`, or a
 * scheduled run's prompt and End.
 */
export interface SessionKeys {
  kind: 'keys';
  /** Who sent it: a phone, or a schedule. */
  ref: KeysRef;
  receivedAt: number;
  input: KeysInput;
}

/** Key input being typed: what it asked, and the text and named keys that do it (an answer's, End's, as typed). */
export interface TypingKeys {
  ref: KeysRef;
  input: KeysInput;
  /** Typed as is, without a submit. */
  text: string;
  /** Named keys, sent after the text. */
  keys: string[];
}

/** The control action key input asks for, if it does (End, Force end, a schedule's max-runtime). */
const controlOf = (input: KeysInput): ControlAction | 'term' | undefined =>
  input.kind === 'control' ? input.action : undefined;

export type KeysRef = PhoneRef | ScheduleRef;

/** A session's queue: messages and key input, typed one at a time in arrival order. */
export type QueueItem = SessionPush | SessionKeys;

export interface TypeKeysInput {
  session: string;
  paneId: string;
  keys: string[];
  text: string;
  /** The pane reads as being in a tmux mode (copy mode, …): leave it before typing. */
  inMode?: boolean;
  /** Input into an approval prompt: type only if a last look still shows this prompt, else fail prompt_changed. */
  confirm?: { agent: string; fingerprint: string };
  /** End the session with tmux kill-session instead of typing (the person chose "force" and confirmed). */
  kill?: boolean;
  /** Send SIGTERM to the pane's process instead of typing (a scheduled run past its max-runtime). */
  term?: boolean;
  /**
   * `text` is the agent's exit command (End): typed, then Enter once it is drawn (actors/agents/inject.ts
   * typeExitCommand), not as keys: a text and its Enter in one tmux call are a newline to Codex and Gemini CLI (seen
   * with the real programs, test/integration/exit.realAgents.test.ts).
   */
  exit?: boolean;
}

export interface InjectInput {
  session: string;
  paneId: string;
  command: string;
  startCommand?: string;
  text: string;
  /** The pane reads as being in a tmux mode (copy mode, …): leave it before typing. */
  inMode?: boolean;
}

export interface InjectOutput {
  submitted: boolean | 'unverified';
}

export interface SessionInput {
  name: string;
  record: SessionRecord;
  approvalOnScreen?: boolean;
  approval?: ApprovalPrompt | null;
  screenUnreadable?: boolean;
  midTurn?: boolean;
  /** It was in sticky REMOTE when the listener before this one stopped (core/sessions/remoteMode.ts). */
  remote?: boolean;
  /** The listener's clock (pushes' `typeBy`); Date.now when absent. */
  now?: () => number;
}

export interface SessionContext {
  name: string;
  record: SessionRecord;
  /**
   * The last reading (newer than the input at the head of the queue) showed an approval prompt. Input is refused on
   * this alone, never on the picker's debounced state: that lags both ways (a prompt just up, a prompt just answered).
   */
  approvalOnScreen: boolean;
  /** What that prompt asks, and its fingerprint (core/agents/approvals.ts); null when none is on screen. */
  approval: ApprovalPrompt | null;
  /** The prompt last answered from the app (its fingerprint), until a reading shows another or none. */
  answered: string | null;
  /** The last reading should have read the agent's screen and could not: input is refused (fail closed). */
  screenUnreadable: boolean;
  /**
   * The last reading showed the agent in a turn, and it is one that may lose a message typed then
   * (`AgentSpec.typeAfterTurn`, core/sessions/view.ts `midTurn`): pushes wait in `parked`.
   */
  midTurn: boolean;
  queue: QueueItem[];
  /** Pushes waiting for the agent's turn to end, in arrival order; key input passes them (Escape must stop a turn). */
  parked: SessionPush[];
  now: () => number;
  current: SessionPush | null;
  /** Key input being typed. */
  currentKeys: TypingKeys | null;
  /** Per-session token bucket (spec 7.6); created on the first push. */
  bucket: BucketState | null;
  /**
   * The card of the prompt on screen: its fingerprint, and its envelope sealed for the phones once the sealing is done
   * (null until then). Reported with the session (machines/listener.ts); gone when the prompt is.
   */
  card: { fingerprint: string; envelope: Record<string, unknown> | null } | null;
  /** It starts in sticky REMOTE: it was when the listener (or the sessions' supervisor) before this one stopped. */
  startsRemote: boolean;
}

export type SessionEvent =
  | {
      type: 'UPDATE';
      record: SessionRecord;
      approvalOnScreen?: boolean;
      approval?: ApprovalPrompt | null;
      screenUnreadable?: boolean;
      midTurn?: boolean;
    }
  | { type: 'PUSH'; push: SessionPush }
  | { type: 'KEYS'; keys: SessionKeys }
  | { type: 'REMOTE.ON' }
  | { type: 'REMOTE.OFF' }
  /** Raised for a prompt that has no card yet. */
  | { type: 'CARD.NEW'; prompt: ApprovalPrompt }
  /** A prompt's card, sealed (actors/mcp/asks.ts): kept if that prompt is still the one on screen. */
  | { type: 'CARD.SEALED'; fingerprint: string; envelope: Record<string, unknown> }
  // raised by the delivery region for the approval region
  | { type: 'APPROVAL.ANSWERING' }
  | { type: 'APPROVAL.ANSWERED' }
  | { type: 'APPROVAL.FAILED' }
  | { type: 'APPROVAL.CHANGED' }
  /** The first parked push waited as long as it may: they are all typed now, turn or not. */
  | { type: 'TURN.WAITED' }
  /** A push was parked: the wait is worked out again (the first time to be over may be its). */
  | { type: 'TURN.PARKED' };

/** What a session tells the listener about each push it was given. */
export type SessionResult = {
  type: 'SESSION.RESULT';
  session: string;
  id: number;
  state: 'injected' | 'refused';
  code?: RefusalCode;
  submitted?: boolean | 'unverified';
  message?: string;
};

/** What a session tells the listener about key input. */
export type SessionKeysResult = {
  type: 'SESSION.KEYS_RESULT';
  session: string;
  ref: SessionKeys['ref'];
  state: 'typed' | 'refused';
  code?: RefusalCode;
  message?: string;
};

/** The listener's answer for the push at hand. */
function pushResult(context: SessionContext, id: number, outcome: Omit<SessionResult, 'type' | 'session' | 'id'>) {
  return { type: 'SESSION.RESULT', session: context.name, id, ...outcome } satisfies SessionResult;
}

/** The listener's answer for the key input at hand. */
function keysResult(
  context: SessionContext,
  ref: SessionKeys['ref'],
  outcome: Omit<SessionKeysResult, 'type' | 'session' | 'ref'>,
) {
  return { type: 'SESSION.KEYS_RESULT', session: context.name, ref, ...outcome } satisfies SessionKeysResult;
}

/**
 * What a session still owes when tmux no longer shows it: every queued input is refused session_not_found, and
 * input being typed when it went is inject_failed (part of it may have reached the pane; it is never retyped).
 */
export function unanswered(context: SessionContext): (SessionResult | SessionKeysResult)[] {
  const gone = { state: 'refused', code: 'session_not_found' } as const;
  const cut = { state: 'refused', code: 'inject_failed', message: 'the session ended while this was typed' } as const;
  const out: (SessionResult | SessionKeysResult)[] = [];
  if (context.current) out.push(pushResult(context, context.current.id, cut));
  if (context.currentKeys) out.push(keysResult(context, context.currentKeys.ref, cut));
  for (const item of [...context.parked, ...context.queue]) {
    out.push(item.kind === 'keys' ? keysResult(context, item.ref, gone) : pushResult(context, item.id, gone));
  }
  return out;
}

/**
 * The pane keys go to: the active one, where the person looks; End and SIGTERM go to the agent's own pane (the
 * session's first), so an exit command is never typed into a shell the person split beside the agent.
 */
function keysPane(record: SessionRecord, control: ControlAction | 'term' | undefined): PaneInfo | undefined {
  return control === 'end' || control === 'term' ? (mainPane(record) ?? activePane(record)) : activePane(record);
}

/**
 * A line for the log when the pane is in a tmux mode that typing will end (the phone is told only `injected`:
 * where the person had scrolled to at the computer is worth a line, not a message).
 */
function leavingModeLog(context: SessionContext, what: string): LogParams | null {
  const pane = activePane(context.record);
  if (!pane?.inMode) return null;
  return {
    level: 'info',
    message: `${context.name}: pane ${pane.id} was in a tmux mode (copy mode after scrolling back, …); leaving it to type ${what}`,
  };
}

/** tmux refused the keys (the first part of its error, for the sender), or the prompt changed at the last look. */
const failure = (error: unknown) =>
  error instanceof PromptChangedError
    ? { state: 'refused' as const, code: 'prompt_changed' as const }
    : { state: 'refused' as const, code: 'inject_failed' as const, message: String(error).slice(0, 200) };

/**
 * The refusal (if any) for the push or key input at the head of the queue, and the bucket after it; for an approval
 * card's answer, the keys of its choice. The approval prompt is judged on the fresh reading (spec 7 `prompt_changed`).
 */
export function decideHead(context: SessionContext): {
  code: RefusalCode | null;
  bucket: BucketState | null;
  answerKeys?: string[];
} {
  const head = context.queue[0];
  if (!head) return { code: null, bucket: context.bucket };
  const facts = {
    target: context.name,
    pane: head.kind === 'keys' ? keysPane(context.record, controlOf(head.input)) : activePane(context.record),
    shellSession: context.record.shell === true,
    subagent: context.record.parent !== undefined,
    approvalPending: context.approvalOnScreen,
    screenUnreadable: context.screenUnreadable,
  };
  let answerKeys: string[] | undefined;
  let code: RefusalCode | null;
  if (head.kind !== 'keys') {
    code = refusalFor({ ...facts, body: head.body, addressedToThisComputer: head.addressedToThisComputer });
  } else if (head.input.kind === 'control') {
    const control = controlHead(context, head.input.action, facts);
    if ('code' in control) code = control.code;
    else {
      code = null;
      answerKeys = control.keys;
    }
  } else if (head.input.kind === 'request') {
    // answered by the listener's IO before it reaches a session (machines/delivery.ts): never typed
    code = 'inject_failed';
  } else {
    // Key input comes in a pane.keys frame addressed to this computer by the relay's routing; an answer is judged
    // as the keys it will type (they end in a confirming key).
    const input = head.input;
    const typed = input.kind === 'answer' ? { keys: ['Enter'], text: '' } : { keys: input.keys, text: input.text };
    code = keysRefusal({ ...facts, addressedToThisComputer: true, ...typed });
    if (!code) {
      const approval = decideApprovalInput(input, context.approvalOnScreen ? context.approval : null);
      if (!approval.ok) code = approval.code;
      else if (approval.keys) answerKeys = approval.keys;
    }
  }
  if (code) return { code, bucket: context.bucket };
  const taken = takeToken(
    SESSION_INPUT_BUCKET,
    context.bucket ?? fullBucket(SESSION_INPUT_BUCKET, head.receivedAt),
    head.receivedAt,
  );
  if (!taken.allowed) return { code: 'rate_limited', bucket: taken.state };
  return { code: null, bucket: taken.state, ...(answerKeys ? { answerKeys } : {}) };
}

/**
 * A control request for this running session: refused as keys would be (a subagent, spec 4.14), `approval_pending`
 * while a prompt is up (the exit command would answer it), or the agent's own exit command as keys; kill has none.
 */
function controlHead(
  context: SessionContext,
  action: ControlAction | 'term',
  facts: Omit<Parameters<typeof refusalFor>[0], 'body' | 'addressedToThisComputer'>,
): { code: RefusalCode } | { keys: string[] } {
  const base = keysRefusal({ ...facts, addressedToThisComputer: true, keys: ['Enter'], text: '' });
  if (base) return { code: base };
  // a signal, not keys: nothing on the screen can take it
  if (action === 'term') return { keys: [] };
  const d = decideControl(action, context.name, context.record, undefined);
  if (d.kind === 'refuse') return { code: d.code };
  if (d.kind !== 'live') return { code: 'session_not_found' };
  if (d.action === 'kill') return { keys: [] };
  if (context.approvalOnScreen) return { code: 'approval_pending' };
  return { keys: ['Enter'] };
}

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    input: {} as SessionInput,
    events: {} as SessionEvent,
  },
  actors: {
    // Provided by the listener's wiring (actors/listener.ts); a machine started without it fails loudly rather than
    // report a message as typed.
    inject: fromPromise<InjectOutput, InjectInput>(async () => {
      throw new Error('no inject provided');
    }),
    /** Text as is (no submit), then named keys: actors/tmux/tmux.ts sendLiteral and sendKeys. */
    typeKeys: fromPromise<void, TypeKeysInput>(async () => {}),
  },
  actions: {
    log: (_, _params: LogParams) => {},
    storeRecord: assign(({ event }) =>
      event.type === 'UPDATE'
        ? {
            record: event.record,
            approvalOnScreen: event.approvalOnScreen === true,
            approval: event.approvalOnScreen ? (event.approval ?? null) : null,
            screenUnreadable: event.screenUnreadable === true,
            midTurn: event.midTurn === true,
          }
        : {},
    ),
    /** Spec 8: every input into a `svc sh` session is audited (actors/sessions/shellAudit.ts). */
    auditShellInput: (
      _,
      _params: { session: string; paneId: string; foreground: string; text: string; kind?: 'insert' | 'keys' },
    ) => {},
    /** Spec 2.3: write the remote-origin marker before typing, so the agent's submit hook can match it. */
    writeMarker: (_, _params: { session: string; projectDir: string | undefined; text: string }) => {},
    /** Seal `prompt`'s card for the phones; CARD.SEALED comes back (actors/mcp/asks.ts). */
    sealCard: (_, _params: { session: string; prompt: ApprovalPrompt }) => {},
    /** A new prompt on screen gets a card, sealed once; none on screen, no card. */
    keepCard: enqueueActions(({ context, enqueue }) => {
      const prompt = context.approval;
      if (!prompt) {
        if (context.card) enqueue.assign({ card: null });
        return;
      }
      if (context.card?.fingerprint === prompt.fingerprint) return;
      enqueue.assign({ card: { fingerprint: prompt.fingerprint, envelope: null } });
      enqueue.raise({ type: 'CARD.NEW', prompt });
    }),
  },
  guards: {
    isAttached: ({ context }) => context.record.attached,
    isIdle: ({ context }) => context.record.state === 'idle',
    isWorking: ({ context }) => context.record.state === 'working',
    isAwaitingApproval: ({ context }) => context.record.state === 'awaiting_approval',
    readsAttached: ({ event }) => event.type === 'UPDATE' && event.record.attached,
    readsIdle: ({ event }) => event.type === 'UPDATE' && event.record.state === 'idle',
    readsWorking: ({ event }) => event.type === 'UPDATE' && event.record.state === 'working',
    readsApproval: ({ event }) => event.type === 'UPDATE' && event.record.state === 'awaiting_approval',
    hasPrompt: ({ context }) => context.approval !== null,
    startsRemote: ({ context }) => context.startsRemote,
    readsPrompt: ({ event }) => event.type === 'UPDATE' && event.approvalOnScreen === true && !!event.approval,
    readsAnotherPrompt: ({ context, event }) =>
      event.type === 'UPDATE' &&
      event.approvalOnScreen === true &&
      !!event.approval &&
      event.approval.fingerprint !== context.answered,
    queueEmpty: ({ context }) => context.queue.length === 0,
    // the turn is over (`midTurn` waits for the screen to be quiet a moment too), and neither an approval prompt (one
    // comes up mid-turn; its answer's keys pass) nor an unreadable screen is in its place
    unparks: ({ context }) =>
      context.parked.length > 0 && !context.midTurn && !context.approvalOnScreen && !context.screenUnreadable,
    headParks: ({ context }) => {
      const head = context.queue[0];
      return head?.kind !== 'keys' && !head?.waited && (context.midTurn || context.parked.length > 0);
    },
    hasParked: ({ context }) => context.parked.length > 0,
    headRefused: ({ context }) => decideHead(context).code !== null,
    headIsKeys: ({ context }) => context.queue[0]?.kind === 'keys',
  },
  delays: {
    // until the first of the parked pushes' times is over (each keeps its own through a turn after a turn)
    turnWait: ({ context }) =>
      Math.max(0, Math.min(...context.parked.map((p) => p.typeBy ?? p.receivedAt + TURN_WAIT_MS)) - context.now()),
  },
}).createMachine({
  id: 'session',
  type: 'parallel',
  context: ({ input }) => ({
    name: input.name,
    record: input.record,
    approvalOnScreen: input.approvalOnScreen === true,
    approval: input.approvalOnScreen ? (input.approval ?? null) : null,
    answered: null,
    screenUnreadable: input.screenUnreadable === true,
    midTurn: input.midTurn === true,
    queue: [],
    parked: [],
    now: input.now ?? Date.now,
    current: null,
    currentKeys: null,
    bucket: null,
    card: null,
    startsRemote: input.remote === true,
  }),
  entry: 'keepCard',
  on: {
    'CARD.NEW': {
      actions: { type: 'sealCard', params: ({ context, event }) => ({ session: context.name, prompt: event.prompt }) },
    },
    'CARD.SEALED': {
      guard: ({ context, event }) => context.card?.fingerprint === event.fingerprint,
      actions: assign({ card: ({ context, event }) => ({ ...context.card!, envelope: event.envelope }) }),
    },
  },
  states: {
    attachment: {
      initial: 'sorting',
      states: {
        sorting: { always: [{ guard: 'isAttached', target: 'attached' }, { target: 'detached' }] },
        attached: { on: { UPDATE: { guard: not('readsAttached'), target: 'detached' } } },
        detached: { on: { UPDATE: { guard: 'readsAttached', target: 'attached' } } },
      },
    },
    agent: {
      description:
        'What the inventory read from the pane with the agent’s screen rules (debounced); unknown without trusted rules.',
      initial: 'sorting',
      // This region takes every UPDATE (its last branch has no guard), so it is where the record is stored: a
      // machine-level handler would never run, because a region that handles an event shadows its ancestors.
      on: {
        UPDATE: [
          { guard: 'readsIdle', target: '.idle', actions: ['storeRecord', 'keepCard'] },
          { guard: 'readsWorking', target: '.working', actions: ['storeRecord', 'keepCard'] },
          { guard: 'readsApproval', target: '.awaitingApproval', actions: ['storeRecord', 'keepCard'] },
          { target: '.unknown', actions: ['storeRecord', 'keepCard'] },
        ],
      },
      states: {
        sorting: {
          always: [
            { guard: 'isIdle', target: 'idle' },
            { guard: 'isWorking', target: 'working' },
            { guard: 'isAwaitingApproval', target: 'awaitingApproval' },
            { target: 'unknown' },
          ],
        },
        unknown: {},
        idle: {},
        working: {},
        awaitingApproval: {},
      },
    },
    remote: {
      description:
        'Sticky REMOTE (spec 4.13, docs/agents.md): the person drives the session from the phone, and the agent ends ' +
        'every answer with svc_ask. It ends when a prompt is typed at the keyboard, and with the session; it outlives ' +
        'a restart of the listener (core/sessions/remoteMode.ts).',
      initial: 'sorting',
      states: {
        sorting: { always: [{ guard: 'startsRemote', target: 'remote' }, { target: 'local' }] },
        local: {
          description: 'The keyboard drives the session (or nobody has said otherwise).',
          on: { 'REMOTE.ON': 'remote' },
        },
        remote: {
          description:
            "Entered when the agent's prompt hook matched the phone's marker, or an svc_ask answer said svcState REMOTE.",
          on: { 'REMOTE.OFF': 'local' },
        },
      },
    },
    approval: {
      description:
        'The approval prompt on the screen, as the fresh reading shows it (core/agents/approvals.ts). Messages are ' +
        'refused approval_pending while one shows; an answer from the app, and keys, are typed only for the very ' +
        'prompt the sender saw (same fingerprint: same dialog, same highlight), else refused prompt_changed (spec 7).',
      initial: 'sorting',
      states: {
        sorting: { always: [{ guard: 'hasPrompt', target: 'shown' }, { target: 'none' }] },
        none: { on: { UPDATE: { guard: 'readsPrompt', target: 'shown' } } },
        shown: {
          description: 'A prompt is on screen; its card (sealed) goes to the phones with the inventory.',
          on: {
            UPDATE: { guard: not('readsPrompt'), target: 'none' },
            'APPROVAL.ANSWERING': 'answering',
            'APPROVAL.CHANGED': 'changed',
          },
        },
        answering: {
          description: "The keys of the answer's choice are being typed.",
          on: { 'APPROVAL.ANSWERED': 'answered', 'APPROVAL.FAILED': 'shown', 'APPROVAL.CHANGED': 'changed' },
        },
        answered: {
          description: 'Typed; the prompt should go. Another prompt, or none, on a later reading moves on.',
          on: {
            UPDATE: [
              { guard: 'readsAnotherPrompt', target: 'shown' },
              { guard: not('readsPrompt'), target: 'none' },
            ],
          },
        },
        changed: {
          description:
            'Input came for a prompt that is no longer the one on screen (answered at the keyboard, gone, or the ' +
            'highlight moved): refused prompt_changed, nothing typed.',
          on: { UPDATE: [{ guard: 'readsPrompt', target: 'shown' }, { target: 'none' }] },
        },
      },
    },
    turn: {
      description:
        'Pushes for an agent in a turn (AgentSpec.typeAfterTurn) are parked until a reading shows the turn over (and ' +
        'no approval prompt); once the first one’s time is over (turnWait: what was left of the relay’s replay ' +
        'window) they are typed whatever the screen shows, and the agent queues them (a long turn, or a rule that ' +
        'misreads a finished one). Key input is never parked.',
      initial: 'free',
      states: {
        free: { always: { guard: 'hasParked', target: 'waiting' } },
        waiting: {
          always: { guard: not('hasParked'), target: 'free' },
          after: { turnWait: { target: 'free', actions: raise({ type: 'TURN.WAITED' }) } },
          on: { 'TURN.PARKED': { target: 'waiting', reenter: true } },
        },
      },
    },
    delivery: {
      initial: 'ready',
      on: {
        PUSH: { actions: assign({ queue: ({ context, event }) => [...context.queue, event.push] }) },
        KEYS: { actions: assign({ queue: ({ context, event }) => [...context.queue, event.keys] }) },
        'TURN.WAITED': {
          actions: assign(({ context }) => ({
            queue: [...context.parked.map((p) => ({ ...p, waited: true as const })), ...context.queue],
            parked: [],
          })),
        },
      },
      states: {
        ready: {
          always: [
            // the turn is over (or the screen no longer says so): the parked pushes go first, in their order
            {
              guard: 'unparks',
              actions: assign(({ context }) => ({ queue: [...context.parked, ...context.queue], parked: [] })),
            },
            { guard: 'queueEmpty' },
            {
              guard: 'headRefused',
              actions: enqueueActions(({ context, enqueue }) => {
                const head = context.queue[0]!;
                const { code, bucket } = decideHead(context);
                if (code === 'prompt_changed') enqueue.raise({ type: 'APPROVAL.CHANGED' });
                enqueue.sendParent(
                  head.kind === 'keys'
                    ? keysResult(context, head.ref, { state: 'refused', code: code! })
                    : pushResult(context, head.id, { state: 'refused', code: code! }),
                );
                enqueue.assign({ queue: context.queue.slice(1), bucket });
              }),
            },
            // refused or not is judged first (a refusal need not wait); the rest waits for the turn to end
            {
              guard: 'headParks',
              actions: [
                assign(({ context }) => ({
                  parked: [...context.parked, context.queue[0] as SessionPush],
                  queue: context.queue.slice(1),
                })),
                // its time may be the first to be over (a push the relay sent late): the wait is worked out again
                raise({ type: 'TURN.PARKED' }),
              ],
            },
            {
              guard: 'headIsKeys',
              target: 'typingKeys',
              actions: enqueueActions(({ context, enqueue }) => {
                const { ref, input } = context.queue[0] as SessionKeys;
                const { bucket, answerKeys } = decideHead(context);
                // an answer types the keys of its choice, worked out from the prompt on screen now; end types the
                // agent's exit command, then Enter
                const exit = controlOf(input) === 'end' ? EXIT_COMMANDS[context.record.meta?.agent ?? ''] : undefined;
                const typed =
                  answerKeys !== undefined
                    ? { keys: answerKeys, text: exit ?? '' }
                    : input.kind === 'type'
                      ? { keys: input.keys, text: input.text }
                      : { keys: [], text: '' };
                enqueue.assign({
                  currentKeys: { ref, input, ...typed },
                  queue: context.queue.slice(1),
                  bucket,
                  ...(input.kind === 'answer' ? { answered: input.fingerprint } : {}),
                });
                if (input.kind === 'answer') enqueue.raise({ type: 'APPROVAL.ANSWERING' });
              }),
            },
            {
              target: 'injecting',
              actions: assign(({ context }) => ({
                current: context.queue[0] as SessionPush,
                queue: context.queue.slice(1),
                bucket: decideHead(context).bucket,
              })),
            },
          ],
        },
        typingKeys: {
          entry: enqueueActions(({ context, enqueue }) => {
            const { ref } = context.currentKeys!;
            const what = isPhoneRef(ref) ? `key input ${ref.seq}` : `schedule ${ref.schedule}'s keys`;
            const leaving = leavingModeLog(context, what);
            if (leaving) enqueue({ type: 'log', params: leaving });
            if (!context.record.shell) return;
            const pane = activePane(context.record)!;
            const { text, keys } = context.currentKeys!;
            enqueue({
              type: 'auditShellInput',
              params: {
                session: context.name,
                paneId: pane.id,
                foreground: pane.command,
                text: [text, ...keys.map((k) => `<${k}>`)].join(''),
                kind: 'keys',
              },
            });
          }),
          invoke: {
            src: 'typeKeys',
            input: ({ context }) => {
              const typing = context.currentKeys!;
              const control = controlOf(typing.input);
              const pane = keysPane(context.record, control)!;
              return {
                session: context.name,
                paneId: pane.id,
                keys: typing.keys,
                text: typing.text,
                ...(pane.inMode ? { inMode: true } : {}),
                ...(context.approvalOnScreen && context.approval && !control
                  ? { confirm: { agent: context.approval.agent, fingerprint: context.approval.fingerprint } }
                  : {}),
                ...(control === 'kill' ? { kill: true } : {}),
                ...(control === 'term' ? { term: true } : {}),
                ...(control === 'end' ? { exit: true } : {}),
              };
            },
            onDone: {
              target: 'ready',
              actions: [
                sendParent(({ context }) => keysResult(context, context.currentKeys!.ref, { state: 'typed' })),
                enqueueActions(({ context, enqueue }) => {
                  if (context.currentKeys?.input.kind === 'answer') enqueue.raise({ type: 'APPROVAL.ANSWERED' });
                }),
                assign({ currentKeys: null }),
              ],
            },
            onError: {
              target: 'ready',
              actions: [
                sendParent(({ context, event }) => keysResult(context, context.currentKeys!.ref, failure(event.error))),
                enqueueActions(({ context, event, enqueue }) => {
                  if (event.error instanceof PromptChangedError) enqueue.raise({ type: 'APPROVAL.CHANGED' });
                  else if (context.currentKeys?.input.kind === 'answer') enqueue.raise({ type: 'APPROVAL.FAILED' });
                }),
                assign({ currentKeys: null }),
              ],
            },
          },
        },
        injecting: {
          entry: [
            {
              type: 'writeMarker',
              params: ({ context }) => ({
                session: context.name,
                projectDir: activePane(context.record)?.path,
                text: context.current!.body,
              }),
            },
            enqueueActions(({ context, enqueue }) => {
              const leaving = leavingModeLog(context, `push ${context.current!.id}`);
              if (leaving) enqueue({ type: 'log', params: leaving });
              if (!context.record.shell) return;
              const pane = activePane(context.record)!;
              enqueue({
                type: 'auditShellInput',
                params: {
                  session: context.name,
                  paneId: pane.id,
                  foreground: pane.command,
                  text: context.current!.body,
                },
              });
            }),
          ],
          invoke: {
            src: 'inject',
            input: ({ context }) => {
              const pane = activePane(context.record)!;
              return {
                session: context.name,
                paneId: pane.id,
                command: pane.command,
                startCommand: pane.startCommand,
                text: context.current!.body,
                ...(pane.inMode ? { inMode: true } : {}),
              };
            },
            onDone: {
              target: 'ready',
              actions: [
                sendParent(({ context, event }) =>
                  pushResult(context, context.current!.id, { state: 'injected', submitted: event.output.submitted }),
                ),
                assign({ current: null }),
              ],
            },
            onError: {
              target: 'ready',
              actions: [
                sendParent(({ context, event }) => pushResult(context, context.current!.id, failure(event.error))),
                assign({ current: null }),
              ],
            },
          },
        },
      },
    },
  },
});
