import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  base64urlLength,
  decodeBase64url,
  decodePortable,
  encodeBase64url,
  encodePortable,
  isBase64url,
} from '../../../core/base64url.js';
import { Envelope } from '../../../core/seal/envelopeSchema.js';
import type { SealErrorCode } from '../../../core/seal/error.js';
import {
  type DeviceKeys,
  exportPrivateKey,
  exportPublicKey,
  fingerprint,
  generateDeviceKeys,
  importPrivateKey,
  importPublicKey,
  publicKeyOfJwk,
  safetyCode,
} from '../../../core/seal/keys.js';
import {
  MAX_CT_CHARS,
  MAX_PLAINTEXT_BYTES,
  MAX_RECIPIENTS,
  open,
  openText,
  type SealPurpose,
  seal,
} from '../../../core/seal/seal.js';

const root = resolve(import.meta.dirname, '../../..');

interface Device {
  id: string;
  keys: DeviceKeys;
  pub: string;
}

async function device(id: string, extractable = false): Promise<Device> {
  const keys = await generateDeviceKeys(extractable);
  return { id, keys, pub: await exportPublicKey(keys.publicKey) };
}

const sender = (d: Device) => ({ id: d.id, privateKey: d.keys.privateKey, publicKey: d.keys.publicKey });
const recipient = (d: Device) => ({ id: d.id, publicKey: d.keys.publicKey });
const me = (d: Device) => ({ id: d.id, privateKey: d.keys.privateKey });

/** Rejects with a SealError carrying `code`. */
async function expectCode(promise: Promise<unknown>, code: SealErrorCode): Promise<void> {
  await expect(promise).rejects.toMatchObject({ name: 'SealError', code });
}

/** Flip one bit of the bytes a base64url field encodes, keeping the field canonical. */
function flip(field: string, byte = 0, bit = 0): string {
  const bytes = decodeBase64url(field);
  bytes[byte]! ^= 1 << bit;
  return encodeBase64url(bytes);
}

const clone = (e: Envelope): Envelope => JSON.parse(JSON.stringify(e));

let laptop: Device;
let phone: Device;
let tablet: Device;
let stranger: Device;

beforeAll(async () => {
  [laptop, phone, tablet, stranger] = await Promise.all([
    device('c_laptop', true),
    device('d_phone'),
    device('d_tablet'),
    device('d_stranger'),
  ]);
});

describe.each([
  ["Node's Buffer (Node)", encodeBase64url, decodeBase64url],
  ['portable (a browser)', encodePortable, decodePortable],
])('base64url through %s', (_codec, encodeBase64url, decodeBase64url) => {
  it('round-trips every length and byte value', () => {
    for (let n = 0; n < 70; n++) {
      const bytes = new Uint8Array(n).map((_, i) => (i * 97 + n) & 255);
      const text = encodeBase64url(bytes);
      expect(text).toMatch(/^[A-Za-z0-9_-]*$/);
      expect(text.length).toBe(base64urlLength(n));
      expect(decodeBase64url(text)).toEqual(bytes);
    }
    const all = new Uint8Array(256).map((_, i) => i);
    expect(decodeBase64url(encodeBase64url(all))).toEqual(all);
  });

  it('matches RFC 4648 test vectors (url alphabet, no padding)', () => {
    const enc = (s: string) => encodeBase64url(new TextEncoder().encode(s));
    expect(['', 'f', 'fo', 'foo', 'foob', 'fooba', 'foobar'].map(enc)).toEqual([
      '',
      'Zg',
      'Zm8',
      'Zm9v',
      'Zm9vYg',
      'Zm9vYmE',
      'Zm9vYmFy',
    ]);
    expect(encodeBase64url(new Uint8Array([0xfb, 0xff, 0xbf]))).toBe('-_-_');
  });

  it.each([
    ['padding', 'Zg=='],
    ['standard alphabet', '+/+/'],
    ['whitespace', 'Zm9v Yg'],
    ['impossible length', 'Zm9vY'],
    ['non-canonical trailing bits (1 byte)', 'Zh'],
    ['non-canonical trailing bits (2 bytes)', 'Zm9'],
    ['non-ASCII', 'Zm9é'],
  ])('refuses %s', (_what, text) => {
    expect(() => decodeBase64url(text)).toThrow(SyntaxError);
    expect(isBase64url(text)).toBe(false);
  });

  it('encodes only the view it is given, and decodes into bytes of their own', () => {
    const whole = new Uint8Array([1, 2, 3, 4, 5, 6, 7]);
    expect(encodeBase64url(whole.subarray(2, 5))).toBe(encodeBase64url(new Uint8Array([3, 4, 5])));
    const bytes = decodeBase64url('AQID');
    expect([...bytes]).toEqual([1, 2, 3]);
    expect(bytes.byteOffset).toBe(0);
    expect(bytes.buffer.byteLength).toBe(3); // not a view into Node's shared pool
  });

  it('isBase64url checks the byte length when asked', () => {
    expect(isBase64url('Zm9v', 3)).toBe(true);
    expect(isBase64url('Zm9v', 4)).toBe(false);
  });
});

