import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { backoffDelay, RELAY_BACKOFF } from '../../core/backoff.js';
import { VERSION } from '../../core/daemon/version.js';
import { byCodeUnits } from '../../core/order.js';
import type { PaneInfo, SessionRecord } from '../../core/protocol/index.js';
import { inventoryChanged } from '../../core/sessions/inventory.js';
import {
  acknowledge,
  emptyLedger,
  LEDGER_KEEP,
  type Ledger,
  recordOutcome,
  recoverLedger,
  triagePush,
  unackedOutcomes,
} from '../../core/sessions/ledger.js';
import { isInteractiveShell, refusalFor } from '../../core/sessions/refusals.js';
import {
  decideFailure,
  describeFailure,
  type FailureDecision,
  type Failures,
  type Family,
  failingChildren,
  familyOf,
  formatFailingLines,
  isDown,
  pruneFailures,
  SUPERVISION,
} from '../../core/supervision.js';
import { fullBucket, takeToken } from '../../core/tokenBucket.js';

describe('backoff', () => {
  it.each([
    [0, 0, 500],
    [0, 0.999, 1000],
    [1, 0, 1000],
    [3, 0.5, 6000],
    [5, 1, 30_000], // 32 s capped at 30 s
    [50, 0, 15_000], // never overflows
  ])('attempt %i, random %f → %i ms', (attempt, random, ms) => {
    expect(backoffDelay(attempt, RELAY_BACKOFF, random)).toBe(Math.round(ms));
  });
});

describe('code-unit order (core/order.ts)', () => {
  it.each([
    [
      ['b', 'a'],
      ['a', 'b'],
    ],
    [
      ['svc-proj-sh', 'svc-proj', 'svc-proj-2'],
      ['svc-proj', 'svc-proj-2', 'svc-proj-sh'],
    ],
    // capitals before small letters, accented letters after both: code units, not a language's order
    [
      ['é', 'b', 'B', 'Z', 'a'],
      ['B', 'Z', 'a', 'b', 'é'],
    ],
    [
      ['%12', '%3', '%10'],
      ['%10', '%12', '%3'],
    ],
    [
      ['x', 'x'],
      ['x', 'x'],
    ],
  ])('sorts %j as %j, as sort() with no comparator does', (input, sorted) => {
    expect([...input].sort(byCodeUnits)).toEqual(sorted);
    expect([...input].sort()).toEqual(sorted);
  });
});

describe('token bucket', () => {
  const config = { capacity: 3, refillPerSecond: 1 };
  it('allows the burst, refuses the next, refills with time', () => {
    let state = fullBucket(config, 0);
    const results: boolean[] = [];
    for (let i = 0; i < 4; i++) {
      const r = takeToken(config, state, 0);
      results.push(r.allowed);
      state = r.state;
    }
    expect(results).toEqual([true, true, true, false]);
    expect(takeToken(config, state, 0).retryAfterMs).toBe(1000);
    expect(takeToken(config, state, 1000).allowed).toBe(true);
  });
  it('never holds more than its capacity', () => {
    const r = takeToken(config, { tokens: 0, updatedAt: 0 }, 1_000_000);
    expect(r.state.tokens).toBe(2);
  });
});

