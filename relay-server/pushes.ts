/**
 * The life of a push: stored `pending`, `delivered` once a listener has it, then `injected`, `refused` or `expired`.
 * Routes, the hub and the sweeper all change pushes through here, and every change is published on the bus.
 */
import type { PushSendRequest, PushState, WirePush } from '../core/protocol/index.js';
import type { Bus } from './bus.js';
import { describeError, type Log } from './log.js';
import { type PushCondition, type PushRecord, StorageFullError, type Store } from './store.js';

/** The only push type a listener acts on, and so the only one replayed (spec 2.1). */
export const AGENT_COMMAND = 'agent.command';
/** States in which a push may still be handed to a listener. */
const OPEN_STATES: readonly PushState[] = ['pending', 'delivered'];
const SWEEP_BATCH = 500;
/**
 * The code of a push a listener received and never answered within twice the replay window (killed before it
 * could say, or a type listeners do not act on). Final, so its body goes; a listener's result that comes later
 * still replaces it (`resultConditions`).
 */
export const NO_RESULT = 'no_result';
/** Per account: most bytes of open pushes kept (OPEN_PUSH_OVERHEAD each, plus body and envelope). */
export const MAX_OPEN_PUSH_BYTES = 16 * 1024 * 1024;
/** Per account: final pushes kept (states only, no bodies); older ones are deleted by the sweeper. */
export const KEEP_FINAL_PUSHES = 10_000;
/**
 * A push still `pending` this long after it was stored is stranded: the bus did not bring it to a listener (Redis
 * down, an instance killed between commit and publish). The instance holding its listener delivers it from the store.
 */
export const STRANDED_AFTER_MS = 1_000;
/** How often each instance looks for stranded pushes. */
export const STRANDED_CHECK_MS = 2_000;
/** Computers whose account `send` remembers; past it the memory starts over. */
const KNOWN_COMPUTERS = 50_000;

export interface PushResult {
  state: 'injected' | 'refused' | 'expired';
  code?: string | undefined;
}

/**
 * Which current states a listener's result may overwrite. An open push takes any result. A final one keeps its
 * state, except `refused session_not_found`: a push sent to every computer is refused by those without the session,
 * and a later `injected` from another computer is the news the sender is waiting for.
 */
export function resultConditions(result: PushResult, fromComputer: string): PushCondition[] {
  const conditions: PushCondition[] = [{ states: OPEN_STATES }, { states: ['expired'], code: NO_RESULT }];
  if (result.state === 'injected') {
    conditions.push({ states: ['refused'], code: 'session_not_found', notResultComputer: fromComputer });
  }
  return conditions;
}

export function toWirePush(push: PushRecord, now: number, replay: boolean): WirePush {
  const wire: WirePush = {
    id: push.id,
    type: push.type,
    agentSessionName: push.agentSessionName,
    body: push.body,
    targetComputer: push.targetComputer,
    createdAt: push.createdAt,
    ageMs: Math.max(0, Math.round(now - push.createdAt)),
    replay,
  };
  if (push.sealed) wire.sealed = JSON.parse(push.sealed) as Record<string, unknown>;
  return wire;
}

export interface PushesDeps {
  store: Store;
  bus: Bus;
  log: Log;
  now: () => number;
  replayWindowMs: number;
  /** MAX_OPEN_PUSH_BYTES unless given. */
  maxOpenPushBytes?: number;
  /** KEEP_FINAL_PUSHES unless given. */
  keepFinalPushes?: number;
}

export class Pushes {
  private readonly deps: PushesDeps;
  /** A push became final (its body erased) since the last sweep: the sweep makes the store forget it. */
  private erasedSinceSweep = false;
  /**
   * The account of each computer a push was addressed to. A computer never changes account and is never deleted,
   * so what was read once stays true; an unknown hookId is read again every time.
   */
  private readonly computerAccounts = new Map<string, string>();

  constructor(deps: PushesDeps) {
    this.deps = deps;
  }

  /** Store a push (or find the first one with its clientId). Fan it out with `fanOut` once the sender has its answer. */
  async send(
    accountId: string,
    req: PushSendRequest,
  ): Promise<
    { ok: true; push: PushRecord; duplicate: boolean } | { ok: false; code: 'unknown_computer' | 'storage_full' }
  > {
    const { store } = this.deps;
    if (req.targetComputer !== undefined && (await this.accountOf(req.targetComputer)) !== accountId) {
      return { ok: false, code: 'unknown_computer' };
    }
    try {
      const { push, duplicate } = await store.insertPush({
        accountId,
        type: req.type,
        agentSessionName: req.agentSessionName,
        body: req.body,
        targetComputer: req.targetComputer ?? null,
        clientId: req.clientId ?? null,
        // Only the envelope (ciphertext and routing ids) is kept: the relay cannot read a sealed push.
        sealed: req.sealed ? JSON.stringify(req.sealed) : null,
        now: this.deps.now(),
        maxOpenBytes: this.deps.maxOpenPushBytes ?? MAX_OPEN_PUSH_BYTES,
      });
      return { ok: true, push, duplicate };
    } catch (error) {
      if (error instanceof StorageFullError) return { ok: false, code: 'storage_full' };
      throw error;
    }
  }

  private async accountOf(hookId: string): Promise<string | null> {
    const known = this.computerAccounts.get(hookId);
    if (known !== undefined) return known;
    const computer = await this.deps.store.getComputer(hookId);
    if (!computer) return null;
    if (this.computerAccounts.size >= KNOWN_COMPUTERS) this.computerAccounts.clear();
    this.computerAccounts.set(hookId, computer.accountId);
    return computer.accountId;
  }

