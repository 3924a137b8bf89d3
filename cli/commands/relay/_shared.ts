/** What the `svc relay` commands share: the data directory argument. */
import { homedir } from 'node:os';
import { svcPaths } from '../../../core/daemon/paths.js';

/** Where `svc relay` keeps relay.db unless --data says otherwise (~/.svc/relay, as `svc up` uses). */
export function defaultRelayDataDir(): string {
  return svcPaths(homedir()).relayData;
}

export const dataArg = {
  type: 'string',
  description: 'Directory holding relay.db (default ~/.svc/relay)',
  valueHint: 'DIR',
} as const;
