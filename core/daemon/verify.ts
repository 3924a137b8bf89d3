/**
 * `svc verify` (spec 4.5): what is there, what is missing, and where each value came from. Pure: the command
 * gathers the facts (tmux on PATH, the config file, the daemon) and prints what `buildVerifyReport` says.
 */

import { printable } from '../printable.js';
import { ago } from '../protocol/refusalText.js';
import { reachOf, stageOf } from '../relay/reach.js';
import type { FileReading, ResolvedConfig, Source } from './config.js';
import { type DaemonAge, daemonAge } from './daemon.js';

export interface VerifyFacts {
  cliVersion: string;
  tmux: { path: string | null; version: string | null };
  /** The tmux server the wrapper uses (core/sessions/launch.ts `wrapperSocket`). */
  socket: { path: string; source: 'SVC_TMUX_SOCKET' | 'TMUX' | 'default' };
  configPath: string;
  configReading: FileReading['status'];
  config: ResolvedConfig;
  listener: {
    pid: number;
    /** How it was found: its control socket answered, else the PID file, else the process list (spec 9.4). */
    via: 'socket' | 'pidfile' | 'ps';
    /** `up` when it runs inside `svc up`; absent or `listener` for the daemon. */
    host?: 'listener' | 'up';
    /** `listener.version`, null when missing. */
    version: string | null;
  } | null;
  pidFile: string;
  /** `~/.svc/listener.sock`. */
  controlSocket?: string;
  versionFile: string;
  /** The login service; `not installed` until svc installs one. */
  service: string;
}

/** Where a value came from, as shown: `file <path>`, `environment SVC_WS_URL`, `flag --ws-url`, `default`, … */
export interface Origin {
  source: Source | 'PATH' | 'process list' | 'pid file' | 'control socket' | 'none';
  /** The file or variable. */
  where?: string;
}

export interface VerifyReport {
  ok: boolean;
  version: string;
  tmux: { ok: boolean; path: string | null; version: string | null; from: Origin };
  socket: { path: string; from: Origin };
  config: { path: string; status: FileReading['status']; warnings: string[] };
  login: { ok: boolean; hookId: string | null; apiKey: 'set' | 'missing'; from: Origin };
  listener: {
    ok: boolean;
    running: boolean;
    pid: number | null;
    version: string | null;
    age: DaemonAge | null;
    /** `up` when it runs inside `svc up`. */
    host: 'listener' | 'up' | null;
    from: Origin;
  };
  service: { state: string };
  wsUrl: { value: string; stage: string | null; from: Origin };
  baseUrl: { value: string; from: Origin };
  /** One line per failing check, each saying what to do. */
  problems: string[];
}

/**
 * Spec 2.5: `baseUrl` (the HTTP API: device list, pushes) and `wsUrl` (the socket) name one relay, on one stage.
 * Two stages would seal for the devices one relay lists while the phones are on the other. Null when they agree
 * (or either is not a URL: that is said on its own); else the line that says what to do.
 */
export function stageMismatch(baseUrl: string, wsUrl: string): string | null {
  const http = stageOf(baseUrl);
  const ws = stageOf(wsUrl);
  if (http === null || ws === null || http === ws) return null;
  return `baseUrl ${baseUrl} (stage ${http}) and wsUrl ${wsUrl} (stage ${ws}) are not the same relay: run \`svc login --url <relay>\` again, or make them agree in the config`;
}

function configOrigin(source: Source, path: string): Origin {
  if (source === 'file') return { source, where: path };
  if (source === 'env') return { source, where: 'SVC_WS_URL' };
  if (source === 'flag') return { source, where: '--ws-url' };
  if (source === 'derived') return { source, where: `baseUrl in ${path}` };
  return { source };
}