  /**
   * Hand a new push to listeners: the target computer; else the computers whose last inventory has the session;
   * else, when none has it, every listener of the account.
   */
  async fanOut(push: PushRecord): Promise<void> {
    await this.deps.bus.publish(push.accountId, { kind: 'push.new', push, targets: await this.targetsOf(push) });
  }

  /** The computers a push is for (hookIds), or null for every listener of the account. */
  async targetsOf(push: PushRecord): Promise<string[] | null> {
    if (push.targetComputer !== null) return [push.targetComputer];
    const having = await this.deps.store.computersWithSession(push.accountId, push.agentSessionName);
    return having.length > 0 ? having : null;
  }

  /**
   * The store is the truth, the bus a shortcut: agent.commands still `pending` `STRANDED_AFTER_MS` after they were
   * stored and young enough to be typed, oldest first, for the instance that holds their listener to deliver.
   */
  async stranded(): Promise<PushRecord[]> {
    const now = this.deps.now();
    const open = await this.deps.store.listOlderThan(['pending'], now - STRANDED_AFTER_MS, SWEEP_BATCH);
    return open
      .filter((p) => p.type === AGENT_COMMAND && now - p.createdAt <= this.deps.replayWindowMs)
      .sort((a, b) => a.id - b.id);
  }

  /** A listener has the push: pending becomes delivered (later states stay). */
  async markDelivered(accountId: string, id: number): Promise<void> {
    const to = { state: 'delivered', code: null, now: this.deps.now() } as const;
    if (await this.deps.store.updatePush(accountId, id, { states: ['pending'] }, to)) {
      await this.publishStatus(accountId, id, to.state, to.code);
    }
  }

  /** A listener's push.result. `not_found` when the account has no such push; `ignored` when the state stays. */
  async applyResult(
    accountId: string,
    fromComputer: string,
    id: number,
    result: PushResult,
  ): Promise<'updated' | 'ignored' | 'not_found'> {
    const { store } = this.deps;
    const code = result.code ?? null;
    for (const when of resultConditions(result, fromComputer)) {
      const to = { state: result.state, code, resultComputer: fromComputer, now: this.deps.now() };
      if (await store.updatePush(accountId, id, when, to)) {
        this.erasedSinceSweep = true;
        await this.publishStatus(accountId, id, result.state, code);
        return 'updated';
      }
    }
    return (await store.getPush(accountId, id)) ? 'ignored' : 'not_found';
  }

  /**
   * What a listener subscribing with lastPushId missed: open agent.commands addressed to it or to no computer.
   * Those younger than the replay window are returned to send; older ones are marked expired here.
   */
  async replayFor(
    accountId: string,
    hookId: string,
    lastPushId: number,
  ): Promise<{ replay: PushRecord[]; expired: number }> {
    const missed = await this.deps.store.listReplayable({
      accountId,
      afterId: lastPushId,
      hookId,
      type: AGENT_COMMAND,
      states: OPEN_STATES,
    });
    const now = this.deps.now();
    const replay: PushRecord[] = [];
    let expired = 0;
    for (const push of missed) {
      if (now - push.createdAt <= this.deps.replayWindowMs) replay.push(push);
      else if (await this.expire(push)) expired++;
    }
    return { replay, expired };
  }

  /**
   * Retention. Pushes no listener received within the replay window will never be typed: expired. Pushes a
   * listener received and never answered within twice the window (one that died before it could, a type no
   * listener acts on): expired `no_result`. Each erases its body. Then each account's oldest final pushes beyond
   * KEEP_FINAL_PUSHES are deleted, and the store forgets what was erased.
   */
  async sweep(): Promise<number> {
    const now = this.deps.now();
    const window = this.deps.replayWindowMs;
    let expired = 0;
    for (const push of await this.deps.store.listOlderThan(['pending'], now - window, SWEEP_BATCH)) {
      if (await this.expire(push, ['pending'])) expired++;
    }
    for (const push of await this.deps.store.listOlderThan(['delivered'], now - 2 * window, SWEEP_BATCH)) {
      if (await this.expire(push, ['delivered'], NO_RESULT)) expired++;
    }
    const pruned = await this.deps.store.pruneFinalPushes(this.deps.keepFinalPushes ?? KEEP_FINAL_PUSHES);
    if (pruned > 0) this.deps.log.info(`deleted ${pruned} old final push(es) past ${KEEP_FINAL_PUSHES} per account`);
    if (expired > 0 || pruned > 0 || this.erasedSinceSweep) {
      this.erasedSinceSweep = false;
      await this.deps.store.forgetErased();
    }
    return expired;
  }

  private async expire(push: PushRecord, from: readonly PushState[] = OPEN_STATES, code: string | null = null) {
    const to = { state: 'expired', code, now: this.deps.now() } as const;
    if (!(await this.deps.store.updatePush(push.accountId, push.id, { states: from }, to))) return false;
    const why = code === NO_RESULT ? 'received, never answered' : 'older than the replay window';
    this.deps.log.info(`push ${push.accountId}/${push.id} expired${code ? ` ${code}` : ''} (${push.state}, ${why})`);
    await this.publishStatus(push.accountId, push.id, to.state, code);
    return true;
  }

  /** Tells the account's apps; the state is in the store already, so a bus that fails is logged, never thrown. */
  private async publishStatus(accountId: string, id: number, state: PushState, code: string | null): Promise<void> {
    try {
      await this.deps.bus.publish(accountId, { kind: 'push.status', id, state, code });
    } catch (error) {
      this.deps.log.warn(`status of push ${accountId}/${id} (${state}) not published: ${describeError(error)}`);
    }
  }
}
