/**
 * Scheduled sessions through the real listener (spec 4.8): `svc schedule add` as a person types it, the compiled
 * `svc listener` with its wall clock moved to the schedule's time (`SVC_CLOCK_OFFSET_MS`), real tmux, the real relay
 * on loopback, and a fake Claude Code (idle as Claude Code reads idle) that logs every prompt it receives.
 * The run starts in its own session, its prompt is typed once, a listener restarted past the max-runtime rebuilds
 * the run from the file and ends it with the agent's exit command (never a kill), and a run the listener saw too
 * late is missed and told to the phone, sealed.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DateTime } from 'luxon';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runSvc, type SpawnedSvc, spawnSvc } from '../helpers/cli.js';
import { loggedInComputer, type TestComputer } from '../helpers/computer.js';
import { computerDevice, databaseHolds, registerTestDevice, type TestDevice } from '../helpers/devices.js';
import { finalPush, sendPush, startTestRelay, type TestRelay, TestSocket } from '../helpers/relay.js';
import { fakeAgentScript, waitFor } from '../helpers/tmux.js';

const ZONE = 'Europe/Berlin';
const PROMPT = 'run the nightly checks';

let relay: TestRelay;
let computer: TestComputer;
let env: NodeJS.ProcessEnv;
let project: string;
let agentLog: string;
let listener: SpawnedSvc | null = null;
let sockets: TestSocket[] = [];
let key: string;

beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

beforeEach(async () => {
  key = (await relay.createAccount()).apiKey;
  computer = await loggedInComputer({ url: relay.url, apiKey: key, name: 'box' });
  const home = computer.home.home;
  project = join(home, 'nightly');
  mkdirSync(project);
  agentLog = join(home, 'agent.log');
  // `claude` on PATH: the fake, drawing Claude Code's idle status line, logging what it is sent
  const claude = fakeAgentScript(home, 'claude', {
    FAKE_AGENT_PROMPT: '❯',
    FAKE_AGENT_STATUS: '? for shortcuts',
    FAKE_AGENT_LOG: agentLog,
  });
  env = { ...computer.env, PATH: `${dirname(claude)}:${process.env.PATH}`, TZ: ZONE };
});

afterEach(async () => {
  for (const s of sockets) await s.close();
  sockets = [];
  await listener?.stop();
  listener = null;
  await computer.tmux.cleanup();
  computer.home.cleanup();
});

/** The listener, its scheduler's wall clock set to `wall` (epoch ms). */
async function startListenerAt(wall: number) {
  listener = spawnSvc(['listener'], { ...env, SVC_CLOCK_OFFSET_MS: String(wall - Date.now()) });
  await listener.waitForLine(/connected to ws:/);
}

const schedules = async () => {
  const res = await runSvc(['schedule', '--json'], env);
  expect(res.stderr).toBe('');
  return JSON.parse(res.stdout).schedules as {
    id: string;
    session: string;
    running: boolean;
    last: { result: string } | null;
  }[];
};

