/** core/relay/clientAddress.ts: the client's address behind a reverse proxy, only from proxies the relay trusts. */
import { describe, expect, it } from 'vitest';
import { bareAddress, clientAddress, trustedProxies } from '../../../core/relay/clientAddress.js';

const proxy = trustedProxies('127.0.0.1/32, 10.0.0.0/8 ::1');

describe('trustedProxies', () => {
  it.each([
    ['127.0.0.1', true],
    ['::ffff:127.0.0.1', true],
    ['10.200.3.4', true],
    ['::1', true],
    ['11.0.0.1', false],
    ['192.168.1.5', false],
    ['not an address', false],
  ])('%s trusted: %s', (address, trusted) => {
    expect(proxy.has(address)).toBe(trusted);
  });

  it.each([['10.0.0.0/33'], ['example.org'], ['10.0.0.1/8/1'], ['10.0.0.0/x'], ['::1/129']])(
    'refuses %s, saying what it wanted',
    (spec) => {
      expect(() => trustedProxies(spec)).toThrow(/--trust-proxy: .* is not an address or a CIDR/);
    },
  );

  it('none given: nothing is trusted', () => {
    expect(trustedProxies(undefined).has('127.0.0.1')).toBe(false);
  });
});

describe('bareAddress', () => {
  it.each([
    ['[2001:db8::17]:4711', '2001:db8::17'],
    ['"[2001:db8::17]"', '2001:db8::17'],
    ['192.0.2.60:80', '192.0.2.60'],
    ['::FFFF:192.0.2.60', '192.0.2.60'],
    ['unknown', null],
    ['_hidden', null],
  ])('%s → %s', (text, bare) => {
    expect(bareAddress(text)).toBe(bare);
  });
});

describe('clientAddress', () => {
  it.each([
    [
      'no proxy trusted: the header is ignored',
      '203.0.113.9',
      { 'x-forwarded-for': '1.2.3.4' },
      trustedProxies(''),
      '203.0.113.9',
    ],
    ['an untrusted peer cannot name the client', '203.0.113.9', { 'x-forwarded-for': '1.2.3.4' }, proxy, '203.0.113.9'],
    ['a trusted proxy names the client', '127.0.0.1', { 'x-forwarded-for': '198.51.100.7' }, proxy, '198.51.100.7'],
    [
      'a client that forges the header gets its own address: the rightmost untrusted hop',
      '127.0.0.1',
      { 'x-forwarded-for': '1.1.1.1, 198.51.100.7' },
      proxy,
      '198.51.100.7',
    ],
    [
      'through two trusted proxies',
      '::ffff:127.0.0.1',
      { 'x-forwarded-for': '198.51.100.7, 10.1.1.1' },
      proxy,
      '198.51.100.7',
    ],
    ['all trusted: the leftmost', '127.0.0.1', { 'x-forwarded-for': '10.0.0.2, 10.0.0.3' }, proxy, '10.0.0.2'],
    [
      'RFC 7239 Forwarded',
      '127.0.0.1',
      { forwarded: 'for="[2001:db8:cafe::17]:4711";proto=https' },
      proxy,
      '2001:db8:cafe::17',
    ],
    [
      'a hop that is not an address stops the walk at the proxy',
      '127.0.0.1',
      { forwarded: 'for=unknown' },
      proxy,
      '127.0.0.1',
    ],
    ['no header from a trusted proxy: the proxy', '127.0.0.1', {}, proxy, '127.0.0.1'],
    [
      'repeated headers are one list',
      '127.0.0.1',
      { 'x-forwarded-for': ['1.1.1.1', '198.51.100.8'] },
      proxy,
      '198.51.100.8',
    ],
  ])('%s', (_what, remote, headers, trusted, client) => {
    expect(clientAddress(remote, headers, trusted)).toBe(client);
  });
});
