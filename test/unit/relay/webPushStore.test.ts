/**
 * Web Push state in the Store (relay-server/push/webPush.ts): a relay that kept its VAPID keys and subscriptions as
 * files in its data dir hands them over once, so the phones subscribed before keep getting pushes signed with the
 * same key; a new relay makes one key pair and every later start reads it back.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import webpush from 'web-push';
import { createAccount } from '../../../relay-server/accounts.js';
import { WebPush } from '../../../relay-server/push/webPush.js';
import { openSqliteStore, type SqliteStore } from '../../../relay-server/sqliteStore.js';

let dir: string;
let store: SqliteStore;
const lines: string[] = [];
const log = {
  info: (m: string) => lines.push(m),
  warn: (m: string) => lines.push(m),
  error: (m: string) => lines.push(m),
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-webpush-'));
  store = openSqliteStore(dir);
  lines.length = 0;
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('Web Push state in the store', () => {
  it('takes over an older relay’s vapid.json and push-subscriptions.json once', async () => {
    const { accountId } = await createAccount(store);
    const old = webpush.generateVAPIDKeys();
    writeFileSync(join(dir, 'vapid.json'), JSON.stringify(old));
    const device = { accountId, endpoint: 'https://push.example/x', keys: { p256dh: 'p', auth: 'a' }, events: ['ask'] };
    writeFileSync(join(dir, 'push-subscriptions.json'), JSON.stringify({ version: 1, devices: { d_1: device } }));

    const first = await WebPush.open({ store, dataDir: dir, log });
    expect(first.publicKey).toBe(old.publicKey);
    expect(await store.getPushSubscription('d_1')).toEqual({
      deviceId: 'd_1',
      accountId,
      endpoint: 'https://push.example/x',
      p256dh: 'p',
      auth: 'a',
      events: ['ask'],
    });
    expect(await first.events('d_1')).toEqual(['ask']);
    expect(existsSync(join(dir, 'push-subscriptions.json'))).toBe(false);
    expect(existsSync(join(dir, 'push-subscriptions.json.imported'))).toBe(true);
    expect(lines.join('\n')).toMatch(/1 subscription\(s\) .* moved into the store/);

    // the store's key wins from now on, whatever the files say
    writeFileSync(join(dir, 'vapid.json'), JSON.stringify(webpush.generateVAPIDKeys()));
    expect((await WebPush.open({ store, dataDir: dir, log })).publicKey).toBe(old.publicKey);
  });

  it('a new relay makes one key pair and keeps it; a broken old file is reported, not fatal', async () => {
    writeFileSync(join(dir, 'push-subscriptions.json'), '{broken');
    const a = await WebPush.open({ store, dataDir: dir, log });
    const b = await WebPush.open({ store, log });
    expect(b.publicKey).toBe(a.publicKey);
    expect(lines.join('\n')).toMatch(/ignoring .*push-subscriptions\.json/);
    expect(await b.unsubscribe('nobody')).toBe(false);
  });
});
