/**
 * The login service (spec 4.9): what the unit file or LaunchAgent says, where it lives, and which commands the
 * service manager is asked to run. Pure: actors/service/service.ts does the files and runs the commands.
 *
 * - Linux: a systemd user unit `app.svc.listener.service` in `~/.config/systemd/user/` (`$XDG_CONFIG_HOME`),
 *   wanted by `default.target`, so it starts when the person's user manager starts (at login; at boot only with
 *   lingering, which svc mentions and never changes).
 * - macOS: a LaunchAgent `app.svc.listener` in `~/Library/LaunchAgents/`, `RunAtLoad` and `KeepAlive`.
 * Both run `<node> <svc bin> listener` with absolute paths, a PATH that reaches tmux, and a UTF-8 `LANG`; installing
 * again writes the file anew, so it points at the node and svc that ran the install.
 */
import { dirname, join } from 'node:path';
import { nodeFlagsFor } from '../daemon/nodeFlags.js';

export const SERVICE_LABEL = 'app.svc.listener';
export const SYSTEMD_UNIT = `${SERVICE_LABEL}.service`;

export type ServicePlatform = 'systemd' | 'launchd';

export interface ServiceFacts {
  platform: ServicePlatform;
  home: string;
  XDG_CONFIG_HOME?: string | undefined;
  /** Absolute path of the node that runs svc, and of svc's bin script. */
  node: string;
  svcBin: string;
  /** Where tmux is (from PATH at install time), if found. */
  tmux: string | null;
  /** The installing shell's LANG. */
  lang: string | undefined;
  uid: number;
  /**
   * What the service runs after svc's bin: `listener` (default), or `up` and its flags (`svc up --install-service`:
   * relay, listener and web app). One login service per computer either way: installing one replaces the other.
   */
  command?: readonly string[];
}

/** The words after svc's bin in the service's command line. */
export const serviceCommand = (f: Pick<ServiceFacts, 'command'>): readonly string[] => f.command ?? ['listener'];

/** What each kind of login service is, for its description. */
function serviceDescription(f: Pick<ServiceFacts, 'command'>): string {
  return serviceCommand(f)[0] === 'up'
    ? 'svc up: the relay, the listener and the web app on this computer'
    : 'svc listener: your coding agents, reachable from your phone';
}

export function servicePlatform(platform: string): ServicePlatform | null {
  return platform === 'linux' ? 'systemd' : platform === 'darwin' ? 'launchd' : null;
}

export function serviceFile(f: Pick<ServiceFacts, 'platform' | 'home' | 'XDG_CONFIG_HOME'>): string {
  if (f.platform === 'launchd') return join(f.home, 'Library', 'LaunchAgents', `${SERVICE_LABEL}.plist`);
  return join(f.XDG_CONFIG_HOME || join(f.home, '.config'), 'systemd', 'user', SYSTEMD_UNIT);
}

/** A PATH for the service: node's and tmux's folders first, then the system's usual ones, each once. */
export function servicePath(f: Pick<ServiceFacts, 'platform' | 'node' | 'tmux'>): string {
  const usual =
    f.platform === 'launchd'
      ? ['/opt/homebrew/bin', '/usr/local/bin', '/usr/bin', '/bin', '/usr/sbin', '/sbin']
      : ['/usr/local/bin', '/usr/bin', '/bin'];
  const dirs = [dirname(f.node), ...(f.tmux ? [dirname(f.tmux)] : []), ...usual];
  return [...new Set(dirs)].join(':');
}

/** The installing shell's LANG when it is UTF-8, else the system's UTF-8 default. */
export function serviceLang(f: Pick<ServiceFacts, 'platform' | 'lang'>): string {
  if (f.lang && /utf-?8/i.test(f.lang)) return f.lang;
  return f.platform === 'launchd' ? 'en_US.UTF-8' : 'C.UTF-8';
}

/** A word for systemd's ExecStart and Environment lines: quoted, with `\`, `"`, `%` and `$` escaped. */
export function systemdWord(word: string): string {
  return `"${word.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/%/g, '%%').replace(/\$/g, '$$$$')}"`;
}

/** A flag or word as is when systemd reads it so (`listener`, `--port`, `8443`), else quoted as `systemdWord`. */
export function systemdArg(word: string): string {
  return /^[A-Za-z0-9_@+=:,./-]+$/.test(word) ? word : systemdWord(word);
}

export class ServiceInputError extends Error {}

/** Paths written into the file: absolute, and without line breaks or other control characters. */
function checkPath(what: string, p: string): void {
  if (!p.startsWith('/') || /[\u0000-\u001f\u007f]/.test(p))
    throw new ServiceInputError(`${what} must be an absolute path without control characters: ${JSON.stringify(p)}`);
}