describe('base64url: the two codecs', () => {
  it('accept and refuse the same texts, and decode them to the same bytes', () => {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/= é';
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 3000; round++) {
      const bytes = new Uint8Array(next(40)).map(() => next(256));
      let text = encodePortable(bytes);
      if (round % 2 && text.length > 0) {
        const at = next(text.length + 1);
        text = text.slice(0, at) + alphabet[next(alphabet.length)] + text.slice(at + (round % 4 === 1 ? 1 : 0));
      }
      const outcome = (decode: (t: string) => Uint8Array) => {
        try {
          return [...decode(text)].join(',');
        } catch (error) {
          return `refused: ${(error as Error).message}`;
        }
      };
      expect(outcome(decodeBase64url), text).toBe(outcome(decodePortable));
    }
  });
});

describe('seal and open', () => {
  it('round-trips text for one recipient', async () => {
    const envelope = await seal({
      purpose: 'agent.command',
      from: sender(phone),
      to: [recipient(laptop)],
      plaintext: 'ls -la ✓',
    });
    expect(Envelope.parse(envelope)).toEqual(envelope);
    expect(envelope).toMatchObject({ v: 1, purpose: 'agent.command', from: 'd_phone' });
    expect(envelope.to.map((r) => r.device)).toEqual(['c_laptop']);
    const text = await openText({
      envelope,
      purpose: 'agent.command',
      me: me(laptop),
      senderPublicKey: phone.keys.publicKey,
    });
    expect(text).toBe('ls -la ✓');
  });

  it('round-trips bytes through JSON for three recipients, content sealed once', async () => {
    const plaintext = new Uint8Array(1000).map((_, i) => (i * 7) & 255);
    const envelope = await seal({
      purpose: 'history.chunk',
      from: sender(laptop),
      to: [recipient(laptop), recipient(phone), recipient(tablet)],
      plaintext,
    });
    expect(decodeBase64url(envelope.ct).length).toBe(plaintext.length + 16); // one ciphertext + one tag
    expect(envelope.to).toHaveLength(3);
    for (const r of envelope.to) expect(decodeBase64url(r.wrap).length).toBe(12 + 32 + 16);
    const wire = JSON.parse(JSON.stringify(envelope));
    for (const d of [laptop, phone, tablet]) {
      const opened = await open({
        envelope: wire,
        purpose: 'history.chunk',
        me: me(d),
        senderPublicKey: laptop.keys.publicKey,
      });
      expect(opened).toEqual(plaintext);
    }
    await expectCode(
      open({ envelope: wire, purpose: 'history.chunk', me: me(stranger), senderPublicKey: laptop.keys.publicKey }),
      'not_for_me',
    );
  });

  it('seals fresh randomness every time, and the empty plaintext', async () => {
    const a = await seal({ purpose: 'test', from: sender(phone), to: [recipient(laptop)], plaintext: '' });
    const b = await seal({ purpose: 'test', from: sender(phone), to: [recipient(laptop)], plaintext: '' });
    expect(a.salt).not.toBe(b.salt);
    expect(a.iv).not.toBe(b.iv);
    expect(a.ct).not.toBe(b.ct);
    expect(a.to[0]!.wrap).not.toBe(b.to[0]!.wrap);
    expect(await open({ envelope: a, purpose: 'test', me: me(laptop), senderPublicKey: phone.keys.publicKey })).toEqual(
      new Uint8Array(0),
    );
  });

  it('copies the plaintext before sealing (a caller changing its buffer later does not matter)', async () => {
    const bytes = new TextEncoder().encode('original');
    const pending = seal({ purpose: 'test', from: sender(phone), to: [recipient(laptop)], plaintext: bytes });
    bytes.fill(0);
    const envelope = await pending;
    expect(await openText({ envelope, purpose: 'test', me: me(laptop), senderPublicKey: phone.keys.publicKey })).toBe(
      'original',
    );
  });

  it('does not replay-protect: the same envelope opens twice (sequence stamps are the caller’s job)', async () => {
    const envelope = await seal({ purpose: 'pane.keys', from: sender(phone), to: [recipient(laptop)], plaintext: 'x' });
    const opts = { envelope, purpose: 'pane.keys' as const, me: me(laptop), senderPublicKey: phone.keys.publicKey };
    expect(await openText(opts)).toBe('x');
    expect(await openText(opts)).toBe('x');
  });

  it('accepts the largest plaintext and refuses one byte more', async () => {
    const big = new Uint8Array(MAX_PLAINTEXT_BYTES);
    const envelope = await seal({ purpose: 'file', from: sender(phone), to: [recipient(laptop)], plaintext: big });
    expect(envelope.ct.length).toBe(MAX_CT_CHARS);
    const opened = await open({ envelope, purpose: 'file', me: me(laptop), senderPublicKey: phone.keys.publicKey });
    expect(opened.length).toBe(MAX_PLAINTEXT_BYTES);
    await expectCode(
      seal({
        purpose: 'file',
        from: sender(phone),
        to: [recipient(laptop)],
        plaintext: new Uint8Array(MAX_PLAINTEXT_BYTES + 1),
      }),
      'bad_envelope',
    );
  });

  it('refuses bad seal inputs with a SealError', async () => {
    const base = { purpose: 'test' as SealPurpose, from: sender(phone), to: [recipient(laptop)], plaintext: 'x' };
    await expectCode(seal({ ...base, to: [] }), 'bad_envelope');
    await expectCode(seal({ ...base, to: [recipient(laptop), recipient(laptop)] }), 'bad_envelope');
    await expectCode(
      seal({
        ...base,
        to: Array.from({ length: MAX_RECIPIENTS + 1 }, (_, i) => ({ ...recipient(laptop), id: `d${i}` })),
      }),
      'bad_envelope',
    );
    await expectCode(seal({ ...base, from: { ...sender(phone), id: 'a/b' } }), 'bad_envelope');
    await expectCode(seal({ ...base, to: [{ ...recipient(laptop), id: '' }] }), 'bad_envelope');
    await expectCode(seal({ ...base, purpose: 'nope' as SealPurpose }), 'bad_envelope');
    await expectCode(seal({ ...base, plaintext: 5 as unknown as string }), 'bad_envelope');
    await expectCode(seal({ ...base, plaintext: [1, 2] as unknown as Uint8Array }), 'bad_envelope');
    await expectCode(seal({ ...base, from: { id: 'd_phone', privateKey: phone.keys.publicKey } }), 'bad_key');
    await expectCode(seal({ ...base, to: [{ id: 'c_laptop', publicKey: laptop.keys.privateKey }] }), 'bad_key');
  });

  it('lets a sender include itself as a recipient', async () => {
    const envelope = await seal({
      purpose: 'history.chunk',
      from: sender(laptop),
      to: [recipient(laptop), recipient(phone)],
      plaintext: 'mine',
    });
    expect(
      await openText({ envelope, purpose: 'history.chunk', me: me(laptop), senderPublicKey: laptop.keys.publicKey }),
    ).toBe('mine');
  });
});

