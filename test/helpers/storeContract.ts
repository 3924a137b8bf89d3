/**
 * The Store contract (relay-server/store.ts), run against every store: SQLite (test/unit/relay/store.test.ts) and
 * Postgres (test/integration/store-postgres.test.ts). One set of behaviours, so a relay on either keeps the same
 * delivery guarantees: push numbering and deduplication, compare-and-set, what a listener may replay, computers and
 * their owners, history paging and limits, devices and pairing codes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionRecord } from '../../core/protocol/index.js';
import { createAccount, createApiKey } from '../../relay-server/accounts.js';
import { hashApiKey } from '../../relay-server/auth.js';
import { INBOX_MAX_AGE_MS, INBOX_SIZE, type NewPush, StorageFullError, type Store } from '../../relay-server/store.js';

export interface StoreHarness {
  /** A new, empty store. */
  open(): Promise<Store>;
  /** Make computer `hookId` ownerless, as a database from before owners were recorded has it. */
  clearOwner(hookId: string): Promise<void>;
  /** After each test (the store itself is closed by the contract). */
  cleanup?(): Promise<void>;
}

/** A push as the relay stores one, for tests of any store. */
export const push = (accountId: string, extra: Partial<NewPush> = {}): NewPush => ({
  accountId,
  type: 'agent.command',
  agentSessionName: 'svc-proj',
  body: 'secret text',
  targetComputer: null,
  clientId: null,
  now: 1_000,
  ...extra,
});

const session = (name: string): SessionRecord => ({ name, attached: false, createdAt: 1, activityAt: 2, panes: [] });