function checkWords(words: readonly string[]): void {
  for (const w of words)
    if (/[\u0000-\u001f\u007f]/.test(w)) throw new ServiceInputError(`a control character in ${JSON.stringify(w)}`);
}

export function systemdUnit(f: ServiceFacts): string {
  checkPath('node', f.node);
  checkPath('svc', f.svcBin);
  const words = serviceCommand(f);
  checkWords(words);
  const env = (k: string, v: string) => `Environment=${systemdWord(`${k}=${v}`)}`;
  return [
    `# Written by \`svc ${words[0]} --install-service\`; \`svc listener --uninstall-service\` removes it.`,
    '[Unit]',
    `Description=${serviceDescription(f)}`,
    'After=network-online.target',
    'Wants=network-online.target',
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${[systemdWord(f.node), ...nodeFlagsFor(words), systemdWord(f.svcBin), ...words.map(systemdArg)].join(' ')}`,
    env('PATH', servicePath(f)),
    env('LANG', serviceLang(f)),
    // the listener writes ~/.svc/listener.log itself; the journal keeps what it cannot
    env('SVC_LISTENER_BACKGROUND', '1'),
    'Restart=on-failure',
    'RestartSec=5',
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ].join('\n');
}

const xml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

export function launchdPlist(f: ServiceFacts): string {
  checkPath('node', f.node);
  checkPath('svc', f.svcBin);
  const words = serviceCommand(f);
  checkWords(words);
  const str = (s: string) => `<string>${xml(s)}</string>`;
  const log = join(f.home, '.svc', words[0] === 'up' ? 'up.log' : 'listener.log');
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    // (an XML comment may not hold two hyphens in a row: no flags spelled out here)
    '<!-- Written by svc (listener, install-service); svc uninstall removes it. -->',
    '<plist version="1.0">',
    '<dict>',
    `  <key>Label</key>${str(SERVICE_LABEL)}`,
    `  <key>ProgramArguments</key><array>${[f.node, ...nodeFlagsFor(words), f.svcBin, ...words].map(str).join('')}</array>`,
    '  <key>EnvironmentVariables</key><dict>',
    `    <key>PATH</key>${str(servicePath(f))}`,
    `    <key>LANG</key>${str(serviceLang(f))}`,
    `    <key>SVC_LISTENER_BACKGROUND</key>${str('1')}`,
    '  </dict>',
    '  <key>RunAtLoad</key><true/>',
    '  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>',
    '  <key>ProcessType</key><string>Background</string>',
    `  <key>StandardErrorPath</key>${str(log)}`,
    '</dict>',
    '</plist>',
    '',
  ].join('\n');
}

export function serviceText(f: ServiceFacts): string {
  return f.platform === 'launchd' ? launchdPlist(f) : systemdUnit(f);
}

/** The service manager's commands for each action (argv, the program first). */
export function serviceCommands(
  f: Pick<ServiceFacts, 'platform' | 'uid' | 'home' | 'XDG_CONFIG_HOME'>,
  action: 'install' | 'uninstall' | 'status' | 'stop' | 'restart',
): string[][] {
  if (f.platform === 'systemd') {
    const sc = (...args: string[]) => ['systemctl', '--user', ...args];
    switch (action) {
      case 'install':
        return [sc('daemon-reload'), sc('enable', SYSTEMD_UNIT), sc('restart', SYSTEMD_UNIT)];
      case 'uninstall':
        return [sc('disable', '--now', SYSTEMD_UNIT)];
      case 'status':
        return [sc('is-active', SYSTEMD_UNIT)];
      case 'stop':
        return [sc('stop', SYSTEMD_UNIT)];
      case 'restart':
        return [sc('restart', SYSTEMD_UNIT)];
    }
  }
  const domain = `gui/${f.uid}`;
  const target = `${domain}/${SERVICE_LABEL}`;
  switch (action) {
    case 'install':
      // bootout first: a LaunchAgent loaded before keeps its old file until it is booted out
      return [
        ['launchctl', 'bootout', target],
        ['launchctl', 'bootstrap', domain, serviceFile({ ...f, platform: 'launchd' })],
      ];
    case 'uninstall':
      return [['launchctl', 'bootout', target]];
    case 'status':
      return [['launchctl', 'print', target]];
    case 'stop':
      return [['launchctl', 'kill', 'SIGTERM', target]];
    case 'restart':
      return [['launchctl', 'kickstart', '-k', target]];
  }
}

/** Commands whose failure does not count (booting out a LaunchAgent that was not loaded). */
export function mayFail(argv: readonly string[]): boolean {
  return argv[0] === 'launchctl' && argv[1] === 'bootout';
}

/** The line about lingering (spec 4.9): said, never changed. */
export function lingerLine(linger: 'yes' | 'no' | 'unknown', user: string): string | null {
  if (linger === 'yes') return null;
  return `the service starts when you log in; to have it run without a login (a server), run: loginctl enable-linger ${user}`;
}