describe('tampering', () => {
  let one: Envelope;
  let three: Envelope;
  const openOne = (envelope: unknown, purpose: SealPurpose = 'pane.keys') =>
    open({ envelope, purpose, me: me(laptop), senderPublicKey: phone.keys.publicKey });
  const openThree = (envelope: unknown, d: Device) =>
    open({ envelope, purpose: 'history.chunk', me: me(d), senderPublicKey: laptop.keys.publicKey });

  beforeAll(async () => {
    one = await seal({ purpose: 'pane.keys', from: sender(phone), to: [recipient(laptop)], plaintext: 'keys:1:y\r' });
    three = await seal({
      purpose: 'history.chunk',
      from: sender(laptop),
      to: [recipient(laptop), recipient(phone), recipient(tablet)],
      plaintext: 'chunk',
    });
  });

  it('the untouched envelopes open', async () => {
    expect(await openOne(one)).toEqual(new TextEncoder().encode('keys:1:y\r'));
    expect(await openThree(three, tablet)).toEqual(new TextEncoder().encode('chunk'));
  });

  it.each([
    ['ct, first byte', (e: Envelope) => ({ ...e, ct: flip(e.ct, 0, 0) })],
    ['ct, last byte (tag)', (e: Envelope) => ({ ...e, ct: flip(e.ct, decodeBase64url(e.ct).length - 1, 7) })],
    ['wrap, iv part', (e: Envelope) => ({ ...e, to: [{ ...e.to[0]!, wrap: flip(e.to[0]!.wrap, 3) }] })],
    ['wrap, ciphertext part', (e: Envelope) => ({ ...e, to: [{ ...e.to[0]!, wrap: flip(e.to[0]!.wrap, 20, 5) }] })],
    ['iv', (e: Envelope) => ({ ...e, iv: flip(e.iv, 11, 1) })],
    ['salt', (e: Envelope) => ({ ...e, salt: flip(e.salt, 15, 3) })],
    ['from (another device id)', (e: Envelope) => ({ ...e, from: 'd_tablet' })],
    [
      'ct truncated by 3 bytes',
      (e: Envelope) => ({ ...e, ct: encodeBase64url(decodeBase64url(e.ct).subarray(0, -3)) }),
    ],
    [
      'ct with 3 bytes appended',
      (e: Envelope) => ({ ...e, ct: encodeBase64url(new Uint8Array([...decodeBase64url(e.ct), 1, 2, 3])) }),
    ],
  ])('a changed %s is tampered', async (_what, change) => {
    await expectCode(openOne(change(clone(one))), 'tampered');
  });

  it('purpose: wrong_purpose when the caller expects another one, tampered when the field was relabelled', async () => {
    await expectCode(openOne(one, 'pane.frame'), 'wrong_purpose');
    await expectCode(openOne({ ...clone(one), purpose: 'agent.command' }, 'agent.command'), 'tampered');
  });

  it('a wrap moved from one recipient’s slot to another’s is tampered', async () => {
    const e = clone(three);
    const [a, b, c] = e.to as [Envelope['to'][0], Envelope['to'][0], Envelope['to'][0]];
    const swapped = { ...e, to: [{ device: a.device, wrap: b.wrap }, { device: b.device, wrap: a.wrap }, c] };
    await expectCode(openThree(swapped, laptop), 'tampered');
    await expectCode(openThree(swapped, phone), 'tampered');
    expect(await openThree(swapped, tablet)).toEqual(new TextEncoder().encode('chunk')); // its own slot is intact
  });

  it('removing, adding or reordering recipients is tampered (the AAD binds the list in order)', async () => {
    const e = clone(three);
    const removed = { ...e, to: e.to.filter((r) => r.device !== 'd_tablet') };
    await expectCode(openThree(removed, laptop), 'tampered');
    await expectCode(openThree(removed, phone), 'tampered');
    await expectCode(openThree(removed, tablet), 'not_for_me');
    const added = { ...e, to: [...e.to, { device: 'd_stranger', wrap: e.to[0]!.wrap }] };
    await expectCode(openThree(added, phone), 'tampered');
    const reordered = { ...e, to: [e.to[1]!, e.to[0]!, e.to[2]!] };
    await expectCode(openThree(reordered, phone), 'tampered');
  });

  it('a sender key swapped by a hostile relay is tampered', async () => {
    await expectCode(
      open({ envelope: one, purpose: 'pane.keys', me: me(laptop), senderPublicKey: stranger.keys.publicKey }),
      'tampered',
    );
    // …and so is an envelope the relay sealed itself and labelled as coming from the phone
    const forged = await seal({
      purpose: 'pane.keys',
      from: { ...sender(stranger), id: 'd_phone' },
      to: [recipient(laptop)],
      plaintext: 'rm -rf ~\r',
    });
    await expectCode(openOne(forged), 'tampered');
  });

  it('a co-recipient cannot re-encrypt other content under the shared content key (wraps commit to ct)', async () => {
    // phone is a legitimate recipient: it recovers the content key exactly as the format describes…
    const e = clone(three);
    const subtle = globalThis.crypto.subtle;
    const shared = await subtle.deriveBits({ name: 'ECDH', public: laptop.keys.publicKey }, phone.keys.privateKey, 256);
    const ikm = await subtle.importKey('raw', shared, 'HKDF', false, ['deriveKey']);
    const info = new TextEncoder().encode('svc/v1/history.chunk/c_laptop/d_phone');
    const pairwise = await subtle.deriveKey(
      { name: 'HKDF', hash: 'SHA-256', salt: decodeBase64url(e.salt), info },
      ikm,
      { name: 'AES-GCM', length: 256 },
      false,
      ['decrypt'],
    );
    const ids = e.to.map((r) => r.device);
    const iv = decodeBase64url(e.iv);
    const ct = decodeBase64url(e.ct);
    const digest = encodeBase64url(new Uint8Array(await subtle.digest('SHA-256', new Uint8Array([...iv, ...ct]))));
    const wrap = decodeBase64url(e.to[1]!.wrap);
    const rawKey = await subtle.decrypt(
      {
        name: 'AES-GCM',
        iv: wrap.subarray(0, 12),
        additionalData: new TextEncoder().encode(JSON.stringify([1, 'history.chunk', 'c_laptop', ids, digest])),
      },
      pairwise,
      wrap.subarray(12),
    );
    const contentKey = await subtle.importKey('raw', rawKey, 'AES-GCM', false, ['encrypt', 'decrypt']);
    const header = new TextEncoder().encode(JSON.stringify([1, 'history.chunk', 'c_laptop', ids]));
    expect(
      new TextDecoder().decode(await subtle.decrypt({ name: 'AES-GCM', iv, additionalData: header }, contentKey, ct)),
    ).toBe('chunk');
    // …and forges new content for the tablet, keeping the tablet's wrap: refused
    const forgedCt = await subtle.encrypt(
      { name: 'AES-GCM', iv, additionalData: header },
      contentKey,
      new TextEncoder().encode('forged'),
    );
    const forged = { ...e, ct: encodeBase64url(new Uint8Array(forgedCt)) };
    await expectCode(openThree(forged, tablet), 'tampered');
  });
});

