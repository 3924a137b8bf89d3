/**
 * The CLI's and the listener's HTTP requests to the relay, on Node's own `http`/`https` (the `FetchLike` that
 * core/relay/client.ts asks for), through the configured proxy when one applies.
 *
 * Not Node's `fetch`: its first call loads undici, and with it http2, worker_threads, perf_hooks and the rest,
 * 12-16 MiB a process keeps for good (docs/benchmarks.md, "Idle memory"). The listener asks the relay for its device
 * list the first time a phone's sealed message arrives, so every paired listener paid that (and `http` itself is
 * required, not imported, for the same reason: actors/nodeHttp.ts).
 */
import type { IncomingMessage } from 'node:http';
import { type RelayAnswer, RelayError, type RelayRequestInit } from '../../core/relay/client.js';
import { http, https } from '../nodeHttp.js';
import { tunnelAgent } from './proxy.js';

/** More than any answer of the relay's API (a history page is at most a few MiB); a larger one is refused. */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/** One request: the answer once its head is in (its body read by `text()`), like `fetch`. Redirects are answers. */
export async function relayRequest(url: string, init: RelayRequestInit): Promise<RelayAnswer> {
  const target = new URL(url);
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    throw new TypeError(`not an http(s) URL: ${target.protocol}`);
  const agent = await tunnelAgent(url, init.signal); // throws on a proxy setting that is not a URL
  init.signal.throwIfAborted();
  return new Promise<RelayAnswer>((resolve, reject) => {
    // Time up: over at once, whatever the request waits for (a socket from the proxy's tunnel, the answer's head or
    // its body: destroying the request ends the body's reading too).
    const abandon = () => {
      reject(init.signal.reason);
      req.destroy();
    };
    init.signal.addEventListener('abort', abandon, { once: true });
    const settled = () => init.signal.removeEventListener('abort', abandon);
    const req = (target.protocol === 'https:' ? https : http).request(target, {
      method: init.method,
      headers: {
        ...init.headers,
        ...(init.body === undefined ? {} : { 'Content-Length': String(Buffer.byteLength(init.body)) }),
      },
      ...(agent ? { agent } : {}),
    });
    // the socket's own error (ECONNREFUSED, a certificate refused, …) as `fetch` gives it: the error's `cause`
    req.on('error', (cause) => {
      settled();
      reject(new TypeError('request failed', { cause }));
    });
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      res.on('close', settled);
      const body = readBody(res);
      body.catch(() => {}); // read or not, a failure is the reader's to see
      resolve({
        status,
        statusText: res.statusMessage ?? '',
        ok: status >= 200 && status < 300,
        text: () => body,
      });
    });
    req.end(init.body);
  });
}

/** The answer's body as text, refused past MAX_ANSWER_BYTES (the socket is closed then). */
function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    res.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > MAX_ANSWER_BYTES) {
        res.destroy();
        reject(
          new RelayError(
            `the relay's answer is larger than ${MAX_ANSWER_BYTES / 1024 / 1024} MiB; refused [answer_too_large]`,
            res.statusCode ?? 0,
            'answer_too_large',
          ),
        );
        return;
      }
      chunks.push(chunk);
    });
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    res.on('close', () => {
      if (!res.complete) reject(new Error('the answer stopped before its end'));
    });
  });
}
