/**
 * Whether a phone can open the app at an address (issue 29): what `svc up` and `svc pair` print depends on it.
 *
 * - `loopback`: this computer only (`localhost`, `127.x`, `::1`). A phone that scans it opens its own loopback and
 *   finds nothing, so no QR code is drawn; the ways in are said instead.
 * - `http`: reachable on the network perhaps, but not a secure context: the browser will not install the app or
 *   register its service worker, so no Web Push. Printed, with that said.
 * - `https`: what a phone needs.
 *
 * An address the person named (`--lan-host`, `svc pair --url`) is theirs to judge: printed with its QR code whatever
 * it is, with the same warning for `http`.
 */

export type Reach = 'loopback' | 'http' | 'https';

/** `local` for a loopback host, else the host; null when `url` is not a URL. */
export function stageOf(url: string): string | null {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return null;
  }
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost') || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare))
    return 'local';
  return host;
}

export function reachOf(url: string): Reach {
  if (stageOf(url) === 'local') return 'loopback';
  return new URL(url).protocol === 'https:' ? 'https' : 'http';
}

/**
 * The web origin a browser's `Origin` header names (`https://relay.example.com`, a port when not the default), as
 * the relay keeps it for a phone that paired there: its app and its storage live at that address. Null for none,
 * `null` (an opaque origin), anything but http(s), or an unreasonably long one.
 */
export function appOrigin(header: string | undefined): string | null {
  if (!header || header.length > 300) return null;
  try {
    const url = new URL(header);
    // measured again once parsed: a host in other scripts grows as punycode (`xn--…`)
    const origin = url.origin;
    return (url.protocol === 'https:' || url.protocol === 'http:') && origin.length <= 300 ? origin : null;
  } catch {
    return null;
  }
}

export interface PairingShow {
  /** Print the link (the browser on this computer can always use it). */
  link: boolean;
  /** Draw the QR code: a phone can scan it and get somewhere. */
  qr: boolean;
  /** Lines said before the link: why there is no QR code, or what the address cannot do. */
  notes: string[];
}

/** The ways in, said when the relay is on loopback only (docs/hosting.md has each as a recipe). */
export const WAYS_IN = [
  '  svc up --lan                          a phone on this Wi-Fi: HTTPS on this computer’s LAN address',
  '  svc up --tunnel cloudflared|tailscale  a phone anywhere, through your own tunnel program',
  '  svc relay serve --domain <name>        a relay on a server, with its own HTTPS certificate (docs/hosting.md)',
];

/** What to print for the pairing link at `url`; `named`: the person gave this address. */
export function pairingShow(url: string, named: boolean): PairingShow {
  const reach = reachOf(url);
  if (reach === 'https') return { link: true, qr: true, notes: [] };
  if (reach === 'http')
    return {
      link: true,
      qr: true,
      notes: [
        `${new URL(url).origin} is plain HTTP: a phone can open it, but not install the app or get notifications (they need HTTPS).`,
      ],
    };
  if (named) return { link: true, qr: true, notes: [] };
  return {
    link: true,
    qr: false,
    notes: [
      `The relay is on this computer only (${new URL(url).origin}): a phone cannot open it, so no QR code. The link below works in a browser here. For a phone:`,
      ...WAYS_IN,
    ],
  };
}