describe('ledger', () => {
  it.each([
    ['a note is ignored', { id: 1, type: 'note', ageMs: 0 }, 'ignore'],
    ['a fresh command is delivered', { id: 1, type: 'agent.command', ageMs: 0 }, 'deliver'],
    ['an old command expires', { id: 1, type: 'agent.command', ageMs: 120_001 }, 'expire'],
    ['at the window edge it is still delivered', { id: 1, type: 'agent.command', ageMs: 120_000 }, 'deliver'],
  ])('%s', (_n, push, action) => {
    expect(triagePush(push, emptyLedger(), 120_000).action).toBe(action);
  });

  it('remembers outcomes and never delivers an id twice', () => {
    const ledger = recordOutcome(emptyLedger(), 5, { state: 'injected' });
    expect(ledger.lastPushId).toBe(5);
    expect(triagePush({ id: 5, type: 'agent.command', ageMs: 0 }, ledger, 1000)).toEqual({
      action: 'resend',
      outcome: { state: 'injected' },
    });
  });

  it(`keeps only the newest ${LEDGER_KEEP} ids and treats older ones as done`, () => {
    let ledger = emptyLedger();
    for (let id = 1; id <= LEDGER_KEEP + 5; id++) {
      ledger = acknowledge(recordOutcome(ledger, id, { state: 'injected' }), id);
    }
    expect(Object.keys(ledger.entries)).toHaveLength(LEDGER_KEEP);
    expect(ledger.entries['1']).toBeUndefined();
    expect(triagePush({ id: 1, type: 'agent.command', ageMs: 0 }, ledger, 1000).action).toBe('resend');
  });

  it('keeps an outcome until the relay acknowledges it, whatever its age', () => {
    let ledger = recordOutcome(emptyLedger(), 1, { state: 'refused', code: 'rate_limited' });
    for (let id = 2; id <= LEDGER_KEEP + 5; id++) {
      ledger = acknowledge(recordOutcome(ledger, id, { state: 'injected' }), id);
    }
    expect(ledger.unacked).toEqual([1]);
    expect(ledger.entries['1']).toEqual({ state: 'refused', code: 'rate_limited' });
    expect(unackedOutcomes(ledger)).toEqual([{ id: 1, outcome: { state: 'refused', code: 'rate_limited' } }]);
    const acked = acknowledge(ledger, 1);
    expect(acked.unacked).toEqual([]);
    expect(acknowledge(acked, 1)).toBe(acked);
    // A claim is not an outcome: nothing to send for it yet.
    expect(recordOutcome(emptyLedger(), 3, { state: 'claimed' }).unacked).toEqual([]);
  });

  it.each([
    ['no claims: unchanged', { lastPushId: 4, entries: { '4': { state: 'injected' as const } } }, [], []],
    [
      'claims become inject_failed outcomes to report',
      {
        lastPushId: 8,
        entries: {
          '5': { state: 'injected' as const },
          '7': { state: 'claimed' as const },
          '8': { state: 'claimed' as const },
        },
      },
      [7, 8],
      [7, 8],
    ],
    [
      'a ledger written before acks (no unacked) keeps its other entries as acknowledged',
      { lastPushId: 2, entries: { '2': { state: 'claimed' as const } } },
      [2],
      [2],
    ],
  ])('recovers a ledger at start: %s', (_n, ledger: Ledger, recovered, unacked) => {
    const out = recoverLedger(ledger);
    expect(out.recovered).toEqual(recovered);
    expect(out.ledger.unacked).toEqual(unacked);
    expect(out.ledger.lastPushId).toBe(ledger.lastPushId);
    for (const id of recovered)
      expect(out.ledger.entries[String(id)]).toEqual({ state: 'refused', code: 'inject_failed' });
    expect(Object.values(out.ledger.entries).some((e) => e.state === 'claimed')).toBe(false);
  });
});

describe('refusals (spec 7)', () => {
  const pane = (command: string): PaneInfo => ({ id: '%1', command, active: true });
  const base = {
    target: 'svc-proj',
    body: 'hello',
    pane: pane('claude'),
    shellSession: false,
    subagent: false,
    addressedToThisComputer: false,
  };
  it.each([
    ['a normal push', {}, null],
    ['7.4 a name with a space', { target: 'svc proj' }, 'invalid_target'],
    ['7.4 a name with a semicolon', { target: 'a;b' }, 'invalid_target'],
    ['7.4 an empty name', { target: '' }, 'invalid_target'],
    ['7.4 a name with a newline', { target: 'a\nb' }, 'invalid_target'],
    ['no such session', { pane: undefined }, 'session_not_found'],
    ['7.5 a subagent', { subagent: true }, 'subagent_view_only'],
    ['an empty body', { body: '' }, 'empty_body'],
    ['7.1 bash in front', { pane: pane('bash') }, 'shell_in_front'],
    ['7.1 a login zsh in front', { pane: pane('-zsh') }, 'shell_in_front'],
    ['7.1 pwsh in front', { pane: pane('pwsh') }, 'shell_in_front'],
    ['7.1 vim is not a shell', { pane: pane('vim') }, null],
    ['7.2 shell session, not addressed here', { shellSession: true, pane: pane('bash') }, 'not_for_this_computer'],
    [
      '7.3 shell session, ESC in the text',
      { shellSession: true, pane: pane('bash'), addressedToThisComputer: true, body: 'ls\u001b[A' },
      'shell_input_forbidden',
    ],
    [
      '7.3 shell session, a newline',
      { shellSession: true, pane: pane('bash'), addressedToThisComputer: true, body: 'ls\nrm -rf x' },
      'shell_input_forbidden',
    ],
    ['shell session, addressed here', { shellSession: true, pane: pane('bash'), addressedToThisComputer: true }, null],
    [
      'shell session, an agent in front showing its dialog',
      { shellSession: true, pane: pane('claude'), addressedToThisComputer: true, approvalPending: true },
      'approval_pending',
    ],
    [
      'shell session, an agent in front whose screen was not read',
      { shellSession: true, pane: pane('claude'), addressedToThisComputer: true, screenUnreadable: true },
      'screen_unreadable',
    ],
    ['an approval prompt in the fresh reading', { approvalPending: true }, 'approval_pending'],
    ['the screen could not be read', { screenUnreadable: true }, 'screen_unreadable'],
    ['unreadable outranks a prompt', { screenUnreadable: true, approvalPending: true }, 'screen_unreadable'],
    [
      'a shell in front outranks an unreadable screen',
      { screenUnreadable: true, pane: pane('bash') },
      'shell_in_front',
    ],
  ])('%s', (_n, override, code) => {
    expect(refusalFor({ ...base, ...override })).toBe(code);
  });

  it.each(['bash', 'zsh', 'fish', 'sh', 'dash', 'ksh', 'tcsh', 'csh', 'pwsh', '-bash', '/bin/zsh'])(
    '%s is a shell',
    (c) => {
      expect(isInteractiveShell(c)).toBe(true);
    },
  );
  it.each(['claude', 'node', 'codex', 'python3', 'bashful'])('%s is not a shell', (c) => {
    expect(isInteractiveShell(c)).toBe(false);
  });
});

