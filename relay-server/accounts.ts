/**
 * Creating accounts and their API keys. The plain key is returned once, here, and never stored.
 */
import { SCOPES, type Scope } from '../core/protocol/index.js';
import { generateApiKey, hashApiKey, newAccountId, newKeyId } from './auth.js';
import type { Store } from './store.js';

export interface CreatedKey {
  keyId: string;
  apiKey: string;
  scopes: Scope[];
}

export interface CreatedAccount extends CreatedKey {
  accountId: string;
}

/** A new account with one key holding every scope. */
export async function createAccount(store: Store, now = Date.now()): Promise<CreatedAccount> {
  const accountId = newAccountId();
  await store.createAccount(accountId, now);
  const key = await createApiKey(store, accountId, [...SCOPES], now);
  return { accountId, ...key };
}

/** A further key for an existing account. Throws when the account does not exist or no scope is given. */
export async function createApiKey(
  store: Store,
  accountId: string,
  scopes: readonly Scope[],
  now = Date.now(),
): Promise<CreatedKey> {
  if (scopes.length === 0) throw new Error('a key needs at least one scope');
  if (!(await store.accountExists(accountId))) throw new Error(`no account ${accountId}`);
  const apiKey = generateApiKey();
  const keyId = newKeyId();
  const unique = [...new Set(scopes)];
  await store.createKey({ keyId, accountId, scopes: unique, keyHash: hashApiKey(apiKey), now });
  return { keyId, apiKey, scopes: unique };
}
