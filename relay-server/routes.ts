/**
 * The relay's HTTP routes. Order of checks on a request: route (404), method (405), key (401), the key's rate
 * limit (429), scope (403), body size (413), JSON (400 bad_json), schema (400 bad_request). Fan-out goes through
 * the bus: no route touches a WebSocket.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod/v3';
import { INBOX_PAGE } from '../core/notify/push.js';
import {
  ComputerRegisterRequest,
  type DeviceInfo,
  DeviceRegisterRequest,
  issueLine,
  MAX_HTTP_BYTES,
  PAIRING_TTL_MS,
  PairingClaimRequest,
  type PairingClaimResponse,
  type PairingCreateResponse,
  PushSendRequest,
  type PushSendResponse,
  type PushStatusResponse,
  type Scope,
} from '../core/protocol/index.js';
import { type Act, decideAccess } from '../core/relay/access.js';
import { appOrigin } from '../core/relay/reach.js';
import { importPublicKey } from '../core/seal/keys.js';
import {
  authenticate,
  generateApiKey,
  generatePairingCode,
  hashApiKey,
  newDeviceId,
  newHookId,
  newKeyId,
} from './auth.js';
import type { Bus } from './bus.js';
import type { DeviceSeen } from './deviceSeen.js';
import { getHistory } from './history/history.js';
import { discardBody, HttpError, parseJson, readBody, sendError, sendHtml, sendJson } from './http.js';
import { describeError, type Log } from './log.js';
import { subscribe as pushSubscribe, unsubscribe as pushUnsubscribe, vapidKey } from './push/routes.js';
import type { WebPush } from './push/webPush.js';
import type { Pushes } from './pushes.js';
import type { KeyLimiter, RefusalLimiter } from './rateLimit.js';
import { NOT_BUILT_PAGE, serveAppFile } from './static.js';
import type { DeviceRecord, KeyRecord, Store } from './store.js';

/** Which computers have a subscribed listener right now. */
export interface Presence {
  isOnline(hookId: string): boolean;
}

export interface RouteDeps {
  store: Store;
  bus: Bus;
  pushes: Pushes;
  presence: Presence;
  httpBuckets: KeyLimiter;
  /** Refused requests without a valid key, per client address (docs/security.md "Requests without a valid key"). */
  refusals: RefusalLimiter;
  /** The client's address: the socket's, or a trusted proxy's word for it (core/relay/clientAddress.ts). */
  clientOf: (req: IncomingMessage) => string;
  log: Log;
  now: () => number;
  /** The built phone app (relay-server/static.ts), or null: `/` then says how to build it. */
  appDir: string | null;
  /** Web Push (relay-server/push/); null or absent: the /push routes answer 404. */
  webPush?: WebPush | null;
  /** When each device was last seen (relay-server/deviceSeen.ts); absent: not kept. */
  seen?: DeviceSeen;
}

interface Context {
  req: IncomingMessage;
  res: ServerResponse;
  key: KeyRecord;
  params: string[];
}

interface RouteDef {
  /** The key must hold at least one of these; null for a public route. */
  scopes: readonly Scope[] | null;
  handle(ctx: Context, deps: RouteDeps): Promise<void>;
}

const EITHER_SCOPE: readonly Scope[] = ['push:read', 'push:write'];

/** The phone app's files: `/` is its index.html; the rest are by exact name (relay-server/static.ts). */
async function appFile({ req, res }: Context, { appDir }: RouteDeps): Promise<void> {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (!appDir) {
    if (path === '/') return sendHtml(res, NOT_BUILT_PAGE);
    throw new HttpError(404, 'not_found', `no route ${path}`);
  }
  if (!(await serveAppFile(req, res, appDir, path))) throw new HttpError(404, 'not_found', `no file ${path}`);
}

