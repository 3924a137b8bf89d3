/**
 * A5 opencode's history from its SQLite database (core/transcripts/opencode.ts, actors/transcripts/opencodeDb.ts),
 * against the database opencode 1.18.33 itself wrote (test/fixtures/transcripts/A5/session.db): the same events as
 * the transcript readers give, every part of a kind the reader knows, parts that change in place given once, a
 * restart going on from where it stopped, and no tool argument or output in what is sent.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  closeIdleReaders,
  followOpencode,
  opencodeDbPath,
  opencodeSession,
  READER_IDLE_MS,
  readerCounts,
} from '../../../actors/transcripts/opencodeDb.js';
import { historyItems } from '../../../core/transcripts/history.js';
import { openDatabase } from '../../../relay-server/sqlite/db.js';
import { APPROVAL_COMMAND } from '../../fakes/fakeModel.js';

const FIXTURE = 'test/fixtures/transcripts/A5';
const meta = JSON.parse(readFileSync(join(FIXTURE, 'meta.json'), 'utf8')) as { proj: string; version: string };
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A HOME whose opencode database is the fixture's. */
function home(): { env: { HOME: string }; db: string } {
  const h = mkdtempSync(join(tmpdir(), 'svc-opencode-'));
  dirs.push(h);
  const env = { HOME: h };
  const db = opencodeDbPath(env);
  mkdirSync(join(db, '..'), { recursive: true });
  copyFileSync(join(FIXTURE, 'session.db'), db);
  return { env, db };
}

describe('opencode’s database', () => {
  it(`reads opencode ${meta.version}'s own session: prompts, replies, the tool and its outcome, tokens`, () => {
    const { env } = home();
    const follower = followOpencode(meta.proj, 0, env);
    const { events, unknown, reset } = follower.poll();
    expect(unknown).toBe(0);
    expect(reset).toBe(false);
    expect(events.filter((e) => e.kind === 'prompt').map((e) => (e as { text: string }).text)).toEqual([
      'hello there',
      'run a command, svc-approve',
    ]);
    expect(events).toContainEqual({ kind: 'reply', text: 'Hello from the fake model. Nothing to do.' });
    expect(events).toContainEqual({ kind: 'reply', text: 'Done.' });
    expect(events).toContainEqual(expect.objectContaining({ kind: 'tool', name: 'bash', target: APPROVAL_COMMAND }));
    expect(events).toContainEqual(expect.objectContaining({ kind: 'tool_result', ok: true }));
    expect(events.filter((e) => e.kind === 'tokens').length).toBeGreaterThan(0);
    // of the tool, its command's first line leaves, nothing else of the call or its output
    expect(historyItems(events).filter((i) => i.k === 'tool')).toEqual([
      { k: 'tool', id: expect.any(String), name: 'bash', target: APPROVAL_COMMAND },
    ]);
    // nothing new: nothing given twice
    expect(follower.poll().events).toEqual([]);
    // another folder has no session
    expect(followOpencode('/elsewhere', 0, env).poll().events).toEqual([]);
  });

  it('gives a part that grows once it is whole, and goes on after a restart from where it stopped', () => {
    const { env, db } = home();
    const follower = followOpencode(meta.proj, 0, env);
    follower.poll();
    const where = follower.position()!;
    const w = openDatabase(db);
    const session = (w.prepare('SELECT id FROM session').get() as { id: string }).id;
    const message = (
      w
        .prepare("SELECT id FROM message WHERE json_extract(data, '$.role') = 'assistant' ORDER BY time_created DESC")
        .get() as {
        id: string;
      }
    ).id;
    const now = Date.now();
    const part = (data: object) =>
      w
        .prepare(
          'INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run('prt_new', message, session, now, now, JSON.stringify(data));
    part({ type: 'text', text: 'Still writ' });
    expect(follower.poll().events).toEqual([]); // streaming: not whole yet
    w.prepare('UPDATE part SET data = ?, time_updated = ? WHERE id = ?').run(
      JSON.stringify({ type: 'text', text: 'Still writing, now done.', time: { start: now, end: now + 5 } }),
      now + 5,
      'prt_new',
    );
    expect(follower.poll().events).toEqual([{ kind: 'reply', text: 'Still writing, now done.' }]);
    w.prepare(
      'INSERT INTO todo (session_id, content, status, priority, position, time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ).run(session, 'write the tests', 'in_progress', 'high', 0, now, now);
    expect(follower.poll().events).toEqual([
      { kind: 'todos', items: [{ text: 'write the tests', status: 'in_progress' }] },
    ]);
    w.close();
    // a listener that restarts from the earlier position gives only what came after it
    const again = followOpencode(meta.proj, 0, env, where);
    const events = again.poll().events;
    expect(events).toContainEqual({ kind: 'reply', text: 'Still writing, now done.' });
    expect(events.filter((e) => e.kind === 'prompt')).toEqual([]);
  });

  it('reads through one connection however often it polls, and a new one when opencode makes the file anew', () => {
    const { env, db } = home();
    const before = readerCounts().opened;
    const closedBefore = readerCounts().closed;
    const follower = followOpencode(meta.proj, 0, env);
    expect(follower.poll().events.length).toBeGreaterThan(0);
    for (let i = 0; i < 50; i++) {
      follower.poll();
      expect(opencodeSession(meta.proj, env)?.id).toMatch(/^ses_/);
    }
    expect(readerCounts().opened - before).toBe(1);
    // opencode's database removed and made again: the old connection would read the removed file
    const fresh = `${db}.new`;
    copyFileSync(join(FIXTURE, 'session.db'), fresh);
    renameSync(fresh, db);
    expect(followOpencode(meta.proj, 0, env).poll().events.length).toBeGreaterThan(0);
    expect(readerCounts().opened - before).toBe(2);
    // the replaced connection is closed
    expect(readerCounts().closed - closedBefore).toBe(1);
  });

  it('lets go of a database that is gone, and of one nothing read for a minute', () => {
    closeIdleReaders(Number.POSITIVE_INFINITY); // what earlier tests left open
    const { env, db } = home();
    const follower = followOpencode(meta.proj, 0, env);
    follower.poll();
    const open = readerCounts().open;
    const closed = readerCounts().closed;
    expect(open).toBe(1);
    rmSync(db);
    expect(follower.poll().events).toEqual([]);
    expect(readerCounts()).toMatchObject({ open: open - 1, closed: closed + 1 });
    // back, read, then a minute without a read: closed; the next read opens it again
    copyFileSync(join(FIXTURE, 'session.db'), db);
    expect(follower.poll().reset).toBe(false);
    closeIdleReaders(Date.now() + READER_IDLE_MS - 1_000);
    expect(readerCounts().open).toBe(open);
    closeIdleReaders(Date.now() + READER_IDLE_MS);
    expect(readerCounts()).toMatchObject({ open: open - 1, closed: closed + 2 });
    expect(opencodeSession(meta.proj, env)?.id).toMatch(/^ses_/);
    expect(readerCounts().open).toBe(open);
  });
});
