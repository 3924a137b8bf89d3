/** Rows of the Postgres store as the Store's records (BIGINT columns come back as strings). */
import { type DeviceKind, type PushState, SCOPES, type Scope, SessionRecord } from '../../core/protocol/index.js';
import type { ComputerRecord, DeviceRecord, PushRecord, PushSubscriptionRecord } from '../store.js';

export type Row = Record<string, unknown>;

export const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export function toPush(r: Row): PushRecord {
  return {
    accountId: r.account_id as string,
    id: num(r.id),
    type: r.type as string,
    agentSessionName: r.agent_session_name as string,
    body: r.body as string,
    targetComputer: (r.target_computer as string | null) ?? null,
    clientId: (r.client_id as string | null) ?? null,
    sealed: (r.sealed as string | null) ?? null,
    state: r.state as PushState,
    code: (r.code as string | null) ?? null,
    resultComputer: (r.result_computer as string | null) ?? null,
    createdAt: num(r.created_at),
    updatedAt: num(r.updated_at),
  };
}

const StoredSessions = SessionRecord.array();
export function toComputer(r: Row): ComputerRecord {
  const parsed = StoredSessions.safeParse(r.sessions);
  const schedules = r.schedules as Record<string, unknown> | null;
  return {
    hookId: r.hook_id as string,
    accountId: r.account_id as string,
    name: r.name as string,
    platform: (r.platform as string | null) ?? null,
    createdAt: num(r.created_at),
    lastSeenAt: numOrNull(r.last_seen_at),
    sessions: parsed.success ? parsed.data : [],
    sessionsAt: numOrNull(r.sessions_at),
    ...(schedules ? { schedules } : {}),
    ...(r.device_id ? { deviceId: r.device_id as string } : {}),
    ownerKeyId: (r.owner_key_id as string | null) ?? null,
  };
}

export function toSubscription(r: Row): PushSubscriptionRecord {
  return {
    deviceId: r.device_id as string,
    accountId: r.account_id as string,
    endpoint: r.endpoint as string,
    p256dh: r.p256dh as string,
    auth: r.auth as string,
    events: r.events as string[],
  };
}

export function toDevice(r: Row): DeviceRecord {
  return {
    deviceId: r.id as string,
    accountId: r.account_id as string,
    name: r.name as string,
    kind: r.kind as DeviceKind,
    publicKey: r.public_key as string,
    createdAt: num(r.created_at),
    ...(r.paired !== undefined ? { paired: r.paired === true } : {}),
    ...(r.pairing_proof ? { pairingProof: r.pairing_proof as string } : {}),
    lastSeenAt: numOrNull(r.last_seen_at),
    origin: (r.origin as string | null | undefined) ?? null,
    ...(r.notifications !== undefined ? { notifications: r.notifications === true } : {}),
  };
}

export const parseScopes = (text: string): Scope[] =>
  text.split(',').filter((s): s is Scope => (SCOPES as readonly string[]).includes(s));
