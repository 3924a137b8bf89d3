/**
 * HTTP calls to the relay carrying an API key. Redirects are never followed (spec 5.2): a redirect could carry the
 * key to another host, so it is an error. `relayJson` checks the answer against its schema in core/protocolHttp.ts:
 * an answer that is not what the protocol says is an error with code `malformed_answer`, never trusted as is.
 */
import type { z } from 'zod';

export class RelayHttpError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
  ) {
    super(message);
  }
}

export async function relayRequest<T>(
  baseUrl: string,
  apiKey: string,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<T> {
  const url = new URL(path, baseUrl);
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        Authorization: `Bearer ${apiKey}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    throw new RelayHttpError(`cannot reach the relay at ${url.origin}${cause ? ` (${cause})` : ''}`, 0, 'unreachable');
  }
  if (res.status >= 300 && res.status < 400) {
    throw new RelayHttpError(
      `the relay at ${url.origin} answered with a redirect (${res.status}); svc never follows redirects with a key — use the final address`,
      res.status,
      'redirect',
    );
  }
  const text = await res.text();
  let data: unknown;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const error = (data as { error?: { code?: string; message?: string } } | null)?.error;
    throw new RelayHttpError(
      `relay answered ${res.status}: ${error?.message ?? (text.slice(0, 200) || res.statusText)}`,
      res.status,
      error?.code ?? 'http_error',
    );
  }
  return data as T;
}

/** `relayRequest`, with the answer parsed by `schema`: a malformed answer throws `malformed_answer`. */
export async function relayJson<S extends z.ZodType>(
  schema: S,
  baseUrl: string,
  apiKey: string,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<z.infer<S>> {
  const data = await relayRequest<unknown>(baseUrl, apiKey, method, path, body);
  const parsed = schema.safeParse(data);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue?.path.length ? issue.path.join('.') : 'the body';
  throw new RelayHttpError(
    `the relay's answer to ${method} ${path} is malformed (${where}: ${issue?.message ?? 'invalid'}); is ${new URL(baseUrl).origin} an svc relay? [malformed_answer]`,
    200,
    'malformed_answer',
  );
}
