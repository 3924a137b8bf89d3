/**
 * The relay's rule table (core/relay/access.ts, docs/security.md "Who may do what"): every act for an API key with
 * both scopes, a read-only key, a write-only key, a device token, and computers owned by the key or another.
 */
import { describe, expect, it } from 'vitest';
import { type Act, type Credential, decideAccess } from '../../../core/relay/access.js';

const both: Credential = { keyId: 'key_own', scopes: ['push:read', 'push:write'] };
const read: Credential = { keyId: 'key_read', scopes: ['push:read'] };
const write: Credential = { keyId: 'key_write', scopes: ['push:write'] };
const token: Credential = { keyId: 'key_phone', scopes: ['push:read', 'push:write'], deviceId: 'd_phone' };

const ok = 'ok';
const claims = 'claims';
const no = 'no';

const cases: [string, Act, string, string, string, string][] = [
  // act                                           key with both  read-only  write-only  device token
  ['read', { act: 'read' }, ok, ok, ok, ok],
  ['send', { act: 'send' }, ok, no, ok, ok],
  ['type keys', { act: 'typeKeys' }, ok, no, ok, ok],
  ['register a device', { act: 'registerDevice' }, ok, ok, ok, no],
  ['remove its own device', { act: 'removeDevice', deviceId: 'd_phone' }, ok, ok, ok, ok],
  ['remove another device', { act: 'removeDevice', deviceId: 'd_laptop' }, ok, ok, ok, no],
  [
    'remove the device of a computer owned by key_own',
    { act: 'removeDevice', deviceId: 'd_laptop', computerOwner: 'key_own' },
    ok,
    no,
    no,
    no,
  ],
  ['create a pairing code', { act: 'createPairing' }, ok, no, ok, no],
  ['register a new computer', { act: 'registerComputer', owner: undefined }, claims, claims, no, no],
  ['register a computer owned by key_own', { act: 'registerComputer', owner: 'key_own' }, ok, no, no, no],
  ['register an ownerless computer', { act: 'registerComputer', owner: null }, claims, claims, no, no],
  ['listen for a computer owned by key_own', { act: 'listen', owner: 'key_own' }, ok, no, no, no],
  ['listen for an ownerless computer', { act: 'listen', owner: null }, claims, claims, no, no],
  ['act as its own paired device', { act: 'actAsDevice', deviceId: 'd_phone', paired: true }, no, no, no, ok],
  ['act as another paired device', { act: 'actAsDevice', deviceId: 'd_tablet', paired: true }, no, no, no, no],
  ['act as a device a key registered', { act: 'actAsDevice', deviceId: 'd_laptop', paired: false }, ok, ok, ok, no],
  ['answer an ask', { act: 'answerAsk' }, ok, no, ok, ok],
  ['ask or notify for a computer owned by key_own', { act: 'announce', owner: 'key_own' }, ok, no, no, no],
  ['ask or notify for a computer owned by another key', { act: 'announce', owner: 'key_other' }, no, no, no, no],
  ['ask or notify for an ownerless computer', { act: 'announce', owner: null }, no, no, no, no],
];

const outcome = (c: Credential, a: Act) => {
  const access = decideAccess(c, a);
  return access.ok ? (access.claims ? claims : ok) : no;
};

describe('who may do what', () => {
  it.each(cases)('%s', (_name, act, withBoth, readOnly, writeOnly, device) => {
    expect([both, read, write, token].map((c) => outcome(c, act))).toEqual([withBoth, readOnly, writeOnly, device]);
  });

  it('says why, naming the owner key and never a secret', () => {
    expect(decideAccess(token, { act: 'listen', owner: 'key_own' })).toEqual({
      ok: false,
      message: 'a device token acts as an app; it cannot subscribe as a listener',
    });
    const other = decideAccess(read, { act: 'listen', owner: 'key_own' });
    expect(other.ok === false && other.message).toContain('belongs to another key (key_own)');
    expect(decideAccess({ keyId: 'k', scopes: [] }, { act: 'read' }).ok).toBe(false);
  });
});
