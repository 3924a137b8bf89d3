import { describe, expect, it } from 'vitest';
import { applyMute, isMuted, MuteList, muteLines, NO_MUTES } from '../../../core/hooks/mute.js';

describe('isMuted', () => {
  const list: MuteList = { all: false, projects: ['/home/a/proj'] };
  it.each([
    ['the project itself', '/home/a/proj', true],
    ['a folder inside it', '/home/a/proj/src/deep', true],
    ['a sibling whose name starts the same', '/home/a/project', false],
    ['its parent', '/home/a', false],
    ['elsewhere', '/tmp/x', false],
  ])('%s', (_n, cwd, expected) => {
    expect(isMuted(list, cwd)).toBe(expected);
  });

  it('--all mutes every directory; nothing muted mutes none', () => {
    expect(isMuted({ all: true, projects: [] }, '/anywhere')).toBe(true);
    expect(isMuted(NO_MUTES, '/home/a/proj')).toBe(false);
  });
});

describe('applyMute', () => {
  it.each([
    ['mute adds once', NO_MUTES, { kind: 'mute', project: '/p' }, { all: false, projects: ['/p'] }, true],
    [
      'mute again changes nothing',
      { all: false, projects: ['/p'] },
      { kind: 'mute', project: '/p' },
      { all: false, projects: ['/p'] },
      false,
    ],
    [
      'unmute takes it out',
      { all: false, projects: ['/p', '/q'] },
      { kind: 'unmute', project: '/p' },
      { all: false, projects: ['/q'] },
      true,
    ],
    [
      'unmute of a project not muted',
      { all: false, projects: ['/q'] },
      { kind: 'unmute', project: '/p' },
      { all: false, projects: ['/q'] },
      false,
    ],
    [
      'mute all keeps the projects',
      { all: false, projects: ['/q'] },
      { kind: 'mute-all' },
      { all: true, projects: ['/q'] },
      true,
    ],
    ['unmute all forgets everything', { all: true, projects: ['/q'] }, { kind: 'unmute-all' }, NO_MUTES, true],
  ] as const)('%s', (_n, before, change, after, changed) => {
    expect(applyMute(before as MuteList, change)).toEqual({ list: after, changed });
  });
});

describe('MuteList', () => {
  it('refuses a file that is not a mute list', () => {
    expect(MuteList.safeParse({ all: 'yes', projects: [] }).success).toBe(false);
    expect(MuteList.safeParse({ projects: ['/p'] }).success).toBe(false);
    expect(MuteList.safeParse({ all: false, projects: [''] }).success).toBe(false);
  });

  it('says what is muted', () => {
    expect(muteLines(NO_MUTES)).toEqual(['no project is muted']);
    expect(muteLines({ all: false, projects: ['/p'] })).toEqual(['muted: /p']);
    expect(muteLines({ all: true, projects: [] })[0]).toMatch(/every project is muted/);
  });
});
