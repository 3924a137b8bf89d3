import { describe, expect, it } from 'vitest';
import {
  checkDomain,
  httpsFlags,
  LETS_ENCRYPT_DIRECTORY,
  plainHttpAnswer,
  renewalTime,
  retryDelayMs,
  sleepUntil,
} from '../../../core/relay/certificate.js';

const DAY = 86_400_000;
const MIN = 60_000;

describe('renewalTime', () => {
  it.each([
    [0, 90 * DAY, 60 * DAY], // Let's Encrypt's 90 days: 30 days before the end
    [1_000, 1_000 + 3 * 3_600_000, 1_000 + 2 * 3_600_000],
    [0, 7 * DAY, Math.floor((14 * DAY) / 3)],
  ])('from %i to %i: renewed at %i', (from, to, at) => expect(renewalTime(from, to)).toBe(at));
});

describe('retryDelayMs', () => {
  it.each([
    [1, MIN],
    [2, 2 * MIN],
    [3, 4 * MIN],
    [9, 256 * MIN],
    [10, 360 * MIN],
    [50, 360 * MIN],
  ])('after %i failures: %i ms', (failures, ms) => expect(retryDelayMs(failures)).toBe(ms));
});

describe('sleepUntil', () => {
  it.each([
    [5_000, 1_000, 4_000],
    [1_000, 5_000, 0], // overdue: at once
    [60 * DAY, 0, DAY], // beyond a timer's reach: a day, then look again
  ])('until %i from %i: %i', (at, now, ms) => expect(sleepUntil(at, now)).toBe(ms));
});

describe('checkDomain', () => {
  it.each([
    ['relay.example.org', 'relay.example.org'],
    ['Relay.Example.ORG.', 'relay.example.org'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
  ])('%s → %s', (name, domain) => expect(checkDomain(name)).toBe(domain));
  it.each([
    'localhost',
    '127.0.0.1',
    '*.example.org',
    'relay..example.org',
    '-relay.example.org',
    'relay.example.org/x',
    'relay example.org',
    `${'a'.repeat(64)}.org`,
    '',
  ])('refuses %j', (name) => expect(() => checkDomain(name)).toThrow(/--domain must be a host name/));
});

describe('plainHttpAnswer', () => {
  const tokens = new Map([['tok_1-A', 'tok_1-A.thumbprint']]);
  const challenge = (t: string) => tokens.get(t);
  it.each([
    [
      '/.well-known/acme-challenge/tok_1-A',
      'x',
      { domain: 'r.example.org', port: 443 },
      { status: 200, body: 'tok_1-A.thumbprint' },
    ],
    [
      '/.well-known/acme-challenge/other',
      'x',
      { domain: 'r.example.org', port: 443 },
      { status: 404, body: 'no such challenge\n' },
    ],
    ['/.well-known/acme-challenge/../../etc', 'x', { port: 443 }, { status: 404, body: 'no such challenge\n' }],
    [
      '/#/s/a?b=1',
      'evil.example',
      { domain: 'r.example.org', port: 443 },
      { status: 308, location: 'https://r.example.org/#/s/a?b=1' },
    ],
    [
      '/pairings/claim',
      'r.example.org:80',
      { domain: 'r.example.org', port: 8443 },
      { status: 308, location: 'https://r.example.org:8443/pairings/claim' },
    ],
    // no domain (--tls-cert): the host the request named, its port replaced
    ['/', 'Relay.Example.org:8080', { port: 443 }, { status: 308, location: 'https://relay.example.org/' }],
    ['/x', '[::1]:80', { port: 9443 }, { status: 308, location: 'https://[::1]:9443/x' }],
    ['http://evil.example/', 'r.example.org', { port: 443 }, { status: 308, location: 'https://r.example.org/' }],
    [
      '/a\fb c\u00e9',
      'r.example.org',
      { port: 443 },
      { status: 308, location: 'https://r.example.org/a%0Cb%20c%C3%A9' },
    ],
  ])('%s (Host %s) %j', (url, host, https, answer) =>
    expect(plainHttpAnswer(url, host, https, challenge)).toEqual(answer),
  );
  it.each([undefined, '', 'evil.example/path', 'a b', 'x@y'])('refuses a Host of %j without a domain', (host) =>
    expect(plainHttpAnswer('/', host, { port: 443 }, challenge).status).toBe(400),
  );
});

describe('httpsFlags', () => {
  it.each([
    [{}, null],
    [
      { domain: 'relay.example.org' },
      { kind: 'acme', domain: 'relay.example.org', directoryUrl: LETS_ENCRYPT_DIRECTORY },
    ],
    [
      { domain: 'Relay.example.org', 'acme-directory': 'https://127.0.0.1:14000/dir', 'acme-email': 'me@example.org' },
      {
        kind: 'acme',
        domain: 'relay.example.org',
        directoryUrl: 'https://127.0.0.1:14000/dir',
        email: 'me@example.org',
      },
    ],
    [
      { 'tls-cert': '/c.pem', 'tls-key': '/k.pem' },
      { kind: 'files', certPath: '/c.pem', keyPath: '/k.pem' },
    ],
  ])('%j → %j', (args, flags) => expect(httpsFlags(args)).toEqual(flags));
  it.each([
    [{ domain: 'relay.example.org', 'tls-cert': '/c.pem', 'tls-key': '/k.pem' }, /give one or the other/],
    [{ 'tls-cert': '/c.pem' }, /go together/],
    [{ 'tls-key': '/k.pem' }, /go together/],
    [{ 'acme-email': 'me@example.org' }, /go with --domain/],
    [{ domain: 'relay.example.org', 'acme-directory': 'http://ca.example/dir' }, /must be an https:\/\/ URL/],
    [{ domain: 'relay.example.org', 'acme-email': 'not an address' }, /must be an email address/],
    [{ domain: 'localhost' }, /must be a host name/],
  ])('refuses %j', (args, error) => expect(() => httpsFlags(args)).toThrow(error));
});
