/**
 * The root's sealed paths with fakes: sealed pushes go through `device.<id>` before their session, plaintext is
 * refused once a device is pinned, live panes and key input are routed to watch and session actors, and answers
 * go back to the app that asked. Sealing itself is faked (envelopes carry their text); core/seal/seal.ts has its own tests.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type AnyActorRef, createActor, fromCallback, fromPromise, SimulatedClock } from 'xstate';
import { createFaults, type FaultRule, parseFaults } from '../../../actors/debug/faults.js';
import { type ApprovalPrompt, readApproval } from '../../../core/agents/approvals.js';
import { applyPinOps, type PinOp, type PinsFile } from '../../../core/devices/devices.js';
import type { LeaseLeft } from '../../../core/panes/watchLeases.js';
import type { PhoneRequest } from '../../../core/protocol/bodies.js';
import type { ClientFrame, RelayFrame, SessionRecord, WirePush } from '../../../core/protocol/index.js';
import type { Envelope } from '../../../core/seal/seal.js';
import { emptyLedger } from '../../../core/sessions/ledger.js';
import { deviceMachine, type OpenSealedInput, type OpenSealedOutput } from '../../../machines/device.js';
import { devicesMachine } from '../../../machines/devices.js';
import { inventoryMachine } from '../../../machines/inventory.js';
import { listenerMachine } from '../../../machines/listener.js';
import { paneWatchMachine, type SealFrameInput } from '../../../machines/paneWatch.js';
import type { RelayLinkEvent, RelaySocketCommand, RelaySocketInput } from '../../../machines/relayLink.js';
import { relayLinkMachine } from '../../../machines/relayLink.js';
import type { InjectInput, InjectOutput, TypeKeysInput } from '../../../machines/session.js';
import { sessionMachine } from '../../../machines/session.js';
import { sessionsMachine } from '../../../machines/sessions.js';
import { type WatchesContext, watchesMachine } from '../../../machines/watches.js';
import { readableScreens } from '../../fakes/fakeTmux.js';

const KEY = 'K'.repeat(87);
const flush = async () => {
  for (let i = 0; i < 12; i++) await new Promise((r) => setImmediate(r));
};

function session(name: string, extra: Partial<SessionRecord> = {}): SessionRecord {
  return {
    name,
    attached: false,
    createdAt: 1,
    activityAt: 1,
    panes: [{ id: `%${name.length}`, command: 'claude', path: `/w/${name}`, active: true }],
    ...extra,
  };
}

/** A fake envelope: whatever the test puts in `text` is what "opens". `opens: false` is a damaged one. */
const envelope = (from: string, text: unknown, opens = true) => ({ from, text: JSON.stringify(text), opens });

type Rooted = { actor: { system: { get(id: string): AnyActorRef | undefined } } };
/** Supervisor `supervisor`'s child `id` (machines/watches.ts, machines/devices.ts). */
const childOf = (h: Rooted, supervisor: string, id: string) =>
  (h.actor.system.get(supervisor)?.getSnapshot() as { children: Record<string, AnyActorRef> } | undefined)?.children[
    id
  ];
/** A live pane's actor, a child of the live panes' supervisor (machines/watches.ts). */
const watchActor = (h: Rooted, id: string) => childOf(h, 'watches', id);
/** A device's actor, a child of the devices' supervisor (machines/devices.ts). */
const deviceActor = (h: Rooted, id: string) => childOf(h, 'devices', id);
/** The devices' supervisor's record of device actor `id`'s failures. */
const deviceFailures = (h: Rooted, id: string) =>
  (h.actor.system.get('devices')?.getSnapshot().context as { failures: Record<string, unknown> } | undefined)?.failures[
    id
  ];

