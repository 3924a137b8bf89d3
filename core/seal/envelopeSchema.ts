/**
 * The envelope as a zod schema, for frames and HTTP bodies that carry one (core/protocol, core/mcp): the check is
 * core/seal/seal.ts `checkEnvelope` (one definition; seal.ts itself stays free of zod for the service worker).
 */
import { z } from 'zod/v3';
import { SealError } from './error.js';
import { checkEnvelope, type Envelope as SealedEnvelope } from './seal.js';

export type Envelope = SealedEnvelope;

export const Envelope: z.ZodType<Envelope> = z.custom<Envelope>().superRefine((value, ctx) => {
  try {
    checkEnvelope(value);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: error instanceof SealError ? error.message : 'not an envelope' });
  }
});
