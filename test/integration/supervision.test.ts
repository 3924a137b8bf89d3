/**
 * Supervision on the real listener (docs/architecture.md, "Supervision"): children made to fail by the listener's
 * own test switch (SVC_FAULT, actors/debug/faults.ts) do not take it down. The real relay on a loopback port, the real
 * `svc listener` process, real tmux on a private socket, the fake agent; `svc debug state` and `svc verify` read the
 * listener's control socket as a person would.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { svcPaths } from '../../core/daemon/paths.js';
import { runSvc, type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { finalPush, sendPush, startTestRelay, type TestRelay, waitFor } from '../helpers/relay.js';
import { fakeAgentCommand } from '../helpers/tmux.js';

let relay: TestRelay;
let computer: TestComputer | null = null;
let listener: SpawnedSvc | null = null;

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});
afterEach(async () => {
  await listener?.stop();
  listener = null;
  await computer?.tmux.cleanup();
  computer?.home.cleanup();
  computer = null;
});

// Every test here logs a computer of its own into one relay account: a push names its computer, since a session
// name alone goes to whichever computer the relay last saw it on (an earlier test's, stopped).

/** A computer with `svc-proj` and `svc-boom` running the fake agent, and its listener started with `fault`. */
async function faultyListener(fault: string, name: string) {
  computer = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name });
  const c = computer;
  await c.tmux.newSession('svc-boom', fakeAgentCommand('claude'));
  await waitFor(async () => (await c.tmux.capture('svc-boom')).includes('›'), { what: 'svc-boom to draw its prompt' });
  const env = { ...c.env, SVC_FAULT: fault };
  listener = spawnSvc(['listener'], env);
  await listener.waitForLine(/connected to ws:/);
  return { c, env, proc: listener };
}

type State = { actors: { id: string }[]; failing: { id: string; failures: number; givenUp: boolean }[] };
const debugState = async (env: NodeJS.ProcessEnv): Promise<State> => {
  const res = await runSvc(['debug', 'state', '--json'], env);
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout) as State;
};
const typedInto = async (c: TestComputer, session: string, text: string) =>
  waitFor(async () => (await c.tmux.capture(session)).includes(`you said: ${text}`), {
    timeoutMs: 10_000,
    what: `"${text}" submitted in ${session}`,
  });