/** What the fake agent was sent, in order. */
const submitted = () =>
  readFileSync(agentLog, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((e) => e.event === 'submit')
    .map((e) => e.text as string);

/**
 * `svc schedule add cc --at <due> … --json` in the project, as a person types it: the schedule's id and session, and
 * what it said on stderr.
 */
async function addSchedule(due: DateTime, ...more: string[]) {
  const add = await runSvc(['schedule', 'add', 'cc', '--at', due.toFormat('HH:mm'), ...more, '--json'], env, {
    cwd: project,
  });
  return { ...(JSON.parse(add.stdout) as { id: string; session: string }), stderr: add.stderr };
}

/** A schedule due in 4 minutes with the prompt, and the listener started 5 s past it with SVC_FAULT `<kind>:schedule.<id>`. */
async function dueWithFault(kind: 'action' | 'promise') {
  const due = DateTime.local({ zone: ZONE }).startOf('minute').plus({ minutes: 4 });
  const { id, session } = await addSchedule(due, '--prompt', PROMPT);
  listener = spawnSvc(['listener'], {
    ...env,
    SVC_CLOCK_OFFSET_MS: String(due.toMillis() + 5_000 - Date.now()),
    SVC_FAULT: `${kind}:schedule.${id}`,
  });
  await listener.waitForLine(/connected to ws:/);
  return { id, session };
}

const sessionExists = async (name: string) =>
  (await computer.tmux.run(['list-sessions', '-F', '#{session_name}']).catch(() => '')).split('\n').includes(name);

describe('svc schedule with the listener', () => {
  it('starts the run at its local time, types the prompt once, and ends it at max-runtime with /exit', async () => {
    const due = DateTime.local({ zone: ZONE }).startOf('minute').plus({ minutes: 4 });
    const { id, session, stderr } = await addSchedule(due, '--prompt', PROMPT, '--max-runtime', '5m');
    expect(stderr).toMatch(/no listener is running/);
    expect(session).toBe(`svc-nightly-sched-${id}`);

    await startListenerAt(due.toMillis() + 5_000);
    await waitFor(() => sessionExists(session), { timeoutMs: 20_000, what: 'the scheduled session' });
    await waitFor(() => submitted().includes(PROMPT), { timeoutMs: 30_000, what: 'the prompt typed' });
    expect((await schedules())[0]).toMatchObject({ id, running: true, last: { result: 'started' } });
    // the session is the agent's, labelled as scheduled, in the directory it was scheduled from
    const meta = await computer.tmux.run(['show-options', '-t', session, '-v', '@svc-label']);
    expect(meta.trim()).toBe('scheduled');

    // a listener restarted past the max-runtime: the run is rebuilt from the file and ended gently
    await listener!.stop();
    await startListenerAt(due.toMillis() + 5 * 60_000 + 10_000);
    await waitFor(async () => !(await sessionExists(session)), { timeoutMs: 30_000, what: 'the session to end' });
    await waitFor(async () => (await schedules())[0]?.last?.result === 'ended', {
      timeoutMs: 20_000,
      what: 'the last result',
    });
    expect(submitted()).toEqual([PROMPT, '/exit']);
    expect(listener!.output()).toMatch(new RegExp(`schedule ${id}: max-runtime reached, ending ${session}`));
    const list = await runSvc(['schedule'], env);
    expect(list.stdout).toMatch(/ended at its max-runtime/);
  }, 120_000);

  it('a run that cannot start (SVC_FAULT: its start promise rejects) is recorded as such, and said; nothing runs', async () => {
    const { id, session } = await dueWithFault('promise');
    await listener!.waitForLine(new RegExp(`schedule ${id}: SVC_FAULT: injected promise failure in schedule\\.${id}`));
    await waitFor(async () => (await schedules())[0]?.last?.result === 'start_failed', {
      timeoutMs: 20_000,
      what: 'the run recorded as not started',
    });
    expect(await sessionExists(session)).toBe(false);
    const list = await runSvc(['schedule'], env);
    expect(list.stdout).toMatch(/could not start/);
  }, 90_000);

  it('a schedule actor that fails writing down the run it started (SVC_FAULT: its action throws) is rebuilt, takes that session, types the prompt once; the listener serves on', async () => {
    const { id, session } = await dueWithFault('action');
    // its first action of its own is writing the started run: it throws, the session already made
    await listener!.waitForLine(
      new RegExp(`child schedule\\.${id} failed handling \\S+: rebuilt from the schedules file`),
    );
    expect(listener!.output()).toMatch(
      new RegExp(`InjectedFault: SVC_FAULT: injected action failure in schedule\\.${id}`),
    );
    await listener!.waitForLine(new RegExp(`schedule ${id}: ${session} runs with no run in the file`), 30_000);
    await waitFor(() => submitted().includes(PROMPT), { timeoutMs: 30_000, what: 'the prompt typed' });
    expect(submitted()).toEqual([PROMPT]);
    expect(await schedules()).toEqual([expect.objectContaining({ id, running: true })]);
    const sessions = (await computer.tmux.run(['list-sessions', '-F', '#{session_name}'])).split('\n');
    expect(sessions.filter((s) => s === session)).toHaveLength(1);
    // the listener serves on: a push to another session is typed
    const pushed = await sendPush({ url: relay.url, apiKey: key }, 'svc-proj', 'still served', {
      targetComputer: computer.hookId,
    });
    expect(await finalPush({ url: relay.url, apiKey: key }, pushed)).toMatchObject({ state: 'injected' });
    expect(listener!.child.exitCode).toBeNull();
  }, 90_000);

  it('an agent that does not end on its exit command gets SIGTERM a minute later; svc schedule says so', async () => {
    // the fake does not end on /exit (a hung or busy agent); SIGTERM ends it
    fakeAgentScript(computer.home.home, 'claude', {
      FAKE_AGENT_PROMPT: '❯',
      FAKE_AGENT_STATUS: '? for shortcuts',
      FAKE_AGENT_LOG: agentLog,
      FAKE_AGENT_IGNORE_EXIT: '1',
    });
    const due = DateTime.local({ zone: ZONE }).startOf('minute').plus({ minutes: 4 });
    const { id, session } = await addSchedule(due, '--max-runtime', '5m');
    await startListenerAt(due.toMillis() + 5_000);
    await waitFor(() => sessionExists(session), { timeoutMs: 20_000, what: 'the scheduled session' });
    // the run is in the schedules file
    await waitFor(async () => (await schedules())[0]?.running === true, { timeoutMs: 20_000, what: 'the run kept' });
    await listener!.stop();
    // past its max-runtime: the exit command, which the agent ignores
    await startListenerAt(due.toMillis() + 5 * 60_000 + 10_000);
    await waitFor(() => submitted().includes('/exit'), { timeoutMs: 30_000, what: '/exit typed' }).catch((err) => {
      throw new Error(`${err.message}\n${listener!.output()}`);
    });
    expect(await sessionExists(session)).toBe(true);
    await listener!.stop();
    // a minute on (the listener restarted, its wall clock ahead): SIGTERM to the pane's process, never a kill of tmux
    await startListenerAt(due.toMillis() + 6 * 60_000 + 20_000);
    await waitFor(async () => !(await sessionExists(session)), { timeoutMs: 30_000, what: 'the session to end' });
    await waitFor(async () => (await schedules())[0]?.last?.result === 'ended', { timeoutMs: 20_000, what: 'ended' });
    expect(submitted().filter((t) => t === '/exit')).toHaveLength(1);
    expect(listener!.output()).toMatch(
      new RegExp(`schedule ${id}: max-runtime reached, ending ${session} with SIGTERM`),
    );
    const list = await runSvc(['schedule'], env);
    expect(list.stdout).toMatch(/ended at its max-runtime \(SIGTERM to its process/);
  }, 120_000);

  it('a run the listener sees too late is missed, never started, and the phone is told, sealed', async () => {
    const app: TestDevice = await registerTestDevice({ url: relay.url, apiKey: key }, 'app', 'phone');
    const me = await computerDevice({ url: relay.url, apiKey: key }, computer.hookId);
    const due = DateTime.local({ zone: ZONE }).startOf('minute').plus({ minutes: 1 });
    const { id, session } = await addSchedule(due, '--prompt', PROMPT);
    const sock = await TestSocket.open(relay.wsUrl, key);
    sockets.push(sock);
    sock.send({ type: 'subscribe', role: 'app', deviceId: app.deviceId });
    await sock.next('subscribed');

    // the laptop slept through it: the listener's first look is three minutes after its time
    await startListenerAt(due.toMillis() + 3 * 60_000);
    const frame = await sock
      .next('notify.new', (f) => f.kind === 'schedule', 30_000)
      .catch((e: Error) => {
        // what the listener said is the first thing to read when it never came (a fresh-clone run on Node 24)
        throw new Error(`${e.message}\n--- listener ---\n${listener!.output().slice(-4000)}`);
      });
    const body = (await app.open('notify', frame.envelope, me.publicKey)) as { message: string; session: string };
    expect(body.session).toBe(session);
    expect(body.message).toMatch(new RegExp(`Claude Code ${id} at .*: missed`));
    expect((await schedules())[0]).toMatchObject({ id, running: false, last: { result: 'missed' } });
    expect(await sessionExists(session)).toBe(false);
    // what the person typed as the prompt never reached the relay
    expect(databaseHolds(relay.dataDir, PROMPT)).toBe(false);
  }, 90_000);

  it('refuses what spec 4.8 refuses, with a clear line and nothing written', async () => {
    const bad = [
      [['schedule', 'add', 'opencode', '--at', '07:30', '--prompt', 'x'], /prompt_not_accepted/],
      [['schedule', 'add', 'cc', '--every', '10m'], /at least 15m/],
      [['schedule', 'add', 'cc', '--at', '07:30', '--max-runtime', '25h'], /between 5m and 24h/],
      [['schedule', 'add', 'nosuch', '--at', '07:30'], /unknown agent nosuch/],
      [['schedule', 'rm', 'abcdef'], /no schedule abcdef/],
    ] as const;
    for (const [args, message] of bad) {
      const res = await runSvc([...args], env, { cwd: project });
      expect(res.code, args.join(' ')).toBe(1);
      expect(res.stderr).toMatch(message);
    }
    expect(await schedules()).toEqual([]);
    // a time of day in a zone svc does not know would silently be UTC: refused, naming it; the list says so too
    const mars = await runSvc(
      ['schedule', 'add', 'cc', '--at', '07:30'],
      { ...env, TZ: 'Mars/Olympus' },
      { cwd: project },
    );
    expect(mars.code).toBe(1);
    expect(mars.stderr).toMatch(/the time zone "Mars\/Olympus" \(TZ\) is not one svc knows/);
    expect(await schedules()).toEqual([]);
    expect((await runSvc(['schedule'], { ...env, TZ: 'Mars/Olympus' })).stdout).toMatch(
      /^times in UTC: the time zone/m,
    );
    expect((await runSvc(['schedule'], { ...env, TZ: 'Europe/Paris' })).stdout).toMatch(/^times in Europe\/Paris$/m);
    // a broken file is named, and never overwritten by an add
    const file = join(computer.home.home, '.local', 'state', 'svc', 'schedules');
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, '{"version": 1, "schedules": [ {"id": "zz"} ]}');
    const res = await runSvc(['schedule', 'add', 'cc', '--at', '07:30'], env, { cwd: project });
    expect(res.stderr).toMatch(/is not a schedules file/);
    expect(readFileSync(file, 'utf8')).toBe('{"version": 1, "schedules": [ {"id": "zz"} ]}');
  }, 60_000);
});
