/** What the `svc relay` commands share: the data directory and the store they open. */
import { homedir } from 'node:os';
import { svcPaths } from '../../../core/daemon/paths.js';
import { openPostgresStore } from '../../../relay-server/postgresStore.js';
import { RedisBus } from '../../../relay-server/redisBus.js';
import { openSqliteStore } from '../../../relay-server/sqliteStore.js';
import type { Store } from '../../../relay-server/store.js';

/** Where `svc relay` keeps relay.db unless --data says otherwise (~/.svc/relay, as `svc up` uses). */
export function defaultRelayDataDir(): string {
  return svcPaths(homedir()).relayData;
}

export const dataArg = {
  type: 'string',
  description: 'Directory holding relay.db (default ~/.svc/relay)',
  valueHint: 'DIR',
} as const;

export const storeArg = {
  type: 'string',
  description: 'postgres://… to keep the relay in Postgres (several relays can share it); default: relay.db in --data',
  valueHint: 'URL',
} as const;

/** `--store` (else `SVC_RELAY_STORE`): a Postgres URL, or nothing for the embedded SQLite file of `--data`. */
export async function openRelayStore(
  args: { data?: string | undefined; store?: string | undefined },
  onIdleError?: (err: Error) => void,
): Promise<Store> {
  const url = args.store ?? process.env.SVC_RELAY_STORE;
  if (url === undefined || url === '') return openSqliteStore(args.data ?? defaultRelayDataDir());
  if (!/^postgres(ql)?:\/\//.test(url))
    throw new Error(`--store ${url.split('@').pop()}: a postgres:// URL (or leave it out for SQLite)`);
  return openPostgresStore(url, onIdleError);
}

export const busArg = {
  type: 'string',
  description: 'redis://… so several relays (on one --store) hand each other their events; default: in-process',
  valueHint: 'URL',
} as const;

/** `--bus` (else `SVC_RELAY_BUS`): a Redis bus, or undefined for the in-process one. */
export async function openRelayBus(
  args: { bus?: string | undefined },
  onError: (err: unknown) => void,
): Promise<RedisBus | undefined> {
  const url = args.bus ?? process.env.SVC_RELAY_BUS;
  if (url === undefined || url === '') return undefined;
  if (!/^rediss?:\/\//.test(url)) throw new Error(`--bus ${url.split('@').pop()}: a redis:// URL (or leave it out)`);
  return RedisBus.open(url, onError);
}
