/**
 * What the app keeps on the phone, in IndexedDB: the device (id, name, its non-extractable private key as a
 * CryptoKey, the token), sequence stamps, the outbox and the messages sent, drafts, and the last inventory.
 */

const DB_NAME = 'svc';
const DB_VERSION = 1;

export interface DeviceRecord {
  deviceId: string;
  name: string;
  token: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** base64url raw point, as the relay lists it. */
  publicKeyText: string;
  pairedAt: number;
}

/** A message the person sent, from Send until its final state. */
export interface Message {
  clientId: string;
  computer: string;
  session: string;
  text: string;
  seq: number;
  createdAt: number;
  /** The sealed envelope, kept so a retry sends exactly the same bytes. Dropped once the relay accepted it. */
  envelope: unknown | null;
  /** `unsent`: not accepted by the relay yet (the outbox); `sending`: a request is on its way. */
  state: 'unsent' | 'sending' | 'pending' | 'delivered' | 'injected' | 'refused' | 'expired';
  code: string | null;
  pushId: number | null;
  updatedAt: number;
}

let opening: Promise<IDBDatabase> | null = null;

function db(): Promise<IDBDatabase> {
  opening ??= new Promise((resolve, reject) => {
    const req = indexedDB.open(DB_NAME, DB_VERSION);
    req.onupgradeneeded = () => {
      const d = req.result;
      if (!d.objectStoreNames.contains('kv')) d.createObjectStore('kv');
      if (!d.objectStoreNames.contains('messages')) {
        const messages = d.createObjectStore('messages', { keyPath: 'clientId' });
        messages.createIndex('createdAt', 'createdAt');
      }
    };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  return opening;
}

function done<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

/**
 * Settles once the transaction of a write has committed. A request's success comes before that, and a page reloaded
 * or closed in between loses the write (a "Not now" that came back after a reload, seen in the browser tests).
 */
function committed(req: IDBRequest): Promise<void> {
  const tx = req.transaction!; // a request on an object store always has one
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new DOMException('the write was aborted', 'AbortError'));
  });
}

async function store(name: 'kv' | 'messages', mode: IDBTransactionMode): Promise<IDBObjectStore> {
  return (await db()).transaction(name, mode).objectStore(name);
}

export async function getKv<T>(key: string): Promise<T | undefined> {
  return (await done((await store('kv', 'readonly')).get(key))) as T | undefined;
}

export async function setKv(key: string, value: unknown): Promise<void> {
  await committed((await store('kv', 'readwrite')).put(value, key));
}

export async function deleteKv(key: string): Promise<void> {
  await committed((await store('kv', 'readwrite')).delete(key));
}

/**
 * The next sequence stamp for a purpose, in one read-write transaction, so two tabs never use the same number:
 * the computer refuses a stamp that is not above the last one it accepted from this device.
 */
export async function nextSeq(purpose: string): Promise<number> {
  const kv = await store('kv', 'readwrite');
  const key = `seq:${purpose}`;
  return new Promise((resolve, reject) => {
    const get = kv.get(key);
    get.onsuccess = () => {
      // Start from the clock so a phone whose storage was cleared but kept its key cannot reuse old stamps.
      const next = Math.max(((get.result as number | undefined) ?? 0) + 1, Date.now());
      const put = kv.put(next, key);
      put.onsuccess = () => resolve(next);
      put.onerror = () => reject(put.error);
    };
    get.onerror = () => reject(get.error);
  });
}

export async function putMessage(m: Message): Promise<void> {
  await done((await store('messages', 'readwrite')).put(m));
}

export async function allMessages(): Promise<Message[]> {
  const list = (await done((await store('messages', 'readonly')).index('createdAt').getAll())) as Message[];
  return list;
}

/** Keep the newest `keep` messages that are final; never drop one still on its way. */
export async function pruneMessages(keep = 200): Promise<void> {
  const list = await allMessages();
  const final = list.filter((m) => ['injected', 'refused', 'expired'].includes(m.state));
  const drop = final.slice(0, Math.max(0, final.length - keep));
  if (drop.length === 0) return;
  const s = await store('messages', 'readwrite');
  await Promise.all(drop.map((m) => done(s.delete(m.clientId))));
}

/** Forget everything (unpaired or revoked). */
export async function wipe(): Promise<void> {
  const d = await db();
  const tx = d.transaction(['kv', 'messages'], 'readwrite');
  tx.objectStore('kv').clear();
  tx.objectStore('messages').clear();
  await new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
  });
}