const ROUTES: { path: RegExp; methods: Record<string, RouteDef> }[] = [
  {
    path: /^\/$/,
    methods: { GET: { scopes: null, handle: appFile } },
  },
  {
    path: /^\/healthz$/,
    methods: { GET: { scopes: null, handle: async ({ res }) => sendJson(res, 200, { ok: true }) } },
  },
  {
    path: /^\/pushes\/send$/,
    methods: { POST: { scopes: ['push:write'], handle: sendPush } },
  },
  {
    path: /^\/pushes\/(\d{1,15})$/,
    methods: { GET: { scopes: EITHER_SCOPE, handle: getPush } },
  },
  {
    path: /^\/computers$/,
    methods: {
      POST: { scopes: ['push:read'], handle: registerComputer },
      GET: { scopes: EITHER_SCOPE, handle: listComputers },
    },
  },
  {
    path: /^\/history$/,
    methods: {
      GET: {
        scopes: EITHER_SCOPE,
        handle: ({ req, res, key }, deps) => getHistory({ res, key, url: req.url ?? '/' }, deps),
      },
    },
  },
  {
    path: /^\/notifications$/,
    methods: {
      GET: {
        scopes: EITHER_SCOPE,
        handle: async ({ res, key }, { store }) => {
          const rows = await store.listNotifications(key.accountId, INBOX_PAGE);
          sendJson(res, 200, { notifications: rows.map(({ accountId: _account, ...n }) => n) });
        },
      },
    },
  },
  {
    path: /^\/devices$/,
    methods: {
      POST: { scopes: EITHER_SCOPE, handle: registerDevice },
      GET: { scopes: EITHER_SCOPE, handle: listDevices },
    },
  },
  {
    path: /^\/devices\/([A-Za-z0-9._:-]{1,128})$/,
    methods: { DELETE: { scopes: EITHER_SCOPE, handle: deleteDevice } },
  },
  {
    path: /^\/pairings$/,
    methods: { POST: { scopes: ['push:write'], handle: createPairing } },
  },
  {
    path: /^\/pairings\/claim$/,
    methods: { POST: { scopes: null, handle: claimPairing } },
  },
  // Web Push (relay-server/push/routes.ts)
  {
    path: /^\/push\/vapid$/,
    methods: { GET: { scopes: EITHER_SCOPE, handle: vapidKey } },
  },
  {
    path: /^\/push\/subscriptions$/,
    methods: { POST: { scopes: EITHER_SCOPE, handle: (ctx, deps) => pushSubscribe(readJson)(ctx, deps) } },
  },
  {
    path: /^\/push\/subscriptions\/([A-Za-z0-9._:-]{1,128})$/,
    methods: { DELETE: { scopes: EITHER_SCOPE, handle: pushUnsubscribe } },
  },
  {
    // Last: anything with a file extension may be a file of the app; static.ts refuses what is not.
    path: /^\/[^?#]*\.[A-Za-z0-9]{1,16}$/,
    methods: { GET: { scopes: null, handle: appFile } },
  },
];

async function sendPush({ req, res, key }: Context, { pushes, log }: RouteDeps): Promise<void> {
  const body = await readJson(req, PushSendRequest);
  const sent = await pushes.send(key.accountId, body);
  if (!sent.ok && sent.code === 'storage_full') {
    // Open pushes settle (typed, refused, expired) within the replay window and stop counting.
    throw new HttpError(429, 'storage_full', 'this account has too much waiting for its computers; try again later', {
      'Retry-After': '60',
    });
  }
  if (!sent.ok) throw new HttpError(400, 'unknown_computer', 'targetComputer is not a computer of this account');
  const { push, duplicate } = sent;
  const answer: PushSendResponse = { id: push.id, state: push.state, duplicate };
  sendJson(res, 200, answer);
  log.info(`push ${key.accountId}/${push.id} ${duplicate ? 'duplicate of clientId' : 'stored'} (${push.type})`);
  if (!duplicate) await afterAnswer(log, `fan-out of push ${key.accountId}/${push.id}`, pushes.fanOut(push));
}

async function getPush({ res, key, params }: Context, { store }: RouteDeps): Promise<void> {
  const push = await store.getPush(key.accountId, Number(params[0]));
  if (!push) throw new HttpError(404, 'not_found', 'no such push');
  const answer: PushStatusResponse = {
    id: push.id,
    type: push.type,
    agentSessionName: push.agentSessionName,
    state: push.state,
    code: push.code,
    createdAt: push.createdAt,
    updatedAt: push.updatedAt,
  };
  sendJson(res, 200, answer);
}

/** Refuse with 403 `forbidden` (and the reason) what core/relay/access.ts does not allow this key. */
function authorize(key: KeyRecord, act: Act): void {
  const access = decideAccess(key, act);
  if (!access.ok) throw new HttpError(403, 'forbidden', access.message);
}

/**
 * A computer belongs to the key that registered it first (its `svc login`): only that key may register it again,
 * and so change the device phones seal for. A device token registers nothing.
 */
async function registerComputer({ req, res, key }: Context, { store, bus, log, now }: RouteDeps): Promise<void> {
  authorize(key, { act: 'registerComputer', owner: undefined });
  const body = await readJson(req, ComputerRegisterRequest);
  const existing = (await store.listComputers(key.accountId)).find((c) => c.name === body.name);
  if (existing) authorize(key, { act: 'registerComputer', owner: existing.ownerKeyId });
  if (body.deviceId !== undefined) {
    const device = await store.getDevice(body.deviceId);
    if (!device || device.accountId !== key.accountId || device.kind !== 'computer') {
      throw new HttpError(400, 'unknown_device', 'deviceId is not a computer device of this account');
    }
  }
  const computer = await store.registerComputer({
    accountId: key.accountId,
    name: body.name,
    platform: body.platform ?? null,
    hookId: newHookId(),
    deviceId: body.deviceId ?? null,
    ownerKeyId: key.keyId,
    now: now(),
  });
  // Another key registered the same name at the same moment and won: the store changed nothing for us.
  if (computer.ownerKeyId !== key.keyId) authorize(key, { act: 'registerComputer', owner: computer.ownerKeyId });
  sendJson(res, 200, {
    hookId: computer.hookId,
    name: computer.name,
    ...(computer.deviceId ? { deviceId: computer.deviceId } : {}),
  });
  log.info(`computer ${computer.hookId} registered for ${key.accountId}`);
  const changed = bus.publish(key.accountId, { kind: 'computers.changed', computer: computer.hookId });
  await afterAnswer(log, `computers.changed for ${computer.hookId}`, changed);
}

/** Work done after the client has its answer: a failure there is a bug to log, not a response to send. */
async function afterAnswer(log: Log, what: string, work: Promise<void>): Promise<void> {
  try {
    await work;
  } catch (error) {
    log.error(`${what} failed: ${describeError(error)}`);
  }
}

async function listComputers({ res, key }: Context, { store, presence }: RouteDeps): Promise<void> {
  const computers = await store.listComputers(key.accountId);
  sendJson(res, 200, {
    computers: computers.map((c) => ({
      hookId: c.hookId,
      name: c.name,
      platform: c.platform,
      online: presence.isOnline(c.hookId),
      lastSeenAt: c.lastSeenAt,
      sessions: c.sessions,
      sessionsAt: c.sessionsAt,
      ...(c.deviceId ? { deviceId: c.deviceId } : {}),
      ...(c.schedules ? { schedules: c.schedules } : {}),
    })),
  });
}

const deviceInfo = (d: DeviceRecord): DeviceInfo => ({
  deviceId: d.deviceId,
  name: d.name,
  kind: d.kind,
  publicKey: d.publicKey,
  createdAt: d.createdAt,
  ...(d.pairingProof ? { pairingProof: d.pairingProof } : {}),
  lastSeenAt: d.lastSeenAt ?? null,
  origin: d.origin ?? null,
  ...(d.notifications !== undefined ? { notifications: d.notifications } : {}),
});

/** Public keys only: a device registers the public half of a key pair it made itself. */
async function registerDevice({ req, res, key }: Context, { store, log, now }: RouteDeps): Promise<void> {
  authorize(key, { act: 'registerDevice' });
  const body = await readJson(req, DeviceRegisterRequest);
  try {
    await importPublicKey(body.publicKey);
  } catch {
    throw new HttpError(400, 'bad_request', 'publicKey: not a P-256 public key (base64url of the raw 65-byte point)');
  }
  const device = await store.registerDevice({
    deviceId: newDeviceId(),
    accountId: key.accountId,
    name: body.name,
    kind: body.kind,
    publicKey: body.publicKey,
    now: now(),
  });
  sendJson(res, 200, deviceInfo(device));
  log.info(`device ${device.deviceId} (${device.kind}) registered for ${key.accountId}`);
}

async function listDevices({ res, key }: Context, { store }: RouteDeps): Promise<void> {
  const devices = await store.listDevices(key.accountId);
  sendJson(res, 200, { devices: devices.map(deviceInfo) });
}

async function deleteDevice({ res, key, params }: Context, { store, bus, log }: RouteDeps): Promise<void> {
  const deviceId = params[0] ?? '';
  // A phone's device token may unpair that phone only; removing another device (a computer, another phone) takes
  // an API key, so a lost phone cannot cut the owner's computers off.
  const computer = (await store.listComputers(key.accountId)).find((c) => c.deviceId === deviceId);
  authorize(key, { act: 'removeDevice', deviceId, computerOwner: computer?.ownerKeyId });
  if (!(await store.deleteDevice(key.accountId, deviceId))) throw new HttpError(404, 'not_found', 'no such device');
  sendJson(res, 200, { deviceId, deleted: true });
  log.info(`device ${deviceId} removed from ${key.accountId}`);
  // Its tokens are gone from the store; connections opened with them go too.
  await afterAnswer(
    log,
    `closing ${deviceId}'s connections`,
    bus.publish(key.accountId, { kind: 'device.removed', deviceId }),
  );
}

/** A one-time pairing code for this account (`svc pair`). Only its hash is stored. */
async function createPairing({ res, key }: Context, { store, log, now }: RouteDeps): Promise<void> {
  // Only an API key pairs: a token minted by a phone would outlive that phone's unpairing.
  authorize(key, { act: 'createPairing' });
  const code = generatePairingCode();
  const at = now();
  const expiresAt = at + PAIRING_TTL_MS;
  await store.createPairing({ codeHash: hashApiKey(code), accountId: key.accountId, now: at, expiresAt });
  const answer: PairingCreateResponse = { code, expiresAt };
  sendJson(res, 200, answer);
  log.info(`pairing code created for ${key.accountId} (${key.keyId})`);
}

const CLAIM_REFUSALS = {
  unknown: new HttpError(404, 'not_found', 'this pairing link is not valid'),
  used: new HttpError(410, 'pairing_used', 'this pairing link was already used'),
  expired: new HttpError(410, 'pairing_expired', 'this pairing link has expired'),
} as const;

/**
 * The phone claims a code with the public half of a key pair it made itself, and gets a device token: a key of the
 * account bound to the new app device, removed by `DELETE /devices/<id>`. No API key: the code is the credential.
 * A refused claim spends from its address's bucket of refusals (the router does that); a claim of a real code never
 * does, so one client guessing behind a proxy cannot block the pairing of the others (codes are 128 random bits:
 * the bucket bounds the work, not the odds).
 */
async function claimPairing({ req, res }: Context, { store, log, now }: RouteDeps): Promise<void> {
  const body = await readJson(req, PairingClaimRequest);
  const open = await store.pairingState(hashApiKey(body.code), now());
  if (open !== 'open') throw CLAIM_REFUSALS[open];
  try {
    await importPublicKey(body.publicKey);
  } catch {
    throw new HttpError(400, 'bad_request', 'publicKey: not a P-256 public key (base64url of the raw 65-byte point)');
  }
  // where the phone opened the app: the address it uses from now on (its storage is bound to it)
  const origin = appOrigin(req.headers.origin);
  const token = generateApiKey();
  const scopes: PairingClaimResponse['scopes'] = ['push:read', 'push:write'];
  const keyId = newKeyId();
  const claimed = await store.claimPairing({
    codeHash: hashApiKey(body.code),
    now: now(),
    device: {
      deviceId: newDeviceId(),
      name: body.name,
      publicKey: body.publicKey,
      ...(body.proof ? { pairingProof: body.proof } : {}),
      ...(origin ? { origin } : {}),
    },
    key: { keyId, keyHash: hashApiKey(token), scopes },
  });
  if (!claimed.ok) throw CLAIM_REFUSALS[claimed.reason];
  const answer: PairingClaimResponse = { deviceId: claimed.device.deviceId, name: claimed.device.name, token, scopes };
  sendJson(res, 200, answer);
  log.info(`pairing claimed for ${claimed.accountId}: app device ${claimed.device.deviceId} (${keyId})`);
}

async function readJson<T>(req: IncomingMessage, schema: z.ZodType<T>): Promise<T> {
  const text = await readBody(req, MAX_HTTP_BYTES);
  const json = parseJson(text);
  if (!json.ok) throw new HttpError(400, 'bad_json', json.message);
  const parsed = schema.safeParse(json.value);
  if (!parsed.success) throw new HttpError(400, 'bad_request', issueLine(parsed.error, 'body'));
  return parsed.data;
}

async function identify(req: IncomingMessage, store: Store, seen?: DeviceSeen): Promise<KeyRecord> {
  const auth = await authenticate(store, req.headers.authorization);
  if (auth.ok) {
    seen?.seen(auth.key);
    return auth.key;
  }
  const message =
    auth.reason === 'missing' ? 'send the API key as Authorization: Bearer <key>' : 'the API key is not valid';
  throw new HttpError(401, 'unauthorized', message, { 'WWW-Authenticate': 'Bearer' });
}

async function admit(key: KeyRecord, def: RouteDef, httpBuckets: KeyLimiter): Promise<void> {
  const limit = await httpBuckets.take(key.keyId);
  if (!limit.allowed) {
    const seconds = Math.max(1, Math.ceil(limit.retryAfterMs / 1000));
    throw new HttpError(429, 'rate_limited', `too many requests for this key; retry in ${seconds}s`, {
      'Retry-After': String(seconds),
    });
  }
  if (def.scopes && !def.scopes.some((s) => key.scopes.includes(s))) {
    throw new HttpError(403, 'forbidden', `this key lacks the scope ${def.scopes.join(' or ')}`);
  }
}

/** The request listener for the relay's HTTP server. */
export function createRequestHandler(deps: RouteDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const { log } = deps;
  return (req, res) => {
    const method = req.method ?? 'GET';
    // Only the path is ever logged: a query string is not read, but someone may have put a key in it.
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    let keyId: string | undefined;
    const run = async () => {
      const route = ROUTES.find((r) => r.path.test(path));
      if (!route) throw new HttpError(404, 'not_found', `no route ${path}`);
      const def = route.methods[method] ?? (method === 'HEAD' ? route.methods.GET : undefined);
      if (!def) {
        const allow = Object.keys(route.methods).join(', ');
        throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on ${path}; use ${allow}`, {
          Allow: allow,
        });
      }
      let key: KeyRecord = { keyId: '', accountId: '', scopes: [] };
      if (def.scopes) {
        key = await identify(req, deps.store, deps.seen);
        keyId = key.keyId;
        await admit(key, def, deps.httpBuckets);
      }
      await def.handle({ req, res, key, params: route.path.exec(path)?.slice(1) ?? [] }, deps);
    };
    run().catch((error: unknown) => {
      const who = keyId ? ` (${keyId})` : '';
      if (error instanceof HttpError && !keyId && error.status >= 400 && error.status < 500 && error.status !== 429) {
        // Refused without a valid key: spend from the address's bucket; past it, a quiet 429 (the limiter logs runs).
        const address = deps.clientOf(req);
        const limit = deps.refusals.charge(address, `http ${method} ${path}`);
        if (!limit.allowed) {
          if (error.status === 413) discardBody(req);
          const seconds = Math.max(1, Math.ceil(limit.retryAfterMs / 1000));
          const headers = { 'Retry-After': String(seconds), ...(error.status === 413 ? { Connection: 'close' } : {}) };
          const message = `too many refused requests from this address; retry in ${seconds}s`;
          if (!res.headersSent) sendError(res, new HttpError(429, 'rate_limited', message, headers));
          return;
        }
      }
      if (error instanceof HttpError) {
        log.warn(`http ${error.status} ${error.code} ${method} ${path}${who}: ${error.message}`);
        if (error.status === 413) {
          error.headers.Connection = 'close';
          discardBody(req);
        }
        if (!res.headersSent) sendError(res, error);
        return;
      }
      log.error(`http 500 ${method} ${path}${who}: ${describeError(error)}`);
      if (!res.headersSent) sendError(res, new HttpError(500, 'internal', 'internal error; the relay logged it'));
      else res.destroy();
    });
  };
}
