/**
 * The CLI's calls to the relay, with its API key: core/relay/client.ts over Node's `http` (request.ts, through the
 * proxy when one applies). Redirects are never followed, and every answer is parsed with its schema in
 * core/protocol/http.ts (a malformed one is a `RelayError` with code `malformed_answer`).
 */
import type { z } from 'zod/v3';
import { RelayError, type RelayMethod, relayClient } from '../../core/relay/client.js';
import { relayRequest } from './request.js';

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
  return relayClient({ fetch: relayRequest, baseUrl, ...(timeoutMs ? { timeoutMs } : {}) })({
    method,
    path,
    schema,
    body,
    token: apiKey,
  });
}
