/**
 * The relay's side of session history (spec 4.11.1; docs/files.md "History"): the per-account limits it keeps,
 * and the shape of `GET /history` (a session's sealed chunks, newest first, a page at a time). The relay stores
 * envelopes only; what is inside is core/transcripts/history.ts, sealed by the listener.
 */
import { z } from 'zod/v3';
import { SessionName } from '../protocol/codes.js';

export interface HistoryLimits {
  /** Bytes of envelopes an account keeps; the oldest chunks go first beyond it. */
  maxBytes: number;
  /** Chunks older than this go. */
  maxAgeMs: number;
}

/** Decided (spec silent): 64 MiB and 7 days per account; `svc relay serve` can lower or raise them. */
export const HISTORY_LIMITS: HistoryLimits = { maxBytes: 64 * 1024 * 1024, maxAgeMs: 7 * 24 * 3_600_000 };
/** One chunk's envelope, as JSON: larger ones are refused (a listener never makes one this big). */
export const MAX_CHUNK_CHARS = 256 * 1024;
export const HISTORY_PAGE = { default: 50, max: 200 } as const;

export const HistoryQuery = z.object({
  computer: z.string().min(1).max(64),
  session: SessionName,
  before: z.coerce.number().int().safe().positive().optional(),
  limit: z.coerce.number().int().min(1).max(HISTORY_PAGE.max).default(HISTORY_PAGE.default),
});
export type HistoryQuery = z.infer<typeof HistoryQuery>;

export const HistoryChunk = z.object({
  id: z.number().int().safe().positive(),
  computer: z.string(),
  session: z.string(),
  /** When the relay stored it (epoch ms). */
  at: z.number().finite(),
  envelope: z.record(z.string(), z.unknown()),
});
export type HistoryChunk = z.infer<typeof HistoryChunk>;

/** `GET /history?computer=&session=[&before=<id>][&limit=]`: newest first; `more` when older ones remain. */
export const HistoryPage = z.object({ chunks: z.array(HistoryChunk), more: z.boolean() });
export type HistoryPage = z.infer<typeof HistoryPage>;
