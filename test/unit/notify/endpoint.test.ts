import { describe, expect, it } from 'vitest';
import { checkPushEndpoint, isPublicAddress, KNOWN_PUSH_HOSTS, parsePushHosts } from '../../../core/notify/endpoint.js';

describe('isPublicAddress', () => {
  it.each([
    ['8.8.8.8', true],
    ['142.250.74.46', true],
    ['2607:f8b0:4004:c1b::5f', true],
    ['127.0.0.1', false],
    ['127.255.255.254', false],
    ['0.0.0.0', false],
    ['10.0.0.1', false],
    ['100.64.1.1', false],
    ['169.254.169.254', false],
    ['172.16.0.1', false],
    ['172.31.255.255', false],
    ['172.32.0.1', true],
    ['192.168.1.1', false],
    ['198.18.0.1', false],
    ['203.0.113.7', false],
    ['224.0.0.1', false],
    ['255.255.255.255', false],
    ['::', false],
    ['::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:7f00:1', false],
    ['64:ff9b::a00:1', false],
    ['2002:7f00:1::', false],
    ['fd00::1', false],
    ['fe80::1', false],
    ['ff02::1', false],
    ['2001:db8::1', false],
    ['localhost', false],
    ['not an address', false],
  ])('%s → %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });
});

describe('checkPushEndpoint', () => {
  it.each([
    ['https://fcm.googleapis.com/fcm/send/abc', null, true],
    ['https://8.8.8.8/push', null, true],
    ['http://fcm.googleapis.com/fcm/send/abc', null, false],
    ['file:///etc/passwd', null, false],
    ['not a url', null, false],
    ['https://u:p@fcm.googleapis.com/x', null, false],
    ['https://127.0.0.1/push', null, false],
    ['https://[::1]/push', null, false],
    ['https://0x7f.1/push', null, false], // the URL parser makes it 127.0.0.1
    ['https://2130706433/push', null, false],
    ['https://fcm.googleapis.com/x', KNOWN_PUSH_HOSTS, true],
    ['https://web.push.apple.com/x', KNOWN_PUSH_HOSTS, true],
    ['https://evil.example.org/x', KNOWN_PUSH_HOSTS, false],
    ['https://apple.com.evil.org/x', KNOWN_PUSH_HOSTS, false],
    ['https://127.0.0.1:8443/x', ['127.0.0.1'], true], // named by the operator: private allowed
    ['https://127.0.0.1:8443/x', ['*.example.org'], false],
  ] as const)('%s with %j → %s', (url, allowed, ok) => {
    const r = checkPushEndpoint(url, allowed === null ? null : [...allowed]);
    expect(r.ok).toBe(ok);
    if (!r.ok) expect(r.code).toBe('bad_endpoint');
  });

  it('says when a host was named exactly (its addresses may be private)', () => {
    expect(checkPushEndpoint('https://push.lan/x', ['push.lan'])).toMatchObject({ ok: true, named: true });
    expect(checkPushEndpoint('https://a.push.lan/x', ['*.push.lan'])).toMatchObject({ ok: true, named: false });
  });
});

describe('parsePushHosts', () => {
  it.each([
    [undefined, null],
    ['', null],
    ['push.lan', ['push.lan']],
    [' A.example , b.example,,', ['a.example', 'b.example']],
    ['known', [...KNOWN_PUSH_HOSTS]],
    ['known,push.lan', [...KNOWN_PUSH_HOSTS, 'push.lan']],
  ])('%j → %j', (value, expected) => {
    expect(parsePushHosts(value)).toEqual(expected);
  });
});
