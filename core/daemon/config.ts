/**
 * Config precedence (spec 2.5, 2.7, 4.5): pure. actors/daemon/configFile.ts reads and checks the file,
 * this module decides what each value is and where it came from.
 */
import { z } from 'zod/v3';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8787';

export const ConfigFile = z.object({
  apiKey: z.string().optional(),
  hookId: z.string().optional(),
  baseUrl: z.string().optional(),
  wsUrl: z.string().optional(),
  httpsProxy: z.string().optional(),
  httpProxy: z.string().optional(),
  noProxy: z.string().optional(),
  keepAwake: z.boolean().optional(),
  turnHistory: z.boolean().optional(),
});
export type ConfigFile = z.infer<typeof ConfigFile>;

/** What reading the file found; anything but `ok` means its contents are not used. */
export type FileReading =
  | { status: 'ok'; data: ConfigFile }
  | { status: 'missing' }
  | { status: 'foreign_owner'; owner: number }
  /** Readable or writable by anyone but its owner (it holds the API key), like device-key.json. */
  | { status: 'open_to_others'; mode: number }
  | { status: 'invalid'; reason: string };

export type Source = 'file' | 'env' | 'flag' | 'default' | 'derived';

export interface Resolved<T> {
  value: T;
  source: Source;
}

export interface ResolvedConfig {
  apiKey: Resolved<string | null>;
  hookId: Resolved<string | null>;
  baseUrl: Resolved<string>;
  wsUrl: Resolved<string>;
  keepAwake: Resolved<boolean>;
  turnHistory: Resolved<boolean>;
  warnings: string[];
}

/** `http://host:port/x` → `ws://host:port/ws`; `https` → `wss`. */
export function wsUrlFor(baseUrl: string): string {
  const url = new URL(baseUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.pathname = '/ws';
  url.search = '';
  url.hash = '';
  return url.toString();
}

export function resolveConfig(
  file: FileReading,
  env: Record<string, string | undefined>,
  flags: { wsUrl?: string; keepAwake?: boolean; turnHistory?: boolean },
  path: string,
): ResolvedConfig {
  const warnings: string[] = [];
  if (file.status === 'foreign_owner') warnings.push(`ignoring ${path}: owned by uid ${file.owner}, not by you`);
  if (file.status === 'open_to_others') {
    const what = file.mode & 0o002 ? 'writable by anyone' : 'open to others';
    warnings.push(`ignoring ${path}: ${what} (mode ${file.mode.toString(8)}); chmod 600 it`);
  }
  if (file.status === 'invalid') warnings.push(`ignoring ${path}: ${file.reason}`);
  const data: ConfigFile = file.status === 'ok' ? file.data : {};

  const baseUrl: Resolved<string> = data.baseUrl
    ? { value: data.baseUrl, source: 'file' }
    : { value: DEFAULT_BASE_URL, source: 'default' };

  // Spec 2.7: SVC_WS_URL is read only when the file has no wsUrl; --ws-url overrides both for one run.
  let wsUrl: Resolved<string>;
  if (flags.wsUrl) wsUrl = { value: flags.wsUrl, source: 'flag' };
  else if (data.wsUrl) wsUrl = { value: data.wsUrl, source: 'file' };
  else if (env.SVC_WS_URL) {
    wsUrl = { value: env.SVC_WS_URL, source: 'env' };
    warnings.push('SVC_WS_URL is deprecated: put wsUrl in ~/.svc/config.json (svc login writes it)');
  } else wsUrl = { value: wsUrlFor(baseUrl.value), source: baseUrl.source === 'file' ? 'derived' : 'default' };

  const flagOr = (flag: boolean | undefined, fileValue: boolean | undefined): Resolved<boolean> =>
    flag === false
      ? { value: false, source: 'flag' }
      : fileValue !== undefined
        ? { value: fileValue, source: 'file' }
        : { value: true, source: 'default' };

  return {
    apiKey: data.apiKey ? { value: data.apiKey, source: 'file' } : { value: null, source: 'default' },
    hookId: data.hookId ? { value: data.hookId, source: 'file' } : { value: null, source: 'default' },
    baseUrl,
    wsUrl,
    keepAwake: flagOr(flags.keepAwake, data.keepAwake),
    turnHistory: flagOr(flags.turnHistory, data.turnHistory),
    warnings,
  };
}