describe('hostile input', () => {
  let good: Envelope;
  const tryOpen = (envelope: unknown) =>
    open({ envelope, purpose: 'test', me: me(laptop), senderPublicKey: phone.keys.publicKey });

  beforeAll(async () => {
    good = await seal({ purpose: 'test', from: sender(phone), to: [recipient(laptop)], plaintext: 'ok' });
  });

  it.each<[string, unknown]>([
    ['undefined', undefined],
    ['null', null],
    ['a number', 42],
    ['a JSON string', '{"v":1}'],
    ['an array', [1, 'test']],
    ['an empty object', {}],
  ])('%s is bad_envelope', async (_what, input) => {
    await expectCode(tryOpen(input), 'bad_envelope');
  });

  it.each<[string, (e: Envelope) => unknown]>([
    ['a truncated envelope (no ct, no to)', ({ ct: _ct, to: _to, ...rest }) => rest],
    ['v as a string', (e) => ({ ...e, v: '1' })],
    ['an unknown field', (e) => ({ ...e, note: 'hi' })],
    ['an unknown field in a recipient', (e) => ({ ...e, to: [{ ...e.to[0], extra: 1 }] })],
    ['an unknown purpose', (e) => ({ ...e, purpose: 'shell' })],
    ['a from with a slash', (e) => ({ ...e, from: 'd/phone' })],
    ['an empty recipient list', (e) => ({ ...e, to: [] })],
    ['a recipient list that is not a list', (e) => ({ ...e, to: { device: 'c_laptop', wrap: e.to[0]!.wrap } })],
    [
      'too many recipients',
      (e) => ({
        ...e,
        to: Array.from({ length: MAX_RECIPIENTS + 1 }, (_, i) => ({ device: `d${i}`, wrap: e.to[0]!.wrap })),
      }),
    ],
    ['a duplicated recipient', (e) => ({ ...e, to: [e.to[0], e.to[0]] })],
    ['a salt of the wrong length', (e) => ({ ...e, salt: e.salt.slice(1) })],
    ['a non-canonical salt', (e) => ({ ...e, salt: `${e.salt.slice(0, -1)}${e.salt.endsWith('B') ? 'C' : 'B'}` })],
    ['an iv with padding', (e) => ({ ...e, iv: `${e.iv.slice(0, -2)}==` })],
    [
      'a wrap with a non-base64 character',
      (e) => ({ ...e, to: [{ ...e.to[0], wrap: `${e.to[0]!.wrap.slice(0, -1)}+` }] }),
    ],
    ['a ct shorter than a tag', (e) => ({ ...e, ct: 'AAAA' })],
    ['a ct over the cap', (e) => ({ ...e, ct: 'A'.repeat(MAX_CT_CHARS + 4) })],
    ['a ct with an impossible length', (e) => ({ ...e, ct: `${e.ct}A` })],
    ['a ct that is a number', (e) => ({ ...e, ct: 12 })],
  ])('%s is bad_envelope', async (_what, change) => {
    await expectCode(tryOpen(change(clone(good))), 'bad_envelope');
  });

  it('another version is bad_version', async () => {
    await expectCode(tryOpen({ ...clone(good), v: 2 }), 'bad_version');
    await expectCode(tryOpen({ v: 2, anything: 'else' }), 'bad_version');
  });

  it('keys of the wrong kind are bad_key', async () => {
    const aes = await globalThis.crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt']);
    await expectCode(open({ envelope: good, purpose: 'test', me: me(laptop), senderPublicKey: aes }), 'bad_key');
    await expectCode(
      open({
        envelope: good,
        purpose: 'test',
        me: { id: 'c_laptop', privateKey: laptop.keys.publicKey },
        senderPublicKey: phone.keys.publicKey,
      }),
      'bad_key',
    );
  });

  it('invalid UTF-8 from openText is bad_envelope, never replacement characters', async () => {
    const envelope = await seal({
      purpose: 'test',
      from: sender(phone),
      to: [recipient(laptop)],
      plaintext: new Uint8Array([0xff, 0xfe]),
    });
    await expectCode(
      openText({ envelope, purpose: 'test', me: me(laptop), senderPublicKey: phone.keys.publicKey }),
      'bad_envelope',
    );
  });
});

