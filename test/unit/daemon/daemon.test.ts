/** core/semver.ts and core/daemon/daemon.ts: the stale-daemon rule (spec 3, 9.2) and the process-list search (9.4). */
import { describe, expect, it } from 'vitest';
import { daemonAge, listenerPidsFromPs, staleLine } from '../../../core/daemon/daemon.js';
import { compareSemver, parseSemver } from '../../../core/semver.js';

describe('compareSemver', () => {
  it.each([
    ['0.1.0', '0.1.0', 0],
    ['0.1.0', '0.2.0', -1],
    ['0.10.0', '0.9.9', 1],
    ['1.0.0', '0.99.99', 1],
    ['1.0.0-rc.1', '1.0.0', -1],
    ['1.0.0-alpha', '1.0.0-alpha.1', -1],
    ['1.0.0-alpha.1', '1.0.0-alpha.beta', -1],
    ['1.0.0-beta.2', '1.0.0-beta.11', -1],
    ['1.0.0-rc.1', '1.0.0-beta', 1],
    ['1.0.0+build.5', '1.0.0', 0],
    ['v1.2.3', '1.2.3', 0],
    ['1.2', '1.2.0', null],
    ['garbage', '1.0.0', null],
  ])('%s vs %s → %s', (a, b, expected) => {
    expect(compareSemver(a, b)).toBe(expected);
  });

  it('parses', () => {
    expect(parseSemver('1.2.3-rc.1+x')).toEqual({ major: 1, minor: 2, patch: 3, pre: ['rc', '1'] });
    expect(parseSemver('01.2.3')).toBeNull();
  });
});

describe('daemonAge', () => {
  it.each([
    ['0.1.0', '0.1.0', 'same'],
    ['0.0.9', '0.1.0', 'older'],
    ['0.2.0', '0.1.0', 'newer'],
    [null, '0.1.0', 'unknown'],
    ['dev', '0.1.0', 'unknown'],
  ] as const)('daemon %s, CLI %s → %s', (daemon, cli, age) => {
    expect(daemonAge(daemon, cli)).toBe(age);
  });

  it('the stale line, word for word', () => {
    expect(staleLine('0.0.9', '0.1.0')).toBe('listener 0.0.9 is stale - restarting on 0.1.0');
  });
});

describe('listenerPidsFromPs', () => {
  const entry = '/opt/svc/bin/svc.js';
  const ps = [
    '    1     1 /sbin/init',
    '  100     1 /usr/bin/node /opt/svc/bin/svc.js listener',
    '  101     1 /usr/bin/node /opt/svc/bin/svc.js listener --debug',
    '  102     1 /usr/bin/node /opt/svc/bin/svc.js listener --stop',
    '  103     1 /usr/bin/node /opt/svc/bin/svc.js listener --restart',
    '  104     1 /usr/bin/node /opt/svc/bin/svc.js cc --detach',
    '  105     1 /usr/bin/node /opt/svc/bin/svc.js listenerx',
    '  106     1 /usr/bin/node /other/svc.js listener',
    '  107     1 vim /opt/svc/bin/svc.js listener.md',
    '  108     1 /usr/bin/node /opt/svc/bin/svc.js listener',
    '  109     1 grep /xopt/svc/bin/svc.js listener',
    '',
  ].join('\n');

  it('finds the daemons, not the commands about them', () => {
    expect(listenerPidsFromPs(ps, [entry], 0)).toEqual([100, 101, 108]);
  });

  it('leaves out the caller', () => {
    expect(listenerPidsFromPs(ps, [entry], 100)).toEqual([101, 108]);
  });

  it('matches every spelling of the entry script', () => {
    expect(listenerPidsFromPs(ps, [entry, '/other/svc.js'], 0)).toEqual([100, 101, 106, 108]);
  });

  it("leaves out a daemon's child caught between fork and exec, which still shows its parent's command line", () => {
    const forking =
      '  200     1 /usr/bin/node /opt/svc/bin/svc.js listener\n  201   200 /usr/bin/node /opt/svc/bin/svc.js listener\n';
    expect(listenerPidsFromPs(forking, [entry], 0)).toEqual([200]);
  });

  it('a path with spaces', () => {
    expect(listenerPidsFromPs('  7     1 node /my dir/svc.js listener\n', ['/my dir/svc.js'], 0)).toEqual([7]);
  });
});