export function buildVerifyReport(f: VerifyFacts): VerifyReport {
  const problems: string[] = [];

  const tmuxOk = f.tmux.path !== null;
  if (!tmuxOk) problems.push('tmux is not on PATH: install it (apt-get install tmux, brew install tmux)');

  const configOk = f.configReading === 'ok' || f.configReading === 'missing';
  if (!configOk)
    problems.push(
      `${f.config.warnings[0] ?? `ignoring ${f.configPath}`}: make it yours and chmod 600, or run \`svc login\` again`,
    );

  const apiKey = f.config.apiKey.value;
  const hookId = f.config.hookId.value;
  const loginOk = Boolean(apiKey && hookId);
  if (!loginOk) problems.push('not logged in: run `svc login --url <relay> --key <apiKey>` (or `svc up`)');

  const age = f.listener ? daemonAge(f.listener.version, f.cliVersion) : null;
  let listenerOk = f.listener !== null;
  if (!f.listener)
    problems.push(
      'the listener is not running: start it with `svc listener --restart` (or any `svc cc`), or `svc listener`',
    );
  else if (age === 'older') {
    listenerOk = false;
    problems.push(
      f.listener.host === 'up'
        ? `listener ${f.listener.version} (inside \`svc up\`) is older than this CLI (${f.cliVersion}): restart \`svc up\``
        : `listener ${f.listener.version} is older than this CLI (${f.cliVersion}): run \`svc listener --restart\``,
    );
  }

  const stage = stageOf(f.config.wsUrl.value);
  if (stage === null) problems.push(`wsUrl ${f.config.wsUrl.value} is not a URL: run \`svc login\` again`);
  const mismatch = stageMismatch(f.config.baseUrl.value, f.config.wsUrl.value);
  if (mismatch) problems.push(mismatch);

  return {
    ok: problems.length === 0,
    version: f.cliVersion,
    tmux: { ok: tmuxOk, path: f.tmux.path, version: f.tmux.version, from: { source: tmuxOk ? 'PATH' : 'none' } },
    socket: {
      path: f.socket.path,
      from: f.socket.source === 'default' ? { source: 'default' } : { source: 'env', where: f.socket.source },
    },
    config: { path: f.configPath, status: f.configReading, warnings: f.config.warnings },
    login: {
      ok: loginOk,
      hookId,
      apiKey: apiKey ? 'set' : 'missing',
      from: configOrigin(f.config.hookId.source, f.configPath),
    },
    listener: {
      ok: listenerOk,
      running: f.listener !== null,
      pid: f.listener?.pid ?? null,
      version: f.listener?.version ?? null,
      age,
      host: f.listener ? (f.listener.host ?? 'listener') : null,
      from: f.listener
        ? f.listener.via === 'socket'
          ? { source: 'control socket', ...(f.controlSocket ? { where: f.controlSocket } : {}) }
          : f.listener.via === 'pidfile'
            ? { source: 'pid file', where: f.pidFile }
            : { source: 'process list', where: 'ps' }
        : { source: 'none' },
    },
    service: { state: f.service },
    wsUrl: { value: f.config.wsUrl.value, stage, from: configOrigin(f.config.wsUrl.source, f.configPath) },
    baseUrl: { value: f.config.baseUrl.value, from: configOrigin(f.config.baseUrl.source, f.configPath) },
    problems,
  };
}

const from = (o: Origin): string => (o.where ? `${o.source} ${o.where}` : o.source);

/** A phone the relay lists for the account (`GET /devices`, kind `app`). */
export interface PhoneFact {
  name: string;
  /** Null: not seen since it paired; absent: the relay does not say (an older relay). */
  lastSeenAt?: number | null;
  /** Null: the relay does not say (an older relay). */
  notifications: boolean | null;
  /** The address its app uses; null: unknown (paired before the relay kept it). */
  origin: string | null;
}

/** The phones of the account, or why they could not be had; null when not asked (not logged in). */
export type PhonesFact = { phones: PhoneFact[] } | { error: string } | null;

/**
 * What `svc verify` says of the phones: how many are paired, then one line each (name, when last seen, whether
 * notifications are on, the address its app uses and what that address cannot do). None paired, or none with
 * notifications, is said, and what to do; neither is a failure (svc works from the command line without a phone).
 */
