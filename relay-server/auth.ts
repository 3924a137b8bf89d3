/**
 * API keys: random, shown once, stored as a sha256 hash, carried only in `Authorization: Bearer <key>`.
 * A plain sha256 is enough because the keys are 32 random bytes: there is nothing to guess a dictionary for.
 */
import { hash, randomBytes } from 'node:crypto';
import { SCOPES, type Scope } from '../core/protocol/index.js';
import type { KeyRecord, Store } from './store.js';

const KEY_PREFIX = 'svc_';
/** 'svc_' + base64url of 32 bytes (43 characters). */
const KEY_RE = /^svc_[A-Za-z0-9_-]{43}$/;

export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function hashApiKey(apiKey: string): string {
  return hash('sha256', apiKey, 'hex');
}

export function newAccountId(): string {
  return `acc_${randomBytes(8).toString('hex')}`;
}

export function newKeyId(): string {
  return `key_${randomBytes(8).toString('hex')}`;
}

export function newHookId(): string {
  return `c_${randomBytes(8).toString('hex')}`;
}

export function newDeviceId(): string {
  return `d_${randomBytes(8).toString('hex')}`;
}

/** A one-time pairing code: 16 random bytes, base64url (22 characters). Stored as its sha256, like keys. */
export function generatePairingCode(): string {
  return randomBytes(16).toString('base64url');
}

/** The key from an `Authorization` header value, or null when the header is absent or not a Bearer svc key. */
export function bearerKey(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer +(\S+) *$/i.exec(header);
  const key = match?.[1];
  return key && KEY_RE.test(key) ? key : null;
}

/** The WebSocket subprotocol a browser offers first and the relay accepts (`new WebSocket(url, [APP_PROTOCOL, …])`). */
export const APP_PROTOCOL = 'svc.v1';
const BEARER_PROTOCOL_PREFIX = 'bearer.';

/**
 * Browsers cannot set headers on a WebSocket, so the app offers its token as a subprotocol `bearer.<token>` beside
 * `svc.v1` (never in the URL, which proxies log). Returns the equivalent `Authorization` value, or undefined.
 */
export function authorizationFromProtocols(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const offered = header.split(',').map((p) => p.trim());
  const bearer = offered.find((p) => p.startsWith(BEARER_PROTOCOL_PREFIX));
  return bearer ? `Bearer ${bearer.slice(BEARER_PROTOCOL_PREFIX.length)}` : undefined;
}

/** Parse a comma-separated scope list; throws with a one-line message on an unknown or empty list. */
export function parseScopeList(text: string): Scope[] {
  const parts = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (parts.length === 0) throw new Error(`no scopes given (known: ${SCOPES.join(', ')})`);
  const scopes: Scope[] = [];
  for (const part of parts) {
    if (!(SCOPES as readonly string[]).includes(part)) {
      throw new Error(`unknown scope "${part}" (known: ${SCOPES.join(', ')})`);
    }
    if (!scopes.includes(part as Scope)) scopes.push(part as Scope);
  }
  return scopes;
}

export type AuthResult = { ok: true; key: KeyRecord } | { ok: false; reason: 'missing' | 'invalid' };

/** Look up the key an `Authorization` header carries. */
export async function authenticate(store: Store, header: string | undefined): Promise<AuthResult> {
  if (!header) return { ok: false, reason: 'missing' };
  const apiKey = bearerKey(header);
  if (!apiKey) return { ok: false, reason: 'invalid' };
  const key = await store.findKeyByHash(hashApiKey(apiKey));
  return key ? { ok: true, key } : { ok: false, reason: 'invalid' };
}

export function hasScope(key: KeyRecord, scope: Scope): boolean {
  return key.scopes.includes(scope);
}