function harness(
  opts: {
    pins?: PinsFile;
    pinsUnreadable?: boolean;
    sessions?: SessionRecord[];
    resumeWatches?: LeaseLeft[];
    /** Pane screens by pane id (blank otherwise). */
    screens?: Record<string, string>;
    /** SVC_FAULT's text: children made to fail by the listener's own switch (actors/debug/faults.ts). */
    faults?: string;
  } = {},
) {
  const clock = new SimulatedClock();
  const state = {
    file: opts.pins ?? ({ version: 1, devices: {} } as PinsFile),
    sockets: [] as { sendBack: (e: RelayLinkEvent) => void; sent: RelaySocketCommand[] }[],
    sessions: opts.sessions ?? [session('svc-proj'), session('svc-proj.1', { parent: 'svc-proj' })],
    typed: [] as InjectInput[],
    keyed: [] as TypeKeysInput[],
    screens: opts.screens ?? {},
    cards: [] as { session: string; prompt: ApprovalPrompt }[],
    past: [] as { session: string; action: string; live: boolean }[],
    failures: [] as { id: string; what: string }[],
    /** The live panes' supervisor throws in its next log line (a bug in it, not in a live pane). */
    breakWatches: false,
    /** The devices' supervisor throws in its next log line (a bug in it, not in a device's actor). */
    breakDevices: false,
  };
  const noop = () => {};
  const faults = createFaults(opts.faults ? (parseFaults(opts.faults) as { rules: FaultRule[] }).rules : []);
  const machine = listenerMachine.provide({
    actors: faults.children({
      relayLink: relayLinkMachine.provide({
        actors: {
          relaySocket: fromCallback<RelaySocketCommand, RelaySocketInput>(({ sendBack, receive }) => {
            const sock = { sendBack: sendBack as (e: RelayLinkEvent) => void, sent: [] as RelaySocketCommand[] };
            state.sockets.push(sock);
            receive((cmd) => {
              sock.sent.push(cmd);
              if (cmd.type === 'PING') sendBack({ type: 'SOCKET.PONG' });
            });
            return noop;
          }),
        },
        actions: { log: noop },
      }),
      inventory: inventoryMachine.provide({
        actors: {
          listSessions: fromPromise(async () => ({
            sessions: state.sessions,
            screens: readableScreens(state.sessions, state.screens),
            takenAt: clock.now(),
          })),
        },
        actions: { log: noop },
      }),
      sessions: sessionsMachine.provide({
        actors: {
          session: sessionMachine.provide({
            actors: {
              inject: fromPromise<InjectOutput, InjectInput>(async ({ input }) => {
                state.typed.push(input);
                return { submitted: true };
              }),
              typeKeys: fromPromise<void, TypeKeysInput>(async ({ input }) => {
                state.keyed.push(input);
              }),
            },
            actions: {
              log: noop,
              writeMarker: noop,
              auditShellInput: noop,
              sealCard: (_, p: { session: string; prompt: ApprovalPrompt }) => {
                state.cards.push(p);
              },
            },
          }),
        },
        actions: {
          log: noop,
          reportFailure: (_, p: { id: string; what: string }) => {
            state.failures.push({ id: p.id, what: p.what });
          },
        },
      }),
      devices: devicesMachine.provide({
        actors: {
          device: deviceMachine.provide({
            actors: {
              openSealed: fromPromise<OpenSealedOutput, OpenSealedInput>(async ({ input }) => {
                const env = input.envelope as { text: string; opens: boolean };
                return {
                  pin: state.file.devices[input.deviceId],
                  listed: { publicKey: KEY, fingerprint: 'kkkk' },
                  opened: env.opens ? { ok: true, text: env.text } : { ok: false, reason: 'tampered' },
                  now: 1,
                };
              }),
            },
            actions: {
              log: noop,
              persistPins: (_, p: { ops: PinOp[] }) => {
                state.file = applyPinOps(state.file, p.ops);
              },
            },
          }),
        },
        actions: {
          log: () => {
            if (!state.breakDevices) return;
            state.breakDevices = false;
            throw new Error('a bug in the devices supervisor');
          },
          reportFailure: (_, p: { id: string; what: string }) => {
            state.failures.push({ id: p.id, what: p.what });
          },
        },
      }),
      watches: watchesMachine.provide({
        actors: {
          paneWatch: paneWatchMachine.provide({
            actors: {
              capturePane: fromPromise(async () => ({ lines: ['› ', 'screen'], width: 80 })),
              sealFrame: fromPromise<Envelope, SealFrameInput>(async ({ input }) => ({ body: input.body }) as never),
            },
            actions: { log: noop },
          }),
        },
        actions: {
          log: () => {
            if (!state.breakWatches) return;
            state.breakWatches = false;
            throw new Error('a bug in the live panes');
          },
          reportFailure: (_, p: { id: string; what: string }) => {
            state.failures.push({ id: p.id, what: p.what });
          },
        },
      }),
    }),
    actions: {
      log: noop,
      persistLedger: noop,
      reportFailure: (_, p: { id: string; what: string }) => {
        state.failures.push({ id: p.id, what: p.what });
      },
      phoneRequest: (_, p: { session: string; request: PhoneRequest; live: boolean }) => {
        if (p.request.kind === 'past') state.past.push({ session: p.session, action: p.request.action, live: p.live });
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
      ledger: emptyLedger(),
      replayWindowMs: 120_000,
      random: () => 0.5,
      now: () => clock.now(),
      pins: opts.pins,
      pinsUnreadable: opts.pinsUnreadable,
      resumeWatches: opts.resumeWatches,
    },
  });
  const frame = (f: RelayFrame) =>
    state.sockets.at(-1)!.sendBack({ type: 'SOCKET.FRAME', frame: f, receivedAt: 1_000 } as RelayLinkEvent);
  const sent = (): ClientFrame[] =>
    state.sockets.flatMap((s) =>
      s.sent.filter((c) => c.type === 'SEND').map((c) => (c as { frame: ClientFrame }).frame),
    );
  const push = (p: Partial<WirePush> & { id: number }) =>
    frame({
      type: 'push.new',
      push: {
        type: 'agent.command',
        agentSessionName: 'svc-proj',
        body: '',
        targetComputer: 'c_me',
        createdAt: 0,
        ageMs: 10,
        replay: false,
        ...p,
      },
    });
  const sealed = (id: number, from: string, body: unknown, opens = true, session = 'svc-proj') =>
    push({ id, agentSessionName: session, sealed: envelope(from, body, opens) });
  const result = (id: number) => sent().find((f) => f.type === 'push.result' && f.id === id);
  actor.start();
  const connect = async () => {
    await flush();
    state.sockets.at(-1)!.sendBack({ type: 'SOCKET.OPEN' });
    frame({ type: 'subscribed', role: 'listener', computer: 'c_me', replayed: 0, expired: 0, replayWindowMs: 120_000 });
    await flush();
  };
  return { actor, clock, state, frame, sent, push, sealed, result, connect };
}

const command = (text: string, seq: number, session = 'svc-proj') => ({ text, seq, sentAt: 0, session });

describe('sealed pushes in the listener', () => {
  it('opens a sealed push through device.<id>, types its text, and pins the device', async () => {
    const h = harness();
    await h.connect();
    h.sealed(1, 'd_phone', command('run the tests', 1));
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['run the tests']);
    expect(h.result(1)).toMatchObject({ state: 'injected' });
    expect(h.state.file.devices.d_phone).toMatchObject({ publicKey: KEY });
    expect(deviceActor(h, 'device.d_phone')).toBeDefined();
  });

  it('accepts plaintext until a device is pinned, then refuses it with e2ee_required', async () => {
    const h = harness();
    await h.connect();
    h.push({ id: 1, body: 'plain before' });
    await flush();
    h.sealed(2, 'd_phone', command('sealed', 1));
    await flush();
    h.push({ id: 3, body: 'plain after' });
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['plain before', 'sealed']);
    expect(h.result(3)).toMatchObject({ state: 'refused', code: 'e2ee_required' });
  });

  it('refuses plaintext when devices.json is pinned at start, or cannot be read', async () => {
    const pins: PinsFile = {
      version: 1,
      devices: {
        d_phone: { deviceId: 'd_phone', publicKey: KEY, fingerprint: 'k', pinnedAt: 1, verified: true, lastSeq: {} },
      },
    };
    for (const h of [harness({ pins }), harness({ pinsUnreadable: true })]) {
      await h.connect();
      h.push({ id: 1, body: 'plain' });
      await flush();
      expect(h.result(1)).toMatchObject({ code: 'e2ee_required' });
      expect(h.state.typed).toEqual([]);
    }
  });

  it.each([
    ['does not open', 1, false, 'svc-proj', 'bad_seal'],
    ['is sealed for another session', 1, true, 'svc-other', 'bad_seal'],
  ])('refuses a push that %s, typing nothing', async (_, seq, opens, inside, code) => {
    const h = harness();
    await h.connect();
    h.sealed(1, 'd_phone', command('x', seq, inside), opens);
    await flush();
    expect(h.result(1)).toMatchObject({ state: 'refused', code });
    expect(h.state.typed).toEqual([]);
  });

  it('refuses a replayed stamp and an envelope from a malformed sender id', async () => {
    const h = harness();
    await h.connect();
    h.sealed(1, 'd_phone', command('once', 1));
    await flush();
    h.sealed(2, 'd_phone', command('once again', 1));
    h.sealed(3, 'bad/id', command('x', 2));
    await flush();
    expect(h.result(2)).toMatchObject({ code: 'replayed' });
    expect(h.result(3)).toMatchObject({ code: 'bad_seal' });
    expect(h.state.typed.map((t) => t.text)).toEqual(['once']);
  });

  it('PINS.LOADED without the device (svc devices forget) lets plaintext through again', async () => {
    const h = harness();
    await h.connect();
    h.sealed(1, 'd_phone', command('pin', 1));
    await flush();
    h.actor.send({ type: 'PINS.LOADED', pins: { version: 1, devices: {} } });
    h.push({ id: 2, body: 'plain again' });
    await flush();
    expect(h.result(2)).toMatchObject({ state: 'injected' });
  });
});

