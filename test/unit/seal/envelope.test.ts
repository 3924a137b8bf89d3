/**
 * checkEnvelope (core/seal/seal.ts, hand-written so the service worker needs no schema library) against the strict
 * zod schema it replaced, kept here as the oracle: every mutation of a valid envelope is accepted or refused by both
 * alike, and a refusal is `bad_envelope` naming the field.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod/v3';
import { base64urlLength } from '../../../core/base64url.js';
import { Envelope as EnvelopeSchema } from '../../../core/seal/envelopeSchema.js';
import {
  checkEnvelope,
  DEVICE_ID_RE,
  MAX_CT_CHARS,
  MAX_RECIPIENTS,
  SEAL_PURPOSES,
  SEAL_VERSION,
} from '../../../core/seal/seal.js';

const b64 = (bytes: number) =>
  z
    .string()
    .length(base64urlLength(bytes))
    .regex(/^[A-Za-z0-9_-]*$/);
const DeviceId = z.string().max(128).regex(DEVICE_ID_RE);
const oracle = z.strictObject({
  v: z.literal(SEAL_VERSION),
  purpose: z.enum(SEAL_PURPOSES),
  from: DeviceId,
  salt: b64(16),
  iv: b64(12),
  ct: z
    .string()
    .min(base64urlLength(16))
    .max(MAX_CT_CHARS)
    .regex(/^[A-Za-z0-9_-]*$/),
  to: z
    .array(z.strictObject({ device: DeviceId, wrap: b64(60) }))
    .min(1)
    .max(MAX_RECIPIENTS)
    .refine((to) => new Set(to.map((r) => r.device)).size === to.length, 'duplicate recipient device'),
});

const chars = (n: number, c = 'A') => c.repeat(n);
const valid = () => ({
  v: 1,
  purpose: 'agent.command',
  from: 'd_phone',
  salt: chars(base64urlLength(16)),
  iv: chars(base64urlLength(12)),
  ct: chars(40),
  to: [{ device: 'c_laptop', wrap: chars(base64urlLength(60)) }],
});
type E = ReturnType<typeof valid> & Record<string, unknown>;

const mutations: [string, (e: E) => unknown][] = [
  ['valid', (e) => e],
  ['two recipients', (e) => ({ ...e, to: [...e.to, { device: 'd_tablet', wrap: e.to[0]!.wrap }] })],
  ['null', () => null],
  ['an array', () => []],
  ['a string', () => 'envelope'],
  ['an extra field', (e) => ({ ...e, note: 'x' })],
  ['v missing', ({ v: _, ...e }) => e],
  ['v 2', (e) => ({ ...e, v: 2 })],
  ['v "1"', (e) => ({ ...e, v: '1' })],
  ['an unknown purpose', (e) => ({ ...e, purpose: 'shell' })],
  ['purpose missing', ({ purpose: _, ...e }) => e],
  ['from with a slash', (e) => ({ ...e, from: 'd/phone' })],
  ['from empty', (e) => ({ ...e, from: '' })],
  ['from 129 chars', (e) => ({ ...e, from: chars(129, 'd') })],
  ['from 128 chars', (e) => ({ ...e, from: chars(128, 'd') })],
  ['from a number', (e) => ({ ...e, from: 7 })],
  ['salt short', (e) => ({ ...e, salt: e.salt.slice(1) })],
  ['salt padded', (e) => ({ ...e, salt: `${e.salt.slice(2)}==` })],
  ['iv with +', (e) => ({ ...e, iv: `+${e.iv.slice(1)}` })],
  ['ct too short', (e) => ({ ...e, ct: chars(base64urlLength(16) - 1) })],
  ['ct shortest', (e) => ({ ...e, ct: chars(base64urlLength(16)) })],
  ['ct with a space', (e) => ({ ...e, ct: `${e.ct} ` })],
  ['ct an array', (e) => ({ ...e, ct: [e.ct] })],
  ['to empty', (e) => ({ ...e, to: [] })],
  ['to an object', (e) => ({ ...e, to: e.to[0] })],
  ['to 65', (e) => ({ ...e, to: Array.from({ length: 65 }, (_, i) => ({ device: `d_${i}`, wrap: e.to[0]!.wrap })) })],
  ['to 64', (e) => ({ ...e, to: Array.from({ length: 64 }, (_, i) => ({ device: `d_${i}`, wrap: e.to[0]!.wrap })) })],
  ['a recipient twice', (e) => ({ ...e, to: [e.to[0], e.to[0]] })],
  ['a recipient with an extra field', (e) => ({ ...e, to: [{ ...e.to[0], key: 'k' }] })],
  ['a recipient null', (e) => ({ ...e, to: [null] })],
  ['a wrap short', (e) => ({ ...e, to: [{ ...e.to[0], wrap: 'AAAA' }] })],
  ['a recipient device missing', (e) => ({ ...e, to: [{ wrap: e.to[0]!.wrap }] })],
  ['__proto__ smuggled', (e) => JSON.parse(JSON.stringify(e).replace('{', '{"__proto__":{"x":1},'))],
];

describe('checkEnvelope agrees with the strict schema', () => {
  it.each(mutations)('%s', (_name, mutate) => {
    const input = mutate(valid() as E);
    const expected = oracle.safeParse(input).success;
    let accepted = true;
    try {
      expect(checkEnvelope(input)).toBe(input);
    } catch (error) {
      accepted = false;
      expect(error).toMatchObject({ code: 'bad_envelope' });
    }
    expect(accepted).toBe(expected);
    expect(EnvelopeSchema.safeParse(input).success).toBe(expected);
  });
});
