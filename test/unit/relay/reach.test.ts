/** core/relay/reach.ts: what `svc up` and `svc pair` print for a pairing link, by what a phone can do with it. */
import { describe, expect, it } from 'vitest';
import { appOrigin, pairingShow, reachOf } from '../../../core/relay/reach.js';

describe('reachOf', () => {
  it.each([
    ['http://127.0.0.1:8787/#pair=x', 'loopback'],
    ['http://localhost:8787', 'loopback'],
    ['https://[::1]:8443', 'loopback'],
    ['https://192.168.1.20:8443', 'https'],
    ['https://relay.example.org', 'https'],
    ['http://192.168.1.20:8787', 'http'],
    ['http://relay.example.org', 'http'],
  ])('%s → %s', (url, reach) => {
    expect(reachOf(url)).toBe(reach);
  });
});

describe('pairingShow', () => {
  it('loopback: the link for this computer, no QR code, and the ways in', () => {
    const show = pairingShow('http://127.0.0.1:8787', false);
    expect(show).toMatchObject({ link: true, qr: false });
    expect(show.notes[0]).toMatch(/^The relay is on this computer only \(http:\/\/127\.0\.0\.1:8787\): a phone cannot/);
    expect(show.notes.join('\n')).toMatch(/svc up --lan/);
    expect(show.notes.join('\n')).toMatch(/docs\/hosting\.md/);
  });

  it('https: link and QR code, nothing to say', () => {
    expect(pairingShow('https://relay.example.org', false)).toEqual({ link: true, qr: true, notes: [] });
  });

  it('plain http off this computer: link and QR code, saying the app cannot be installed nor notify', () => {
    const show = pairingShow('http://192.168.1.20:8787', false);
    expect(show).toMatchObject({ link: true, qr: true });
    expect(show.notes).toEqual([expect.stringMatching(/plain HTTP: .*not install the app or get notifications/)]);
  });

  it('an address the person named is drawn even on loopback (their LAN address, their tunnel)', () => {
    expect(pairingShow('https://127.0.0.1:8443', true)).toEqual({ link: true, qr: true, notes: [] });
  });
});

describe('appOrigin: the address a phone paired at, from its Origin header', () => {
  it.each<[string | undefined, string | null]>([
    ['https://relay.example.com', 'https://relay.example.com'],
    ['https://relay.example.com:443', 'https://relay.example.com'],
    ['http://192.168.1.5:8787', 'http://192.168.1.5:8787'],
    ['HTTPS://Relay.Example.com', 'https://relay.example.com'],
    [undefined, null],
    ['', null],
    ['null', null],
    ['file:///etc/passwd', null],
    ['chrome-extension://abc', null],
    ['javascript:alert(1)', null],
    [`https://${'a'.repeat(300)}.example`, null],
    // short as sent, long once parsed: each label of another script becomes `xn--…`
    [`https://${Array(40).fill('é').join('.')}.example`, null],
  ])('%s → %s', (header, origin) => {
    expect(appOrigin(header)).toBe(origin);
  });
});