describe('live panes and key input in the listener', () => {
  const req = { deviceId: 'd_phone', connection: 'conn1' };

  it('starts a watch on a sealed pane.watch, forwards its sealed frames, renews and stops it', async () => {
    const h = harness();
    await h.connect();
    const watchEnvelope = (seq: number) => envelope('d_phone', { session: 'svc-proj', seq, leaseMs: 30_000 });
    h.frame({ type: 'pane.watch', session: 'svc-proj', ...req, envelope: watchEnvelope(1) });
    await flush();
    expect(h.sent().filter((f) => f.type === 'pane.status')).toEqual([
      { type: 'pane.status', session: 'svc-proj', deviceId: 'd_phone', connection: 'conn1', state: 'streaming' },
    ]);
    const frames = h.sent().filter((f) => f.type === 'pane.frame');
    expect(frames[0]).toMatchObject({ session: 'svc-proj', deviceId: 'd_phone', frameSeq: 0 });
    expect(watchActor(h, 'watch.d_phone/svc-proj')).toBeDefined();
    // A renewal does not start a second stream.
    h.frame({ type: 'pane.watch', session: 'svc-proj', ...req, envelope: watchEnvelope(2) });
    await flush();
    expect(h.sent().filter((f) => f.type === 'pane.status')).toHaveLength(1);
    h.frame({ type: 'pane.stop', session: 'svc-proj', ...req });
    await flush();
    expect(
      h
        .sent()
        .filter((f) => f.type === 'pane.status')
        .at(-1),
    ).toMatchObject({ state: 'stopped', code: 'requested' });
    expect(watchActor(h, 'watch.d_phone/svc-proj')).toBeUndefined();
  });

  it('refuses a keyless app (e2ee_required) and an envelope from another device than the asker (bad_seal)', async () => {
    const h = harness();
    await h.connect();
    const body = { session: 'svc-proj', seq: 1, leaseMs: 30_000 };
    h.frame({
      type: 'pane.watch',
      session: 'svc-proj',
      deviceId: null,
      connection: 'c0',
      envelope: envelope('d_phone', body),
    });
    h.frame({ type: 'pane.watch', session: 'svc-proj', ...req, envelope: envelope('d_other', body) });
    await flush();
    expect(h.sent().filter((f) => f.type === 'pane.status')).toEqual([
      {
        type: 'pane.status',
        session: 'svc-proj',
        deviceId: null,
        connection: 'c0',
        state: 'refused',
        code: 'e2ee_required',
      },
      {
        type: 'pane.status',
        session: 'svc-proj',
        deviceId: 'd_phone',
        connection: 'conn1',
        state: 'refused',
        code: 'bad_seal',
      },
    ]);
  });

  it('resumes, once connected, the live panes the listener before it streamed, for devices still pinned', async () => {
    const pin = { deviceId: 'd_phone', publicKey: 'K', fingerprint: 'f', pinnedAt: 1, verified: false, lastSeq: {} };
    const lease = (deviceId: string) => ({
      session: 'svc-proj',
      deviceId,
      connection: 'conn1',
      paneId: '%8',
      leaseMs: 20_000,
    });
    const h = harness({
      pins: { version: 1, devices: { d_phone: pin } },
      resumeWatches: [lease('d_phone'), lease('d_gone')],
    });
    await flush();
    expect(watchActor(h, 'watch.d_phone/svc-proj')).toBeUndefined();
    await h.connect();
    // No pane.watch came: the stream starts from the lease the listener kept, for the device still pinned only.
    expect(h.sent().filter((f) => f.type === 'pane.status')).toEqual([
      { type: 'pane.status', session: 'svc-proj', deviceId: 'd_phone', connection: 'conn1', state: 'streaming' },
    ]);
    expect(h.sent().filter((f) => f.type === 'pane.frame')[0]).toMatchObject({ deviceId: 'd_phone', frameSeq: 0 });
    expect(watchActor(h, 'watch.d_gone/svc-proj')).toBeUndefined();
  });

  it('stops a device’s watch when devices.json no longer has it', async () => {
    const h = harness();
    await h.connect();
    h.frame({
      type: 'pane.watch',
      session: 'svc-proj',
      ...req,
      envelope: envelope('d_phone', { session: 'svc-proj', seq: 1, leaseMs: 30_000 }),
    });
    await flush();
    h.actor.send({ type: 'PINS.LOADED', pins: { version: 1, devices: {} } });
    await flush();
    expect(watchActor(h, 'watch.d_phone/svc-proj')).toBeUndefined();
  });

  it('types sealed keys through the session (text, then keys) and refuses a subagent and unknown keys', async () => {
    const h = harness();
    await h.connect();
    const keys = (seq: number, body: object, session = 'svc-proj') =>
      h.frame({ type: 'pane.keys', session, ...req, envelope: envelope('d_phone', { session, seq, ...body }) });
    keys(1, { text: 'abc', keys: ['Enter'] });
    keys(2, { keys: ['C-c'] }, 'svc-proj.1');
    keys(3, { keys: ['F13'] });
    keys(3, { keys: ['Up'] });
    await flush();
    expect(h.state.keyed).toEqual([{ session: 'svc-proj', paneId: '%8', keys: ['Enter'], text: 'abc' }]);
    const results = h.sent().filter((f) => f.type === 'keys.result');
    const to = { deviceId: 'd_phone', connection: 'conn1' };
    expect(results).toHaveLength(4);
    expect(results).toEqual(
      expect.arrayContaining([
        { type: 'keys.result', session: 'svc-proj.1', ...to, seq: 2, state: 'refused', code: 'subagent_view_only' },
        { type: 'keys.result', session: 'svc-proj', ...to, seq: 3, state: 'refused', code: 'bad_key_name' },
        { type: 'keys.result', session: 'svc-proj', ...to, seq: null, state: 'refused', code: 'replayed' },
        { type: 'keys.result', session: 'svc-proj', ...to, seq: 1, state: 'typed' },
      ]),
    );
  });
});

