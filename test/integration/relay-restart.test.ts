/**
 * What survives a relay restart: relay.db in the data dir holds accounts, keys, pushes and computers.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { CLOSE } from '../../core/protocol/index.js';
import { api, startTestRelay, type TestRelay, TestSocket, waitFor } from '../helpers/relay.js';

let relay: TestRelay;

afterEach(async () => {
  await relay.close();
});

it('keeps keys, push ids and states in relay.db across a restart, owner-only', async () => {
  relay = await startTestRelay();
  const key = relay.apiKey;
  const hookId = (await api(relay.url, 'POST', '/computers', { key, body: { name: 'laptop' } })).json.hookId;
  const listener = await TestSocket.open(relay.wsUrl, key);
  await listener.subscribeListener(hookId);
  const body = { type: 'agent.command', agentSessionName: 'svc-proj', body: 'x', clientId: 'c-1' };
  const first = (await api(relay.url, 'POST', '/pushes/send', { key, body })).json;
  await listener.next('push.new', (f) => f.push.id === first.id);
  listener.send({ type: 'push.result', id: first.id, state: 'injected' });
  await waitFor(async () => (await api(relay.url, 'GET', '/pushes/1', { key })).json.state === 'injected');

  await relay.restart();
  // The listener connected before the restart is told the relay went away.
  expect((await listener.closed).code).toBe(CLOSE.goingAway);

  expect((await api(relay.url, 'GET', '/pushes/1', { key })).json).toMatchObject({ state: 'injected' });
  const duplicate = (await api(relay.url, 'POST', '/pushes/send', { key, body })).json;
  expect(duplicate).toEqual({ id: 1, state: 'injected', duplicate: true });
  const second = (await api(relay.url, 'POST', '/pushes/send', { key, body: { ...body, clientId: 'c-2' } })).json;
  expect(second).toEqual({ id: 2, state: 'pending', duplicate: false });
  const again = await api(relay.url, 'POST', '/computers', { key, body: { name: 'laptop' } });
  expect(again.json.hookId).toBe(hookId);

  // The reconnecting listener gets what it missed.
  const back = await TestSocket.open(relay.wsUrl, key);
  expect(await back.subscribeListener(hookId, first.id)).toMatchObject({ replayed: 1 });
  expect((await back.next('push.new')).push).toMatchObject({ id: 2, replay: true });
  await back.close();

  expect(statSync(relay.dataDir).mode & 0o777).toBe(0o700);
  expect(statSync(join(relay.dataDir, 'relay.db')).mode & 0o777).toBe(0o600);
});

it('closes idempotently and answers nothing afterwards', async () => {
  relay = await startTestRelay();
  const url = relay.url;
  await relay.restart();
  expect((await api(url, 'GET', '/healthz')).status).toBe(200);
  await relay.close();
  await relay.close();
  await expect(fetch(`${url}/healthz`)).rejects.toThrow();
});
