/** core/sessions/project.ts: project name resolution (spec 2.2) and session-name slugs. */
import { describe, expect, it } from 'vitest';
import { PROJECT_DIR_VARS, projectSlug, resolveProject, slug } from '../../../core/sessions/project.js';

describe('resolveProject', () => {
  const cwd = '/home/u/src/app/sub';
  it.each([
    [
      'CLAUDE_PROJECT_DIR first',
      { CLAUDE_PROJECT_DIR: '/p/claude', CURSOR_PROJECT_DIR: '/p/cursor' },
      '/repo',
      'claude',
      'CLAUDE_PROJECT_DIR',
    ],
    [
      'then CURSOR_PROJECT_DIR',
      { CURSOR_PROJECT_DIR: '/p/cursor', WINDSURF_PROJECT_DIR: '/p/wind' },
      '/repo',
      'cursor',
      'CURSOR_PROJECT_DIR',
    ],
    ['then WINDSURF_PROJECT_DIR', { WINDSURF_PROJECT_DIR: '/p/wind/' }, '/repo', 'wind', 'WINDSURF_PROJECT_DIR'],
    ['an empty variable does not count', { CLAUDE_PROJECT_DIR: '  ' }, '/home/u/src/app', 'app', 'git'],
    ['a relative variable is read from the cwd', { CLAUDE_PROJECT_DIR: '..' }, null, 'app', 'CLAUDE_PROJECT_DIR'],
    ['then the git root', {}, '/home/u/src/app', 'app', 'git'],
    ['then the cwd', {}, null, 'sub', 'cwd'],
  ])('%s', (_, env, gitRoot, name, source) => {
    const p = resolveProject({ env, gitRoot, cwd });
    expect(p).toMatchObject({ name, source });
  });

  it('the three variables, in order', () => {
    expect(PROJECT_DIR_VARS).toEqual(['CLAUDE_PROJECT_DIR', 'CURSOR_PROJECT_DIR', 'WINDSURF_PROJECT_DIR']);
  });

  it('the slug goes with the name; the name is kept as is', () => {
    expect(resolveProject({ env: {}, gitRoot: '/x/my.app', cwd: '/x/my.app' })).toEqual({
      name: 'my.app',
      slug: 'my-app',
      dir: '/x/my.app',
      source: 'git',
    });
    expect(resolveProject({ env: {}, gitRoot: null, cwd: '/' })).toMatchObject({ name: '/', slug: 'project' });
  });
});

describe('slug', () => {
  it.each([
    ['proj', 'proj'],
    ['My_Project-2', 'My_Project-2'],
    ['my.app', 'my-app'], // tmux would turn . into _
    ['a:b', 'a-b'], // and : too
    ['feat/x', 'feat-x'],
    ['a  b', 'a-b'],
    ['a..//b', 'a-b'],
    ['--a--', 'a'],
    ['café', 'cafe'],
    ['日本', ''],
    ['a$b#c', 'a-b-c'],
    ['x'.repeat(100), 'x'.repeat(40)],
    [`${'x'.repeat(39)}.y`, 'x'.repeat(39)],
  ])('%j → %j', (text, expected) => {
    expect(slug(text)).toBe(expected);
    expect(slug(text)).toMatch(/^[A-Za-z0-9_-]*$/);
  });

  it('projectSlug never gives an empty name', () => {
    expect(projectSlug('日本')).toBe('project');
    expect(projectSlug('app')).toBe('app');
  });
});
