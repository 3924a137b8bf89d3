/**
 * HTTP to the relay that served this page: core/relay/client.ts over the browser's `fetch`. The device token goes in
 * `Authorization: Bearer` only; redirects are refused (a redirect could carry the token elsewhere); every answer is
 * parsed with its schema. Every failure is a RelayError with the HTTP status (0: not reached) and a code.
 */
import type { z } from 'zod';
import { RelayError, type RelayMethod, relayClient } from '../../../core/relay/client.js';

export { RelayError };

const call = relayClient({ fetch: (input, init) => fetch(input, init), init: { cache: 'no-store' } });

export function request<S extends z.ZodType>(
  schema: S,
  method: RelayMethod,
  path: string,
  { token, body }: { token?: string | null; body?: unknown } = {},
): Promise<z.infer<S>> {
  return call({ method, path, schema, token, body });
}
