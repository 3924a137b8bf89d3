/**
 * Who a request came from, behind a reverse proxy (issue 29, `svc relay serve --trust-proxy CIDR…`): the per-address
 * limits and the log lines use the client's address, which a proxy passes in `X-Forwarded-For` or `Forwarded`
 * (RFC 7239). Those headers are anyone's to write, so they are read only when the connection comes from a trusted
 * proxy, and then only as far as the hops are trusted: the chain is walked from the right (the hop nearest the relay),
 * past the trusted proxies, and the first address that is not one is the client. Without `--trust-proxy` the headers
 * are ignored. Matching uses node's `net.BlockList`.
 */
import { BlockList, isIP } from 'node:net';

export interface TrustedProxies {
  /** Whether `address` is one of the trusted proxies. */
  has(address: string): boolean;
  /** The CIDRs as given, for the log line. */
  readonly list: readonly string[];
}

/** `::ffff:10.0.0.1` is 10.0.0.1; brackets and a port are dropped (`[::1]:443`, `10.0.0.1:80`). */
export function bareAddress(text: string): string | null {
  let a = text.trim().replace(/^"|"$/g, '');
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(a);
  if (bracketed) a = bracketed[1]!;
  else if (/^\d+\.\d+\.\d+\.\d+:\d+$/.test(a)) a = a.slice(0, a.lastIndexOf(':'));
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  if (mapped) a = mapped[1]!;
  return isIP(a) ? a.toLowerCase() : null;
}

/**
 * Parses `--trust-proxy`: CIDRs or single addresses, separated by commas or spaces (`127.0.0.1/32, ::1`). Throws on
 * anything else, saying which.
 */
export function trustedProxies(spec: string | undefined): TrustedProxies {
  const list = (spec ?? '').split(/[\s,]+/).filter(Boolean);
  const blocks = new BlockList();
  for (const item of list) {
    const [host, bits, extra] = item.split('/');
    const address = host === undefined ? null : bareAddress(host);
    const family = address ? (isIP(address) === 6 ? 'ipv6' : 'ipv4') : null;
    const max = family === 'ipv6' ? 128 : 32;
    const prefix = bits === undefined ? max : /^\d+$/.test(bits) ? Number(bits) : Number.NaN;
    if (!address || !family || extra !== undefined || !(prefix >= 0 && prefix <= max))
      throw new Error(`--trust-proxy: ${item} is not an address or a CIDR (10.0.0.0/8, ::1)`);
    blocks.addSubnet(address, prefix, family);
  }
  return {
    list,
    has(address) {
      const bare = bareAddress(address);
      if (!bare) return false;
      return blocks.check(bare, isIP(bare) === 6 ? 'ipv6' : 'ipv4');
    },
  };
}

/** The hops a proxy chain names, oldest (the client as the first proxy saw it) first. */
function forwardedChain(headers: {
  'x-forwarded-for'?: string | string[] | undefined;
  forwarded?: string | string[] | undefined;
}): (string | null)[] {
  const join = (h: string | string[] | undefined) => (Array.isArray(h) ? h.join(',') : (h ?? ''));
  const xff = join(headers['x-forwarded-for']).trim();
  if (xff) return xff.split(',').map((part) => bareAddress(part));
  const forwarded = join(headers.forwarded).trim();
  if (!forwarded) return [];
  return forwarded.split(',').map((element) => {
    const pair = element
      .split(';')
      .map((p) => p.trim())
      .find((p) => p.toLowerCase().startsWith('for='));
    return pair ? bareAddress(pair.slice(4)) : null;
  });
}

/**
 * The client's address for a request whose connection came from `remote`. Only a trusted proxy's headers are read;
 * an unreadable hop ends the walk there (the address before it cannot be vouched for, so the proxy's is kept).
 */
export function clientAddress(
  remote: string | undefined,
  headers: { 'x-forwarded-for'?: string | string[] | undefined; forwarded?: string | string[] | undefined },
  trusted: TrustedProxies,
): string {
  const peer = (remote && bareAddress(remote)) || remote || '?';
  if (!trusted.has(peer)) return peer;
  let client = peer;
  const chain = forwardedChain(headers);
  for (let i = chain.length - 1; i >= 0; i--) {
    const hop = chain[i];
    if (!hop) break;
    client = hop;
    if (!trusted.has(hop)) break;
  }
  return client;
}
