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
import { z } from 'zod';
import type { SessionRecord } from '../../core/protocol/index.js';
import { activePane } from '../../core/sessions/inventory.js';
import { chunked, type HistoryItem, historyItems, TIMELINE_AGENTS } from '../../core/transcripts/history.js';
import { writeFileAtomic } from '../files.js';
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

const Positions = z.record(
  z.string(),
  z.object({ path: z.string(), ino: z.number(), offset: z.number().int().nonnegative() }),
);

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
  let positions: z.infer<typeof Positions> = {};
  try {
    const parsed = Positions.safeParse(JSON.parse(readFileSync(deps.positionsPath, 'utf8')));
    if (parsed.success) positions = parsed.data;
  } catch {
    // none yet
  }
  let dirty = false;
  let busy = false;

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
          writeFileAtomic(deps.positionsPath, `${JSON.stringify(positions)}\n`, 0o600, false);
        } catch (err) {
          deps.log.warn(`could not save ${deps.positionsPath}: ${(err as Error).message}`);
        }
      }
    } finally {
      busy = false;
    }
  };

  const savePosition = (session: string, where: FollowPosition) => {
    const known = positions[session];
    if (known && known.path === where.path && known.ino === where.ino && known.offset === where.offset) return;
    positions[session] = where;
    dirty = true;
  };

  const timer = setInterval(() => void tick(), deps.pollMs ?? POLL_MS);
  timer.unref();

  return {
    /** The live sessions of a reading: a follower for each agent session with a readable transcript, none for others. */
    sessions(live: readonly SessionRecord[]): void {
      const names = new Set<string>();
      for (const record of live) {
        const agent = record.meta?.agent;
        const cwd = activePane(record)?.path;
        if (record.parent || record.meta?.kind !== 'agent' || !agent || !TIMELINE_AGENTS.has(agent) || !cwd) continue;
        names.add(record.name);
        const known = followed.get(record.name);
        // the transcript was found from the folder the agent started in: a pane whose current folder flickers (a
        // helper process of the agent in front for a moment) keeps its follower
        if (known && known.agent === agent && (known.cwd === cwd || known.path !== null)) continue;
        // a transcript written since the session started (a little before: clocks and file times differ)
        const since = record.createdAt * 1000 - 5_000;
        const start = positions[record.name];
        followed.set(record.name, {
          agent,
          cwd,
          seq: 0,
          path: null,
          follower:
            agent === 'A5'
              ? followOpencode(cwd, since, env, start)
              : followTranscript(agent, () => findTranscript(agent, cwd, since, env), start),
        });
      }
      for (const name of [...followed.keys()]) {
        if (names.has(name)) continue;
        followed.delete(name);
        if (positions[name]) {
          delete positions[name];
          dirty = true;
        }
      }
    },
    /** One round now (tests; the timer does it every second). */
    tick,
    stop(): void {
      clearInterval(timer);
    },
  };
}
