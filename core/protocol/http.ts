/**
 * Wire protocol, part 2 of 3 (entry point: core/protocol/index.ts): HTTP request and response bodies.
 */
import { z } from 'zod/v3';
import { Envelope } from '../seal/envelopeSchema.js';
import { DEVICE_ID_RE } from '../seal/seal.js';
import { DeviceId, MAX_BODY_CHARS, PushState, SCOPES, SessionName } from './codes.js';
import { SessionRecord } from './frames.js';

// ---------------------------------------------------------------------------
// Pushes and computers

export const PushSendRequest = z
  .object({
    type: z.string().min(1).max(64),
    agentSessionName: SessionName,
    body: z.string().max(MAX_BODY_CHARS),
    /** Optional: the hookId of the computer that should act on it. */
    targetComputer: z.string().min(1).max(64).optional(),
    /** Optional idempotency key: the same clientId from the same account returns the first push. */
    clientId: z.string().min(1).max(128).optional(),
    /** The body sealed for the target computer(s) (core/seal/seal.ts); `body` is then empty. Stored as is: ciphertext. */
    sealed: Envelope.optional(),
  })
  .refine((req) => req.sealed === undefined || req.body === '', {
    message: 'a sealed push carries its text in `sealed` only: body must be empty',
    path: ['body'],
  });
export type PushSendRequest = z.infer<typeof PushSendRequest>;

export const PushSendResponse = z.object({
  id: z.number().int().safe().positive(),
  state: PushState,
  duplicate: z.boolean(),
});
export type PushSendResponse = z.infer<typeof PushSendResponse>;

export const PushStatusResponse = z.object({
  id: z.number().int().safe().positive(),
  type: z.string(),
  agentSessionName: z.string(),
  state: PushState,
  code: z.string().nullable(),
  createdAt: z.number().finite(),
  updatedAt: z.number().finite(),
});
export type PushStatusResponse = z.infer<typeof PushStatusResponse>;

export const ComputerRegisterRequest = z.object({
  name: z.string().min(1).max(128),
  platform: z.string().max(32).optional(),
  /** The computer's own device (`POST /devices`, kind `computer`): apps seal for its key. */
  deviceId: z.string().max(128).regex(DEVICE_ID_RE).optional(),
});
export type ComputerRegisterRequest = z.infer<typeof ComputerRegisterRequest>;

export const ComputerRegisterResponse = z.object({
  hookId: z.string(),
  name: z.string(),
  deviceId: z.string().nullable().optional(),
});
export type ComputerRegisterResponse = z.infer<typeof ComputerRegisterResponse>;

/** One computer of `GET /computers`: its last inventory and whether its listener is connected now. */
export const ComputerInfo = z.object({
  hookId: z.string(),
  name: z.string(),
  platform: z.string().nullable(),
  online: z.boolean(),
  lastSeenAt: z.number().finite().nullable(),
  sessions: z.array(SessionRecord),
  sessionsAt: z.number().finite().nullable(),
  deviceId: z.string().nullable().optional(),
  /** Its schedules, sealed by its listener (absent: none). */
  schedules: z.record(z.string(), z.unknown()).optional(),
});
export type ComputerInfo = z.infer<typeof ComputerInfo>;

export const ComputerListResponse = z.object({ computers: z.array(ComputerInfo) });
export type ComputerListResponse = z.infer<typeof ComputerListResponse>;

// ---------------------------------------------------------------------------
// Devices (docs/security.md): every app, computer and `svc agent send` has a long-term key pair; the relay keeps
// the account's list of public keys and never a private key.

export const DEVICE_KINDS = ['app', 'computer', 'cli'] as const;
export const DeviceKind = z.enum(DEVICE_KINDS);
export type DeviceKind = z.infer<typeof DeviceKind>;
/** base64url of a raw uncompressed P-256 point (65 bytes → 87 characters); core/seal/keys.ts checks the point. */
export const PublicKeyText = z
  .string()
  .length(87)
  .regex(/^[A-Za-z0-9_-]+$/);

export const DeviceRegisterRequest = z.object({
  name: z.string().min(1).max(128),
  kind: DeviceKind,
  publicKey: PublicKeyText,
});
export type DeviceRegisterRequest = z.infer<typeof DeviceRegisterRequest>;

export const DeviceInfo = z.object({
  deviceId: DeviceId,
  name: z.string(),
  kind: DeviceKind,
  publicKey: z.string(),
  createdAt: z.number().finite(),
  /** A phone paired with a link that held a computer's secret: its proof (core/devices/pairingProof.ts). */
  pairingProof: z.string().max(64).optional(),
  /** When its own token last reached the relay (to the minute); null: not since it paired. Absent from older relays. */
  lastSeenAt: z.number().finite().nullable().optional(),
  /** The web origin it paired at: the address its app uses (core/relay/reach.ts `appOrigin`); null: unknown. */
  origin: z.string().max(300).nullable().optional(),
  /** It holds a Web Push subscription: notifications are on. */
  notifications: z.boolean().optional(),
});
export type DeviceInfo = z.infer<typeof DeviceInfo>;

export const DeviceListResponse = z.object({ devices: z.array(DeviceInfo) });
export type DeviceListResponse = z.infer<typeof DeviceListResponse>;

export const DeviceDeleteResponse = z.object({ deviceId: z.string(), deleted: z.literal(true) });
export type DeviceDeleteResponse = z.infer<typeof DeviceDeleteResponse>;

// ---------------------------------------------------------------------------
// Pairing (docs/protocol.md "Pairing"): `svc pair` asks for a one-time code, the phone claims it with its own public
// key and gets a device token. The code travels in a URL fragment (`<baseUrl>/#pair=<code>.<secret>`), never to a
// server log; the secret never leaves the phone (core/devices/pairingProof.ts).

/** How long a pairing code can be claimed. */
export const PAIRING_TTL_MS = 10 * 60_000;
/** 16 random bytes, base64url: 22 characters. */
export const PairingCode = z.string().regex(/^[A-Za-z0-9_-]{22}$/, 'not a pairing code');

export const PairingCreateResponse = z.object({ code: PairingCode, expiresAt: z.number().finite() });
export type PairingCreateResponse = z.infer<typeof PairingCreateResponse>;

export const PairingClaimRequest = z.object({
  code: PairingCode,
  name: z.string().min(1).max(128),
  publicKey: PublicKeyText,
  /** HMAC-SHA256 of the public key under the link's secret (core/devices/pairingProof.ts); links without one: none. */
  proof: z
    .string()
    .regex(/^[A-Za-z0-9_-]{43}$/, 'not a pairing proof')
    .optional(),
});
export type PairingClaimRequest = z.infer<typeof PairingClaimRequest>;

/** The device token is shown once, here: a key of the account (push:read + push:write) bound to this device. */
export const PairingClaimResponse = z.object({
  deviceId: DeviceId,
  name: z.string(),
  token: z.string(),
  scopes: z.array(z.enum(SCOPES)),
});
export type PairingClaimResponse = z.infer<typeof PairingClaimResponse>;

export const ErrorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
export type ErrorBody = z.infer<typeof ErrorBody>;
