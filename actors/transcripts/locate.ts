/**
 * Where each agent files its sessions (its own session store, read, never written): the transcript of a running
 * session for the history and the timeline (issue 13), and the newest session of a directory for a resume
 * (actors/sessions/pastSessions.ts).
 *
 * - Claude Code: `$CLAUDE_CONFIG_DIR` or `~/.claude`, `projects/<cwd, every non-alphanumeric as ->/<uuid>.jsonl`.
 * - Codex: `$CODEX_HOME` or `~/.codex`, `sessions/YYYY/MM/DD/rollout-*.jsonl`, whose first line (`session_meta`)
 *   names its `cwd` and `id`.
 * - Gemini CLI 0.61: `~/.gemini/tmp/<slug>/chats/session-*.jsonl` (`$GEMINI_CLI_HOME` for `~`), the slug being the
 *   project's in `~/.gemini/projects.json` (its folder's name in lower case, other characters as `-`, `-1`… on a
 *   clash), each slug folder's `.project_root` naming its project; the first line names the `sessionId` and the
 *   `projectHash` (sha256 of the project's path), both checked.
 * - pi: `~/.pi/agent/sessions/--<cwd without its first /, every / as ->--/*.jsonl`, whose first line (`session`)
 *   names its `id` and `cwd`.
 * - opencode: rows of its SQLite database (actors/transcripts/opencodeDb.ts).
 *
 * (test/fixtures/transcripts/<id>/meta.json records where the real programs put them.)
 */
