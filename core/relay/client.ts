/**
 * The one HTTP client for the relay's API, used by the CLI (actors/relay/http.ts) and the web app
 * (relay-server/app/src/api.ts). Pure: the caller passes its `fetch`. The key or device token goes in
 * `Authorization: Bearer` only. Redirects are never followed (spec 5.2): a redirect could carry the key to another
 * host, so a 3xx (or the browser's opaque redirect) is an error. Every answer is parsed with its schema from
 * core/protocol/http.ts: an answer that is not what the protocol says is an error with code `malformed_answer`,
 * never trusted as is. Every failure is a `RelayError` carrying the HTTP status (0: not reached) and a code.
 */
import type { z } from 'zod/v3';
import { issueLine } from '../protocol/issues.js';

export class RelayError extends Error {
  constructor(
    message: string,
    /** 0 when the relay could not be reached or did not answer over HTTP. */
    readonly status: number,
    /** The relay's own error code, or `unreachable`, `redirect`, `http_error`, `malformed_answer`. */
    readonly code: string,
  ) {
    super(message);
    this.name = 'RelayError';
  }
}

export type RelayMethod = 'GET' | 'POST' | 'DELETE';

/** What the client sends: `fetch`'s options, with the parts it always sets narrowed to what it sets them to. */
export type RelayRequestInit = Omit<RequestInit, 'method' | 'headers' | 'body' | 'redirect' | 'signal'> & {
  method: RelayMethod;
  headers: Record<string, string>;
  body?: string;
  redirect: 'manual';
  signal: AbortSignal;
};

/** What the client reads of an answer: a browser's `Response` is one, and so is the CLI's (actors/relay/request.ts). */
export interface RelayAnswer {
  status: number;
  statusText: string;
  ok: boolean;
  /** `opaqueredirect` in a browser that met a redirect; absent where there is no such thing. */
  type?: string;
  text(): Promise<string>;
}

export type FetchLike = (input: string, init: RelayRequestInit) => Promise<RelayAnswer>;

export interface RelayCall<S extends z.ZodType> {
  method: RelayMethod;
  /** An absolute path on the relay: `/devices`. */
  path: string;
  /** The schema of a successful answer; a promise of it lets a caller load its schemas while the request is under
   * way (the web app keeps zod out of its first load). */
  schema: S | PromiseLike<S>;
  body?: unknown;
  /** API key or device token; none for unauthenticated routes. */
  token?: string | null;
}

export interface RelayClientOptions {
  fetch: FetchLike;
  /** The relay's origin; omitted in the web app, which talks to the relay that served it (relative paths). */
  baseUrl?: string;
  timeoutMs?: number;
  /** Extra `fetch` options (the web app asks for `cache: 'no-store'`). */
  init?: RequestInit;
}

export const RELAY_TIMEOUT_MS = 15_000;

/** The relay's error body (`{ error: { code, message } }`), when that is what it is. */
function errorOf(data: unknown): { code?: string; message?: string } {
  if (typeof data !== 'object' || data === null) return {};
  const error = (data as { error?: unknown }).error;
  if (typeof error !== 'object' || error === null) return {};
  const { code, message } = error as { code?: unknown; message?: unknown };
  return {
    ...(typeof code === 'string' && code.length > 0 && code.length <= 64 ? { code } : {}),
    ...(typeof message === 'string' ? { message: message.slice(0, 300) } : {}),
  };
}

export function relayClient(options: RelayClientOptions) {
  const where = options.baseUrl ? ` at ${new URL(options.baseUrl).origin}` : '';
  return async function call<S extends z.ZodType>({ method, path, schema, body, token }: RelayCall<S>) {
    const url = options.baseUrl ? new URL(path, options.baseUrl).toString() : path;
    const headers: Record<string, string> = {};
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    let res: RelayAnswer;
    try {
      res = await options.fetch(url, {
        ...options.init,
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs ?? RELAY_TIMEOUT_MS),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: unknown } } | null)?.cause?.code;
      throw new RelayError(
        `cannot reach the relay${where}${typeof cause === 'string' ? ` (${cause})` : ''}`,
        0,
        'unreachable',
      );
    }
    if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
      throw new RelayError(
        `the relay${where} answered with a redirect${res.status ? ` (${res.status})` : ''}; svc never follows redirects with a key — use the final address`,
        res.status,
        'redirect',
      );
    }
    let text: string;
    try {
      text = await res.text();
    } catch (err) {
      if (err instanceof RelayError) throw err; // the answer's own refusal (too large)
      throw new RelayError(`the relay${where} stopped answering ${method} ${path}`, 0, 'unreachable');
    }
    let data: unknown;
    let json = true;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
      json = false;
    }
    if (!res.ok) {
      const error = errorOf(data);
      const detail = error.message ?? (text.slice(0, 200) || res.statusText);
      throw new RelayError(
        `relay answered ${res.status}${detail ? `: ${detail}` : ''}`,
        res.status,
        error.code ?? 'http_error',
      );
    }
    const parsed = json ? (await schema).safeParse(data) : null;
    if (parsed?.success) return parsed.data as z.infer<S>;
    const what = !json || !parsed ? 'not JSON' : issueLine(parsed.error, 'the body');
    throw new RelayError(
      `the relay's answer to ${method} ${path} is malformed (${what}); is ${options.baseUrl ? new URL(options.baseUrl).origin : 'it'} an svc relay? [malformed_answer]`,
      res.status,
      'malformed_answer',
    );
  };
}
