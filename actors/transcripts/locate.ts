/**
 * Where each agent files its sessions (its own session store, read, never written): the transcript of a running
 * session for the history and the timeline (issue 13), and the newest session of a directory for a resume
 * (actors/sessions/pastSessions.ts).
 *
 * - Claude Code: `$CLAUDE_CONFIG_DIR` or `~/.claude`, `projects/<cwd, every non-alphanumeric as ->/<uuid>.jsonl`.
 * - Codex: `$CODEX_HOME` or `~/.codex`, `sessions/YYYY/MM/DD/rollout-*.jsonl`, whose first line (`session_meta`)
 *   names its `cwd` and `id`.
 * - Gemini CLI 0.61: `~/.gemini/tmp/<the project folder's name>/chats/session-*.jsonl`.
 * - pi: `~/.pi/agent/sessions/--<cwd without its first /, every / as ->--/*.jsonl`.
 *
 * (test/fixtures/transcripts/<id>/meta.json records where the real programs put them.)
 */
import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import { claudeProjectDir } from '../../core/sessions/control.js';

type Env = Readonly<Record<string, string | undefined>>;

/** The newest file of `dir` whose name matches `re` and that changed at or after `since` (epoch ms), or null. */
export function newestFile(dir: string, re: RegExp, since = 0): string | null {
  let best: { path: string; at: number } | null = null;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return null;
  }
  for (const name of names) {
    if (!re.test(name)) continue;
    const path = join(dir, name);
    try {
      const at = statSync(path).mtimeMs;
      if (at >= since && (!best || at > best.at)) best = { path, at };
    } catch {
      // gone meanwhile
    }
  }
  return best?.path ?? null;
}

/** The first line of a file, read without loading the file (a transcript can be large). */
export function firstLine(path: string, max = 64 * 1024): string {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(max);
    const n = readSync(fd, buf, 0, max, 0);
    const text = buf.subarray(0, n).toString('utf8');
    const end = text.indexOf('\n');
    return end < 0 ? text : text.slice(0, end);
  } finally {
    closeSync(fd);
  }
}

/** Every `rollout-*.jsonl` under Codex's sessions folder (year/month/day), newest name first. */
export function codexRollouts(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    let entries: string[];
    try {
      entries = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of entries) {
      const path = join(dir, name);
      if (depth < 3) walk(path, depth + 1);
      else if (/^rollout-.*\.jsonl$/.test(name)) out.push(path);
    }
  };
  walk(root, 0);
  return out.sort().reverse();
}

const home = (env: Env) => env.HOME || homedir();
export const claudeSessionsDir = (cwd: string, env: Env) =>
  join(env.CLAUDE_CONFIG_DIR || join(home(env), '.claude'), 'projects', claudeProjectDir(cwd));
export const CLAUDE_SESSION_FILE = /^[0-9a-f-]{36}\.jsonl$/;

/** Codex's newest rollout for `cwd` (changed at or after `since`), with its session id. */
export function codexSession(cwd: string, env: Env, since = 0): { path: string; id: string } | null {
  for (const path of codexRollouts(join(env.CODEX_HOME || join(home(env), '.codex'), 'sessions'))) {
    try {
      if (statSync(path).mtimeMs < since) continue;
      const meta = JSON.parse(firstLine(path)) as { payload?: { id?: unknown; cwd?: unknown } };
      if (meta.payload?.cwd === cwd && typeof meta.payload.id === 'string') return { path, id: meta.payload.id };
    } catch {
      // not a session file we can read
    }
  }
  return null;
}

/**
 * The transcript of agent `agent`'s session running in `cwd` since `since` (epoch ms): the newest file its store
 * has for that directory that changed since then; null when there is none (yet) or the agent files none svc reads.
 */
export function findTranscript(agent: string, cwd: string, since: number, env: Env = process.env): string | null {
  switch (agent) {
    case 'A1':
      return newestFile(claudeSessionsDir(cwd, env), CLAUDE_SESSION_FILE, since);
    case 'A2':
      return codexSession(cwd, env, since)?.path ?? null;
    case 'A3':
      return newestFile(join(home(env), '.gemini', 'tmp', basename(cwd), 'chats'), /^session-.*\.jsonl$/, since);
    case 'A4':
      return newestFile(
        join(home(env), '.pi', 'agent', 'sessions', `--${cwd.replace(/^\//, '').replace(/[/\\:]/g, '-')}--`),
        /\.jsonl$/,
        since,
      );
    default:
      return null;
  }
}