describe('a listener whose children fail (SVC_FAULT)', () => {
  it('a session actor that throws: its push is refused, not typed; the other session is typed into; it is rebuilt and typed into', async () => {
    const { c, env, proc } = await faultyListener('action:session.svc-boom', 'fault-box');
    expect(proc.output()).toMatch(/SVC_FAULT: injecting failures \(action:session\.svc-boom\)/);

    const first = await sendPush(relay, 'svc-boom', 'lost to a bug', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, first)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    // its id, the event it failed on and what becomes of it; the stack below
    await proc.waitForLine(/child session\.svc-boom failed handling PUSH: rebuilt from tmux/);
    expect(proc.output()).toMatch(/InjectedFault: SVC_FAULT: injected action failure in session\.svc-boom/);

    const other = await sendPush(relay, 'svc-proj', 'the other session', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, other)).toMatchObject({ state: 'injected' });
    await typedInto(c, 'svc-proj', 'the other session');

    // rebuilt from tmux at a reading after its backoff: `svc debug state` shows its actor again, and the failure
    await waitFor(async () => (await debugState(env)).actors.some((a) => a.id === 'session.svc-boom'), {
      timeoutMs: 15_000,
      what: 'session.svc-boom to be back',
    });
    expect((await debugState(env)).failing).toEqual([
      expect.objectContaining({ id: 'session.svc-boom', failures: 1, givenUp: false }),
    ]);
    const again = await sendPush(relay, 'svc-boom', 'after the restart', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, again)).toMatchObject({ state: 'injected' });
    await typedInto(c, 'svc-boom', 'after the restart');
    expect(await c.tmux.capture('svc-boom')).not.toContain('lost to a bug');
    const verify = await runSvc(['verify'], env);
    expect(verify.stdout).toMatch(/ok {4}child {5}session\.svc-boom failed 1 time\(s\) in 10 min, restarted/);
  }, 90_000);

  it('a session whose typing fails (its invoked promise rejects): that push is refused, the actor lives on and types the next', async () => {
    const { c, env, proc } = await faultyListener('promise:session.svc-boom', 'promise-box');
    expect(proc.output()).toMatch(/SVC_FAULT: injecting failures \(promise:session\.svc-boom\)/);

    const first = await sendPush(relay, 'svc-boom', 'lost to a failed inject', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, first)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    // the machine handles its own promise's failure: nothing for the supervisor to restart
    const other = await sendPush(relay, 'svc-proj', 'the other session', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, other)).toMatchObject({ state: 'injected' });
    await typedInto(c, 'svc-proj', 'the other session');
    const again = await sendPush(relay, 'svc-boom', 'typed by the same actor', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, again)).toMatchObject({ state: 'injected' });
    await typedInto(c, 'svc-boom', 'typed by the same actor');
    expect(await c.tmux.capture('svc-boom')).not.toContain('lost to a failed inject');
    expect((await debugState(env)).failing).toEqual([]);
    expect(proc.output()).not.toMatch(/child session\.svc-boom failed/);
  }, 90_000);

  it('a session actor that keeps failing is given up: svc verify fails on it, the listener serves the rest', async () => {
    const { c, env, proc } = await faultyListener('action:session.svc-boom!', 'given-up-box');
    const failures = async () => (await debugState(env)).failing.find((f) => f.id === 'session.svc-boom');
    for (let n = 1; n <= 5; n++) {
      // each push meets a rebuilt actor, which fails typing it
      await waitFor(async () => (await debugState(env)).actors.some((a) => a.id === 'session.svc-boom'), {
        timeoutMs: 20_000,
        what: `session.svc-boom to be rebuilt before failure ${n}`,
      });
      const id = await sendPush(relay, 'svc-boom', `try ${n}`, { targetComputer: computer!.hookId });
      expect(await finalPush(relay, id)).toMatchObject({ state: 'refused', code: 'inject_failed' });
      await waitFor(async () => ((await failures())?.failures ?? 0) >= n, { what: `failure ${n} to be recorded` });
    }
    expect(await failures()).toMatchObject({ failures: 5, givenUp: true });
    await proc.waitForLine(/child session\.svc-boom failed.*failed 5 times in ten minutes: not restarted/);

    const verify = await runSvc(['verify'], env);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toMatch(/FAIL {2}child {5}session\.svc-boom failed 5 time\(s\) in 10 min, not restarted/);
    const state = await runSvc(['debug', 'state'], env);
    expect(state.stdout).toMatch(/failed children:\nFAIL {2}child {5}session\.svc-boom/);

    const late = await sendPush(relay, 'svc-boom', 'never typed', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, late)).toMatchObject({ state: 'refused', code: 'inject_failed' });
    const fine = await sendPush(relay, 'svc-proj', 'still served', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, fine)).toMatchObject({ state: 'injected' });
    await typedInto(c, 'svc-proj', 'still served');
    expect(await c.tmux.capture('svc-boom')).not.toContain('you said:');
    expect(proc.child.exitCode).toBeNull();
  }, 150_000);

  it("the devices' supervisor failing: the sealed message it held is refused, not typed; restarted, it opens the next", async () => {
    // its fault fires at the first thing it logs: making an actor for a device it has not seen (svc agent send's)
    const { c, env, proc } = await faultyListener('action:devices', 'devices-box');
    await proc.waitForLine(/server persisted listener.sessions/);
    const lost = await runSvc(
      ['agent', 'send', '--computer', 'devices-box', '--session', 'svc-proj', 'lost with the devices'],
      env,
    );
    expect(lost.code).toBe(1);
    expect(lost.stderr).toMatch(/not typed into svc-proj: inject_failed/);
    expect(proc.output()).toMatch(/child devices failed.*restarted at once/);
    const sent = await runSvc(
      ['agent', 'send', '--computer', 'devices-box', '--session', 'svc-proj', 'after the restart'],
      env,
    );
    expect(sent.stdout).toBe('typed into svc-proj\n');
    await typedInto(c, 'svc-proj', 'after the restart');
    expect(await c.tmux.capture('svc-proj')).not.toContain('lost with the devices');
    expect((await debugState(env)).failing).toEqual([
      expect.objectContaining({ id: 'devices', failures: 1, givenUp: false }),
    ]);
    expect((await debugState(env)).actors.map((a) => a.id)).toContain('devices');
    const verify = await runSvc(['verify'], env);
    expect(verify.stdout).toMatch(/ok {4}child {5}devices failed 1 time\(s\) in 10 min, restarted/);
  }, 60_000);

  it("a device's opening of a sealed message failing (its invoked promise rejects): refused, not typed; the next opens", async () => {
    const { c, env, proc } = await faultyListener('promise:device.*', 'opening-box');
    await proc.waitForLine(/server persisted listener.sessions/);
    const send = (text: string) =>
      runSvc(['agent', 'send', '--computer', 'opening-box', '--session', 'svc-proj', text], env);
    const lost = await send('lost to a failed opening');
    expect(lost.code).toBe(1);
    // a failure to open is a bad seal to the sender (core/devices/devices.ts openFailure): never typed
    expect(lost.stderr).toMatch(/not typed into svc-proj: bad_seal/);
    const sent = await send('opened by the same device');
    expect(sent.stdout).toBe('typed into svc-proj\n');
    await typedInto(c, 'svc-proj', 'opened by the same device');
    expect(await c.tmux.capture('svc-proj')).not.toContain('lost to a failed opening');
    expect((await debugState(env)).failing).toEqual([]);
  }, 60_000);

  it('a tmux reading that fails (the inventory’s invoked promise rejects) is said, and the next reading serves', async () => {
    const { c, proc } = await faultyListener('promise:inventory', 'reading-box');
    await proc.waitForLine(/tmux inventory failed: InjectedFault: SVC_FAULT: injected promise failure in inventory/);
    const id = await sendPush(relay, 'svc-proj', 'after a failed reading', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, id)).toMatchObject({ state: 'injected' });
    await typedInto(c, 'svc-proj', 'after a failed reading');
  }, 60_000);

  it('the relay link failing at once is restarted; the devices.json watch failing for good is left off, and said', async () => {
    const { c, env, proc } = await faultyListener('callback:relay,callback:pinsWatch!', 'singleton-box');
    expect(proc.output()).toMatch(/child relay failed.*restarted at once/);
    expect(proc.output()).toMatch(/child pinsWatch failed.*failed 5 times in ten minutes: left off/);
    const id = await sendPush(relay, 'svc-proj', 'through the restarted link', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, id)).toMatchObject({ state: 'injected' });
    await typedInto(c, 'svc-proj', 'through the restarted link');
    const verify = await runSvc(['verify'], env);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toMatch(/FAIL {2}child {5}pinsWatch failed 5 time\(s\)/);
    expect(verify.stdout).toMatch(/ok {4}child {5}relay failed 1 time\(s\) in 10 min, restarted/);
  }, 60_000);
});

