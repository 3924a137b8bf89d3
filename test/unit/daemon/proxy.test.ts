/** Which proxy a relay connection goes through (core/daemon/proxy.ts): table tests. */
import { describe, expect, it } from 'vitest';
import { bypassesProxy, proxyFor, proxyLabel, proxySettings } from '../../../core/daemon/proxy.js';

const both = { httpsProxy: 'http://secure.proxy:3128', httpProxy: 'http://plain.proxy:8080' };

describe('proxyFor', () => {
  it.each([
    ['wss goes through httpsProxy', 'wss://relay.example/ws', both, 'http://secure.proxy:3128'],
    ['https goes through httpsProxy', 'https://relay.example/x', both, 'http://secure.proxy:3128'],
    ['ws goes through httpProxy', 'ws://relay.example/ws', both, 'http://plain.proxy:8080'],
    ['http goes through httpProxy', 'http://127.0.0.1:8787/', both, 'http://plain.proxy:8080'],
    ['https falls back to httpProxy', 'https://relay.example/', { httpProxy: 'http://p:1' }, 'http://p:1'],
    ['http does not use httpsProxy', 'http://relay.example/', { httpsProxy: 'http://p:1' }, null],
    ['no settings: direct', 'wss://relay.example/ws', {}, null],
    ['noProxy host', 'wss://relay.example/ws', { ...both, noProxy: 'relay.example' }, null],
    ['noProxy covers subdomains', 'wss://a.relay.example/ws', { ...both, noProxy: '.relay.example' }, null],
    ['noProxy *.domain', 'wss://a.relay.example/ws', { ...both, noProxy: '*.relay.example' }, null],
    [
      'noProxy is not a substring match',
      'wss://notrelay.example/ws',
      { ...both, noProxy: 'relay.example' },
      'http://secure.proxy:3128',
    ],
    ['noProxy with the port', 'http://127.0.0.1:8787/', { ...both, noProxy: '127.0.0.1:8787' }, null],
    [
      'noProxy with another port',
      'http://127.0.0.1:8787/',
      { ...both, noProxy: '127.0.0.1:9999' },
      'http://plain.proxy:8080',
    ],
    ['noProxy default port', 'wss://relay.example/ws', { ...both, noProxy: 'relay.example:443' }, null],
    ['noProxy *', 'wss://relay.example/ws', { ...both, noProxy: '*' }, null],
    ['noProxy list with spaces', 'ws://localhost:1/', { ...both, noProxy: 'a.example, localhost' }, null],
    ['IPv6 in noProxy', 'http://[::1]:8787/', { ...both, noProxy: '[::1]' }, null],
    ['loopback is not special', 'http://localhost:8787/', both, 'http://plain.proxy:8080'],
  ] as const)('%s', (_what, target, settings, expected) => {
    expect(proxyFor(target, settings)).toBe(expected);
  });

  it('refuses a proxy that is not an http(s) URL rather than going direct', () => {
    expect(() => proxyFor('wss://r/ws', { httpsProxy: 'socks5://p:1080' })).toThrow(/not an http\(s\) proxy/);
    expect(() => proxyFor('wss://r/ws', { httpsProxy: 'not a url' })).toThrow();
  });
});

describe('settings and labels', () => {
  it('the config file wins over the environment, which is read in either case', () => {
    expect(
      proxySettings(
        { httpsProxy: 'http://file:1' },
        { HTTPS_PROXY: 'http://env:2', http_proxy: 'http://env:3', NO_PROXY: 'x' },
      ),
    ).toEqual({
      httpsProxy: 'http://file:1',
      httpProxy: 'http://env:3',
      noProxy: 'x',
    });
  });

  it('a label never shows the credentials a proxy URL carries', () => {
    expect(proxyLabel('http://user:secret@proxy.example:3128/')).toBe('http://proxy.example:3128');
  });

  it('bypassesProxy ignores empty and malformed entries', () => {
    expect(bypassesProxy(new URL('http://relay.example/'), ' , ,::bad')).toBe(false);
  });
});
