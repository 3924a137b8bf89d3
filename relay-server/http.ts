/**
 * HTTP plumbing for the routes: JSON answers, the `{error:{code,message}}` shape, and reading a size-capped body.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpErrorCode } from '../core/protocol/index.js';

/** After a 413 we discard at most this much more of the body (so the client reads the answer), then hang up. */
const DRAIN_LIMIT_BYTES = 4 * 1024 * 1024;
const DRAIN_LIMIT_MS = 2_000;

/** A refusal a route throws; the router turns it into the error body. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: HttpErrorCode;
  readonly headers: Record<string, string>;

  constructor(status: number, code: HttpErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...headers,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, error: HttpError): void {
  sendJson(res, error.status, { error: { code: error.code, message: error.message } }, error.headers);
}

export function sendHtml(res: ServerResponse, html: string): void {
  res.writeHead(200, {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Length': Buffer.byteLength(html),
    'Cache-Control': 'no-cache',
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'self'",
  });
  res.end(html);
}

/**
 * The request body as text, at most maxBytes. A larger body (declared or streamed) throws 413 `too_large` without
 * buffering more of it; see `discardBody` for what happens to the rest.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  const tooLarge = () => new HttpError(413, 'too_large', `request body is larger than ${maxBytes} bytes`);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        chunks.length = 0;
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/**
 * Throw away what is left of a refused body so the client, still sending, gets to read our answer instead of a
 * reset; past a bound in bytes or time, hang up. The answer carries `Connection: close` in either case.
 */
export function discardBody(req: IncomingMessage): void {
  if (req.complete) return;
  let discarded = 0;
  const timer = setTimeout(() => req.socket.destroy(), DRAIN_LIMIT_MS);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DRAIN_LIMIT_BYTES) req.socket.destroy();
  });
  req.on('close', () => clearTimeout(timer));
  req.resume();
}

/** JSON.parse that reports failure instead of throwing. */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  if (text.trim() === '') return { ok: false, message: 'request body is empty; expected JSON' };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, message: 'request body is not valid JSON' };
  }
}
