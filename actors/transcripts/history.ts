/**
 * Session history and the live timeline, the listener's side (spec 4.11.1, 4.12; docs/files.md "History"): for each
 * running agent session whose agent files a transcript svc reads (Claude Code, Codex, Gemini CLI, pi), the
 * transcript is found in the agent's own store (actors/transcripts/locate.ts), followed as it grows (four times a second:
 * the phone sees a step within a second of the agent writing it), turned into history items
 * (core/transcripts/history.ts: prompts, replies, one line per tool, tokens, to-do list; never a tool's arguments or
 * output), and each new piece is sealed (`history.chunk`) for this computer and the devices listed now and sent to
 * the relay, which keeps it and hands it to the phones. Where each transcript was read to is kept in
 * `~/.svc/history.json`, so a listener that restarts goes on from there instead of sending it all again.
 * Off with `--no-turn-history` or `turnHistory: false`.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod/v3';
import type { SessionRecord } from '../../core/protocol/index.js';
import { activePane } from '../../core/sessions/inventory.js';
import { chunked, type HistoryItem, historyItems, TIMELINE_AGENTS } from '../../core/transcripts/history.js';
import { setAsideBroken, writeFileAtomic } from '../files.js';
import { type FollowPosition, followTranscript } from './follow.js';
import { findTranscript } from './locate.js';
import { followOpencode } from './opencodeDb.js';

export interface HistoryChunkOut {
  session: string;
  /** Counts this session's chunks since the listener started (the relay orders by its own ids). */
  seq: number;
  /** The transcript was replaced or cut: earlier items of this session are superseded. */
  reset: boolean;
  items: HistoryItem[];
}

export interface HistoryDeps {
  /** `~/.svc/history.json`: where each session's transcript was read to. */
  positionsPath: string;
  /** Seals the chunk and sends it (actors/mcp/asks.ts); rejects when it could not. */
  send: (chunk: HistoryChunkOut) => Promise<void>;
  log: { info(m: string): void; warn(m: string): void };
  env?: Readonly<Record<string, string | undefined>>;
  pollMs?: number;
  /** Whether chunks can go now (the relay link is up); while not, transcripts are not read on. */
  ready?: () => boolean;
}

/** How often transcripts are looked at: a step reaches the phone within about a second of being written. */
export const POLL_MS = 250;

const Position = z.object({
  path: z.string(),
  ino: z.number().finite(),
  offset: z.number().int().safe().nonnegative(),
});
/**
 * `history.json`: where each live session's transcript was read to, and where the transcripts of ended sessions were
 * (by file: an agent resumed by its id appends to the same file, and what the phone has is not sent again). An
 * earlier listener wrote the live ones alone, as the whole file.
 */
const PositionsFile = z.union([
  z.object({ version: z.literal(2), sessions: z.record(z.string(), Position), ended: z.record(z.string(), Position) }),
  z.record(z.string(), Position).transform((sessions) => ({ version: 2 as const, sessions, ended: {} })),
]);
interface Positions {
  version: 2;
  sessions: Record<string, FollowPosition>;
  ended: Record<string, FollowPosition>;
}

/** The ended sessions' positions kept: the newest this many. */
export const MAX_ENDED_POSITIONS = 100;

interface Followed {
  agent: string;
  cwd: string;
  follower: Pick<ReturnType<typeof followTranscript>, 'poll' | 'position'>;
  seq: number;
  /** The transcript found last (logged once when it is found or changes). */
  path: string | null;
}

