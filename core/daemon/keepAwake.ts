/**
 * Keep-awake (spec 4.10): while the listener lives the computer does not idle-sleep, since a sleeping computer drops
 * the relay link and the phone waits for a stream that never comes. macOS: `caffeinate -s -w <pid>` (on AC power
 * only; the display still sleeps, a closed lid still sleeps). Linux, beyond the spec: the same promise through
 * `systemd-inhibit --what=idle:sleep` holding a child that ends with the listener (`tail --pid`). Elsewhere, or
 * without the program, nothing (said once in the log). Pure: which command, for which system.
 */
export function keepAwakeCommand(facts: {
  platform: string;
  pid: number;
  has: (program: string) => boolean;
}): { argv: string[]; what: string } | { argv: null; why: string } {
  if (facts.platform === 'darwin') {
    if (!facts.has('caffeinate')) return { argv: null, why: 'caffeinate is not on PATH' };
    return { argv: ['caffeinate', '-s', '-w', String(facts.pid)], what: 'caffeinate -s (on AC power)' };
  }
  if (facts.platform === 'linux') {
    if (!facts.has('systemd-inhibit')) return { argv: null, why: 'systemd-inhibit is not on PATH' };
    return {
      argv: [
        'systemd-inhibit',
        '--what=idle:sleep',
        '--who=svc listener',
        '--why=your phone reaches your coding agents through it',
        '--mode=block',
        'tail',
        `--pid=${facts.pid}`,
        '-f',
        '/dev/null',
      ],
      what: 'systemd-inhibit (idle and sleep)',
    };
  }
  return { argv: null, why: `no keep-awake on ${facts.platform}` };
}
