/**
 * The Web Push routes (docs/protocol.md "Web Push"): the relay's VAPID public key, and a device's subscription with
 * the events it wants. Bad input gets a code like every route (readJson: 400 bad_json / bad_request).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { z } from 'zod/v3';
import { PushSubscribeRequest } from '../../core/notify/push.js';
import { decideAccess } from '../../core/relay/access.js';
import { HttpError, sendJson } from '../http.js';
import type { Log } from '../log.js';
import type { KeyRecord, Store } from '../store.js';
import type { WebPush } from './webPush.js';

export interface PushRouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  key: KeyRecord;
  params: string[];
}
export interface PushRouteDeps {
  store: Store;
  log: Log;
  webPush?: WebPush | null;
}
type ReadJson = <T>(req: IncomingMessage, schema: z.ZodType<T>) => Promise<T>;

function need(deps: PushRouteDeps): WebPush {
  if (!deps.webPush) throw new HttpError(404, 'not_found', 'this relay does not send Web Push');
  return deps.webPush;
}

/** A device of this account, and one this key may subscribe (core/relay/access.ts: a device token, its own only). */
async function ownDevice(store: Store, key: KeyRecord, deviceId: string): Promise<void> {
  const device = await store.getDevice(deviceId);
  const access = decideAccess(key, { act: 'actAsDevice', deviceId, paired: device?.paired === true });
  if (!access.ok) throw new HttpError(403, 'forbidden', access.message);
  if (!device || device.accountId !== key.accountId) {
    throw new HttpError(400, 'unknown_device', 'deviceId is not a device of this account');
  }
}

export const vapidKey = async ({ res }: PushRouteContext, deps: PushRouteDeps) =>
  sendJson(res, 200, { publicKey: need(deps).publicKey });

export const subscribe =
  (readJson: ReadJson) =>
  async ({ req, res, key }: PushRouteContext, deps: PushRouteDeps): Promise<void> => {
    const webPush = need(deps);
    const body = await readJson(req, PushSubscribeRequest);
    await ownDevice(deps.store, key, body.deviceId);
    const problem = await webPush.endpointProblem(body.subscription.endpoint);
    if (problem) {
      deps.log.warn(`web push subscription for ${body.deviceId} refused: ${problem}`);
      throw new HttpError(400, 'bad_endpoint', problem);
    }
    await webPush.subscribe(key.accountId, body);
    deps.log.info(`web push subscription for ${body.deviceId} (${(body.events ?? ['all']).join(', ')})`);
    sendJson(res, 200, { deviceId: body.deviceId, events: await webPush.events(body.deviceId) });
  };

export async function unsubscribe({ res, key, params }: PushRouteContext, deps: PushRouteDeps): Promise<void> {
  const webPush = need(deps);
  const deviceId = params[0] ?? '';
  await ownDevice(deps.store, key, deviceId);
  sendJson(res, 200, { deviceId, deleted: await webPush.unsubscribe(deviceId) });
}