describe('keys', () => {
  it('public keys export as 65 raw bytes and import back', async () => {
    const raw = decodeBase64url(laptop.pub);
    expect(raw.length).toBe(65);
    expect(raw[0]).toBe(4);
    const imported = await importPublicKey(laptop.pub);
    expect(await exportPublicKey(imported)).toBe(laptop.pub);
    // an imported key seals for the original private key
    const envelope = await seal({
      purpose: 'test',
      from: sender(phone),
      to: [{ id: 'c_laptop', publicKey: imported }],
      plaintext: 'hi',
    });
    expect(
      await openText({ envelope, purpose: 'test', me: me(laptop), senderPublicKey: await importPublicKey(phone.pub) }),
    ).toBe('hi');
  });

  it.each<[string, () => string]>([
    ['the empty string', () => ''],
    ['junk text', () => 'not a key at all!'],
    ['65 zero bytes', () => encodeBase64url(new Uint8Array(65))],
    ['a point off the curve', () => flip(laptop.pub, 64, 0)],
    ['x flipped (off the curve)', () => flip(laptop.pub, 5, 2)],
    ['x = y = p (out of range)', () => encodeBase64url(new Uint8Array([4, ...pBytes(), ...pBytes()]))],
    [
      'a compressed point',
      () =>
        encodeBase64url(
          new Uint8Array([2 + (decodeBase64url(laptop.pub)[64]! & 1), ...decodeBase64url(laptop.pub).subarray(1, 33)]),
        ),
    ],
    ['a truncated key', () => encodeBase64url(decodeBase64url(laptop.pub).subarray(0, 64))],
    ['a key with a byte appended', () => encodeBase64url(new Uint8Array([...decodeBase64url(laptop.pub), 0]))],
    ['a non-string', () => 42 as unknown as string],
  ])('importPublicKey refuses %s with bad_key', async (_what, key) => {
    await expectCode(importPublicKey(key()), 'bad_key');
  });

  it('private keys round-trip through JWK when extractable', async () => {
    const jwk = await exportPrivateKey(laptop.keys.privateKey);
    expect(jwk).toMatchObject({ kty: 'EC', crv: 'P-256' });
    expect(publicKeyOfJwk(jwk)).toBe(laptop.pub);
    const again = await importPrivateKey(jwk, true);
    expect(await exportPrivateKey(again)).toMatchObject({ d: jwk.d, x: jwk.x, y: jwk.y });
    // the imported key opens what was sealed for the original
    const envelope = await seal({ purpose: 'test', from: sender(phone), to: [recipient(laptop)], plaintext: 'stored' });
    expect(
      await openText({
        envelope,
        purpose: 'test',
        me: { id: 'c_laptop', privateKey: again },
        senderPublicKey: phone.keys.publicKey,
      }),
    ).toBe('stored');
    // imported non-extractable by default
    const locked = await importPrivateKey(jwk);
    expect(locked.extractable).toBe(false);
    await expectCode(exportPrivateKey(locked), 'bad_key');
  });

  it('a non-extractable private key really cannot be exported', async () => {
    expect(phone.keys.privateKey.extractable).toBe(false);
    await expectCode(exportPrivateKey(phone.keys.privateKey), 'bad_key');
    for (const format of ['jwk', 'pkcs8', 'raw'] as const) {
      await expect(globalThis.crypto.subtle.exportKey(format, phone.keys.privateKey)).rejects.toThrow();
    }
    // its public half is still exportable
    expect(await exportPublicKey(phone.keys.publicKey)).toBe(phone.pub);
  });

  it('importPrivateKey refuses junk and mismatched halves with bad_key', async () => {
    const jwk = await exportPrivateKey(laptop.keys.privateKey);
    const other = await exportPrivateKey((await generateDeviceKeys(true)).privateKey);
    await expectCode(importPrivateKey({ ...jwk, d: other.d }), 'bad_key');
    await expectCode(importPrivateKey({ ...jwk, d: undefined }), 'bad_key');
    await expectCode(importPrivateKey({ ...jwk, crv: 'P-384' }), 'bad_key');
    await expectCode(importPrivateKey({ ...jwk, kty: 'RSA' }), 'bad_key');
    await expectCode(importPrivateKey({ ...jwk, y: jwk.x }), 'bad_key');
    await expectCode(importPrivateKey({ ...jwk, d: 'AAAA' }), 'bad_key');
    await expectCode(importPrivateKey(null as unknown as JsonWebKey), 'bad_key');
    // key_ops / ext in the stored file do not get in the way
    expect((await importPrivateKey({ ...jwk, key_ops: ['deriveKey'], ext: false }, true)).extractable).toBe(true);
  });
});

