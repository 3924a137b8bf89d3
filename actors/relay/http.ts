/**
 * The CLI's calls to the relay, with its API key: core/relay/client.ts over Node's `fetch`. Redirects are never
 * followed, and every answer is parsed with its schema in core/protocol/http.ts (a malformed one is a `RelayError`
 * with code `malformed_answer`).
 */
import type { z } from 'zod/v3';
import { RelayError, type RelayMethod, relayClient } from '../../core/relay/client.js';
import { proxiedFetch } from './proxy.js';

export { RelayError };

export async function relayJson<S extends z.ZodType>(
  schema: S,
  baseUrl: string,
  apiKey: string,
  method: RelayMethod,
  path: string,
  body?: unknown,
  timeoutMs?: number,
): Promise<z.infer<S>> {
  // through the configured proxy, if one applies to the relay (actors/relay/proxy.ts)
  return relayClient({ fetch: proxiedFetch, baseUrl, ...(timeoutMs ? { timeoutMs } : {}) })({
    method,
    path,
    schema,
    body,
    token: apiKey,
  });
}
