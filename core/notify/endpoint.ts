/**
 * Where the relay may send a Web Push (docs/security.md): a device names its push service's endpoint, and the relay
 * connects there, so the endpoint must not turn the relay into a way into its own network. Pure rules: the URL's
 * shape, the `--push-hosts` allow list, and which addresses count as public. The relay checks the URL when a device
 * subscribes, and the addresses its host resolves to both then and at every connect (relay-server/push/transport.ts),
 * so a name that later resolves to a private address (DNS rebinding) is refused too.
 */
import { BlockList, isIP } from 'node:net';

/** Addresses that are not on the public internet: loopback, private, link-local, shared, documentation, multicast,
 *  reserved, and IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4). */
const NOT_PUBLIC_V4 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  NOT_PUBLIC_V4.addSubnet(net, prefix, 'ipv4');
/** Kept apart from the IPv4 list: a BlockList checks an IPv4 address against IPv6 rules as mapped (`::ffff:…`). */
const NOT_PUBLIC_V6 = new BlockList();
for (const [net, prefix] of [
  ['::', 127],
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  NOT_PUBLIC_V6.addSubnet(net, prefix, 'ipv6');

/** Whether `address` (an IP literal) is a public internet address; anything that is not an IP is not. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return family === 4 ? !NOT_PUBLIC_V4.check(address, 'ipv4') : !NOT_PUBLIC_V6.check(address, 'ipv6');
}

/**
 * The push services browsers subscribe with, for `--push-hosts known`: Chrome and Edge's FCM, Firefox's Mozilla
 * service, Safari's Apple service, Windows' WNS.
 */
export const KNOWN_PUSH_HOSTS: readonly string[] = [
  'fcm.googleapis.com',
  'updates.push.services.mozilla.com',
  '*.push.apple.com',
  '*.notify.windows.com',
];

/** Whether `host` is one `pattern` names: the same name, or under it for `*.suffix`. */
const hostMatches = (host: string, pattern: string): boolean =>
  pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern;

export type EndpointCheck =
  | {
      ok: true;
      url: URL;
      /** The host, without IPv6 brackets. */
      host: string;
      /** The operator named this very host in `--push-hosts`: its addresses may be private (an internal service). */
      named: boolean;
    }
  | { ok: false; code: 'bad_endpoint'; message: string };

/**
 * A push endpoint a device gave: an `https:` URL without credentials, whose host is in `allowed` when the relay has
 * an allow list (`--push-hosts`), and, when it is an IP literal, a public one (unless named in the list).
 */
export function checkPushEndpoint(raw: string, allowed: readonly string[] | null): EndpointCheck {
  const bad = (message: string): EndpointCheck => ({ ok: false, code: 'bad_endpoint', message });
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return bad('the push endpoint is not a URL');
  }
  if (url.protocol !== 'https:') return bad('a push endpoint must be an https: URL');
  if (url.username || url.password) return bad('a push endpoint must not carry a user name or password');
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (!host) return bad('the push endpoint has no host');
  const named = allowed?.includes(host) ?? false;
  if (allowed && !allowed.some((p) => hostMatches(host, p)))
    return bad(`${host} is not a push service this relay sends to (--push-hosts)`);
  if (isIP(host) !== 0 && !named && !isPublicAddress(host))
    return bad('the push endpoint points at a private or local address');
  return { ok: true, url, host, named };
}

/** `--push-hosts a,b,known`: the list, with `known` standing for `KNOWN_PUSH_HOSTS`; null for no list. */
export function parsePushHosts(value: string | undefined): string[] | null {
  if (value === undefined || value.trim() === '') return null;
  const hosts = value
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  return [...new Set(hosts.flatMap((h) => (h === 'known' ? KNOWN_PUSH_HOSTS : [h])))];
}
