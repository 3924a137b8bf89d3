/**
 * The HTTP side of a Web Push (RFC 8030): `web-push` builds the request (the payload encrypted for the subscription,
 * the VAPID signature), this sends it, bounded in every way a push service could abuse: only to public addresses
 * (checked on every connect, so a name that now resolves to a private one is refused), with a connect timeout and a
 * total one, and at most `MAX_RESPONSE_BYTES` of the answer read (a push service answers with an empty body; one
 * that streams is cut off, never held in memory). `abort` ends it at once (the relay stopping).
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { Agent } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { https } from '../../actors/nodeHttp.js';
import { isPublicAddress } from '../../core/notify/endpoint.js';

/** The most of a push service's answer read; the rest is discarded and the answer counts as failed. */
export const MAX_RESPONSE_BYTES = 16 * 1024;
export const CONNECT_TIMEOUT_MS = 5_000;
export const TOTAL_TIMEOUT_MS = 15_000;

export interface PushRequest {
  endpoint: string;
  method: string;
  headers: Record<string, string | number>;
  body: Buffer | null;
}

/** Why a push did not go through, for the log and for counting a subscription's failures. */
export class PushFailed extends Error {
  constructor(
    readonly reason: 'address' | 'timeout' | 'too_large' | 'network' | 'status' | 'aborted',
    message: string,
    readonly statusCode?: number,
  ) {
    super(message);
  }
}

/** A DNS lookup that fails for a name with any address that is not public (unless the host was named). */
export function publicLookup(named: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const bad = addresses.find((a) => !isPublicAddress(a.address));
      if (bad && !named) {
        const refused = Object.assign(new Error(`${hostname} resolves to ${bad.address}, not a public address`), {
          code: 'EPUSHADDRESS',
        });
        return callback(refused, '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    });
  };
}

export interface SendOptions {
  /** The host was named in `--push-hosts`: private addresses allowed. */
  named: boolean;
  agent?: Agent | undefined;
  signal?: AbortSignal | undefined;
  connectTimeoutMs?: number;
  totalTimeoutMs?: number;
}

/** Sends one push request; resolves with the status code of a 2xx answer, rejects with `PushFailed` otherwise. */
export function sendPushRequest(push: PushRequest, opts: SendOptions): Promise<number> {
  return new Promise((resolve, reject) => {
    const url = new URL(push.endpoint);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0 && !opts.named && !isPublicAddress(host)) {
      reject(new PushFailed('address', `${host} is not a public address`));
      return;
    }
    let settled = false;
    const finish = (error: PushFailed | null, status?: number) => {
      if (settled) return;
      settled = true;
      clearTimeout(total);
      opts.signal?.removeEventListener('abort', onAbort);
      if (error) {
        req.destroy();
        reject(error);
      } else resolve(status as number);
    };
    const req = https.request(url, {
      method: push.method,
      headers: push.headers,
      lookup: publicLookup(opts.named),
      timeout: opts.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
      ...(opts.agent ? { agent: opts.agent } : {}),
    });
    const total = setTimeout(
      () => finish(new PushFailed('timeout', 'no whole answer in time')),
      opts.totalTimeoutMs ?? TOTAL_TIMEOUT_MS,
    );
    const onAbort = () => finish(new PushFailed('aborted', 'the relay is stopping'));
    opts.signal?.addEventListener('abort', onAbort);
    req.on('timeout', () => finish(new PushFailed('timeout', 'the push service did not answer in time')));
    req.on('error', (error: NodeJS.ErrnoException) =>
      finish(new PushFailed(error.code === 'EPUSHADDRESS' ? 'address' : 'network', error.message)),
    );
    req.on('response', (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > MAX_RESPONSE_BYTES)
          finish(new PushFailed('too_large', `the answer went past ${MAX_RESPONSE_BYTES} bytes`, res.statusCode));
      });
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) finish(null, status);
        else finish(new PushFailed('status', `answered ${status}`, status));
      });
      res.on('error', (error) => finish(new PushFailed('network', error.message)));
    });
    req.end(push.body ?? undefined);
  });
}