export function storeContract(h: StoreHarness): void {
  let store: Store;
  beforeEach(async () => {
    store = await h.open();
  });
  afterEach(async () => {
    await store.close();
    await h.cleanup?.();
  });

  describe('accounts and keys', () => {
    it('stores a key only as its hash and finds it by the hash', async () => {
      const account = await createAccount(store);
      expect(account.scopes).toEqual(['push:read', 'push:write']);
      expect(await store.findKeyByHash(hashApiKey(account.apiKey))).toEqual({
        keyId: account.keyId,
        accountId: account.accountId,
        scopes: ['push:read', 'push:write'],
      });
      expect(await store.findKeyByHash(hashApiKey(`${account.apiKey}x`))).toBeNull();
      const reader = await createApiKey(store, account.accountId, ['push:read', 'push:read']);
      expect(reader.scopes).toEqual(['push:read']);
      await expect(createApiKey(store, 'acc_missing', ['push:read'])).rejects.toThrow('no account acc_missing');
      await expect(createApiKey(store, account.accountId, [])).rejects.toThrow('at least one scope');
    });
  });

  describe('pushes', () => {
    it('prunes each account to its newest final pushes, never an open one', async () => {
      await store.createAccount('a', 0);
      await store.createAccount('b', 0);
      for (let i = 0; i < 6; i++) await store.insertPush(push('a'));
      await store.insertPush(push('b'));
      const final = { state: 'injected' as const, code: null, now: 2_000 };
      for (const id of [1, 2, 3, 4, 6]) await store.updatePush('a', id, { states: ['pending'] }, final);
      await store.updatePush('b', 1, { states: ['pending'] }, final);
      expect(await store.pruneFinalPushes(2)).toBe(3);
      const left = await Promise.all(
        [1, 2, 3, 4, 5, 6].map(async (id) => (await store.getPush('a', id))?.state ?? null),
      );
      // 5 is open: kept whatever its age; of the final ones only the newest two (4, 6).
      expect(left).toEqual([null, null, null, 'injected', 'pending', 'injected']);
      expect(await store.getPush('b', 1)).toMatchObject({ state: 'injected' });
      // Ids are never reused after a prune.
      expect((await store.insertPush(push('a'))).push.id).toBe(7);
    });

    it('refuses a push that would take an account past maxOpenBytes; final pushes do not count, duplicates pass', async () => {
      await store.createAccount('a', 0);
      const big = (clientId: string) => push('a', { body: 'x'.repeat(1_000), clientId, maxOpenBytes: 3_000 });
      await store.insertPush(big('1'));
      await store.insertPush(big('2'));
      await expect(store.insertPush(big('3'))).rejects.toBeInstanceOf(StorageFullError);
      // A retry of a push already stored is answered, full or not.
      expect((await store.insertPush(big('2'))).duplicate).toBe(true);
      await store.updatePush('a', 1, { states: ['pending'] }, { state: 'expired', code: null, now: 2_000 });
      expect((await store.insertPush(big('3'))).duplicate).toBe(false);
    });

    it('numbers pushes per account and deduplicates by clientId', async () => {
      await store.createAccount('a', 0);
      await store.createAccount('b', 0);
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await store.insertPush(push('a'))).push.id);
      expect(ids).toEqual([1, 2, 3]);
      expect((await store.insertPush(push('b'))).push.id).toBe(1);
      const first = await store.insertPush(push('a', { clientId: 'x' }));
      const again = await store.insertPush(push('a', { clientId: 'x', body: 'other' }));
      expect(first).toMatchObject({ duplicate: false, push: { id: 4 } });
      expect(await store.getPush('a', 4)).toEqual(first.push); // what insertPush answers is what it stored
      // even for a string UTF-8 cannot hold (a lone surrogate: stored as U+FFFD)
      const odd = await store.insertPush(push('b', { body: 'half \ud800 a pair', type: 'x\udfff' }));
      expect(odd.push).toMatchObject({ body: 'half \ufffd a pair', type: 'x\ufffd' });
      expect(await store.getPush('b', odd.push.id)).toEqual(odd.push);
      expect(again).toMatchObject({ duplicate: true, push: { id: 4, body: 'secret text' } });
      expect((await store.insertPush(push('a'))).push.id).toBe(5);
      await expect(store.insertPush(push('nobody'))).rejects.toThrow();
    });

    it('updates state only when the condition holds, and forgets the body once final', async () => {
      await store.createAccount('a', 0);
      const { push: p } = await store.insertPush(push('a'));
      expect(
        await store.updatePush('a', p.id, { states: ['delivered'] }, { state: 'injected', code: null, now: 2 }),
      ).toBe(false);
      expect(await store.getPush('a', p.id)).toMatchObject({ state: 'pending', updatedAt: p.createdAt });
      expect(
        await store.updatePush('a', p.id, { states: ['pending'] }, { state: 'delivered', code: null, now: 2 }),
      ).toBe(true);
      expect(await store.getPush('a', p.id)).toMatchObject({ state: 'delivered', body: 'secret text', updatedAt: 2 });
      const refused = await store.updatePush(
        'a',
        p.id,
        { states: ['pending', 'delivered'] },
        { state: 'refused', code: 'session_not_found', resultComputer: 'c_a', now: 3 },
      );
      expect(refused).toBe(true);
      expect(await store.getPush('a', p.id)).toMatchObject({
        state: 'refused',
        code: 'session_not_found',
        resultComputer: 'c_a',
        body: '',
      });
      const sameComputer = { states: ['refused'] as const, code: 'session_not_found', notResultComputer: 'c_a' };
      expect(await store.updatePush('a', p.id, sameComputer, { state: 'injected', code: null, now: 4 })).toBe(false);
      const otherComputer = { ...sameComputer, notResultComputer: 'c_b' };
      const fromB = { state: 'injected', code: null, resultComputer: 'c_b', now: 4 } as const;
      expect(await store.updatePush('a', p.id, otherComputer, fromB)).toBe(true);
      expect(await store.getPush('a', p.id)).toMatchObject({ state: 'injected', code: null, resultComputer: 'c_b' });
      expect(
        await store.updatePush('b', p.id, { states: ['injected'] }, { state: 'expired', code: null, now: 5 }),
      ).toBe(false);
      expect(await store.getPush('a', p.id)).toMatchObject({ state: 'injected', updatedAt: 4 });
    });

    it('forgets a sealed push’s envelope once final, as it forgets a plain body', async () => {
      await store.createAccount('a', 0);
      const sealed = JSON.stringify({ v: 1, ct: 'sealed-ciphertext-kept-while-open' });
      const { push: p } = await store.insertPush(push('a', { body: '', sealed }));
      expect(await store.getPush('a', p.id)).toMatchObject({ sealed });
      await store.updatePush('a', p.id, { states: ['pending'] }, { state: 'delivered', code: null, now: 2 });
      expect(await store.getPush('a', p.id)).toMatchObject({ state: 'delivered', sealed });
      await store.updatePush('a', p.id, { states: ['delivered'] }, { state: 'injected', code: null, now: 3 });
      expect(await store.getPush('a', p.id)).toMatchObject({ state: 'injected', body: '' });
      expect((await store.getPush('a', p.id))?.sealed ?? null).toBeNull();
    });

    it('lists what a listener may replay and what the sweeper may expire', async () => {
      await store.createAccount('a', 0);
      await store.insertPush(push('a')); // 1
      await store.insertPush(push('a', { targetComputer: 'c_other' })); // 2
      await store.insertPush(push('a', { type: 'note' })); // 3
      await store.insertPush(push('a', { targetComputer: 'c_me', now: 5_000 })); // 4
      const { push: done } = await store.insertPush(push('a')); // 5
      await store.updatePush('a', done.id, { states: ['pending'] }, { state: 'injected', code: null, now: 6 });
      const replayable = await store.listReplayable({
        accountId: 'a',
        afterId: 0,
        hookId: 'c_me',
        type: 'agent.command',
        states: ['pending', 'delivered'],
      });
      expect(replayable.map((p) => p.id)).toEqual([1, 4]);
      const after1 = await store.listReplayable({
        accountId: 'a',
        afterId: 1,
        hookId: 'c_me',
        type: 'agent.command',
        states: ['pending'],
      });
      expect(after1.map((p) => p.id)).toEqual([4]);
      expect((await store.listOlderThan(['pending'], 2_000, 10)).map((p) => p.id)).toEqual([1, 2, 3]);
    });
  });

  describe('computers', () => {
    it('registers once per name, keeps the inventory, and finds computers by session', async () => {
      await store.createAccount('a', 0);
      await store.createAccount('b', 0);
      const laptop = await store.registerComputer({
        accountId: 'a',
        name: 'laptop',
        platform: null,
        hookId: 'c_1',
        ownerKeyId: 'key_a',
        now: 1,
      });
      const again = await store.registerComputer({
        accountId: 'a',
        name: 'laptop',
        platform: 'darwin',
        hookId: 'c_2',
        ownerKeyId: 'key_a',
        now: 2,
      });
      expect(again).toMatchObject({ hookId: laptop.hookId, platform: 'darwin' });
      const c3 = { accountId: 'a', name: 'desk', platform: null, hookId: 'c_3', ownerKeyId: 'key_a', now: 3 };
      await store.registerComputer(c3);
      await store.registerComputer({
        accountId: 'b',
        name: 'laptop',
        platform: null,
        hookId: 'c_4',
        ownerKeyId: 'key_b',
        now: 4,
      });
      await store.saveSessions('c_1', [session('svc-a'), session('svc-b')], 10);
      await store.saveSessions('c_3', [session('svc-b')], 11);
      await store.saveSessions('c_4', [session('svc-a')], 12);
      expect(await store.computersWithSession('a', 'svc-a')).toEqual(['c_1']);
      expect(await store.computersWithSession('a', 'svc-b')).toEqual(['c_1', 'c_3']);
      expect(await store.computersWithSession('a', 'svc-c')).toEqual([]);
      await store.touchComputer('c_1', 20);
      expect(await store.getComputer('c_1')).toMatchObject({
        lastSeenAt: 20,
        sessionsAt: 10,
        sessions: [session('svc-a'), session('svc-b')],
      });
      expect((await store.listComputers('a')).map((c) => c.hookId)).toEqual(['c_1', 'c_3']);
      expect(await store.getComputer('c_9')).toBeNull();
    });

    it('belongs to the key that registered it: another key changes nothing, an ownerless one is claimed once', async () => {
      await store.createAccount('a', 0);
      const laptop = { accountId: 'a', name: 'laptop', platform: 'linux', hookId: 'c_1', now: 1 };
      expect(await store.registerComputer({ ...laptop, deviceId: 'd_1', ownerKeyId: 'key_1' })).toMatchObject({
        ownerKeyId: 'key_1',
        deviceId: 'd_1',
      });
      const other = await store.registerComputer({ ...laptop, deviceId: 'd_evil', ownerKeyId: 'key_2' });
      expect(other).toMatchObject({ ownerKeyId: 'key_1', deviceId: 'd_1' });
      expect(await store.registerComputer({ ...laptop, deviceId: 'd_2', ownerKeyId: 'key_1' })).toMatchObject({
        deviceId: 'd_2',
      });
      expect(await store.claimComputer('c_1', 'key_2')).toBe(false);

      // A computer of a database made before owners were recorded.
      await h.clearOwner('c_1');
      expect(await store.claimComputer('c_1', 'key_3')).toBe(true);
      expect(await store.claimComputer('c_1', 'key_1')).toBe(false);
      expect((await store.getComputer('c_1'))?.ownerKeyId).toBe('key_3');
    });
  });

  describe('the relay’s store of history chunks', () => {
    it('pages a session newest first, and keeps an account within its size and age', async () => {
      await store.createAccount('acc_1', 0);
      await store.createAccount('acc_2', 0);
      const limits = { maxBytes: 2_000, maxAgeMs: 1_000_000 };
      const envelope = (n: number) => ({ v: 1, ct: `${'c'.repeat(90)}${n}` }); // ~110 bytes each
      const add = (acc: string, session: string, n: number, at: number) =>
        store.addHistoryChunk({ accountId: acc, computer: 'c_1', session, envelope: envelope(n) }, at, limits);
      for (let n = 1; n <= 10; n++) await add('acc_1', 'svc-a', n, 1_000 + n);
      await add('acc_2', 'svc-a', 99, 1_000);
      const page = await store.listHistory({ accountId: 'acc_1', computer: 'c_1', session: 'svc-a', limit: 4 });
      expect(page.map((c) => c.envelope.ct)).toEqual([10, 9, 8, 7].map((n) => envelope(n).ct));
      const older = await store.listHistory({
        accountId: 'acc_1',
        computer: 'c_1',
        session: 'svc-a',
        before: page[3]!.id,
        limit: 100,
      });
      expect(older.map((c) => c.envelope.ct)).toEqual([6, 5, 4, 3, 2, 1].map((n) => envelope(n).ct));
      // over 2 000 bytes: the oldest go first, only in that account
      for (let n = 11; n <= 30; n++) await add('acc_1', 'svc-a', n, 2_000 + n);
      const kept = await store.listHistory({ accountId: 'acc_1', computer: 'c_1', session: 'svc-a', limit: 200 });
      const bytes = kept.reduce((sum, c) => sum + JSON.stringify(c.envelope).length, 0);
      expect(bytes).toBeLessThanOrEqual(2_000);
      expect(kept[0]!.envelope.ct).toBe(envelope(30).ct);
      expect(kept.some((c) => c.envelope.ct === envelope(1).ct)).toBe(false);
      expect(
        await store.listHistory({ accountId: 'acc_2', computer: 'c_1', session: 'svc-a', limit: 10 }),
      ).toHaveLength(1);
      // older than the age limit: gone at the next insert
      await add('acc_1', 'svc-b', 1, 2_000_000);
      expect(await store.listHistory({ accountId: 'acc_1', computer: 'c_1', session: 'svc-a', limit: 200 })).toEqual(
        [],
      );
    });
  });

  describe('devices and pairing codes', () => {
    it('registers a device once per key, claims a pairing code once, and removes a device with its keys', async () => {
      await store.createAccount('a', 0);
      const d = await store.registerDevice({
        deviceId: 'd_1',
        accountId: 'a',
        name: 'phone',
        kind: 'app',
        publicKey: 'pk1',
        now: 1,
      });
      expect(
        await store.registerDevice({
          deviceId: 'd_x',
          accountId: 'a',
          name: 'again',
          kind: 'app',
          publicKey: 'pk1',
          now: 2,
        }),
      ).toEqual(d);
      await store.createPairing({ codeHash: 'h1', accountId: 'a', now: 10, expiresAt: 100 });
      expect(await store.pairingState('h1', 50)).toBe('open');
      expect(await store.pairingState('h1', 100)).toBe('expired');
      expect(await store.pairingState('nope', 50)).toBe('unknown');
      const claim = (keyId: string) =>
        store.claimPairing({
          codeHash: 'h1',
          now: 20,
          device: { deviceId: 'd_2', name: 'tablet', publicKey: 'pk2', pairingProof: 'proof-of-pk2' },
          key: { keyId, keyHash: `hash-${keyId}`, scopes: ['push:read', 'push:write'] },
        });
      const [first, second] = await Promise.all([claim('k1'), claim('k2')]);
      expect([first.ok, second.ok].sort()).toEqual([false, true]);
      // a paired device holds a token of its own; one registered with an API key does not
      expect(await store.getDevice('d_2')).toMatchObject({ deviceId: 'd_2', paired: true });
      expect(await store.getDevice('d_1')).toMatchObject({ deviceId: 'd_1', paired: false });
      expect(await store.pairingState('h1', 30)).toBe('used');
      expect((await store.findKeyByHash('hash-k1')) ?? (await store.findKeyByHash('hash-k2'))).toMatchObject({
        deviceId: 'd_2',
      });
      expect((await store.listDevices('a')).map((x) => x.deviceId)).toEqual(['d_1', 'd_2']);
      // the proof it paired with is kept and listed as it came (core/devices/pairingProof.ts); none without one
      expect((await store.listDevices('a')).map((x) => x.pairingProof)).toEqual([undefined, 'proof-of-pk2']);
      expect(await store.deleteDevice('a', 'd_2')).toBe(true);
      expect(await store.deleteDevice('a', 'd_2')).toBe(false);
      expect(await store.findKeyByHash('hash-k1')).toBeNull();
      expect(await store.findKeyByHash('hash-k2')).toBeNull();
      expect(await store.getDevice('d_1')).toMatchObject({ name: 'phone' });
    });
  });

  describe('what verify says of each phone', () => {
    it('keeps when each device was last seen (never back in time), where it paired, and whether it notifies', async () => {
      await store.createAccount('a', 0);
      await store.createPairing({ codeHash: 'h1', accountId: 'a', now: 10, expiresAt: 100 });
      const claimed = await store.claimPairing({
        codeHash: 'h1',
        now: 20,
        device: { deviceId: 'd_p', name: 'Pixel', publicKey: 'pk', origin: 'https://relay.example' },
        key: { keyId: 'k1', keyHash: 'hash-k1', scopes: ['push:read', 'push:write'] },
      });
      expect(claimed).toMatchObject({ ok: true, device: { origin: 'https://relay.example', lastSeenAt: 20 } });
      await store.registerDevice({
        deviceId: 'd_c',
        accountId: 'a',
        name: 'laptop',
        kind: 'computer',
        publicKey: 'pc',
        now: 5,
      });
      const listed = async () =>
        (await store.listDevices('a')).map((d) => [d.deviceId, d.lastSeenAt, d.origin, d.notifications]);
      expect(await listed()).toEqual([
        ['d_c', null, null, false],
        ['d_p', 20, 'https://relay.example', false],
      ]);
      await store.deviceSeen('d_p', 500);
      await store.deviceSeen('d_p', 300); // a write that arrives late does not move it back
      await store.putPushSubscription({
        deviceId: 'd_p',
        accountId: 'a',
        endpoint: 'https://push.example/1',
        p256dh: 'k',
        auth: 'x',
        events: ['ask'],
      });
      expect(await listed()).toEqual([
        ['d_c', null, null, false],
        ['d_p', 500, 'https://relay.example', true],
      ]);
      await store.deviceSeen('d_gone', 600); // an unknown device: nothing, no error
    });
  });

  describe('relay settings and Web Push subscriptions', () => {
    it('keeps the first value of a setting, whoever asks after', async () => {
      expect(await store.relaySetting('vapid', 'first')).toBe('first');
      expect(await store.relaySetting('vapid', 'second')).toBe('first');
      const both = await Promise.all([store.relaySetting('other', 'a'), store.relaySetting('other', 'b')]);
      expect(new Set(both).size).toBe(1);
    });

    it('one subscription per device, replaced, listed per account, deleted once', async () => {
      const { accountId } = await createAccount(store);
      const { accountId: other } = await createAccount(store);
      const sub = {
        deviceId: 'd_1',
        accountId,
        endpoint: 'https://push.example/1',
        p256dh: 'k',
        auth: 'a',
        events: ['ask'],
      };
      await store.putPushSubscription(sub);
      await store.putPushSubscription({ ...sub, endpoint: 'https://push.example/2', events: ['ask', 'done'] });
      await store.putPushSubscription({ ...sub, deviceId: 'd_2', accountId: other });
      expect(await store.getPushSubscription('d_1')).toEqual({
        ...sub,
        endpoint: 'https://push.example/2',
        events: ['ask', 'done'],
      });
      expect((await store.listPushSubscriptions(accountId)).map((x) => x.deviceId)).toEqual(['d_1']);
      expect(await store.deletePushSubscription('d_1')).toBe(true);
      expect(await store.deletePushSubscription('d_1')).toBe(false);
      expect(await store.getPushSubscription('d_1')).toBeNull();
      expect(await store.listPushSubscriptions(other)).toHaveLength(1);
    });
  });

  describe('the phones’ inbox of notifications', () => {
    it('keeps each once, lists newest first per account, and holds at most INBOX_SIZE', async () => {
      const { accountId } = await createAccount(store);
      const { accountId: other } = await createAccount(store);
      const note = (id: string, at: number, account = accountId) => ({
        accountId: account,
        computer: 'c_1',
        id,
        session: 'svc-proj',
        kind: 'notify',
        envelope: { v: 1, ct: `sealed-${id}` },
        at,
      });
      await store.saveNotification(note('n_1', 10));
      await store.saveNotification(note('n_2', 20));
      await store.saveNotification({ ...note('n_1', 30), envelope: { v: 1, ct: 'again' } }); // the same id: kept once
      await store.saveNotification(note('n_3', 5, other));
      expect(await store.listNotifications(accountId, 10)).toEqual([note('n_2', 20), note('n_1', 10)]);
      expect((await store.listNotifications(other, 10)).map((n) => n.id)).toEqual(['n_3']);
      expect(await store.listNotifications(accountId, 1)).toEqual([note('n_2', 20)]);
      for (let i = 0; i < INBOX_SIZE; i++) await store.saveNotification(note(`m_${i}`, 100 + i));
      const kept = await store.listNotifications(accountId, INBOX_SIZE + 10);
      expect(kept).toHaveLength(INBOX_SIZE);
      expect(kept[0]?.id).toBe(`m_${INBOX_SIZE - 1}`);
      expect(kept.some((n) => n.id === 'n_1' || n.id === 'n_2')).toBe(false); // the oldest went
      expect(await store.listNotifications(other, 10)).toHaveLength(1); // another account's are its own
      // none older than INBOX_MAX_AGE_MS before the newest
      await store.saveNotification(note('late', 100 + INBOX_SIZE + INBOX_MAX_AGE_MS));
      expect((await store.listNotifications(accountId, INBOX_SIZE)).map((n) => n.id)).toEqual(['late']);
    });
  });
}