export function createHistory(deps: HistoryDeps) {
  const env = deps.env ?? process.env;
  const followed = new Map<string, Followed>();
  let book: Positions = { version: 2, sessions: {}, ended: {} };
  let text: string | null = null;
  try {
    text = readFileSync(deps.positionsPath, 'utf8');
  } catch {
    // none yet
  }
  if (text !== null) {
    const what = "each session's history is read again from its transcript's start";
    try {
      const parsed = PositionsFile.safeParse(JSON.parse(text));
      if (parsed.success) book = parsed.data as Positions;
      else setAsideBroken(deps.positionsPath, 'not a positions file', what, deps.log);
    } catch {
      setAsideBroken(deps.positionsPath, 'not JSON', what, deps.log);
    }
  }
  /** The transcript each session's agent said is its own (core/transcripts/pins.ts), and as readings last showed it. */
  const pins = new Map<string, string>();
  const readPins = new Map<string, string>();
  /** The files other sessions hold (pinned or followed): a session whose agent did not say is not given them. */
  const heldByOthers = (session: string): Set<string> => {
    const held = new Set<string>();
    for (const [name, path] of pins) if (name !== session) held.add(path);
    for (const [name, f] of followed) {
      const at = f.follower.position()?.path;
      if (name !== session && at) held.add(at);
    }
    return held;
  };
  let dirty = false;
  let busy = false;

  let timer: ReturnType<typeof setInterval> | null = null;
  let stopped = false;
  /**
   * The timer runs only while there is a transcript to follow or a position to save: a listener with no agent session
   * is not woken four times a second for nothing (most of its idle CPU, docs/benchmarks.md).
   */
  const arm = () => {
    const needed = !stopped && (followed.size > 0 || dirty);
    if (needed && timer === null) {
      timer = setInterval(() => void tick(), deps.pollMs ?? POLL_MS);
      timer.unref();
    } else if (!needed && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  };

  const tick = async () => {
    if (busy || deps.ready?.() === false) return;
    busy = true;
    try {
      for (const [session, f] of followed) {
        let result: ReturnType<Followed['follower']['poll']>;
        try {
          result = f.follower.poll();
        } catch (err) {
          deps.log.warn(`history of ${session}: could not read its transcript: ${(err as Error).message}`);
          continue;
        }
        const where = f.follower.position();
        if (where && where.path !== f.path) {
          f.path = where.path;
          deps.log.info(`history of ${session}: following ${where.path}`);
        }
        if (result.unknown > 0)
          deps.log.warn(`history of ${session}: ${result.unknown} line(s) of a kind svc does not read`);
        const items = historyItems(result.events, { cwd: f.cwd });
        if (items.length === 0 && !result.reset) {
          if (where) savePosition(session, where);
          continue;
        }
        const pieces = items.length > 0 ? chunked(items) : [[]];
        let sent = true;
        for (const [i, piece] of pieces.entries()) {
          try {
            await deps.send({ session, seq: f.seq++, reset: result.reset && i === 0, items: piece });
          } catch (err) {
            sent = false;
            deps.log.warn(`history of ${session}: a chunk was not sent: ${(err as Error).message}`);
            break;
          }
        }
        // read to here only once it went out (a chunk that did not is read again at the next start)
        if (sent && where) savePosition(session, where);
      }
      if (dirty) {
        dirty = false;
        try {
          writeFileAtomic(deps.positionsPath, `${JSON.stringify(book)}\n`, 0o600, false);
        } catch (err) {
          deps.log.warn(`could not save ${deps.positionsPath}: ${(err as Error).message}`);
        }
      }
    } finally {
      busy = false;
      arm();
    }
  };

  const savePosition = (session: string, where: FollowPosition) => {
    const known = book.sessions[session];
    if (known && known.path === where.path && known.ino === where.ino && known.offset === where.offset) return;
    book.sessions[session] = where;
    dirty = true;
  };

  return {
    /** The live sessions of a reading: a follower for each agent session with a readable transcript, none for others. */
    sessions(live: readonly SessionRecord[]): void {
      const names = new Set<string>();
      for (const record of live) {
        const agent = record.meta?.agent;
        const cwd = activePane(record)?.path;
        if (record.parent || record.meta?.kind !== 'agent' || !agent || !TIMELINE_AGENTS.has(agent) || !cwd) continue;
        names.add(record.name);
        // a reading's option counts when it changed: one taken just before a hook pinned anew must not undo it
        const said = record.meta.transcript;
        if (said && said !== readPins.get(record.name)) pins.set(record.name, said);
        if (said) readPins.set(record.name, said);
        const known = followed.get(record.name);
        // the transcript was found from the folder the agent started in: a pane whose current folder flickers (a
        // helper process of the agent in front for a moment) keeps its follower
        if (known && known.agent === agent && (known.cwd === cwd || known.path !== null)) continue;
        // a transcript written since the session started (a little before: clocks and file times differ)
        const since = record.createdAt * 1000 - 5_000;
        const name = record.name;
        const start = (path: string) => {
          const mine = book.sessions[name];
          if (mine?.path === path) return mine;
          const ended = book.ended[path];
          return ended ? { ...ended, path } : undefined;
        };
        followed.set(name, {
          agent,
          cwd,
          seq: 0,
          path: null,
          follower:
            agent === 'A5'
              ? followOpencode(cwd, since, env, book.sessions[name])
              : followTranscript(
                  agent,
                  () => pins.get(name) ?? findTranscript(agent, cwd, since, env, heldByOthers(name)),
                  start,
                  book.sessions[name]?.path,
                ),
        });
      }
      for (const name of [...followed.keys()]) {
        if (names.has(name)) continue;
        followed.delete(name);
        pins.delete(name);
        readPins.delete(name);
        const where = book.sessions[name];
        if (!where) continue;
        // an agent resumed by its id goes on in the same file: from here, not from its start
        delete book.sessions[name];
        delete book.ended[where.path];
        book.ended[where.path] = where;
        const ended = Object.keys(book.ended);
        for (const path of ended.slice(0, Math.max(0, ended.length - MAX_ENDED_POSITIONS))) delete book.ended[path];
        dirty = true;
      }
      arm();
    },
    /** A session's agent said which transcript is its own: followed from the next round. */
    pinned(session: string, transcript: string | undefined): void {
      if (transcript) pins.set(session, transcript);
      else pins.delete(session);
    },
    /** The transcripts the live sessions follow (a resume is not given one of them). */
    held(): Set<string> {
      return heldByOthers('');
    },
    /** One round now (tests; the timer does it four times a second while there is something to follow). */
    tick,
    stop(): void {
      stopped = true;
      arm();
    },
    /** Whether the timer runs (tests: not while there is nothing to follow). */
    polling(): boolean {
      return timer !== null;
    },
  };
}
