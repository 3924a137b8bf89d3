/**
 * The login service's IO (spec 4.9; the text and commands are core/service/service.ts): write or remove the unit
 * file or LaunchAgent, and ask systemctl or launchctl. Every command's outcome is returned as a line; nothing here
 * changes lingering.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { nodeFlagsFor } from '../../core/daemon/nodeFlags.js';
import {
  RELAY_STATE_DIR,
  RELAY_UNIT,
  RELAY_UNIT_COMMANDS,
  RELAY_UNIT_DIR,
  type RelayUnitFacts,
  relaySystemUnit,
  unreadableFor,
} from '../../core/service/relayUnit.js';
import {
  lingerLine,
  mayFail,
  type ServiceFacts,
  serviceCommand,
  serviceCommands,
  serviceFile,
  servicePlatform,
  serviceText,
} from '../../core/service/service.js';
import { replaceFile } from '../files.js';
import { onPath } from '../which.js';

export interface ServiceOutcome {
  ok: boolean;
  lines: string[];
}

/** What the service is made of on this computer, or null where there is no service manager svc knows. */
export function serviceFacts(
  home: string,
  entry: { node: string; svcBin: string },
  env: NodeJS.ProcessEnv = process.env,
): ServiceFacts | null {
  const platform = servicePlatform(process.platform);
  if (!platform) return null;
  return {
    platform,
    home,
    XDG_CONFIG_HOME: env.XDG_CONFIG_HOME,
    node: entry.node,
    svcBin: entry.svcBin,
    tmux: onPath('tmux', env.PATH),
    lang: env.LANG,
    uid: process.getuid?.() ?? 0,
  };
}

function run(argv: readonly string[]): { ok: boolean; out: string } {
  const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 30_000 });
  if (r.error) return { ok: false, out: r.error.message };
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}`.trim() };
}

function runAll(commands: string[][], lines: string[]): boolean {
  let ok = true;
  for (const argv of commands) {
    const r = run(argv);
    if (r.ok || mayFail(argv)) continue;
    ok = false;
    lines.push(`${argv.join(' ')} failed${r.out ? `: ${r.out.split('\n')[0]}` : ''}`);
  }
  return ok;
}

export const isServiceInstalled = (f: ServiceFacts) => existsSync(serviceFile(f));

export function installService(f: ServiceFacts): ServiceOutcome {
  const file = serviceFile(f);
  const text = serviceText(f);
  const lines: string[] = [];
  const again = existsSync(file);
  const same = again && readFileSync(file, 'utf8') === text;
  mkdirSync(dirname(file), { recursive: true });
  // the unit folder is the person's (~/.config/systemd/user): its mode is left alone; the file is 0644 as units are
  if (!same) replaceFile(file, text, 0o644);
  const ok = runAll(serviceCommands(f, 'install'), lines);
  lines.unshift(
    `login service ${again ? (same ? 'already installed' : 'repointed') : 'installed'}: ${file}` +
      ` (runs ${[f.node, ...nodeFlagsFor(serviceCommand(f)), f.svcBin, ...serviceCommand(f)].join(' ')})`,
  );
  if (f.platform === 'systemd') {
    const user = process.env.USER || process.env.LOGNAME || String(f.uid);
    const linger = run(['loginctl', 'show-user', user, '--property=Linger', '--value']);
    const said = lingerLine(linger.ok ? (linger.out === 'yes' ? 'yes' : 'no') : 'unknown', user);
    if (said) lines.push(said);
  }
  return { ok, lines };
}

export function uninstallService(f: ServiceFacts): ServiceOutcome {
  const file = serviceFile(f);
  if (!existsSync(file)) return { ok: true, lines: ['login service: not installed, nothing to remove'] };
  const lines: string[] = [];
  const ok = runAll(serviceCommands(f, 'uninstall'), lines);
  rmSync(file, { force: true });
  if (f.platform === 'systemd') runAll([['systemctl', '--user', 'daemon-reload']], lines);
  lines.unshift(`login service removed: ${file}`);
  return { ok, lines };
}

/** `installed, active` / `installed, inactive` / `not installed`, as svc verify and --service-status say it. */
export function serviceState(f: ServiceFacts | null): string {
  if (!f) return 'not available on this system';
  if (!isServiceInstalled(f)) return 'not installed';
  const [status] = serviceCommands(f, 'status');
  const r = run(status!);
  if (f.platform === 'systemd')
    return `installed (${serviceFile(f)}), ${r.out.split('\n')[0] || (r.ok ? 'active' : 'inactive')}`;
  return `installed (${serviceFile(f)}), ${r.ok ? 'loaded' : 'not loaded'}`;
}

/** `svc listener --stop / --restart` when the service is installed: the service manager is asked. */
export function serviceAction(f: ServiceFacts, action: 'stop' | 'restart'): ServiceOutcome {
  const lines: string[] = [];
  const ok = runAll(serviceCommands(f, action), lines);
  lines.unshift(`${action === 'stop' ? 'stopped' : 'restarted'} through the login service (${serviceFile(f)})`);
  return { ok, lines };
}

/**
 * `svc relay serve --install-service`: the system unit written into `dir` (its mode left alone), then systemd asked
 * to start it now and at boot. `notes` are said after the first line.
 */
export function installRelayUnit(f: RelayUnitFacts, notes: readonly string[], dir = RELAY_UNIT_DIR): ServiceOutcome {
  const file = join(dir, RELAY_UNIT);
  replaceFile(file, relaySystemUnit(f), 0o644);
  const lines = [`relay service installed: ${file} (runs as ${f.user}, data in ${RELAY_STATE_DIR})`, ...notes];
  const ok = runAll(
    RELAY_UNIT_COMMANDS.map((argv) => [...argv]),
    lines,
  );
  if (ok) lines.push(`started: systemctl status ${RELAY_UNIT}; its log: journalctl -u ${RELAY_UNIT}`);
  return { ok, lines };
}

/** A line for each certificate file the unit's account likely cannot read (certbot keeps its keys root-only). */
export function unreadableNotes(files: { certPath: string; keyPath: string }, user: string): string[] {
  const uid = Number(process.env.SUDO_UID ?? process.getuid?.());
  const gid = Number(process.env.SUDO_GID ?? process.getgid?.());
  return [files.certPath, files.keyPath].flatMap((file) => {
    const full = resolve(file);
    const chain = full
      .split('/')
      .map((_, i, parts) => parts.slice(0, i + 1).join('/') || '/')
      .map((path) => {
        const st = statSync(path);
        return { path, uid: st.uid, gid: st.gid, mode: st.mode & 0o777, dir: st.isDirectory() };
      });
    const blocked = unreadableFor({ uid, gid }, chain);
    return blocked
      ? [
          `the service runs as ${user}, who probably cannot read ${full} (${blocked} is not open to them): copy the certificate and key where ${user} can read them (certbot: a deploy hook), or give ${user}'s group read access`,
        ]
      : [];
  });
}
