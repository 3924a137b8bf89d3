/**
 * Reading and writing ~/.svc/config.json (spec 2.5, 5.3). The file is read once at start; one owned by another
 * user or open to anyone but its owner (spec: writable by anyone; we refuse readable too, since it holds the API
 * key) is not used (core/daemon/config.ts turns that into a warning).
 */
import { readFileSync, statSync } from 'node:fs';
import type { ConfigFile, FileReading } from '../../core/daemon/config.js';
import { ConfigFile as ConfigFileSchema, resolveConfig } from '../../core/daemon/config.js';
import { ensurePrivateDir, writeFileAtomic } from '../files.js';
import { useProxySettings } from '../relay/proxy.js';

export function readConfigFile(path: string, uid = process.getuid?.() ?? 0): FileReading {
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch {
    return { status: 'missing' };
  }
  if (st.uid !== uid) return { status: 'foreign_owner', owner: st.uid };
  // It holds the API key: any group or other bit is refused, as for device-key.json (actors/devices/deviceKey.ts).
  if (st.mode & 0o077) return { status: 'open_to_others', mode: st.mode & 0o777 };
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return { status: 'invalid', reason: 'not valid JSON' };
  }
  const parsed = ConfigFileSchema.safeParse(data);
  if (!parsed.success) return { status: 'invalid', reason: parsed.error.issues[0]?.message ?? 'unexpected shape' };
  // its proxy keys (spec 2.5) apply to this process's relay connections from now on (actors/relay/proxy.ts)
  useProxySettings(parsed.data);
  return { status: 'ok', data: parsed.data };
}

/** Merge `patch` into the file (keeping keys svc does not know), ~/.svc 0700 and the file 0600. */
export function writeConfigFile(dir: string, path: string, patch: Partial<ConfigFile>): void {
  ensurePrivateDir(dir);
  let existing: Record<string, unknown> = {};
  try {
    existing = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch {
    existing = {};
  }
  writeFileAtomic(path, `${JSON.stringify({ ...existing, ...patch }, null, 2)}\n`, 0o600);
}

/** The key and relay of a logged-in computer, for the commands that need them; a clear error otherwise. */
export function loggedIn(path: string): { apiKey: string; baseUrl: string } {
  const config = readConfigFile(path);
  if (config.status === 'ok' && config.data.apiKey && config.data.baseUrl) {
    return { apiKey: config.data.apiKey, baseUrl: config.data.baseUrl };
  }
  const why = resolveConfig(config, {}, {}, path).warnings[0];
  if (why) throw new Error(`${why}; until then this computer is not logged in`);
  throw new Error('not logged in: run `svc login --url <relay> --key <apiKey>` (or `svc up`) first');
}
