/**
 * The login service as `svc listener --install-service` & co. write and run it (docs/service.md): the unit passes
 * systemd's own `systemd-analyze verify`, the LaunchAgent parses with Python's plistlib and has what launchd needs,
 * and with stand-ins for `systemctl` and `loginctl` on PATH (recording their arguments) install, status, restart,
 * stop, uninstall and `svc uninstall` ask the service manager as they should.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { relaySystemUnit } from '../../core/service/relayUnit.js';
import { launchdPlist, type ServiceFacts, systemdUnit } from '../../core/service/service.js';
import { selfSigned } from '../helpers/certs.js';
import { runSvc, SVC_BIN, svcEnv, tempHome } from '../helpers/cli.js';

const execFileAsync = promisify(execFile);

const onPath = (program: string) => {
  try {
    return execFileSync('sh', ['-c', `command -v ${program}`], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
};

const facts = (home: string): ServiceFacts => ({
  platform: 'systemd',
  home,
  node: process.execPath,
  svcBin: SVC_BIN,
  tmux: onPath('tmux'),
  lang: 'C.UTF-8',
  uid: process.getuid?.() ?? 0,
});

let home: string;
let cleanup: () => void;
let env: NodeJS.ProcessEnv;
let calls: string;

beforeEach(() => {
  ({ home, cleanup } = tempHome());
  const bin = join(home, 'fake-bin');
  mkdirSync(bin);
  calls = join(home, 'calls.log');
  for (const program of ['systemctl', 'loginctl']) {
    const file = join(bin, program);
    writeFileSync(
      file,
      `#!/bin/sh\necho "${program} $*" >> '${calls}'\ncase "$*" in *is-active*) echo active;; *Linger*) echo no;; esac\nexit 0\n`,
    );
    chmodSync(file, 0o755);
  }
  env = svcEnv(home, { PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`, USER: 'me' });
});
afterEach(() => cleanup());

const ran = () => (existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n') : []);
const unitFile = () => join(home, '.config', 'systemd', 'user', 'app.svc.listener.service');

describe.skipIf(!onPath('systemd-analyze'))('the systemd unit', () => {
  it('passes systemd-analyze verify, and a unit with a node that is not there does not', () => {
    const dir = join(home, 'units');
    mkdirSync(dir);
    const good = join(dir, 'app.svc.listener.service');
    writeFileSync(good, systemdUnit(facts(home)));
    execFileSync('systemd-analyze', ['verify', good], { stdio: 'pipe' });
    writeFileSync(good, systemdUnit({ ...facts(home), node: '/nonexistent/node' }));
    expect(() => execFileSync('systemd-analyze', ['verify', good], { stdio: 'pipe' })).toThrow(/not executable/);
  });

  it('`svc up` as the login service, and the relay as a system service, pass systemd-analyze verify', () => {
    const dir = join(home, 'units');
    mkdirSync(dir);
    const up = join(dir, 'app.svc.listener.service');
    writeFileSync(up, systemdUnit({ ...facts(home), command: ['up', '--lan', '--lan-port', '9443'] }));
    execFileSync('systemd-analyze', ['verify', up], { stdio: 'pipe' });
    const relay = join(dir, 'svc-relay.service');
    const user = userInfo().username;
    const unit = relaySystemUnit({ node: process.execPath, svcBin: SVC_BIN, user, flags: ['--port', '443'] });
    writeFileSync(relay, unit);
    execFileSync('systemd-analyze', ['verify', relay], { stdio: 'pipe' });
    writeFileSync(relay, relaySystemUnit({ node: '/nonexistent/node', svcBin: SVC_BIN, user, flags: [] }));
    expect(() => execFileSync('systemd-analyze', ['verify', relay], { stdio: 'pipe' })).toThrow(/not executable/);
  });
});

describe.skipIf(!onPath('python3'))('the LaunchAgent', () => {
  it('parses as a property list with the keys launchd needs', () => {
    const plist = launchdPlist({ ...facts(home), platform: 'launchd', svcBin: '/a/<odd> & "svc"/bin/svc.js' });
    const read = execFileSync(
      'python3',
      ['-c', 'import json,plistlib,sys; print(json.dumps(plistlib.loads(sys.stdin.buffer.read())))'],
      { input: plist, encoding: 'utf8' },
    );
    const parsed = JSON.parse(read);
    expect(parsed.Label).toBe('app.svc.listener');
    expect(parsed.ProgramArguments).toEqual([
      process.execPath,
      '--max-semi-space-size=1',
      '--no-opt',
      '--no-maglev',
      '/a/<odd> & "svc"/bin/svc.js',
      'listener',
    ]);
    expect(parsed.RunAtLoad).toBe(true);
    expect(parsed.EnvironmentVariables.LANG).toBe('C.UTF-8');
    expect(parsed.EnvironmentVariables.PATH.split(':')).toContain('/usr/bin');
  });
});

describe.runIf(process.platform === 'linux')('svc listener --install-service and friends', () => {
  it('install writes the unit and enables it; status, restart and stop ask systemctl; uninstall takes it away', async () => {
    const install = await runSvc(['listener', '--install-service'], env);
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toMatch(/^login service installed: .*app\.svc\.listener\.service/m);
    expect(install.stdout).toMatch(/loginctl enable-linger me/);
    expect(readFileSync(unitFile(), 'utf8')).toContain(
      `ExecStart="${process.execPath}" --max-semi-space-size=1 --no-opt --no-maglev "${SVC_BIN}" listener`,
    );
    expect(ran()).toEqual([
      'systemctl --user daemon-reload',
      'systemctl --user enable app.svc.listener.service',
      'systemctl --user restart app.svc.listener.service',
      'loginctl show-user me --property=Linger --value',
    ]);
    // running it again with the same node and svc changes nothing in the file
    const before = readFileSync(unitFile(), 'utf8');
    expect((await runSvc(['listener', '--install-service'], env)).stdout).toMatch(/already installed/);
    expect(readFileSync(unitFile(), 'utf8')).toBe(before);

    const status = await runSvc(['listener', '--service-status'], env);
    expect(status.stdout).toMatch(/^login service: installed \(.*\), active$/m);
    expect((await runSvc(['verify', '--json'], env)).stdout).toMatch(/"state": "installed \(.*\), active"/);

    writeFileSync(calls, '');
    await runSvc(['listener', '--restart'], env);
    await runSvc(['listener', '--stop'], env);
    expect(ran()).toEqual([
      'systemctl --user restart app.svc.listener.service',
      'systemctl --user stop app.svc.listener.service',
    ]);

    writeFileSync(calls, '');
    const gone = await runSvc(['uninstall'], env);
    expect(gone.stdout).toMatch(/login service removed/);
    expect(existsSync(unitFile())).toBe(false);
    expect(ran()).toEqual([
      'systemctl --user disable --now app.svc.listener.service',
      'systemctl --user daemon-reload',
    ]);
    const after = await runSvc(['listener', '--service-status'], env);
    expect(after.stdout).toMatch(/login service: not installed/);
    expect(after.code).toBe(1);
  });

  it('svc up --install-service makes the login service run `svc up` with its flags, in place of the listener', async () => {
    const install = await runSvc(['up', '--install-service', '--lan', '--port', '9000'], env);
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toMatch(/^login service installed: .* \(runs .* up --port 9000 --lan\)$/m);
    expect(readFileSync(unitFile(), 'utf8')).toContain(
      `ExecStart="${process.execPath}" "${SVC_BIN}" up --port 9000 --lan`,
    );
    expect(ran().slice(0, 3)).toEqual([
      'systemctl --user daemon-reload',
      'systemctl --user enable app.svc.listener.service',
      'systemctl --user restart app.svc.listener.service',
    ]);
    // nothing else ran: no relay was started in this process
    expect(existsSync(join(home, '.svc', 'up.json'))).toBe(false);
    // the listener's own install replaces it: one login service
    await runSvc(['listener', '--install-service'], env);
    expect(readFileSync(unitFile(), 'utf8')).toContain(`"${SVC_BIN}" listener`);
  });

  it('svc relay serve --install-service writes the system unit and starts it; never a store password', async () => {
    const units = join(home, 'system-units');
    mkdirSync(units);
    const args = ['relay', 'serve', '--install-service', '--host', '0.0.0.0', '--port', '443'];
    const store = 'postgres://relay:s3cret@db/relay';
    const res = await runSvc([...args, '--store', store], { ...env, SVC_SYSTEM_UNIT_DIR: units, SUDO_USER: 'me' });
    expect(res.code, res.stderr).toBe(0);
    const file = join(units, 'svc-relay.service');
    expect(res.stdout).toMatch(
      new RegExp(`^relay service installed: ${file} \\(runs as me, data in /var/lib/svc-relay\\)$`, 'm'),
    );
    expect(res.stdout).toMatch(/--store is not written into the unit/);
    const unit = readFileSync(file, 'utf8');
    expect(unit).toContain('relay serve --data /var/lib/svc-relay --host 0.0.0.0 --port 443');
    expect(unit).toContain('User=me');
    expect(unit).not.toContain('s3cret');
    expect(statSync(file).mode & 0o777).toBe(0o644);
    expect(ran()).toEqual(['systemctl daemon-reload', 'systemctl enable --now svc-relay.service']);
    // a bad flag is refused before anything is written
    const bad = await runSvc(['relay', 'serve', '--install-service', '--trust-proxy', 'nope'], {
      ...env,
      SVC_SYSTEM_UNIT_DIR: join(home, 'other'),
    });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--trust-proxy: nope is not an address or a CIDR/);
    expect(existsSync(join(home, 'other'))).toBe(false);
  });

  it('svc relay serve --install-service --tls-cert: absolute paths in the unit, and a word when its user cannot read them', async () => {
    const units = join(home, 'tls-units');
    mkdirSync(units);
    const certs = join(home, 'certs');
    mkdirSync(certs, { mode: 0o755 });
    chmodSync(home, 0o755); // the temp home's own mode aside: only the key file is closed
    selfSigned(
      { key: join(certs, 'k.pem'), cert: join(certs, 'c.pem') },
      { cn: 'relay', san: 'DNS:relay.example.org' },
    );
    chmodSync(join(certs, 'c.pem'), 0o644);
    chmodSync(join(certs, 'k.pem'), 0o600); // root's, as certbot keeps its keys
    const args = ['relay', 'serve', '--install-service', '--tls-cert', 'c.pem', '--tls-key', 'k.pem'];
    const as = (uid: string) =>
      execFileAsync(process.execPath, [SVC_BIN, ...args], {
        cwd: certs,
        env: { ...env, SVC_SYSTEM_UNIT_DIR: units, SUDO_USER: 'me', SUDO_UID: uid, SUDO_GID: uid },
      });
    const res = await as('4242');
    const unit = readFileSync(join(units, 'svc-relay.service'), 'utf8');
    expect(unit).toContain(`--tls-cert ${join(certs, 'c.pem')} --tls-key ${join(certs, 'k.pem')}`);
    expect(res.stdout).toContain(
      `the service runs as me, who probably cannot read ${join(certs, 'k.pem')} (${join(certs, 'k.pem')} is not open to them)`,
    );
    expect(res.stdout).not.toContain(`cannot read ${join(certs, 'c.pem')}`);
    // a key they can read: no word
    chmodSync(join(certs, 'k.pem'), 0o644);
    expect((await as('4242')).stdout).not.toMatch(/probably cannot read/);
  });

  it('svc install offers it, without asking when there is no terminal', async () => {
    const res = await runSvc(['install'], env);
    expect(res.stdout).toMatch(
      /login service: not installed; to start the listener at login run: svc listener --install-service/,
    );
    expect(existsSync(unitFile())).toBe(false);
    // logged in to a relay on this computer (its own `svc up`): the offer is `svc up`, which starts the relay too
    mkdirSync(join(home, '.svc'), { recursive: true, mode: 0o700 });
    const config = { apiKey: 'svc_k', hookId: 'c_x', baseUrl: 'http://127.0.0.1:8787' };
    writeFileSync(join(home, '.svc', 'config.json'), JSON.stringify(config), { mode: 0o600 });
    const local = await runSvc(['install'], env);
    expect(local.stdout).toMatch(
      /login service: not installed; to start svc up .* at login run: svc up --install-service/,
    );
  });
});