describe('a listener around things that break (issue 31, item 2)', () => {
  it('started over a corrupt asks.json, history.json and schedules file: it says so, keeps the files, and serves', async () => {
    computer = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'corrupt-box' });
    const c = computer;
    const dir = join(c.home.home, '.svc');
    const schedules = svcPaths(c.home.home).schedules;
    const broken = '{"this is": not json';
    for (const file of [join(dir, 'asks.json'), join(dir, 'history.json'), schedules]) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, broken, { mode: 0o600 });
    }
    listener = spawnSvc(['listener'], c.env);
    await listener.waitForLine(/connected to ws:/);
    const id = await sendPush(relay, 'svc-proj', 'past the broken files', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, id)).toMatchObject({ state: 'injected' });
    await typedInto(c, 'svc-proj', 'past the broken files');
    const out = listener.output();
    // svc's own state files are set aside, named, and what that means said
    expect(out).toMatch(/asks\.json does not read \(not JSON\): moved to .*asks\.json\.broken; asks a listener before/);
    expect(out).toMatch(/history\.json does not read \(not JSON\): moved to .*history\.json\.broken; each session's/);
    expect(readFileSync(join(dir, 'asks.json.broken'), 'utf8')).toBe(broken);
    expect(readFileSync(join(dir, 'history.json.broken'), 'utf8')).toBe(broken);
    // the schedules file is the person's: said, and kept as it was
    await listener.waitForLine(/schedules is not JSON; fix or remove it/);
    expect(readFileSync(schedules, 'utf8')).toBe(broken);
    expect(listener.child.exitCode).toBeNull();
  }, 60_000);

  it('the tmux server killed and started again: the listener keeps serving the new server', async () => {
    computer = await loggedInComputer({ url: relay.url, apiKey: relay.apiKey, name: 'tmux-box' });
    const c = computer;
    listener = spawnSvc(['listener'], c.env);
    await listener.waitForLine(/connected to ws:/);
    await c.tmux.run(['kill-server']).catch(() => {});
    const gone = await sendPush(relay, 'svc-proj', 'into no server', { targetComputer: computer!.hookId });
    // the listener's log goes with a failure: a reading that hangs on a dying server would show here
    const settled = await finalPush(relay, gone).catch((e: Error) => {
      throw new Error(`${e.message}; the listener's log:\n${listener?.output()}`);
    });
    expect(settled).toMatchObject({ state: 'refused', code: 'session_not_found' });
    await c.tmux.newSession('svc-proj', fakeAgentCommand('claude'));
    await waitFor(async () => (await c.tmux.capture('svc-proj')).includes('›'), { what: 'the new svc-proj prompt' });
    const id = await sendPush(relay, 'svc-proj', 'into the new server', { targetComputer: computer!.hookId });
    expect(await finalPush(relay, id)).toMatchObject({ state: 'injected' });
    await typedInto(c, 'svc-proj', 'into the new server');
    expect(listener.child.exitCode).toBeNull();
  }, 60_000);
});
