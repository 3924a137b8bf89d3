/**
 * The past sessions book (`~/.svc/past-sessions.json`, 0600) and the IO of resuming one (core/sessions/control.ts):
 * the agent's own session store is read for the newest session it filed for the directory the session ran in
 * (Claude Code: `~/.claude/projects/<dir>/<id>.jsonl`; Codex: `~/.codex/sessions/…/rollout-*.jsonl`, whose first
 * line names its `cwd` and `id`), and the agent's resume runs in a new named tmux session with svc's metadata.
 */
import { closeSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { SessionRecord } from '../../core/protocol/index.js';
import {
  claudeProjectDir,
  emptyPast,
  type PastSession,
  type PastSessions,
  pastSessions,
  rememberSessions,
  resumeArgv,
} from '../../core/sessions/control.js';
import { metaOptions } from '../../core/sessions/launch.js';
import { writeFileAtomic } from '../files.js';
import type { Tmux } from '../tmux/tmux.js';
import { TmuxError } from '../tmux/tmux.js';

const PastFile = z.object({
  version: z.literal(1),
  sessions: z.record(
    z.string(),
    z.object({
      name: z.string(),
      agent: z.string(),
      cwd: z.string(),
      project: z.string().optional(),
      label: z.string().optional(),
      createdAt: z.number(),
      lastSeenAt: z.number(),
      program: z.string().optional(),
    }),
  ),
});

/** The newest file of `dir` whose name matches `re` (by modification time), or null. */
function newestFile(dir: string, re: RegExp): string | null {
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
      if (!best || at > best.at) best = { path, at };
    } catch {
      // gone meanwhile
    }
  }
  return best?.path ?? null;
}

/** The first line of a file, read without loading the file (a transcript can be large). */
function firstLine(path: string, max = 64 * 1024): string {
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
function codexRollouts(root: string): string[] {
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

/** The agent's own id of the newest session it filed for `past.cwd`, or null when its store has none. */
export function findResumeId(past: PastSession, env: NodeJS.ProcessEnv = process.env): string | null {
  const home = env.HOME || homedir();
  if (past.agent === 'A1') {
    const root = env.CLAUDE_CONFIG_DIR || join(home, '.claude');
    const file = newestFile(join(root, 'projects', claudeProjectDir(past.cwd)), /^[0-9a-f-]{36}\.jsonl$/);
    return file ? (/([0-9a-f-]{36})\.jsonl$/.exec(file)?.[1] ?? null) : null;
  }
  if (past.agent === 'A2') {
    for (const file of codexRollouts(join(env.CODEX_HOME || join(home, '.codex'), 'sessions'))) {
      try {
        const meta = JSON.parse(firstLine(file)) as { payload?: { id?: unknown; cwd?: unknown } };
        if (meta.payload?.cwd === past.cwd && typeof meta.payload.id === 'string') return meta.payload.id;
      } catch {
        // not a session file we can read
      }
    }
  }
  return null;
}

export type ResumeOutcome =
  | { ok: true; name: string }
  | { ok: false; code: 'not_supported' | 'inject_failed'; message: string };

export function createPastSessions(path: string, log: { warn(m: string): void }) {
  let book: PastSessions = emptyPast();
  try {
    const parsed = PastFile.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    if (parsed.success) book = parsed.data as PastSessions;
    else log.warn(`${path}: not a past-sessions file; starting a new one`);
  } catch {
    // none yet
  }
  let savedAt = 0;
  /** The past sessions last offered (names, in order): a change is reported. */
  let offered = '[]';
  const save = () => {
    try {
      writeFileAtomic(path, `${JSON.stringify(book, null, 2)}\n`, 0o600, false);
    } catch (err) {
      log.warn(`could not save ${path}: ${(err as Error).message}`);
    }
  };

  return {
    /** A reading of the live sessions; true when the list of past sessions changed (it is reported then). */
    seen(live: readonly SessionRecord[], now: number): boolean {
      const names = (b: PastSessions) => JSON.stringify(Object.keys(b.sessions).sort());
      const next = rememberSessions(book, live, now);
      const newNames = names(next) !== names(book);
      book = next;
      const past = JSON.stringify(pastSessions(book, live).map((p) => p.name));
      const changed = past !== offered;
      offered = past;
      // lastSeenAt moves every reading: written when a session comes or goes, else once a minute
      if (newNames || changed || now - savedAt >= 60) {
        savedAt = now;
        save();
      }
      return changed;
    },
    past: (live: readonly SessionRecord[]) => pastSessions(book, live),
    find: (name: string): PastSession | undefined => book.sessions[name],
    forget(name: string): void {
      const { [name]: _gone, ...rest } = book.sessions;
      book = { version: 1, sessions: rest };
      offered = JSON.stringify(JSON.parse(offered).filter((n: string) => n !== name));
      save();
    },
    /** Starts the agent's resume of `past` in a new tmux session (its own name, or `<name>-2`, … when taken). */
    async resume(past: PastSession, tmux: Pick<Tmux, 'newSession'>, env?: NodeJS.ProcessEnv): Promise<ResumeOutcome> {
      const id = findResumeId(past, env);
      const argv = id ? resumeArgv(past, id) : null;
      if (!argv) return { ok: false, code: 'not_supported', message: `no ${past.agent} session filed for ${past.cwd}` };
      const meta = { kind: 'agent' as const, agent: past.agent, project: past.project, label: past.label };
      for (let n = 1; n <= 20; n++) {
        const name = n === 1 ? past.name : `${past.name}-${n}`;
        try {
          await tmux.newSession({ name, cwd: past.cwd, command: argv, options: metaOptions(meta) });
          // resumed: it is live again, no longer past
          const { [past.name]: _gone, ...rest } = book.sessions;
          book = { version: 1, sessions: rest };
          save();
          return { ok: true, name };
        } catch (err) {
          if (err instanceof TmuxError && err.code === 'duplicate_session') continue;
          return { ok: false, code: 'inject_failed', message: (err as Error).message.slice(0, 200) };
        }
      }
      return { ok: false, code: 'inject_failed', message: 'every name for the resumed session was taken' };
    },
  };
}