export function formatPhoneLines(p: PhonesFact, now: number): string[] {
  const head = (mark: string, text: string) => `${mark}  ${'phones'.padEnd(9)} ${text}`;
  if (p === null) return [];
  if ('error' in p) return [head('--  ', `the relay did not list them: ${p.error}`)];
  if (p.phones.length === 0) return [head('--  ', 'none paired: run `svc pair` and open its link on the phone')];
  const lines = [head('ok  ', `${p.phones.length} paired`)];
  for (const phone of p.phones) {
    const seen =
      phone.lastSeenAt === undefined
        ? 'last seen unknown'
        : phone.lastSeenAt === null
          ? 'not seen since it paired'
          : `seen ${ago(now - phone.lastSeenAt)}`;
    const notify =
      phone.notifications === null ? 'notifications unknown' : `notifications ${phone.notifications ? 'on' : 'off'}`;
    let where = '';
    if (phone.origin) {
      const reach = reachOf(phone.origin);
      where =
        reach === 'https'
          ? `; at ${phone.origin}`
          : reach === 'loopback'
            ? `; at ${phone.origin} (this computer only)`
            : `; at ${phone.origin} (not https: no installed app, no notifications)`;
    }
    lines.push(`${' '.repeat(16)}${printable(phone.name)}: ${seen}; ${notify}${where}`);
  }
  if (p.phones.every((x) => x.notifications === false))
    lines.push(head('--  ', 'no phone has notifications on: turn them on in the app (Settings, Notifications)'));
  return lines;
}

/** The last line: everything there, and whether a phone is paired. */
export function closingLine(r: VerifyReport, p: PhonesFact): string {
  if (!r.ok) return `${r.problems.length} problem(s): see the FAIL lines`;
  if (p && 'phones' in p && p.phones.length === 0)
    return 'everything svc needs on this computer is here; no phone is paired yet (svc pair)';
  return 'everything svc needs is here';
}

/** The human report: one line per check, `ok` or `FAIL`; a failing line says what to do. */
export function formatVerifyReport(r: VerifyReport, phones: PhonesFact = null, now = Date.now()): string[] {
  const line = (ok: boolean, what: string, text: string) => `${ok ? 'ok  ' : 'FAIL'}  ${what.padEnd(9)} ${text}`;
  const find = (prefix: string) => r.problems.find((p) => p.startsWith(prefix));
  const l = r.listener;
  let listenerText: string;
  if (!l.running) listenerText = find('the listener') ?? 'not running';
  else {
    const versionText =
      l.age === 'older'
        ? (find('listener') ?? '')
        : `v${l.version ?? '?'} (CLI v${r.version}${l.age === 'newer' ? '; the daemon is newer: left alone' : l.age === 'unknown' ? `; ${l.version === null ? 'no listener.version' : 'version not semver'}` : ''})`;
    listenerText = `running${l.host === 'up' ? ' inside `svc up`' : ''}, pid ${l.pid}, ${versionText} (from ${from(l.from)})`;
  }
  const lines = [
    `svc ${r.version}`,
    line(
      r.tmux.ok,
      'tmux',
      r.tmux.ok ? `${r.tmux.path} (${r.tmux.version ?? 'version unknown'}; from PATH)` : (find('tmux') ?? ''),
    ),
    line(true, 'socket', `${r.socket.path} (from ${from(r.socket.from)})`),
    line(
      r.config.status === 'ok' || r.config.status === 'missing',
      'config',
      r.config.status === 'ok' || r.config.status === 'missing'
        ? `${r.config.path} (${r.config.status})`
        : (find('ignoring') ?? r.config.status),
    ),
    line(
      r.login.ok,
      'login',
      r.login.ok ? `computer ${r.login.hookId} (from ${from(r.login.from)})` : (find('not logged in') ?? ''),
    ),
    line(l.ok, 'listener', listenerText),
    line(true, 'service', r.service.state),
    line(
      r.wsUrl.stage !== null,
      'relay',
      r.wsUrl.stage === null
        ? (find('wsUrl') ?? '')
        : `${r.wsUrl.value} (stage ${r.wsUrl.stage}; from ${from(r.wsUrl.from)})`,
    ),
    line(
      !find('baseUrl'),
      'base url',
      find('baseUrl') ?? `${r.baseUrl.value} (same stage; from ${from(r.baseUrl.from)})`,
    ),
  ];
  lines.push(...formatPhoneLines(phones, now), closingLine(r, phones));
  return lines;
}
