/**
 * core/relay/client.ts, the one HTTP client of the CLI and the web app, against a fake `fetch`: what it sends, and
 * what each kind of answer becomes (a parsed body, or a RelayError with a status and a code).
 */
import { describe, expect, it } from 'vitest';
import { DeviceListResponse, PushSendResponse } from '../../../core/protocol/index.js';
import { type FetchLike, RelayError, relayClient } from '../../../core/relay/client.js';

const KEY = 'A'.repeat(87);
const device = { deviceId: 'd_0123456789abcdef', name: 'box', kind: 'computer', publicKey: KEY, createdAt: 1 };

function fakeFetch(answer: () => Response | Promise<Response>) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fetch: FetchLike = async (url, init) => {
    calls.push({ url, init });
    return answer();
  };
  return { fetch, calls };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(typeof body === 'string' ? body : JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });

async function failure(promise: Promise<unknown>): Promise<RelayError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(RelayError);
  return error as RelayError;
}

describe('relayClient', () => {
  it('sends the token as a bearer, the body as JSON, never follows redirects, and returns the parsed answer', async () => {
    const { fetch, calls } = fakeFetch(() => json(200, { id: 7, state: 'pending', duplicate: false, extra: 'x' }));
    const call = relayClient({ fetch, baseUrl: 'http://relay.test:8080/ignored' });
    const answer = await call({
      method: 'POST',
      path: '/pushes/send',
      schema: PushSendResponse,
      token: 'svc_key',
      body: { a: 1 },
    });
    expect(answer).toEqual({ id: 7, state: 'pending', duplicate: false });
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe('http://relay.test:8080/pushes/send');
    expect(calls[0]!.init.method).toBe('POST');
    expect(calls[0]!.init.redirect).toBe('manual');
    expect(calls[0]!.init.headers).toEqual({ Authorization: 'Bearer svc_key', 'Content-Type': 'application/json' });
    expect(calls[0]!.init.body).toBe('{"a":1}');
  });

  it('without a base URL (the web app) asks for the path as is, and sends no Authorization without a token', async () => {
    const { fetch, calls } = fakeFetch(() => json(200, { devices: [device] }));
    const call = relayClient({ fetch, init: { cache: 'no-store' } });
    expect(await call({ method: 'GET', path: '/devices', schema: DeviceListResponse })).toEqual({ devices: [device] });
    expect(calls[0]!.url).toBe('/devices');
    expect(calls[0]!.init.headers).toEqual({});
    expect(calls[0]!.init.cache).toBe('no-store');
    expect(calls[0]!.init.body).toBeUndefined();
  });

  const table: {
    name: string;
    answer: () => Response | Promise<Response>;
    status: number;
    code: string;
    message: RegExp;
  }[] = [
    {
      name: 'a body that does not match the schema',
      answer: () => json(200, { devices: [{ ...device, deviceId: 42 }] }),
      status: 200,
      code: 'malformed_answer',
      message:
        /^the relay's answer to GET \/devices is malformed \(devices\.0\.deviceId: .*\); is http:\/\/relay\.test an svc relay\? \[malformed_answer\]$/,
    },
    {
      name: 'a body that is not JSON',
      answer: () => json(200, '<html>hello</html>'),
      status: 200,
      code: 'malformed_answer',
      message: /answer to GET \/devices is malformed \(not JSON\).*\[malformed_answer\]$/,
    },
    {
      name: 'an empty body',
      answer: () => new Response(null, { status: 200 }),
      status: 200,
      code: 'malformed_answer',
      message: /malformed \(the body: .*\[malformed_answer\]$/,
    },
    {
      name: 'a redirect (Node: the 3xx itself)',
      answer: () => new Response(null, { status: 307, headers: { Location: 'http://evil.test/' } }),
      status: 307,
      code: 'redirect',
      message: /^the relay at http:\/\/relay\.test answered with a redirect \(307\); svc never follows redirects/,
    },
    {
      name: 'a redirect (browser: an opaque redirect, status 0)',
      answer: () => {
        const res = new Response(null, { status: 200 });
        Object.defineProperty(res, 'type', { value: 'opaqueredirect' });
        Object.defineProperty(res, 'status', { value: 0 });
        return res;
      },
      status: 0,
      code: 'redirect',
      message: /answered with a redirect; svc never follows redirects/,
    },
    {
      name: "the relay's error body",
      answer: () => json(401, { error: { code: 'unauthorized', message: 'unknown key' } }),
      status: 401,
      code: 'unauthorized',
      message: /^relay answered 401: unknown key$/,
    },
    {
      name: 'an error that is not in the error shape',
      answer: () => json(502, 'Bad Gateway'),
      status: 502,
      code: 'http_error',
      message: /^relay answered 502: Bad Gateway$/,
    },
    {
      name: 'an error body whose code is not a string',
      answer: () => json(400, { error: { code: 5, message: ['x'] } }),
      status: 400,
      code: 'http_error',
      message: /^relay answered 400: \{"error"/,
    },
    {
      name: 'no answer at all',
      answer: () => Promise.reject(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } })),
      status: 0,
      code: 'unreachable',
      message: /^cannot reach the relay at http:\/\/relay\.test \(ECONNREFUSED\)$/,
    },
  ];

  for (const row of table) {
    it(`${row.name} → ${row.code}`, async () => {
      const { fetch } = fakeFetch(row.answer);
      const call = relayClient({ fetch, baseUrl: 'http://relay.test' });
      const error = await failure(call({ method: 'GET', path: '/devices', schema: DeviceListResponse, token: 't' }));
      expect(error.status).toBe(row.status);
      expect(error.code).toBe(row.code);
      expect(error.message).toMatch(row.message);
      expect(error.message).not.toContain('\n');
    });
  }
});