describe('approval prompts in the listener (spec 4.11.2, 7 prompt_changed)', () => {
  const screen = (n: number) => readFileSync(`test/fixtures/screens/A1/awaiting_approval-${n}.txt`, 'utf8');
  const claude = session('svc-cc', { meta: { kind: 'agent', agent: 'A1', project: 'proj' } });
  const pane = claude.panes[0]!.id;
  const shown = readApproval('A1', { text: screen(1) })!;
  const moved = readApproval('A1', { text: screen(4) })!;
  const req = { deviceId: 'd_phone', connection: 'conn1' };
  const setup = async () => {
    const h = harness({ sessions: [claude], screens: { [pane]: screen(1) } });
    await h.connect();
    const keys = (seq: number, body: object) =>
      h.frame({
        type: 'pane.keys',
        session: 'svc-cc',
        ...req,
        envelope: envelope('d_phone', { session: 'svc-cc', seq, ...body }),
      });
    const results = () => h.sent().filter((f) => f.type === 'keys.result');
    const region = () => {
      const child = childOf(h, 'sessions', 'session.svc-cc');
      return (child!.getSnapshot() as { value: { approval: string } }).value.approval;
    };
    return { h, keys, results, region };
  };

  it('types the keys of the chosen answer for the prompt on screen, and only for it', async () => {
    const { h, keys, results, region } = await setup();
    expect(region()).toBe('shown');
    keys(1, { answer: { fingerprint: shown.fingerprint, choice: 0 } });
    await flush();
    // typed after one more look at the prompt (actors/seal/e2ee.ts)
    const confirm = { agent: 'A1', fingerprint: shown.fingerprint };
    expect(h.state.keyed).toEqual([{ session: 'svc-cc', paneId: pane, keys: ['1'], text: '', confirm }]);
    expect(results()).toMatchObject([{ seq: 1, state: 'typed' }]);
    expect(region()).toBe('answered');
  });

  it('refuses an answer once the highlight moved, or the prompt went, and types nothing', async () => {
    const { h, keys, results, region } = await setup();
    h.state.screens[pane] = screen(4); // the highlight moved at the keyboard
    keys(1, { answer: { fingerprint: shown.fingerprint, choice: 0 } });
    await flush();
    expect(region()).toBe('changed');
    h.state.screens[pane] = ''; // answered at the keyboard: gone
    keys(2, { answer: { fingerprint: moved.fingerprint, choice: 0 } });
    await flush();
    expect(h.state.keyed).toEqual([]);
    expect(results()).toMatchObject([
      { seq: 1, state: 'refused', code: 'prompt_changed' },
      { seq: 2, state: 'refused', code: 'prompt_changed' },
    ]);
    expect(region()).toBe('none');
  });

  it('refuses keys without the fingerprint of the prompt on screen, and types them with it', async () => {
    const { h, keys, results } = await setup();
    keys(1, { keys: ['Enter'] });
    keys(2, { keys: ['Down'], fingerprint: moved.fingerprint });
    keys(3, { keys: ['Down'], fingerprint: shown.fingerprint });
    await flush();
    const confirm = { agent: 'A1', fingerprint: shown.fingerprint };
    expect(h.state.keyed).toEqual([{ session: 'svc-cc', paneId: pane, keys: ['Down'], text: '', confirm }]);
    expect(results()).toMatchObject([
      { seq: 1, state: 'refused', code: 'prompt_changed' },
      { seq: 2, state: 'refused', code: 'prompt_changed' },
      { seq: 3, state: 'typed' },
    ]);
  });

  it('seals a card per prompt and reports it with the session until the prompt goes', async () => {
    const { h } = await setup();
    expect(h.state.cards).toMatchObject([
      { session: 'svc-cc', prompt: { fingerprint: shown.fingerprint, tool: 'Bash command' } },
    ]);
    const card = { sealed: 'card-1' };
    h.actor.send({ type: 'APPROVAL.SEALED', session: 'svc-cc', fingerprint: shown.fingerprint, envelope: card });
    // a card for a prompt no longer on screen is dropped
    h.actor.send({
      type: 'APPROVAL.SEALED',
      session: 'svc-cc',
      fingerprint: moved.fingerprint,
      envelope: { sealed: 'x' },
    });
    await flush();
    const reports = () => h.sent().filter((f) => f.type === 'listener.sessions');
    expect(reports().at(-1)).toMatchObject({ sessions: [{ name: 'svc-cc', approval: card }] });
    // the same prompt on the next tick is not sealed again; once it is gone, the card goes too
    h.clock.increment(5_000);
    await flush();
    expect(h.state.cards).toHaveLength(1);
    h.state.screens[pane] = screen(4);
    h.clock.increment(5_000);
    await flush();
    expect(h.state.cards.map((c) => c.prompt.fingerprint)).toEqual([shown.fingerprint, moved.fingerprint]);
    h.state.screens[pane] = '';
    h.clock.increment(5_000);
    await flush();
    h.clock.increment(5_000);
    await flush();
    const last = reports().at(-1) as { sessions: SessionRecord[] };
    expect(last.sessions[0]!.approval).toBeUndefined();
  });
});

