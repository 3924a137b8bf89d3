/**
 * HTTP to the relay that served this page: core/relay/client.ts over the browser's `fetch`. The device token goes in
 * `Authorization: Bearer` only; redirects are refused (a redirect could carry the token elsewhere); every answer is
 * parsed with its schema, named here and loaded lazily from schemas.ts (zod stays out of the first load). Every
 * failure is a RelayError with the HTTP status (0: not reached) and a code.
 */
import type { z } from 'zod/v3';
import { RelayError, type RelayMethod, relayClient } from '../../../core/relay/client.js';
import type * as Schemas from './schemas.js';

export { RelayError };

type SchemaName = keyof typeof Schemas;
type Parsed<K extends SchemaName> = z.infer<(typeof Schemas)[K]>;

const call = relayClient({ fetch: (input, init) => fetch(input, init), init: { cache: 'no-store' } });

let loading: Promise<typeof Schemas> | null = null;

/** The schemas chunk, loaded once; a failed load (offline before the service worker had it) is tried again next time. */
export function schemas(): Promise<typeof Schemas> {
  loading ??= import('./schemas.js').catch((error: unknown) => {
    loading = null;
    throw new RelayError(`the app could not load its checks (${String(error)}); reload when online`, 0, 'unreachable');
  });
  return loading;
}

export function request<K extends SchemaName>(
  name: K,
  method: RelayMethod,
  path: string,
  { token, body }: { token?: string | null; body?: unknown } = {},
): Promise<Parsed<K>> {
  // loaded while the request is under way; a request that fails first leaves this promise to settle unobserved
  const schema = schemas().then((s) => s[name] as unknown as z.ZodType<Parsed<K>>);
  schema.catch(() => {});
  return call({ method, path, schema, token, body });
}

/** Check something opened from an envelope against its body schema (throws as zod does). */
export async function parseBody<K extends SchemaName>(name: K, value: unknown): Promise<Parsed<K>> {
  return ((await schemas())[name] as unknown as z.ZodType<Parsed<K>>).parse(value);
}
