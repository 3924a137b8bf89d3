/**
 * A refusal's words from a schema's first issue: `where: what`, one short printable line. zod 3's messages may quote
 * what was sent (an enum's `received '…'`), and a path may hold a key that was sent: neither may run on for a
 * megabyte or break a log line. Imports zod's types only, so the app's first load stays without zod.
 */
import type { z } from 'zod/v3';

export const MAX_ISSUE_CHARS = 240;

export function issueLine(error: z.ZodError, whole: string): string {
  const first = error.issues[0];
  const where = first?.path.length ? first.path.join('.') : whole;
  const line = `${where}: ${first?.message ?? 'invalid'}`.replace(/[\x00-\x1f\x7f\u2028\u2029]/g, '?');
  return line.length > MAX_ISSUE_CHARS ? `${line.slice(0, MAX_ISSUE_CHARS - 1)}…` : line;
}
