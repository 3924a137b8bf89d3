/**
 * Retention (issue 20): the relay keeps no message body past its use. Pushes a listener received and never answered
 * become final after twice the replay window, pushes of any type reach a final state, every final push loses its
 * body (byte for byte, from the database files), old final rows go, and an account's open pushes are capped.
 * The real relay on loopback with its SQLite file and a clock the test moves.
 */
import { afterEach, expect, it } from 'vitest';
import { databaseHolds } from '../helpers/devices.js';
import {
  type ApiAnswer,
  api,
  someEnvelope,
  startTestRelay,
  type TestRelay,
  TestSocket,
  waitFor,
} from '../helpers/relay.js';

let relay: TestRelay | null = null;
let listener: TestSocket | null = null;

afterEach(async () => {
  await listener?.close();
  listener = null;
  await relay?.close();
  relay = null;
});

it('sweeps delivered pushes to expired no_result after twice the window, erases every body, prunes and caps', async () => {
  let clock = 1_000_000;
  relay = await startTestRelay({
    now: () => clock,
    replayWindowMs: 1_000,
    sweepIntervalMs: 100,
    keepFinalPushes: 5,
    maxOpenPushBytes: 4_096,
  });
  const r = relay;
  const key = r.apiKey;
  const state = async (id: number) => (await api(r.url, 'GET', `/pushes/${id}`, { key })).json;
  const send = async (body: Record<string, unknown>) => api(r.url, 'POST', '/pushes/send', { key, body });
  const here = (await api(r.url, 'POST', '/computers', { key, body: { name: 'here' } })).json.hookId;
  const away = (await api(r.url, 'POST', '/computers', { key, body: { name: 'away' } })).json.hookId;
  listener = await TestSocket.open(r.wsUrl, key);
  await listener.subscribeListener(here);

  // Received by the listener and never answered: a type it does not act on, and a command (its listener died).
  const note = (await send({ type: 'note', agentSessionName: 's', body: 'NOTE-body-5e1f', targetComputer: here })).json;
  const cmd = (
    await send({ type: 'agent.command', agentSessionName: 's', body: 'CMD-body-9a2c', targetComputer: here })
  ).json;
  for (const id of [note.id, cmd.id]) {
    await listener.next('push.new', (f) => f.push.id === id);
    await waitFor(async () => (await state(id)).state === 'delivered', { what: `push ${id} delivered` });
  }
  expect(databaseHolds(r.dataDir, 'NOTE-body-5e1f')).toBe(true);

  // Past the window, not yet twice: a pending push (for a computer nobody listens for) expires; these wait still.
  clock += 1_500;
  const marker = (await send({ type: 'agent.command', agentSessionName: 's', body: 'x', targetComputer: away })).json;
  clock += 1_100;
  await waitFor(async () => (await state(marker.id)).state === 'expired', { what: 'the pending push to expire' });
  // (the marker was created 1.1 s ago; the others 2.6 s ago: past twice the window, so the same sweep takes them)
  await waitFor(async () => (await state(cmd.id)).state === 'expired', { what: 'the delivered command to be swept' });
  expect(await state(note.id)).toMatchObject({ state: 'expired', code: 'no_result' });
  expect(await state(cmd.id)).toMatchObject({ state: 'expired', code: 'no_result' });
  // Byte for byte, main file and WAL: no body left.
  await waitFor(() => !databaseHolds(r.dataDir, 'NOTE-body-5e1f') && !databaseHolds(r.dataDir, 'CMD-body-9a2c'), {
    what: 'the bodies to be gone from the database files',
  });

  // A sealed push (what every push is once a phone is paired): its envelope is what must go, byte for byte.
  const envelope = await someEnvelope();
  const sealed = (
    await send({ type: 'agent.command', agentSessionName: 's', body: '', sealed: envelope, targetComputer: here })
  ).json;
  await listener.next('push.new', (f) => f.push.id === sealed.id);
  expect(databaseHolds(r.dataDir, envelope.ct)).toBe(true);
  listener.send({ type: 'push.result', id: sealed.id, state: 'injected' });
  await listener.next('push.ack', (f) => f.id === sealed.id);
  await waitFor(() => !databaseHolds(r.dataDir, envelope.ct) && !databaseHolds(r.dataDir, envelope.to[0]!.wrap), {
    what: 'the sealed envelope to be gone from the database files',
  });

  // The listener comes back with its result after all: the truth replaces no_result, and it is acknowledged.
  listener.send({ type: 'push.result', id: cmd.id, state: 'injected' });
  await listener.next('push.ack', (f) => f.id === cmd.id);
  expect(await state(cmd.id)).toMatchObject({ state: 'injected' });

  // The cap: open pushes of the account hold at most 4 KiB (256 a push plus its body).
  const big = { type: 'agent.command', agentSessionName: 's', body: 'y'.repeat(1_000), targetComputer: away };
  const answers: ApiAnswer[] = [];
  for (let i = 0; i < 4; i++) answers.push(await send(big));
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429]);
  expect(answers[3]!.json.error.code).toBe('storage_full');
  // Once they are final (expired here), they no longer count.
  clock += 1_100;
  await waitFor(async () => (await state(answers[2]!.json.id)).state === 'expired', {
    what: 'the big pushes to expire',
  });
  expect((await send(big)).status).toBe(200);

  // Only the newest 5 final pushes of the account are kept: the oldest are gone entirely.
  await waitFor(async () => (await api(r.url, 'GET', `/pushes/${note.id}`, { key })).status === 404, {
    what: 'the oldest final push to be deleted',
  });
  expect((await api(r.url, 'GET', `/pushes/${answers[2]!.json.id}`, { key })).status).toBe(200);
});