describe('inventory change detection', () => {
  const s = (name: string, activityAt = 1): SessionRecord => ({
    name,
    attached: false,
    createdAt: 1,
    activityAt,
    panes: [{ id: '%1', command: 'claude', active: true }],
  });
  it.each([
    ['first report', null, [s('a')], true],
    ['same sessions in another order', [s('a'), s('b')], [s('b'), s('a')], false],
    ['a new session', [s('a')], [s('a'), s('b')], true],
    ['a session gone', [s('a'), s('b')], [s('a')], true],
    ['activity', [s('a', 1)], [s('a', 2)], true],
  ])('%s → %s', (_n, prev, next, changed) => {
    expect(inventoryChanged(prev, next)).toBe(changed);
  });
});

describe('version', () => {
  it('matches package.json', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(VERSION).toBe(pkg.version);
  });
});

describe('supervision policy (core/supervision.ts)', () => {
  const MIN = 60_000;
  const failingAt = (family: Family, times: number[]) => {
    let record: Failures | undefined;
    let decision: FailureDecision | undefined;
    for (const t of times) ({ record, decision } = decideFailure(family, record, t, 'Error: boom'));
    return { record: record!, decision: decision! };
  };

  it.each([
    ['the first failure', [0], { kind: 'restart', delayMs: 1_000 }],
    ['the second', [0, 1_000], { kind: 'restart', delayMs: 2_000 }],
    ['the fourth', [0, 1, 2, 3], { kind: 'restart', delayMs: 8_000 }],
    ['the fifth within ten minutes', [0, 1, 2, 3, 9 * MIN], { kind: 'give_up' }],
    ['the fifth when the first is older than ten minutes', [0, 1, 2, 3, 10 * MIN], { kind: 'restart', delayMs: 8_000 }],
  ] as const)('a session: %s → %o', (_, times, decision) => {
    expect(failingAt('session', [...times]).decision).toEqual(decision);
  });

  it('backs off at most 60 s (with a policy that allows many failures)', () => {
    let record: Failures | undefined;
    let last: FailureDecision | undefined;
    const policy = { ...SUPERVISION, limit: 100 };
    for (let i = 0; i < 12; i++) ({ record, decision: last } = decideFailure('watch', record, i, 'e', policy));
    expect(last).toEqual({ kind: 'restart', delayMs: 60_000 });
  });

  it('an ask is ended at its first failure, never given up', () => {
    expect(failingAt('ask', [0]).decision).toEqual({ kind: 'end' });
    expect(failingAt('ask', [0, 1, 2, 3, 4, 5]).record.givenUp).toBe(false);
  });

  it('keeps the failures inside the window, the error, and when the restart is due', () => {
    const { record } = failingAt('device', [0, 11 * MIN]);
    expect(record).toEqual({
      family: 'device',
      at: [11 * MIN],
      error: 'Error: boom',
      givenUp: false,
      retryAt: 11 * MIN + 1_000,
    });
  });

  it.each([
    ['session.svc-a', 'session'],
    ['watch.d_1/svc-a', 'watch'],
    ['worktree.app-wt-x', 'worktree'],
    ['relay', 'relay'],
    ['pinsWatch', 'pinsWatch'],
    ['asks', 'asks'],
    ['ask.a_1', 'ask'],
    ['worktrees', 'worktrees'],
    ['schedule.a00001', 'schedule'],
    ['sessions', 'sessions'],
    ['devices', 'devices'],
    ['sessionsx', null],
    ['listener', null],
  ] as const)('familyOf(%s) is %s', (id, family) => {
    expect(familyOf(id)).toBe(family);
  });

  it.each([
    [undefined, 10, false],
    [{ givenUp: true, retryAt: null }, 10, true],
    [{ givenUp: false, retryAt: 20 }, 10, true],
    [{ givenUp: false, retryAt: 20 }, 20, false],
    [{ givenUp: false, retryAt: null }, 10, false],
  ] as const)('isDown(%o, %i) is %s', (record, now, down) => {
    const full = record ? { family: 'session' as const, at: [], error: '', ...record } : undefined;
    expect(isDown(full, now)).toBe(down);
  });

  it('describes a failure by its first line', () => {
    const err = new TypeError('x is undefined\n    at somewhere');
    expect(describeFailure(err)).toBe('TypeError: x is undefined');
    expect(describeFailure('plain')).toBe('plain');
  });

  it('svc verify fails on a child given up, lists a restarted one as ok, given up first', () => {
    const lines = formatFailingLines([
      { id: 'watch.d/s', failures: 1, givenUp: false, error: 'Error: a' },
      { id: 'session.svc-a', failures: 5, givenUp: true, error: 'Error: b' },
    ]);
    expect(lines).toEqual([
      'FAIL  child     session.svc-a failed 5 time(s) in 10 min, not restarted; `svc listener --restart` once its log says why (last: Error: b)',
      'ok    child     watch.d/s failed 1 time(s) in 10 min, restarted (last: Error: a)',
    ]);
    expect(formatFailingLines([])).toEqual([]);
    expect(failingChildren({ 'session.x': failingAt('session', [0]).record }, 1_000)).toEqual([
      { id: 'session.x', failures: 1, givenUp: false, error: 'Error: boom' },
    ]);
    // a failure older than the window is not shown; one given up is, whenever it was
    expect(failingChildren({ 'session.x': failingAt('session', [0]).record }, 10 * MIN)).toEqual([]);
    const givenUp = failingAt('session', [0, 1, 2, 3, 4]).record;
    expect(failingChildren({ 'session.y': givenUp }, 60 * MIN)).toEqual([
      { id: 'session.y', failures: 5, givenUp: true, error: 'Error: boom' },
    ]);
    expect(formatFailingLines([{ id: 'ask.a_1', failures: 1, givenUp: false, error: 'Error: c' }])).toEqual([
      'ok    child     ask.a_1 failed 1 time(s) in 10 min, ended (last: Error: c)',
    ]);
  });

  it('prunes records whose failures left the window, and those whose subject is gone, given up or not', () => {
    const old = failingAt('watch', [0]).record;
    const fresh = failingAt('watch', [9 * MIN]).record;
    const givenUp = failingAt('session', [0, 1, 2, 3, 4]).record;
    const records = { 'watch.d/a': { ...old, retryAt: null }, 'watch.d/b': fresh, 'session.c': givenUp };
    const none = () => false;
    expect(Object.keys(pruneFailures(records, 11 * MIN, none))).toEqual(['watch.d/b', 'session.c']);
    expect(Object.keys(pruneFailures(records, 11 * MIN, (id) => id === 'session.c'))).toEqual(['watch.d/b']);
    const kept = { 'watch.d/b': fresh };
    expect(pruneFailures(kept, 9 * MIN, none)).toBe(kept);
    // a restart still to come keeps its record; one due long ago (its supervisor was replaced) does not
    const due = { 'watch.d/c': { ...old, retryAt: 12 * MIN }, 'watch.d/d': { ...old, retryAt: 1_000 } };
    expect(Object.keys(pruneFailures(due, 11 * MIN, none))).toEqual(['watch.d/c']);
  });
});