import { createHash } from 'node:crypto';
import { closeSync, openSync, readdirSync, readFileSync, readSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, normalize, sep } from 'node:path';
import { claudeProjectDir } from '../../core/sessions/control.js';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The newest file of `dir` whose name matches `re` and that changed at or after `since` (epoch ms), or null. Files in
 * `skip` (another session's) are passed over.
 */
export function newestFile(dir: string, re: RegExp, since = 0, skip?: ReadonlySet<string>): string | null {
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
    if (skip?.has(path)) continue;
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

/** Codex's newest rollout for `cwd` (changed at or after `since`, not in `skip`), with its session id. */
export function codexSession(
  cwd: string,
  env: Env,
  since = 0,
  skip?: ReadonlySet<string>,
): { path: string; id: string } | null {
  for (const path of codexRollouts(join(env.CODEX_HOME || join(home(env), '.codex'), 'sessions'))) {
    if (skip?.has(path)) continue;
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

/** A session in an agent's store: its file and the agent's own id of it (what its resume takes). */
export interface FiledSession {
  path: string;
  id: string;
}

/**
 * The most recently changed file of `dir` matching `re` (changed at or after `since`, not in `skip`) whose first
 * line `idOf` takes as a session of the folder wanted, with its id.
 */
function newestSession(
  dir: string,
  re: RegExp,
  since: number,
  skip: ReadonlySet<string> | undefined,
  idOf: (first: Record<string, unknown>) => unknown,
): FiledSession | null {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => re.test(n));
  } catch {
    return null;
  }
  const files = names
    .map((n) => join(dir, n))
    .filter((path) => !skip?.has(path))
    .flatMap((path) => {
      try {
        const at = statSync(path).mtimeMs;
        return at >= since ? [{ path, at }] : [];
      } catch {
        return []; // gone meanwhile
      }
    })
    .sort((a, b) => b.at - a.at);
  for (const { path } of files) {
    try {
      const id = idOf(JSON.parse(firstLine(path)) as Record<string, unknown>);
      if (typeof id === 'string' && id !== '') return { path, id };
    } catch {
      // not a session file we can read
    }
  }
  return null;
}

const geminiDir = (env: Env) => join(env.GEMINI_CLI_HOME || home(env), '.gemini');

/**
 * Gemini CLI's folder for the project at `cwd`: the slug its registry (`projects.json`) gives it, unless that
 * folder's `.project_root` names another project; else the folder whose `.project_root` names it; null when none.
 */
export function geminiProjectDir(cwd: string, env: Env): string | null {
  const tmp = join(geminiDir(env), 'tmp');
  const owner = (slug: string) => {
    try {
      return readFileSync(join(tmp, slug, '.project_root'), 'utf8').trim();
    } catch {
      return undefined;
    }
  };
  const safe = (slug: unknown): slug is string => typeof slug === 'string' && /^[a-z0-9][a-z0-9-]{0,127}$/.test(slug);
  try {
    const slug = (JSON.parse(readFileSync(join(geminiDir(env), 'projects.json'), 'utf8')) as { projects?: unknown })
      .projects as Record<string, unknown> | undefined;
    const mine = slug?.[cwd];
    if (safe(mine) && (owner(mine) ?? cwd) === cwd) return join(tmp, mine);
  } catch {
    // no registry (an older version, or none yet): the markers tell
  }
  try {
    for (const slug of readdirSync(tmp)) if (safe(slug) && owner(slug) === cwd) return join(tmp, slug);
  } catch {
    // no folder yet
  }
  return null;
}

/** Gemini CLI's newest session for `cwd`. */
export function geminiSession(cwd: string, env: Env, since = 0, skip?: ReadonlySet<string>): FiledSession | null {
  const hash = createHash('sha256').update(cwd).digest('hex');
  const project = geminiProjectDir(cwd, env);
  if (!project) return null;
  const dir = join(project, 'chats');
  return newestSession(dir, /^session-.*\.jsonl$/, since, skip, (first) =>
    first.projectHash === hash ? first.sessionId : undefined,
  );
}

/** pi's newest session for `cwd`. */
export function piSession(cwd: string, env: Env, since = 0, skip?: ReadonlySet<string>): FiledSession | null {
  const dir = join(home(env), '.pi', 'agent', 'sessions', `--${cwd.replace(/^\//, '').replace(/[/\\:]/g, '-')}--`);
  return newestSession(dir, /\.jsonl$/, since, skip, (first) =>
    first.type === 'session' && first.cwd === cwd ? first.id : undefined,
  );
}

/** The folder under which each agent files its sessions (its transcripts lie somewhere below it). */
export function storeRoot(agent: string, env: Env = process.env): string | null {
  switch (agent) {
    case 'A1':
      return join(env.CLAUDE_CONFIG_DIR || join(home(env), '.claude'), 'projects');
    case 'A2':
      return join(env.CODEX_HOME || join(home(env), '.codex'), 'sessions');
    case 'A3':
      return join(geminiDir(env), 'tmp');
    case 'A4':
      return join(home(env), '.pi', 'agent', 'sessions');
    default:
      return null;
  }
}

/** Whether `path` lies inside `agent`'s session store: what a hook may pin (core/transcripts/pins.ts). */
export function inAgentStore(agent: string, path: string, env: Env = process.env): boolean {
  const root = storeRoot(agent, env);
  if (!root || normalize(path) !== path) return false;
  const roots = [root];
  try {
    roots.push(realpathSync(root));
  } catch {
    // not made yet: the path as given
  }
  return roots.some((r) => path.startsWith(r + sep));
}

/**
 * The transcript of agent `agent`'s session running in `cwd` since `since` (epoch ms), when its hooks have not said
 * which it is: the newest file its store has for that directory that changed since then and that no other session
 * holds (`skip`); null when there is none (yet) or the agent files none svc reads.
 */
export function findTranscript(
  agent: string,
  cwd: string,
  since: number,
  env: Env = process.env,
  skip?: ReadonlySet<string>,
): string | null {
  switch (agent) {
    case 'A1':
      return newestFile(claudeSessionsDir(cwd, env), CLAUDE_SESSION_FILE, since, skip);
    case 'A2':
      return codexSession(cwd, env, since, skip)?.path ?? null;
    case 'A3':
      return geminiSession(cwd, env, since, skip)?.path ?? null;
    case 'A4':
      return piSession(cwd, env, since, skip)?.path ?? null;
    default:
      return null;
  }
}
