import { describe, expect, it } from 'vitest';
import { relaySystemUnit, relayUnitFlags, unreadableFor } from '../../../core/service/relayUnit.js';
import {
  launchdPlist,
  lingerLine,
  type ServiceFacts,
  ServiceInputError,
  serviceCommands,
  serviceFile,
  serviceLang,
  servicePath,
  systemdUnit,
} from '../../../core/service/service.js';

const linux: ServiceFacts = {
  platform: 'systemd',
  home: '/home/me',
  node: '/opt/node/bin/node',
  svcBin: '/home/me/lib/svc/bin/svc.js',
  tmux: '/usr/bin/tmux',
  lang: 'en_GB.UTF-8',
  uid: 1000,
};
const mac: ServiceFacts = { ...linux, platform: 'launchd', home: '/Users/me', tmux: '/opt/homebrew/bin/tmux' };

describe('the login service', () => {
  it('lives where each service manager looks for a user’s services', () => {
    expect(serviceFile(linux)).toBe('/home/me/.config/systemd/user/app.svc.listener.service');
    expect(serviceFile({ ...linux, XDG_CONFIG_HOME: '/x' })).toBe('/x/systemd/user/app.svc.listener.service');
    expect(serviceFile(mac)).toBe('/Users/me/Library/LaunchAgents/app.svc.listener.plist');
  });

  it('runs svc’s listener with absolute paths, a PATH that reaches tmux and node, and a UTF-8 LANG', () => {
    const unit = systemdUnit(linux);
    // the listener's node flags (core/daemon/nodeFlags.ts) between node and svc's bin
    expect(unit).toContain(
      'ExecStart="/opt/node/bin/node" --max-semi-space-size=1 --no-opt --no-maglev "/home/me/lib/svc/bin/svc.js" listener',
    );
    expect(unit).toContain('Environment="PATH=/opt/node/bin:/usr/bin:/usr/local/bin:/bin"');
    expect(unit).toContain('Environment="LANG=en_GB.UTF-8"');
    expect(unit).toContain('WantedBy=default.target');
    expect(launchdPlist(mac)).toContain(
      '<array><string>/opt/node/bin/node</string><string>--max-semi-space-size=1</string><string>--no-opt</string><string>--no-maglev</string><string>/home/me/lib/svc/bin/svc.js</string><string>listener</string></array>',
    );
  });

  it.each([
    ['a UTF-8 LANG is kept', 'de_DE.utf8', 'systemd', 'de_DE.utf8'],
    ['POSIX becomes C.UTF-8 on Linux', 'C', 'systemd', 'C.UTF-8'],
    ['none becomes en_US.UTF-8 on macOS', undefined, 'launchd', 'en_US.UTF-8'],
  ] as const)('%s', (_n, lang, platform, expected) => {
    expect(serviceLang({ lang, platform })).toBe(expected);
  });

  it('puts each folder on PATH once', () => {
    expect(servicePath({ platform: 'systemd', node: '/usr/bin/node', tmux: '/usr/bin/tmux' })).toBe(
      '/usr/bin:/usr/local/bin:/bin',
    );
  });

  it('quotes hostile paths for systemd and escapes them for the plist', () => {
    const odd = { ...linux, svcBin: '/home/me/my "svc" $HOME 100%/bin/svc.js' };
    expect(systemdUnit(odd)).toContain('"/home/me/my \\"svc\\" $$HOME 100%%/bin/svc.js"');
    expect(launchdPlist({ ...odd, platform: 'launchd' })).toContain(
      '<string>/home/me/my &quot;svc&quot; $HOME 100%/bin/svc.js</string>',
    );
    expect(launchdPlist({ ...mac, svcBin: '/a/<b>&c/svc.js' })).toContain('<string>/a/&lt;b&gt;&amp;c/svc.js</string>');
  });

  it.each([
    ['a relative node', { node: 'node' }],
    ['a line break in a path', { svcBin: '/a\nExecStartPre=/bin/rm -rf /\n/svc.js' }],
  ])('refuses %s', (_n, over) => {
    expect(() => systemdUnit({ ...linux, ...over })).toThrow(ServiceInputError);
    expect(() => launchdPlist({ ...mac, ...over })).toThrow(ServiceInputError);
  });

  it('asks systemctl and launchctl', () => {
    expect(serviceCommands(linux, 'install')).toEqual([
      ['systemctl', '--user', 'daemon-reload'],
      ['systemctl', '--user', 'enable', 'app.svc.listener.service'],
      ['systemctl', '--user', 'restart', 'app.svc.listener.service'],
    ]);
    expect(serviceCommands(linux, 'restart')).toEqual([['systemctl', '--user', 'restart', 'app.svc.listener.service']]);
    expect(serviceCommands(mac, 'install')).toEqual([
      ['launchctl', 'bootout', 'gui/1000/app.svc.listener'],
      ['launchctl', 'bootstrap', 'gui/1000', '/Users/me/Library/LaunchAgents/app.svc.listener.plist'],
    ]);
    expect(serviceCommands(mac, 'stop')).toEqual([['launchctl', 'kill', 'SIGTERM', 'gui/1000/app.svc.listener']]);
  });

  it('mentions lingering unless it is on, and never turns it on', () => {
    expect(lingerLine('yes', 'me')).toBeNull();
    expect(lingerLine('no', 'me')).toMatch(/loginctl enable-linger me/);
  });
});