describe('safety code and fingerprint', () => {
  it('is 16 digits in 4 groups, order-independent, different for other keys', async () => {
    const ab = await safetyCode(laptop.pub, phone.pub);
    expect(ab).toMatch(/^\d{4} \d{4} \d{4} \d{4}$/);
    expect(await safetyCode(phone.pub, laptop.pub)).toBe(ab);
    expect(await safetyCode(laptop.pub, tablet.pub)).not.toBe(ab);
    expect(await safetyCode(stranger.pub, phone.pub)).not.toBe(ab);
  });

  it('refuses junk keys with bad_key', async () => {
    await expectCode(safetyCode(laptop.pub, 'junk'), 'bad_key');
    await expectCode(fingerprint(flip(laptop.pub, 64)), 'bad_key');
  });

  it('fingerprint is the first 8 bytes of SHA-256 of the raw key, grouped', async () => {
    const fp = await fingerprint(laptop.pub);
    expect(fp).toMatch(/^[0-9a-f]{4} [0-9a-f]{4} [0-9a-f]{4} [0-9a-f]{4}$/);
    const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', decodeBase64url(laptop.pub)));
    const hex = Array.from(digest.subarray(0, 8), (b) => b.toString(16).padStart(2, '0')).join('');
    expect(fp.replaceAll(' ', '')).toBe(hex);
    expect(await fingerprint(phone.pub)).not.toBe(fp);
  });
});

describe('portability', () => {
  const sealing = [
    'core/seal/seal.ts',
    'core/seal/keys.ts',
    'core/seal/error.ts',
    'core/seal/webcrypto.ts',
    'core/base64url.ts',
  ];
  it.each(sealing)('%s uses no Node-only API', (file) => {
    // comments may mention what is not used; the code may not use it
    const source = readFileSync(resolve(root, file), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '')
      // base64url.ts takes Node's codec when the global is there, the portable one otherwise: that one lookup only
      .replace('(globalThis as { Buffer?: NativeBufferClass }).Buffer', '');
    expect(source).toMatch(/export /); // the stripping left the code
    expect(source).not.toMatch(/from\s+['"]node:/);
    expect(source).not.toMatch(/import\(\s*['"]node:/);
    expect(source).not.toMatch(/\bBuffer\b/);
    expect(source).not.toMatch(/\brequire\(/);
    expect(source).not.toMatch(/\bprocess\./);
    expect(source).not.toMatch(/from\s+['"](crypto|fs|path|os)['"]/);
  });
});

function pBytes(): number[] {
  const hex = 'ffffffff00000001000000000000000000000000ffffffffffffffffffffffff';
  return Array.from({ length: 32 }, (_, i) => Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16));
}
