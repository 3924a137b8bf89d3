/**
 * Follows an agent's transcript file as it grows (issue 13 part 1): each call of `poll()` reads only the bytes
 * added since the last, hands the complete lines to core/transcripts/readers.ts, and keeps a last line that has no
 * newline yet for the next call. A file that got shorter (truncated) or was replaced by another (a new inode: the
 * agent rewrote it, or the session moved to a new file given by `path()`) is read again from its start, and the
 * caller is told (`reset`), so what it shows is rebuilt rather than doubled.
 */
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { completeLines, readLine, type TranscriptEvent } from '../../core/transcripts/readers.js';

/** The most read in one poll: a huge transcript is caught up over several polls, never loaded whole. */
const CHUNK_BYTES = 1024 * 1024;

export interface FollowResult {
  events: TranscriptEvent[];
  /** The file was truncated or replaced: what came before is to be forgotten. */
  reset: boolean;
  /** Lines of a kind the reader does not know (the format may have drifted). */
  unknown: number;
}

/** Where a follower has read to: the end of the last complete line of `path` (inode `ino`). */
export interface FollowPosition {
  path: string;
  ino: number;
  offset: number;
}

/**
 * `start(path)`: where an earlier follower read that file to (this session's before a restart, or an ended session's
 * that the agent resumed); taken for the first file followed, while it is that inode and no shorter.
 */
export function followTranscript(
  agent: string,
  path: () => string | null,
  start?: (path: string) => FollowPosition | undefined,
  /** The file this session's earlier follower read (before a restart): another first file starts the view again. */
  previous?: string,
) {
  let file: string | null = null;
  let ino = -1;
  let offset = 0;
  let rest = '';
  let seen = new Set<string>();
  const decoder = new TextDecoder('utf-8');

  return {
    /** The end of the last complete line read (a cut last line is read again by the next follower). */
    position(): FollowPosition | null {
      return file === null ? null : { path: file, ino, offset: offset - Buffer.byteLength(rest) };
    },
    poll(): FollowResult {
      const now = path();
      const out: FollowResult = { events: [], reset: false, unknown: 0 };
      if (!now) return out;
      let st: ReturnType<typeof statSync>;
      try {
        st = statSync(now);
      } catch {
        return out;
      }
      if (now !== file || st.ino !== ino || st.size < offset) {
        // the first file may go on from where an earlier follower read to; another one is read from its start
        const from = file === null ? start?.(now) : undefined;
        out.reset = file !== null || (previous !== undefined && previous !== now);
        file = now;
        ino = st.ino;
        offset = from && from.path === now && from.ino === st.ino && from.offset <= st.size ? from.offset : 0;
        rest = '';
        seen = new Set();
      }
      if (st.size === offset) return out;
      const fd = openSync(now, 'r');
      try {
        const size = fstatSync(fd).size;
        const length = Math.min(CHUNK_BYTES, size - offset);
        const buf = Buffer.alloc(length);
        const n = readSync(fd, buf, 0, length, offset);
        offset += n;
        const { lines, rest: left } = completeLines(rest + decoder.decode(buf.subarray(0, n), { stream: true }));
        rest = left;
        for (const line of lines) {
          const r = readLine(agent, line, seen);
          out.events.push(...r.events);
          if (!r.known) out.unknown++;
        }
      } finally {
        closeSync(fd);
      }
      return out;
    },
  };
}