describe('session control from the phone (core/sessions/control.ts)', () => {
  const req = { deviceId: 'd_phone', connection: 'conn1' };
  const claude = session('svc-cc', { meta: { kind: 'agent', agent: 'A1', project: 'proj' } });
  const sub = session('svc-cc.1', { parent: 'svc-cc', meta: { kind: 'agent', agent: 'A1' } });
  const setup = async (screens: Record<string, string> = {}) => {
    const h = harness({ sessions: [claude, sub], screens });
    await h.connect();
    const control = (seq: number, name: string, action: string) =>
      h.frame({
        type: 'pane.keys',
        session: name,
        ...req,
        envelope: envelope('d_phone', { session: name, seq, control: action }),
      });
    const results = () => h.sent().filter((f) => f.type === 'keys.result');
    return { h, control, results };
  };

  it('ends a session with the agent’s exit command, and kills one only when asked to', async () => {
    const { h, control, results } = await setup();
    control(1, 'svc-cc', 'end');
    control(2, 'svc-cc', 'kill');
    await flush();
    const pane = claude.panes[0]!.id;
    expect(h.state.keyed).toEqual([
      // typed as an exit command: the text, then Enter once it is drawn (actors/agents/inject.ts typeExitCommand)
      { session: 'svc-cc', paneId: pane, keys: ['Enter'], text: '/exit', exit: true },
      { session: 'svc-cc', paneId: pane, keys: [], text: '', kill: true },
    ]);
    expect(results()).toMatchObject([
      { seq: 1, state: 'typed' },
      { seq: 2, state: 'typed' },
    ]);
  });

  it('ends the agent in its own pane when the person split the window and a shell pane is active', async () => {
    const split = session('svc-split', {
      meta: { kind: 'agent', agent: 'A1', project: 'proj' },
      panes: [
        { id: '%7', index: '0.0', command: 'claude', path: '/w/p', active: false },
        { id: '%8', index: '0.1', command: 'bash', path: '/w/p', active: true },
      ],
    });
    const h = harness({ sessions: [split] });
    await h.connect();
    h.frame({
      type: 'pane.keys',
      session: 'svc-split',
      ...req,
      envelope: envelope('d_phone', { session: 'svc-split', seq: 1, control: 'end' }),
    });
    await flush();
    expect(h.state.keyed).toEqual([{ session: 'svc-split', paneId: '%7', keys: ['Enter'], text: '/exit', exit: true }]);
  });

  it('refuses to end while an approval prompt is up (the exit command would answer it)', async () => {
    const text = readFileSync('test/fixtures/screens/A1/awaiting_approval-1.txt', 'utf8');
    const { h, control, results } = await setup({ [claude.panes[0]!.id]: text });
    control(1, 'svc-cc', 'end');
    await flush();
    expect(h.state.keyed).toEqual([]);
    expect(results()).toMatchObject([{ seq: 1, state: 'refused', code: 'approval_pending' }]);
  });

  it('refuses every action on a subagent: subagent_view_only', async () => {
    const { h, control, results } = await setup();
    control(1, 'svc-cc.1', 'end');
    control(2, 'svc-cc.1', 'kill');
    await flush();
    expect(h.state.keyed).toEqual([]);
    expect(results()).toMatchObject([
      { seq: 1, state: 'refused', code: 'subagent_view_only' },
      { seq: 2, state: 'refused', code: 'subagent_view_only' },
    ]);
  });

  it('hands resume and forget to the past-sessions side after a fresh reading, saying whether it runs', async () => {
    const { h, control, results } = await setup();
    control(1, 'svc-old', 'resume');
    control(2, 'svc-cc', 'forget');
    control(3, 'svc-old', 'end');
    await flush();
    expect(h.state.past).toEqual([
      { session: 'svc-old', action: 'resume', live: false },
      { session: 'svc-cc', action: 'forget', live: true },
    ]);
    expect(results()).toMatchObject([{ seq: 3, state: 'refused', code: 'session_not_found' }]);
  });

  it('reports past sessions after the live ones', async () => {
    const { h } = await setup();
    const old = { ...session('svc-old'), panes: [], ended: 5, resumable: true };
    h.actor.send({ type: 'PAST.CHANGED', past: [old] });
    await flush();
    const last = h
      .sent()
      .filter((f) => f.type === 'listener.sessions')
      .at(-1) as { sessions: SessionRecord[] };
    expect(last.sessions.map((r) => [r.name, r.ended])).toEqual([
      ['svc-cc', undefined],
      ['svc-cc.1', undefined],
      ['svc-old', 5],
    ]);
  });
});

