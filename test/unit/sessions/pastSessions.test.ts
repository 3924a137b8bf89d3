/**
 * The past-sessions book on disk and the agents' session stores (actors/sessions/pastSessions.ts): what survives a
 * restart, and which id each agent's resume gets.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createPastSessions, findResumeId } from '../../../actors/sessions/pastSessions.js';
import { TmuxError } from '../../../actors/tmux/tmux.js';
import type { SessionRecord } from '../../../core/protocol/index.js';
import { openDatabase } from '../../../relay-server/sqlite/db.js';

const dirs: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'svc-past-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const quiet = { warn: () => {} };
const record = (name: string, cwd = '/w/proj'): SessionRecord => ({
  name,
  attached: false,
  createdAt: 1,
  activityAt: 1,
  panes: [{ id: '%1', command: 'claude', path: cwd, active: true }],
  meta: { kind: 'agent', agent: 'A1', project: 'proj' },
});

describe('the past-sessions book', () => {
  it('reports a session once it has ended, keeps it across a restart (0600), and forgets it', () => {
    const path = join(temp(), 'past-sessions.json');
    const book = createPastSessions(path, quiet);
    expect(book.seen([record('svc-a')], 10)).toBe(false);
    expect(book.seen([], 20)).toBe(true);
    expect(book.seen([], 25)).toBe(false);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    // the computer restarted: a new listener reads the file and offers it
    const again = createPastSessions(path, quiet);
    expect(again.seen([], 100)).toBe(true);
    expect(again.past([]).map((p) => p.name)).toEqual(['svc-a']);
    again.forget('svc-a');
    expect(again.past([])).toEqual([]);
    expect(JSON.parse(readFileSync(path, 'utf8')).sessions).toEqual({});
  });

  it('starts empty, with a line, when the file is not a book', () => {
    const path = join(temp(), 'past-sessions.json');
    writeFileSync(path, '{"version": 7}');
    const lines: string[] = [];
    const book = createPastSessions(path, { warn: (m) => lines.push(m) });
    expect(book.past([])).toEqual([]);
    expect(lines.join('\n')).toMatch(/not a past-sessions file/);
  });

  it('resumes under the next free name when the name is taken, and refuses with no filed session', async () => {
    const home = temp();
    const store = join(home, '.claude', 'projects', '-w-proj');
    mkdirSync(store, { recursive: true });
    const id = '0b7f4c1e-1111-4222-8333-944445555666';
    writeFileSync(join(store, `${id}.jsonl`), '{}\n');
    const book = createPastSessions(join(home, 'past.json'), quiet);
    book.seen([record('svc-a')], 1);
    book.seen([], 2);
    const made: { name: string; command: unknown }[] = [];
    const tmux = {
      newSession: async (o: { name: string; command?: unknown }) => {
        if (o.name === 'svc-a') throw new TmuxError('duplicate_session', 'duplicate session: svc-a');
        made.push({ name: o.name, command: o.command });
        return { name: o.name, paneId: '%9' };
      },
    };
    expect(await book.resume(book.find('svc-a')!, tmux as never, { HOME: home })).toEqual({
      ok: true,
      name: 'svc-a-2',
    });
    expect(made).toEqual([{ name: 'svc-a-2', command: ['claude', '--resume', id] }]);
    expect(book.past([])).toEqual([]);
    const other = { name: 'svc-b', agent: 'A1', cwd: '/w/other', createdAt: 1, lastSeenAt: 2 };
    expect(await book.resume(other, tmux as never, { HOME: home })).toMatchObject({ ok: false, code: 'not_supported' });
  });
});

describe('finding the id an agent resumes', () => {
  it('Claude Code: the newest session filed for the directory', () => {
    const home = temp();
    const store = join(home, '.claude', 'projects', '-w-proj');
    mkdirSync(store, { recursive: true });
    const older = '11111111-1111-4111-8111-111111111111';
    const newer = '22222222-2222-4222-8222-222222222222';
    writeFileSync(join(store, `${older}.jsonl`), '{}\n');
    writeFileSync(join(store, `${newer}.jsonl`), '{}\n');
    utimesSync(join(store, `${older}.jsonl`), 1000, 1000);
    const past = { name: 'x', agent: 'A1', cwd: '/w/proj', createdAt: 1, lastSeenAt: 2 };
    expect(findResumeId(past, { HOME: home })?.id).toBe(newer);
    expect(findResumeId({ ...past, cwd: '/w/none' }, { HOME: home })).toBeNull();
  });

  it('Codex: the newest rollout whose first line names the directory', () => {
    const home = temp();
    const day = join(home, '.codex', 'sessions', '2026', '11', '24');
    mkdirSync(day, { recursive: true });
    const meta = (id: string, cwd: string) => `${JSON.stringify({ type: 'session_meta', payload: { id, cwd } })}\n`;
    writeFileSync(join(day, 'rollout-2026-11-24T10-00-00-aaa.jsonl'), meta('id-old', '/w/proj'));
    writeFileSync(join(day, 'rollout-2026-11-24T11-00-00-bbb.jsonl'), meta('id-new', '/w/proj'));
    writeFileSync(join(day, 'rollout-2026-11-24T12-00-00-ccc.jsonl'), meta('id-elsewhere', '/w/other'));
    writeFileSync(join(day, 'rollout-2026-11-24T13-00-00-ddd.jsonl'), 'not json');
    const past = { name: 'x', agent: 'A2', cwd: '/w/proj', createdAt: 1, lastSeenAt: 2 };
    expect(findResumeId(past, { HOME: home })?.id).toBe('id-new');
  });

  it('Gemini CLI: the newest session in the folder its registry gives the project, whose hash is that path', () => {
    const home = temp();
    const tmp = join(home, '.gemini', 'tmp');
    // as Gemini CLI 0.61 files them: a slug per project in projects.json, `.project_root` in each slug's folder
    const projects = { '/w/proj': 'proj', '/elsewhere/proj': 'proj-1', '/w/My_App': 'my-app' };
    mkdirSync(join(home, '.gemini'));
    writeFileSync(join(home, '.gemini', 'projects.json'), JSON.stringify({ projects }));
    const head = (sessionId: string, path: string) =>
      `${JSON.stringify({ sessionId, projectHash: createHash('sha256').update(path).digest('hex'), kind: 'main' })}\n`;
    const file = (slug: string, name: string, sessionId: string, path: string, at?: number) => {
      mkdirSync(join(tmp, slug, 'chats'), { recursive: true });
      writeFileSync(join(tmp, slug, '.project_root'), path);
      writeFileSync(join(tmp, slug, 'chats', name), head(sessionId, path));
      if (at) utimesSync(join(tmp, slug, 'chats', name), at, at);
      return join(tmp, slug, 'chats', name);
    };
    file('proj', 'session-2026-11-24T10-00-aaaa.jsonl', 'g-old', '/w/proj', 1000);
    const newer = file('proj', 'session-2026-11-24T11-00-bbbb.jsonl', 'g-new', '/w/proj');
    // another project's file in this folder (a hash that is not this path) is not taken
    writeFileSync(join(tmp, 'proj', 'chats', 'session-2026-11-24T12-00-cccc.jsonl'), head('g-stray', '/x/proj'));
    utimesSync(join(tmp, 'proj', 'chats', 'session-2026-11-24T12-00-cccc.jsonl'), 500, 500);
    file('proj-1', 'session-2026-11-24T12-00-dddd.jsonl', 'g-namesake', '/elsewhere/proj');
    file('my-app', 'session-2026-11-24T12-00-eeee.jsonl', 'g-app', '/w/My_App');
    const past = { name: 'x', agent: 'A3', cwd: '/w/proj', createdAt: 1, lastSeenAt: 2 };
    expect(findResumeId(past, { HOME: home })).toEqual({ id: 'g-new', transcript: newer });
    // the newest is held by a live session: the one before it
    expect(findResumeId(past, { HOME: home }, new Set([newer]))?.id).toBe('g-old');
    expect(findResumeId({ ...past, cwd: '/elsewhere/proj' }, { HOME: home })?.id).toBe('g-namesake');
    expect(findResumeId({ ...past, cwd: '/w/My_App' }, { HOME: home })?.id).toBe('g-app');
    // no registry: the folder whose .project_root names the project
    rmSync(join(home, '.gemini', 'projects.json'));
    expect(findResumeId({ ...past, cwd: '/w/My_App' }, { HOME: home })?.id).toBe('g-app');
    expect(findResumeId({ ...past, cwd: '/w/none' }, { HOME: home })).toBeNull();
  });

  it('pi: the newest session file of the folder whose header names that folder', () => {
    const home = temp();
    const dir = join(home, '.pi', 'agent', 'sessions', '--w-proj--');
    mkdirSync(dir, { recursive: true });
    const head = (id: string, cwd: string) => `${JSON.stringify({ type: 'session', version: 3, id, cwd })}\n`;
    writeFileSync(join(dir, '2026-11-24T10-00-00-000Z_a.jsonl'), head('p-old', '/w/proj'));
    writeFileSync(join(dir, '2026-11-24T11-00-00-000Z_b.jsonl'), head('p-new', '/w/proj'));
    utimesSync(join(dir, '2026-11-24T10-00-00-000Z_a.jsonl'), 1000, 1000);
    const past = { name: 'x', agent: 'A4', cwd: '/w/proj', createdAt: 1, lastSeenAt: 2 };
    expect(findResumeId(past, { HOME: home })?.id).toBe('p-new');
    // `/w-proj` files in the same folder (pi's name for it): its header tells them apart
    expect(findResumeId({ ...past, cwd: '/w-proj' }, { HOME: home })).toBeNull();
  });

  it('opencode: the newest top-level session of the folder in its database', () => {
    const home = temp();
    const dbDir = join(home, '.local', 'share', 'opencode');
    mkdirSync(dbDir, { recursive: true });
    const db = openDatabase(join(dbDir, 'opencode.db'));
    db.exec('CREATE TABLE session (id TEXT, directory TEXT, parent_id TEXT, time_updated INTEGER)');
    const add = db.prepare('INSERT INTO session VALUES (?, ?, ?, ?)');
    add.run('ses_old', '/w/proj', null, 1);
    add.run('ses_new', '/w/proj', null, 2);
    add.run('ses_child', '/w/proj', 'ses_new', 3);
    add.run('ses_other', '/w/other', null, 4);
    db.close();
    const past = { name: 'x', agent: 'A5', cwd: '/w/proj', createdAt: 1, lastSeenAt: 2 };
    expect(findResumeId(past, { HOME: home })).toEqual({ id: 'ses_new' });
    expect(findResumeId(past, { HOME: home }, new Set([`${join(dbDir, 'opencode.db')}#ses_new`]))).toEqual({
      id: 'ses_old',
    });
    expect(findResumeId({ ...past, cwd: '/w/none' }, { HOME: home })).toBeNull();
  });
});
