/** core/mcp/ask.ts decisions, table by table, and machines/ask.ts on a simulated clock with the real openAnswer. */
import { describe, expect, it } from 'vitest';
import { createActor, createMachine, fromPromise, SimulatedClock } from 'xstate';
import { openAnswerLogic } from '../../../actors/mcp/asks.js';
import type { DevicePin } from '../../../core/devices/devices.js';
import {
  type AnswerBody,
  askDeadline,
  askResultText,
  checkAnswer,
  chooseRecipients,
  lateAnswerCode,
} from '../../../core/mcp/ask.js';
import { exportPublicKey, generateDeviceKeys } from '../../../core/seal/keys.js';
import { seal } from '../../../core/seal/seal.js';
import { type AskInput, type AskOutput, askMachine } from '../../../machines/ask.js';
import { waitFor } from '../../helpers/relay.js';

describe('askDeadline', () => {
  it.each([
    [undefined, 300, false],
    [30, 30, false],
    [600, 600, false],
    [601, 600, true],
    [100_000, 600, true],
    [0.2, 1, false],
  ])('timeout %s → %s s (clamped %s)', (timeout, seconds, clamped) => {
    expect(askDeadline(timeout, 1_000)).toEqual({ deadline: 1_000 + seconds * 1000, seconds, clamped });
  });
});

const pin = (deviceId: string, publicKey: string, changed = false): DevicePin => ({
  deviceId,
  publicKey,
  fingerprint: 'f',
  pinnedAt: 1,
  verified: false,
  lastSeq: {},
  ...(changed ? { changedKey: { publicKey: 'other', fingerprint: 'g', seenAt: 2 } } : {}),
});
const listed = (deviceId: string, publicKey: string, kind = 'app') => ({ deviceId, publicKey, kind });

describe('chooseRecipients', () => {
  it.each([
    [
      'nothing pinned: every listed app, not computers nor me',
      {},
      [listed('a', 'ka'), listed('c', 'kc', 'computer'), listed('me', 'km')],
      ['a'],
    ],
    [
      'pinned: only pinned devices the relay lists with the same key',
      { a: pin('a', 'ka'), b: pin('b', 'kb') },
      [listed('a', 'ka'), listed('b', 'CHANGED'), listed('x', 'kx')],
      ['a'],
    ],
    ['a pin whose key changed (unverified) gets nothing', { a: pin('a', 'ka', true) }, [listed('a', 'ka')], []],
    ['a pinned device the relay no longer lists gets nothing', { a: pin('a', 'ka') }, [], []],
    ['no devices at all', {}, [], []],
  ] as const)('%s', (_, pins, list, ids) => {
    expect(chooseRecipients(pins as Record<string, DevicePin>, list, 'me').map((r) => r.deviceId)).toEqual(ids);
  });
});