describe('svc up as the login service (issue 29)', () => {
  it('runs `svc up` with the flags it was installed with, described as such', () => {
    const unit = systemdUnit({ ...linux, command: ['up', '--lan', '--lan-port', '9443'] });
    expect(unit).toContain('ExecStart="/opt/node/bin/node" "/home/me/lib/svc/bin/svc.js" up --lan --lan-port 9443');
    expect(unit).toContain('Description=svc up: the relay, the listener and the web app on this computer');
    expect(unit).toMatch(/^# Written by `svc up --install-service`/);
    const plist = launchdPlist({ ...mac, command: ['up', '--lan'] });
    expect(plist).toContain('<string>up</string><string>--lan</string></array>');
    expect(plist).toContain('<string>/Users/me/.svc/up.log</string>');
  });

  it('quotes a flag systemd would read otherwise, and refuses control characters', () => {
    expect(systemdUnit({ ...linux, command: ['up', '--host', '100%$x y'] })).toContain('up --host "100%%$$x y"');
    expect(() => systemdUnit({ ...linux, command: ['up', 'a\nExecStartPre=/bin/evil'] })).toThrow(ServiceInputError);
  });
});

describe('the relay as a system service (issue 29)', () => {
  const facts = { node: '/usr/bin/node', svcBin: '/usr/lib/svc/bin/svc.js', user: 'alice', flags: ['--port', '443'] };

  it('runs as the installing user, may bind ports below 1024 and nothing else, its data in /var/lib/svc-relay', () => {
    const unit = relaySystemUnit(facts);
    expect(unit).toContain(
      'ExecStart="/usr/bin/node" "/usr/lib/svc/bin/svc.js" relay serve --data /var/lib/svc-relay --port 443',
    );
    for (const line of [
      'User=alice',
      'AmbientCapabilities=CAP_NET_BIND_SERVICE',
      'CapabilityBoundingSet=CAP_NET_BIND_SERVICE',
      'NoNewPrivileges=true',
      'StateDirectory=svc-relay',
      'WantedBy=multi-user.target',
    ])
      expect(unit.split('\n')).toContain(line);
  });

  it('refuses a user name or flag that could write another line', () => {
    expect(() => relaySystemUnit({ ...facts, user: 'root\nExecStartPre=/x' })).toThrow(ServiceInputError);
    expect(() => relaySystemUnit({ ...facts, flags: ['--host', 'x\ny'] })).toThrow(ServiceInputError);
    expect(() => relaySystemUnit({ ...facts, node: 'node' })).toThrow(ServiceInputError);
  });

  it('keeps the flags given, never --store or --bus (their URLs may hold passwords): it says so instead', () => {
    const { flags, notes } = relayUnitFlags({
      host: '0.0.0.0',
      port: '443',
      'trust-proxy': '10.0.0.0/8',
      store: 'postgres://relay:secret@db/relay',
      'install-service': true,
      data: '/elsewhere',
    });
    expect(flags).toEqual(['--host', '0.0.0.0', '--port', '443', '--trust-proxy', '10.0.0.0/8']);
    expect(notes).toEqual([expect.stringMatching(/^--store is not written into the unit .*SVC_RELAY_STORE=/)]);
    expect(JSON.stringify(relaySystemUnit({ ...facts, flags }))).not.toContain('secret');
  });

  it('keeps the relay’s HTTPS flags: its domain and ACME server, or the certificate files', () => {
    const acme = relayUnitFlags({
      domain: 'relay.example.org',
      'acme-email': 'me@example.org',
      'acme-directory': 'https://ca.example/dir',
      'https-port': '8443',
    }).flags;
    expect(acme).toEqual([
      '--https-port',
      '8443',
      '--domain',
      'relay.example.org',
      '--acme-directory',
      'https://ca.example/dir',
      '--acme-email',
      'me@example.org',
    ]);
    const files = relayUnitFlags({ 'tls-cert': '/etc/ssl/relay.pem', 'tls-key': '/etc/ssl/relay.key' }).flags;
    expect(files).toEqual(['--tls-cert', '/etc/ssl/relay.pem', '--tls-key', '/etc/ssl/relay.key']);
    expect(relaySystemUnit({ ...facts, flags: files })).toMatch(/--tls-cert \/etc\/ssl\/relay\.pem --tls-key/);
  });
});

describe('unreadableFor: can the relay’s account read its certificate files', () => {
  const dir = (path: string, mode: number, uid = 0, gid = 0) => ({ path, uid, gid, mode, dir: true });
  const file = (path: string, mode: number, uid = 0, gid = 0) => ({ path, uid, gid, mode, dir: false });
  const me = { uid: 1000, gid: 1000 };
  it.each([
    ['open folders, a world-readable file', [dir('/', 0o755), dir('/etc', 0o755), file('/etc/c.pem', 0o644)], null],
    ['the key root-only (certbot)', [dir('/', 0o755), dir('/etc', 0o755), file('/etc/k.pem', 0o600)], '/etc/k.pem'],
    ['a folder root-only', [dir('/', 0o755), dir('/etc/le', 0o700), file('/etc/le/k.pem', 0o644)], '/etc/le'],
    [
      'owned by them',
      [dir('/', 0o755), dir('/home/me', 0o700, 1000, 1000), file('/home/me/k.pem', 0o600, 1000, 1000)],
      null,
    ],
    [
      'group-readable by their group',
      [dir('/', 0o755), dir('/srv', 0o750, 0, 1000), file('/srv/k.pem', 0o640, 0, 1000)],
      null,
    ],
    ['owner bits, not other, for the owner', [dir('/', 0o755), file('/k.pem', 0o044, 1000, 5)], '/k.pem'],
  ])('%s', (_what, chain, blocked) => expect(unreadableFor(me, chain)).toBe(blocked));
  it('root reads everything', () => expect(unreadableFor({ uid: 0, gid: 0 }, [file('/k', 0o000)])).toBeNull());
});
