/**
 * The login service as `svc listener --install-service` & co. write and run it (docs/service.md): the unit passes
 * systemd's own `systemd-analyze verify`, the LaunchAgent parses with Python's plistlib and has what launchd needs,
 * and with stand-ins for `systemctl` and `loginctl` on PATH (recording their arguments) install, status, restart,
 * stop, uninstall and `svc uninstall` ask the service manager as they should.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { launchdPlist, type ServiceFacts, systemdUnit } from '../../core/service/service.js';
import { runSvc, SVC_BIN, svcEnv, tempHome } from '../helpers/cli.js';

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
    expect(parsed.ProgramArguments).toEqual([process.execPath, '/a/<odd> & "svc"/bin/svc.js', 'listener']);
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
    expect(readFileSync(unitFile(), 'utf8')).toContain(`ExecStart="${process.execPath}" "${SVC_BIN}" listener`);
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

  it('svc install offers it, without asking when there is no terminal', async () => {
    const res = await runSvc(['install'], env);
    expect(res.stdout).toMatch(
      /login service: not installed; to start the listener at login run: svc listener --install-service/,
    );
    expect(existsSync(unitFile())).toBe(false);
  });
});