describe('answers', () => {
  const ask = { id: 'a_0000000000000001', session: 's', choices: ['yes', 'no'] };
  const body = (extra: Partial<AnswerBody>): AnswerBody => ({
    id: ask.id,
    session: 's',
    text: '',
    sentAt: 1,
    ...extra,
  });
  it.each([
    ['free text', body({ text: 'hi' }), { ok: true, text: 'hi', choice: null }],
    ['a choice with no text answers with the choice', body({ choice: 1 }), { ok: true, text: 'no', choice: 'no' }],
    [
      'a choice and text',
      body({ choice: 0, text: 'yes, and hurry' }),
      { ok: true, text: 'yes, and hurry', choice: 'yes' },
    ],
    ['another ask’s id', body({ id: 'a_0000000000000002', text: 'x' }), { ok: false, code: 'bad_seal' }],
    ['another session', body({ session: 't', text: 'x' }), { ok: false, code: 'bad_seal' }],
    ['a choice out of range', body({ choice: 5 }), { ok: false, code: 'bad_seal' }],
  ] as const)('%s', (_, b, expected) => {
    expect(checkAnswer(ask, b)).toEqual(expected);
  });
  it.each([
    [undefined, 'ask_unknown'],
    [{ state: 'answered' as const }, 'already_answered'],
    [{ state: 'expired' as const }, 'ask_expired'],
  ])('late answer to %j → %s', (finished, code) => expect(lateAnswerCode(finished)).toBe(code));

  it('words for the model', () => {
    expect(askResultText({ state: 'answered', text: 'go', choice: null, deviceId: 'd' })).toBe('go');
    expect(askResultText({ state: 'answered', text: 'go', choice: 'yes', deviceId: 'd', svcState: 'REMOTE' })).toMatch(
      /go\n\(choice: yes\)\nsvcState: REMOTE/,
    );
    expect(askResultText({ state: 'expired', seconds: 600 }, { clamped: true })).toMatch(
      /within 600 s \(the timeout was cut/,
    );
    expect(askResultText({ state: 'failed', code: 'no_device', message: 'no phone' })).toMatch(
      /not asked: no phone \(no_device\)/,
    );
    // asked, then the listener's actor for it failed: the question did reach the phone
    const failed = askResultText({ state: 'failed', code: 'ask_failed', message: 'the listener failed' });
    expect(failed).toMatch(/^No answer: the listener failed \(ask_failed\)\. Carry on/);
    expect(failed).not.toMatch(/not asked/);
  });
});

describe('machines/ask.ts', () => {
  async function harness() {
    const computer = await generateDeviceKeys(false);
    const phone = await generateDeviceKeys(false);
    const stranger = await generateDeviceKeys(false);
    const me = {
      deviceId: 'c_1',
      publicKey: await exportPublicKey(computer.publicKey),
      privateKey: computer.privateKey,
      publicCryptoKey: computer.publicKey,
    };
    const input: AskInput = {
      id: 'a_00000000000000aa',
      session: 'svc-proj',
      deadline: 60_000,
      leftMs: 60_000,
      choices: ['yes', 'no'],
      recipients: [{ deviceId: 'd_phone', publicKey: await exportPublicKey(phone.publicKey) }],
    };
    const sealAnswer = (from: string, key: CryptoKey, body: Partial<AnswerBody>) =>
      seal({
        purpose: 'ask.answer',
        from: { id: from, privateKey: key },
        to: [{ id: 'c_1', publicKey: computer.publicKey }],
        plaintext: JSON.stringify({ id: input.id, session: input.session, text: '', sentAt: 1, ...body }),
      });
    const clock = new SimulatedClock();
    const toParent: unknown[] = [];
    let output: AskOutput | null = null;
    // A parent that records what the ask sends it and how it ends.
    const parent = createMachine({
      invoke: {
        id: 'ask',
        src: askMachine.provide({ actors: { openAnswer: fromPromise(openAnswerLogic(me)) } }),
        input,
        onDone: {
          actions: ({ event }) => {
            output = event.output as AskOutput;
          },
        },
      },
      on: {
        '*': { actions: ({ event }) => void toParent.push(event) },
      },
    });
    const actor = createActor(parent, { clock }).start();
    const ask = actor.getSnapshot().children.ask!;
    /** The ask is back in `waiting` (or over): whatever it was opening is settled. */
    const settle = () =>
      waitFor(() => output !== null || JSON.stringify(ask.getSnapshot().value) === '{"open":"waiting"}', {
        what: 'the ask to wait again',
      });
    return { ask, clock, toParent, output: () => output, sealAnswer, phone, stranger, settle };
  }

  it('takes the first good answer once; refuses a stranger and a damaged one without ending', async () => {
    const h = await harness();
    h.ask.send({
      type: 'ANSWER',
      deviceId: 'd_stranger',
      connection: 'k',
      envelope: await h.sealAnswer('d_stranger', h.stranger.privateKey, { text: 'x' }),
    });
    await h.settle();
    expect(h.toParent).toContainEqual(expect.objectContaining({ type: 'ASK.REFUSED', code: 'not_for_you' }));
    // Sealed by the stranger but claiming to be the phone: does not open with the phone's key.
    h.ask.send({
      type: 'ANSWER',
      deviceId: 'd_phone',
      connection: 'k',
      envelope: await h.sealAnswer('d_phone', h.stranger.privateKey, { text: 'x' }),
    });
    await h.settle();
    expect(h.toParent).toContainEqual(expect.objectContaining({ type: 'ASK.REFUSED', code: 'bad_seal' }));
    expect(h.output()).toBeNull();
    h.ask.send({
      type: 'ANSWER',
      deviceId: 'd_phone',
      connection: 'k',
      envelope: await h.sealAnswer('d_phone', h.phone.privateKey, { choice: 0, svcState: 'REMOTE' }),
    });
    await h.settle();
    expect(h.output()).toEqual({
      id: 'a_00000000000000aa',
      state: 'answered',
      deviceId: 'd_phone',
      connection: 'k',
      text: 'yes',
      choice: 'yes',
      svcState: 'REMOTE',
    });
  });

  it('a broken answer sent first never makes the real one that follows it "already answered"', async () => {
    const h = await harness();
    const broken = { type: 'ANSWER' as const, deviceId: 'd_phone', connection: 'impostor', envelope: { junk: 1 } };
    const real = {
      type: 'ANSWER' as const,
      deviceId: 'd_phone',
      connection: 'phone',
      envelope: await h.sealAnswer('d_phone', h.phone.privateKey, { choice: 0 }),
    };
    // both arrive before the first is opened
    h.ask.send(broken);
    h.ask.send(real);
    await waitFor(() => h.output() !== null, { what: 'the real answer taken' });
    expect(h.output()).toMatchObject({ state: 'answered', connection: 'phone', choice: 'yes' });
    const refused = h.toParent.filter((e) => (e as { type: string }).type === 'ASK.REFUSED');
    expect(refused).toEqual([expect.objectContaining({ connection: 'impostor', code: 'bad_seal' })]);
  });

  it('an answer that waited behind one that was taken comes second', async () => {
    const h = await harness();
    const answer = async (connection: string, choice: number) => ({
      type: 'ANSWER' as const,
      deviceId: 'd_phone',
      connection,
      envelope: await h.sealAnswer('d_phone', h.phone.privateKey, { choice }),
    });
    const [first, second] = [await answer('one', 0), await answer('two', 0)];
    h.ask.send(first);
    h.ask.send(second);
    await waitFor(() => h.output() !== null, { what: 'the first answer taken' });
    expect(h.output()).toMatchObject({ state: 'answered', connection: 'one' });
    await waitFor(() => h.toParent.some((e) => (e as { code?: string }).code === 'already_answered'), {
      what: 'the second refused',
    });
    expect(h.toParent).toContainEqual(expect.objectContaining({ connection: 'two', code: 'already_answered' }));
  });

  it('expires at its deadline, not before', async () => {
    const h = await harness();
    h.clock.increment(59_999);
    await h.settle();
    expect(h.output()).toBeNull();
    h.clock.increment(1);
    await h.settle();
    expect(h.output()).toEqual({ id: 'a_00000000000000aa', state: 'expired' });
  });
});
