import { describe, expect, it } from 'vitest';
import { keepAwakeCommand } from '../../../core/daemon/keepAwake.js';

const all = () => true;
const none = () => false;

describe('keepAwakeCommand', () => {
  it('macOS: caffeinate -s -w <listener pid>, as spec 4.10 says', () => {
    expect(keepAwakeCommand({ platform: 'darwin', pid: 42, has: all })).toMatchObject({
      argv: ['caffeinate', '-s', '-w', '42'],
    });
  });

  it('Linux: systemd-inhibit holding a child that ends with the listener', () => {
    const cmd = keepAwakeCommand({ platform: 'linux', pid: 42, has: all });
    expect(cmd.argv?.slice(0, 2)).toEqual(['systemd-inhibit', '--what=idle:sleep']);
    expect(cmd.argv?.slice(-4)).toEqual(['tail', '--pid=42', '-f', '/dev/null']);
  });

  it.each([
    ['macOS without caffeinate', 'darwin', /caffeinate is not on PATH/],
    ['Linux without systemd-inhibit', 'linux', /systemd-inhibit is not on PATH/],
    ['Windows', 'win32', /no keep-awake on win32/],
  ])('%s: off, and says why', (_n, platform, why) => {
    const cmd = keepAwakeCommand({ platform, pid: 1, has: platform === 'win32' ? all : none });
    expect(cmd.argv).toBeNull();
    expect('why' in cmd && cmd.why).toMatch(why);
  });
});
