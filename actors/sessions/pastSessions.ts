/**
 * The past sessions book (`~/.svc/past-sessions.json`, 0600) and the IO of resuming one (core/sessions/control.ts):
 * the agent's own session store is read for the newest session it filed for the directory the session ran in
 * (actors/transcripts/locate.ts: Claude Code, Codex, Gemini CLI and pi files; opencode's database), and the agent's
 * resume runs in a new named tmux session with svc's metadata.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod/v3';
import type { SessionRecord } from '../../core/protocol/index.js';
import {
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
import {
  CLAUDE_SESSION_FILE,
  claudeSessionsDir,
  codexSession,
  type FiledSession,
  geminiSession,
  newestFile,
  piSession,
} from '../transcripts/locate.js';
import { opencodeSession } from '../transcripts/opencodeDb.js';

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
      createdAt: z.number().finite(),
      lastSeenAt: z.number().finite(),
      program: z.string().optional(),
      agentSession: z.string().optional(),
      transcript: z.string().optional(),
    }),
  ),
});

/**
 * The agent's own id of `past`: the one its hooks said (`@svc-agent-session`), else the newest session its store
 * filed for `past.cwd` that no live session holds (`held`: their transcripts); null when there is none.
 */
export function findResumeId(
  past: PastSession,
  env: NodeJS.ProcessEnv = process.env,
  held: ReadonlySet<string> = new Set(),
): { id: string; transcript?: string } | null {
  if (past.agentSession) return { id: past.agentSession, ...(past.transcript ? { transcript: past.transcript } : {}) };
  const filed = (found: FiledSession | null) => (found ? { id: found.id, transcript: found.path } : null);
  switch (past.agent) {
    case 'A1': {
      const file = newestFile(claudeSessionsDir(past.cwd, env), CLAUDE_SESSION_FILE, 0, held);
      const id = file ? /([0-9a-f-]{36})\.jsonl$/.exec(file)?.[1] : undefined;
      return file && id ? { id, transcript: file } : null;
    }
    case 'A2':
      return filed(codexSession(past.cwd, env, 0, held));
    case 'A3':
      return filed(geminiSession(past.cwd, env, 0, held));
    case 'A4':
      return filed(piSession(past.cwd, env, 0, held));
    case 'A5': {
      // a row of its database, not a transcript file: the id alone (a pin names a .jsonl file, core/transcripts/pins.ts)
      const found = opencodeSession(past.cwd, env, held);
      return found ? { id: found.id } : null;
    }
    default:
      return null;
  }
}

export type ResumeOutcome =
  | { ok: true; name: string }
  | { ok: false; code: 'not_supported' | 'inject_failed'; message: string };

/**
 * `held`: the transcripts live sessions follow now (actors/transcripts/history.ts), besides those their agents
 * pinned: a resume without a known id never takes one of them.
 */
export function createPastSessions(
  path: string,
  log: { warn(m: string): void },
  held: () => ReadonlySet<string> = () => new Set(),
) {
  let book: PastSessions = emptyPast();
  try {
    const parsed = PastFile.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    if (parsed.success) book = parsed.data as PastSessions;
    else log.warn(`${path}: not a past-sessions file; starting a new one`);
  } catch {
    // none yet
  }
  let savedAt = 0;
  let live: readonly SessionRecord[] = [];
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
    seen(reading: readonly SessionRecord[], now: number): boolean {
      live = reading;
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
    /** Every session the book holds, running or not (the folders a new session may start in). */
    all: (): PastSession[] => Object.values(book.sessions),
    forget(name: string): void {
      const { [name]: _gone, ...rest } = book.sessions;
      book = { version: 1, sessions: rest };
      offered = JSON.stringify(JSON.parse(offered).filter((n: string) => n !== name));
      save();
    },
    /** Starts the agent's resume of `past` in a new tmux session (its own name, or `<name>-2`, … when taken). */
    async resume(past: PastSession, tmux: Pick<Tmux, 'newSession'>, env?: NodeJS.ProcessEnv): Promise<ResumeOutcome> {
      const taken = new Set(held());
      for (const record of live) if (record.meta?.transcript) taken.add(record.meta.transcript);
      const found = findResumeId(past, env, taken);
      // that conversation runs already (resumed at the keyboard, or twice): a second agent on it would fork it
      const running = found && live.find((r) => r.meta?.agentSession === found.id);
      if (running)
        return { ok: false, code: 'inject_failed', message: `that conversation is running in ${running.name}` };
      const argv = found ? resumeArgv(past, found.id) : null;
      if (!found || !argv)
        return { ok: false, code: 'not_supported', message: `no ${past.agent} session filed for ${past.cwd}` };
      // the resumed session is pinned to the same conversation from its start (core/transcripts/pins.ts)
      const meta = {
        kind: 'agent' as const,
        agent: past.agent,
        project: past.project,
        label: past.label,
        agentSession: found.id,
        transcript: found.transcript,
      };
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
