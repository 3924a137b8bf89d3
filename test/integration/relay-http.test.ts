/**
 * The relay's HTTP API as a client sees it: a real relay on loopback, real SQLite, fetch.
 */
import { request } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_HTTP_BYTES } from '../../core/protocol/index.js';
import { api, startTestRelay, type TestRelay } from '../helpers/relay.js';

let relay: TestRelay;

beforeEach(async () => {
  relay = await startTestRelay();
});

afterEach(async () => {
  await relay.close();
});

const command = (agentSessionName = 'svc-proj', extra: Record<string, unknown> = {}) => ({
  type: 'agent.command',
  agentSessionName,
  body: 'run the tests',
  ...extra,
});

/** Send a raw HTTP request and read the answer, for bodies fetch will not send (streamed, lying lengths). */
function rawRequest(
  url: string,
  { method = 'POST', path = '/pushes/send', headers = {}, chunks = [] as Buffer[] },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

describe('public routes', () => {
  it('serves the phone app and the health check', async () => {
    const page = await fetch(`${relay.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(await page.text()).toContain('<div id="app">');
    const health = await api(relay.url, 'GET', '/healthz');
    expect(health).toMatchObject({ status: 200, json: { ok: true } });
  });

  it('answers unknown routes with 404 and wrong methods with 405, in the error shape', async () => {
    const missing = await api(relay.url, 'GET', '/nope', { key: relay.apiKey });
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ error: { code: 'not_found', message: expect.any(String) } });
    const wrong = await api(relay.url, 'GET', '/pushes/send', { key: relay.apiKey });
    expect(wrong.status).toBe(405);
    expect(wrong.json.error.code).toBe('method_not_allowed');
    expect(wrong.headers.get('allow')).toBe('POST');
    const deleted = await api(relay.url, 'DELETE', '/computers', { key: relay.apiKey });
    expect(deleted.status).toBe(405);
  });
});

describe('POST /pushes/send and GET /pushes/<id>', () => {
  it('gives ids that increase per account and are independent across accounts', async () => {
    const other = await relay.createAccount();
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const sent = await api(relay.url, 'POST', '/pushes/send', { key: relay.apiKey, body: command() });
      expect(sent.status).toBe(200);
      expect(sent.json).toEqual({ id: expect.any(Number), state: 'pending', duplicate: false });
      ids.push(sent.json.id);
    }
    expect(ids).toEqual([1, 2, 3]);
    const first = await api(relay.url, 'POST', '/pushes/send', { key: other.apiKey, body: command() });
    expect(first.json.id).toBe(1);
    const fourth = await api(relay.url, 'POST', '/pushes/send', { key: relay.apiKey, body: command() });
    expect(fourth.json.id).toBe(4);

    // An account sees only its own pushes.
    const mine = await api(relay.url, 'GET', '/pushes/4', { key: relay.apiKey });
    expect(mine.status).toBe(200);
    const theirs = await api(relay.url, 'GET', '/pushes/4', { key: other.apiKey });
    expect(theirs.status).toBe(404);
    expect(theirs.json.error.code).toBe('not_found');
  });

  it('reports a stored push through GET with its fields', async () => {
    const before = Date.now();
    const sent = await api(relay.url, 'POST', '/pushes/send', { key: relay.apiKey, body: command('svc-web') });
    const status = await api(relay.url, 'GET', `/pushes/${sent.json.id}`, { key: relay.apiKey });
    expect(status.status).toBe(200);
    expect(status.json).toEqual({
      id: sent.json.id,
      type: 'agent.command',
      agentSessionName: 'svc-web',
      state: 'pending',
      code: null,
      createdAt: expect.any(Number),
      updatedAt: expect.any(Number),
    });
    expect(status.json.createdAt).toBeGreaterThanOrEqual(before);
    expect(status.json).not.toHaveProperty('body');
    expect((await api(relay.url, 'GET', '/pushes/999', { key: relay.apiKey })).status).toBe(404);
    expect((await api(relay.url, 'GET', '/pushes/abc', { key: relay.apiKey })).status).toBe(404);
  });

  it('returns the first push for a repeated clientId and stores nothing new', async () => {
    const body = command('svc-proj', { clientId: 'phone-1:42' });
    const first = await api(relay.url, 'POST', '/pushes/send', { key: relay.apiKey, body });
    const again = await api(relay.url, 'POST', '/pushes/send', { key: relay.apiKey, body });
    expect(first.json).toEqual({ id: 1, state: 'pending', duplicate: false });
    expect(again.json).toEqual({ id: 1, state: 'pending', duplicate: true });
    const next = await api(relay.url, 'POST', '/pushes/send', { key: relay.apiKey, body: command() });
    expect(next.json.id).toBe(2);
    // The same clientId in another account is a different push.
    const other = await relay.createAccount();
    const theirs = await api(relay.url, 'POST', '/pushes/send', { key: other.apiKey, body });
    expect(theirs.json).toEqual({ id: 1, state: 'pending', duplicate: false });
  });

  it('stores a session name the listener will refuse: the relay only checks the schema', async () => {
    const sent = await api(relay.url, 'POST', '/pushes/send', { key: relay.apiKey, body: command('bad name;rm') });
    expect(sent.status).toBe(200);
  });

  it('refuses a targetComputer that is not a computer of the account', async () => {
    const sent = await api(relay.url, 'POST', '/pushes/send', {
      key: relay.apiKey,
      body: command('svc-proj', { targetComputer: 'c_0000000000000000' }),
    });
    expect(sent.status).toBe(400);
    expect(sent.json.error.code).toBe('unknown_computer');
    // another account's computer, already addressed by its own account (the relay remembers whose it is)
    const register = await api(relay.url, 'POST', '/computers', { key: relay.apiKey, body: { name: 'mine' } });
    const hookId = register.json.hookId as string;
    const own = await api(relay.url, 'POST', '/pushes/send', {
      key: relay.apiKey,
      body: command('svc-proj', { targetComputer: hookId }),
    });
    expect(own.status).toBe(200);
    const other = await relay.createAccount();
    for (let i = 0; i < 2; i++) {
      const theirs = await api(relay.url, 'POST', '/pushes/send', {
        key: other.apiKey,
        body: command('svc-proj', { targetComputer: hookId }),
      });
      expect(theirs.status).toBe(400);
      expect(theirs.json.error.code).toBe('unknown_computer');
    }
  });
});

describe('keys and scopes', () => {
  it('needs a key (401), the right scope (403), and never takes a key from the URL', async () => {
    const readOnly = await relay.createKey(['push:read']);
    const writeOnly = await relay.createKey(['push:write']);

    const none = await api(relay.url, 'POST', '/pushes/send', { body: command() });
    expect(none.status).toBe(401);
    expect(none.json.error.code).toBe('unauthorized');
    expect(none.headers.get('www-authenticate')).toBe('Bearer');

    const bogus = await api(relay.url, 'POST', '/pushes/send', { key: `svc_${'A'.repeat(43)}`, body: command() });
    expect(bogus.status).toBe(401);

    const reader = await api(relay.url, 'POST', '/pushes/send', { key: readOnly, body: command() });
    expect(reader.status).toBe(403);
    expect(reader.json.error.code).toBe('forbidden');
    const writer = await api(relay.url, 'POST', '/pushes/send', { key: writeOnly, body: command() });
    expect(writer.status).toBe(200);

    // Either scope may read a status and the computer list; only push:read registers a computer.
    expect((await api(relay.url, 'GET', `/pushes/${writer.json.id}`, { key: readOnly })).status).toBe(200);
    expect((await api(relay.url, 'GET', '/computers', { key: writeOnly })).status).toBe(200);
    const register = await api(relay.url, 'POST', '/computers', { key: writeOnly, body: { name: 'laptop' } });
    expect(register.status).toBe(403);

    for (const query of [`key=${relay.apiKey}`, `apiKey=${relay.apiKey}`, `access_token=${relay.apiKey}`]) {
      const inUrl = await api(relay.url, 'GET', `/pushes/${writer.json.id}?${query}`);
      expect(inUrl.status).toBe(401);
    }
    expect(relay.logs.join('\n')).not.toContain(relay.apiKey);
  });
});

describe('computers', () => {
  it('registers a computer once per name and lists it', async () => {
    const first = await api(relay.url, 'POST', '/computers', {
      key: relay.apiKey,
      body: { name: 'laptop', platform: 'linux' },
    });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ hookId: expect.stringMatching(/^c_[0-9a-f]{16}$/), name: 'laptop' });
    const again = await api(relay.url, 'POST', '/computers', { key: relay.apiKey, body: { name: 'laptop' } });
    expect(again.json.hookId).toBe(first.json.hookId);
    const desk = await api(relay.url, 'POST', '/computers', { key: relay.apiKey, body: { name: 'desk' } });
    expect(desk.json.hookId).not.toBe(first.json.hookId);

    const list = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
    expect(list.json.computers).toEqual([
      {
        hookId: first.json.hookId,
        name: 'laptop',
        platform: 'linux',
        online: false,
        lastSeenAt: null,
        sessions: [],
        sessionsAt: null,
      },
      expect.objectContaining({ hookId: desk.json.hookId, name: 'desk', platform: null }),
    ]);
    const other = await relay.createAccount();
    const theirs = await api(relay.url, 'GET', '/computers', { key: other.apiKey });
    expect(theirs.json).toEqual({ computers: [] });
  });
});

describe('bad input', () => {
  const post = (rawBody: string) => api(relay.url, 'POST', '/pushes/send', { key: relay.apiKey, rawBody });

  it('answers non-JSON and empty bodies with 400 bad_json', async () => {
    for (const rawBody of ['{"type":', 'hello', '']) {
      const answer = await post(rawBody);
      expect(answer.status).toBe(400);
      expect(answer.json.error.code).toBe('bad_json');
    }
  });

  it('answers schema failures with 400 bad_request naming the first issue', async () => {
    const wrongType = await post(JSON.stringify({ type: 'agent.command', agentSessionName: 7, body: 'x' }));
    expect(wrongType.status).toBe(400);
    expect(wrongType.json.error.code).toBe('bad_request');
    expect(wrongType.json.error.message).toMatch(/^agentSessionName: /);
    const missing = await post(JSON.stringify({ type: 'agent.command', agentSessionName: 'svc-proj' }));
    expect(missing.json.error.message).toMatch(/^body: /);
    const notObject = await post('[1,2,3]');
    expect(notObject.json.error.code).toBe('bad_request');
    const tooLong = await post(JSON.stringify(command('x'.repeat(200))));
    expect(tooLong.json.error).toMatchObject({
      code: 'bad_request',
      message: expect.stringMatching(/^agentSessionName/),
    });
  });

  it('answers a body over MAX_HTTP_BYTES with 413, declared or streamed, and keeps answering', async () => {
    const big = 'x'.repeat(MAX_HTTP_BYTES + 1);
    const declared = await post(JSON.stringify({ ...command(), body: big }));
    expect(declared.status).toBe(413);
    expect(declared.json.error.code).toBe('too_large');

    // Chunked, no Content-Length: the relay counts as it reads.
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const streamed = await rawRequest(relay.url, {
      headers: { Authorization: `Bearer ${relay.apiKey}`, 'Content-Type': 'application/json' },
      chunks: Array.from({ length: Math.ceil(MAX_HTTP_BYTES / chunk.length) + 1 }, () => chunk),
    });
    expect(streamed.status).toBe(413);
    expect(JSON.parse(streamed.body).error.code).toBe('too_large');

    const after = await api(relay.url, 'POST', '/pushes/send', { key: relay.apiKey, body: command() });
    expect(after.status).toBe(200);
  });

  it('answers 429 with Retry-After once the key has spent its bucket', async () => {
    await relay.close();
    relay = await startTestRelay({ httpBucket: { capacity: 5, refillPerSecond: 0.01 } });
    const other = await relay.createKey(['push:read']);
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await api(relay.url, 'GET', '/computers', { key: relay.apiKey })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    const limited = await api(relay.url, 'GET', '/computers', { key: relay.apiKey });
    expect(limited.json.error.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // The bucket is per key: another key of the same account still gets through.
    expect((await api(relay.url, 'GET', '/computers', { key: other })).status).toBe(200);
    expect((await api(relay.url, 'GET', '/healthz')).status).toBe(200);
  });

  it('answers a burst over the default bucket with 429', async () => {
    const answers = await Promise.all(
      Array.from({ length: 300 }, () => api(relay.url, 'GET', '/computers', { key: relay.apiKey })),
    );
    const statuses = new Set(answers.map((a) => a.status));
    expect(statuses).toEqual(new Set([200, 429]));
  });
});