describe('supervision of devices and live panes (core/supervision.ts)', () => {
  const req = { deviceId: 'd_phone', connection: 'conn1' };
  const watch = (h: ReturnType<typeof harness>, seq: number) =>
    h.frame({
      type: 'pane.watch',
      session: 'svc-proj',
      ...req,
      envelope: envelope('d_phone', { session: 'svc-proj', seq, leaseMs: 30_000 }),
    });
  const statuses = (h: ReturnType<typeof harness>) => h.sent().filter((f) => f.type === 'pane.status');

  it('a device actor that fails refuses what it held, and is rebuilt from its pin at its next contact', async () => {
    const h = harness({ faults: 'action:device.d_phone' });
    await h.connect();
    h.sealed(1, 'd_phone', command('first', 1));
    await flush();
    expect(h.result(1)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    expect(h.actor.getSnapshot().status).toBe('active');
    expect(deviceActor(h, 'device.d_phone')).toBeUndefined();
    expect(h.state.failures).toEqual([
      { id: 'device.d_phone', what: 'rebuilt from its pin at its next contact; what it held is refused' },
    ]);
    h.sealed(2, 'd_phone', command('second', 2));
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['second']);
    expect(h.result(2)).toMatchObject({ state: 'injected' });
  });

  it('a device actor that keeps failing is given up: its contacts are refused, other devices are served', async () => {
    const h = harness({ faults: 'action:device.d_phone!' });
    await h.connect();
    for (let seq = 1; seq <= 5; seq++) {
      h.sealed(seq, 'd_phone', command(`try ${seq}`, seq));
      await flush();
    }
    expect(deviceFailures(h, 'device.d_phone')).toMatchObject({ givenUp: true });
    h.sealed(6, 'd_phone', command('try 6', 6));
    h.sealed(7, 'd_other', command('from another phone', 1));
    await flush();
    expect(h.result(6)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    expect(deviceActor(h, 'device.d_phone')).toBeUndefined();
    expect(h.state.typed.map((t) => t.text)).toEqual(['from another phone']);
  });

  it("the devices' supervisor that fails refuses what it was handed, and comes back with the pinned devices", async () => {
    const pin = { deviceId: 'd_home', publicKey: 'K', fingerprint: 'f', pinnedAt: 1, verified: true, lastSeq: {} };
    // its fault fires at the first thing it logs: making an actor for a device it has not seen
    const h = harness({ faults: 'action:devices', pins: { version: 1, devices: { d_home: pin } } });
    await h.connect();
    const before = deviceActor(h, 'device.d_home');
    expect(before).toBeDefined();
    h.sealed(1, 'd_phone', command('first', 1));
    await flush();
    expect(h.result(1)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    expect(h.actor.getSnapshot().status).toBe('active');
    expect(h.state.failures).toEqual([{ id: 'devices', what: 'restarted at once' }]);
    // the pinned device's actor of before does not run on beside the new one
    expect(before?.getSnapshot().status).toBe('stopped');
    expect(deviceActor(h, 'device.d_home')).toBeDefined();
    expect(deviceActor(h, 'device.d_home')).not.toBe(before);
    h.sealed(2, 'd_phone', command('second', 2));
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['second']);
    expect(h.result(2)).toMatchObject({ state: 'injected' });
  });

  it("a device given up stays given up when the devices' supervisor is restarted", async () => {
    const pin = { deviceId: 'd_phone', publicKey: 'K', fingerprint: 'f', pinnedAt: 1, verified: true, lastSeq: {} };
    const h = harness({ faults: 'action:device.d_phone!', pins: { version: 1, devices: { d_phone: pin } } });
    await h.connect();
    for (let seq = 1; seq <= 5; seq++) {
      h.sealed(seq, 'd_phone', command(`try ${seq}`, seq));
      await flush();
    }
    expect(deviceFailures(h, 'device.d_phone')).toMatchObject({ givenUp: true });
    // a new device's actor is made, and the supervisor throws as it logs that
    h.state.breakDevices = true;
    h.sealed(6, 'd_other', command('from another phone', 1));
    await flush();
    expect(h.state.failures.at(-1)).toEqual({ id: 'devices', what: 'restarted at once' });
    expect(deviceActor(h, 'device.d_phone')).toBeUndefined();
    expect(deviceFailures(h, 'device.d_phone')).toMatchObject({ givenUp: true });
    h.sealed(7, 'd_phone', command('try 7', 7));
    await flush();
    expect(h.result(7)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    expect(h.state.typed).toEqual([]);
  });

  it('devices whose supervisor keeps failing are left off: sealed contacts are refused, svc verify says so', async () => {
    const h = harness({ faults: 'action:devices!' });
    await h.connect();
    for (let seq = 1; seq <= 5; seq++) {
      h.sealed(seq, 'd_phone', command(`try ${seq}`, seq));
      await flush();
      expect(h.result(seq)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    }
    expect(h.actor.getSnapshot().context.supervision.devices).toMatchObject({ givenUp: true });
    expect(h.actor.system.get('devices')).toBeUndefined();
    h.sealed(6, 'd_phone', command('try 6', 6));
    watch(h, 7);
    await flush();
    expect(h.result(6)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    expect(statuses(h).at(-1)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    expect(h.state.typed).toEqual([]);
    expect(h.actor.getSnapshot().status).toBe('active');
  });

  it('a live pane whose actor fails streams again after its backoff, without being asked again', async () => {
    const h = harness({ faults: 'action:watch.d_phone/svc-proj' });
    await h.connect();
    watch(h, 1);
    await flush();
    expect(watchActor(h, 'watch.d_phone/svc-proj')).toBeUndefined();
    expect(h.state.failures.map((f) => f.what)).toEqual(['started again in 1 s']);
    h.clock.increment(1_000);
    await flush();
    expect(watchActor(h, 'watch.d_phone/svc-proj')).toBeDefined();
    expect(h.sent().filter((f) => f.type === 'pane.frame')[0]).toMatchObject({ deviceId: 'd_phone', frameSeq: 0 });
    expect(statuses(h).map((s) => s.state)).toEqual(['streaming']);
  });

  it('a live pane the phone stops while its actor waits to start again stays stopped', async () => {
    const h = harness({ faults: 'action:watch.d_phone/svc-proj' });
    await h.connect();
    watch(h, 1);
    await flush();
    h.frame({ type: 'pane.stop', session: 'svc-proj', ...req });
    await flush();
    expect(statuses(h).at(-1)).toMatchObject({ state: 'stopped', code: 'requested' });
    h.clock.increment(1_000);
    await flush();
    expect(watchActor(h, 'watch.d_phone/svc-proj')).toBeUndefined();
    expect(h.sent().filter((f) => f.type === 'pane.frame')).toEqual([]);
  });

  it("the live panes' supervisor that fails is restarted, its panes stopped; the phone's next renewal streams again", async () => {
    const h = harness();
    await h.connect();
    watch(h, 1);
    await flush();
    const old = watchActor(h, 'watch.d_phone/svc-proj');
    expect(old).toBeDefined();
    // a refusal it logs throws: the supervisor fails with a live pane streaming
    h.state.breakWatches = true;
    h.frame({
      type: 'pane.watch',
      session: 'svc-none',
      ...req,
      envelope: envelope('d_phone', { session: 'svc-none', seq: 2, leaseMs: 30_000 }),
    });
    await flush();
    // the old pane's actor does not run on beside the new supervisor (xstate leaves a failed actor's children be)
    expect(old?.getSnapshot().status).toBe('stopped');
    expect(h.state.failures).toEqual([{ id: 'watches', what: 'restarted at once' }]);
    expect(watchActor(h, 'watch.d_phone/svc-proj')).toBeUndefined();
    const frames = () => h.sent().filter((f) => f.type === 'pane.frame').length;
    const before = frames();
    h.clock.increment(5_000);
    await flush();
    expect(frames()).toBe(before);
    watch(h, 3);
    await flush();
    expect(watchActor(h, 'watch.d_phone/svc-proj')).toBeDefined();
    expect(statuses(h).map((s) => s.state)).toEqual(['streaming', 'streaming']);
    h.clock.increment(5_000);
    await flush();
    expect(frames()).toBeGreaterThan(before);
  });

  it("live panes whose supervisor keeps failing are left off: a phone's pane.watch is refused, typing goes on", async () => {
    const h = harness({ faults: 'action:watches!' });
    await h.connect();
    for (let seq = 1; seq <= 5; seq++) {
      watch(h, seq);
      await flush();
    }
    expect(h.state.failures.at(-1)).toEqual({
      id: 'watches',
      what: 'failed 5 times in ten minutes: left off until the listener restarts',
    });
    expect(h.actor.getSnapshot().value).toMatchObject({ running: { watches: 'off' } });
    watch(h, 6);
    await flush();
    expect(statuses(h).at(-1)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    h.sealed(1, 'd_phone', command('still typed', 7));
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['still typed']);
  });

  it("a live pane spawned in the step its supervisor failed in does not block the pane's next stream", async () => {
    // the supervisor's first log line throws: the watch it spawned in that step was made, never started
    const h = harness({ faults: 'action:watches' });
    await h.connect();
    watch(h, 1);
    await flush();
    expect(h.state.failures).toEqual([{ id: 'watches', what: 'restarted at once' }]);
    watch(h, 2);
    await flush();
    expect(watchActor(h, 'watch.d_phone/svc-proj')).toBeDefined();
    expect(h.state.failures).toHaveLength(1);
    expect(statuses(h).at(-1)).toMatchObject({ state: 'streaming' });
  });

  it('a live pane whose actor keeps failing is given up, and the phone is told it stopped (failed)', async () => {
    const h = harness({ faults: 'action:watch.d_phone/svc-proj!' });
    await h.connect();
    watch(h, 1);
    await flush();
    for (const ms of [1_000, 2_000, 4_000, 8_000]) {
      h.clock.increment(ms);
      await flush();
    }
    expect(statuses(h).at(-1)).toMatchObject({ state: 'stopped', code: 'failed' });
    const watches = h.actor.system.get('watches')?.getSnapshot().context as WatchesContext;
    expect(watches.failures['watch.d_phone/svc-proj']).toMatchObject({ givenUp: true });
    expect(h.actor.getSnapshot().status).toBe('active');
    // the screen is still typed into: the session's actor is not touched
    h.sealed(1, 'd_phone', command('still here', 2));
    await flush();
    expect(h.state.typed.map((t) => t.text)).toEqual(['still here']);
  });
});
