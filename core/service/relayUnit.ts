/**
 * `svc relay serve --install-service` (issue 29): the relay on a server as a systemd *system* unit, started at boot,
 * allowed to bind ports below 1024 (443, 80) without running as root (`AmbientCapabilities=CAP_NET_BIND_SERVICE`),
 * as the person who installed it (`User=`, from `sudo`'s SUDO_USER), its data in `/var/lib/svc-relay`
 * (`StateDirectory=`, owned by that user), the rest of the system read-only to it. Pure: the text and the commands;
 * cli/commands/relay/serve.ts writes the file and runs them, as root.
 */
import { ServiceInputError, systemdArg, systemdWord } from './service.js';

export const RELAY_UNIT = 'svc-relay.service';
export const RELAY_UNIT_DIR = '/etc/systemd/system';
export const RELAY_STATE_DIR = '/var/lib/svc-relay';

export interface RelayUnitFacts {
  node: string;
  svcBin: string;
  /** The account the relay runs as. */
  user: string;
  /** `svc relay serve`'s flags (without --install-service and --data: the unit sets the data dir). */
  flags: readonly string[];
}

export function relaySystemUnit(f: RelayUnitFacts): string {
  for (const [what, p] of [
    ['node', f.node],
    ['svc', f.svcBin],
  ] as const)
    if (!p.startsWith('/') || /[\u0000-\u001f\u007f]/.test(p))
      throw new ServiceInputError(`${what} must be an absolute path without control characters: ${JSON.stringify(p)}`);
  if (!/^[a-z_][a-z0-9_-]*\$?$/i.test(f.user))
    throw new ServiceInputError(`not a user name: ${JSON.stringify(f.user)}`);
  for (const w of f.flags)
    if (/[\u0000-\u001f\u007f]/.test(w)) throw new ServiceInputError(`a control character in ${JSON.stringify(w)}`);
  const words = ['relay', 'serve', '--data', RELAY_STATE_DIR, ...f.flags].map(systemdArg);
  const exec = [systemdWord(f.node), systemdWord(f.svcBin), ...words].join(' ');
  return [
    '# Written by `svc relay serve --install-service`; `systemctl disable --now svc-relay` and removing this file undo it.',
    '[Unit]',
    'Description=svc relay: the phones and computers of its accounts connect here',
    'After=network-online.target',
    'Wants=network-online.target',
    '',
    '[Service]',
    'Type=simple',
    `User=${f.user}`,
    `ExecStart=${exec}`,
    'Environment="NODE_ENV=production"',
    'StateDirectory=svc-relay',
    'StateDirectoryMode=0700',
    'UMask=0077',
    // ports below 1024 without root; nothing else
    'AmbientCapabilities=CAP_NET_BIND_SERVICE',
    'CapabilityBoundingSet=CAP_NET_BIND_SERVICE',
    'NoNewPrivileges=true',
    'ProtectSystem=strict',
    'PrivateTmp=true',
    'Restart=on-failure',
    'RestartSec=5',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/** What systemctl is asked, in order, once the file is written. */
export const RELAY_UNIT_COMMANDS: readonly (readonly string[])[] = [
  ['systemctl', 'daemon-reload'],
  ['systemctl', 'enable', '--now', RELAY_UNIT],
];

/**
 * `svc relay serve`'s flags for the unit: those given that the unit does not decide itself. `--store` and `--bus`
 * are never written into it (their URLs may hold passwords): the line says to put them in the unit's environment.
 */
export function relayUnitFlags(args: Readonly<Record<string, unknown>>): { flags: string[]; notes: string[] } {
  const flags: string[] = [];
  for (const name of [
    'host',
    'port',
    'https-port',
    'domain',
    'acme-directory',
    'acme-email',
    'tls-cert',
    'tls-key',
    'push-hosts',
    'trust-proxy',
    'replay-window',
  ]) {
    const value = args[name];
    if (typeof value === 'string' && value !== '') flags.push(`--${name}`, value);
  }
  const notes = ['store', 'bus']
    .filter((n) => typeof args[n] === 'string' && args[n] !== '')
    .map(
      (n) =>
        `--${n} is not written into the unit (its URL may hold a password): \`systemctl edit svc-relay\` and add Environment=SVC_RELAY_${n.toUpperCase()}=…`,
    );
  return { flags, notes };
}

export interface PathMode {
  path: string;
  uid: number;
  gid: number;
  mode: number;
  dir: boolean;
}

/**
 * The first of a file's path (its folders from `/`, then the file) that the account `uid`/`gid` cannot pass (a
 * folder without x) or read (the file without r), by owner, group and other bits; null when it can. Its other
 * groups are not known here, so a null is sure and a path is a likely refusal (said, not enforced).
 */
export function unreadableFor(account: { uid: number; gid: number }, chain: readonly PathMode[]): string | null {
  if (account.uid === 0) return null;
  for (const each of chain) {
    const need = each.dir ? 0o1 : 0o4;
    const bits = each.uid === account.uid ? each.mode >> 6 : each.gid === account.gid ? each.mode >> 3 : each.mode;
    if ((bits & need) === 0) return each.path;
  }
  return null;
}
