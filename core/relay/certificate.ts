/**
 * The relay's own HTTPS (issue 29 part 2; docs/hosting.md "A relay with its own certificate"): when a certificate is
 * renewed, how long to wait after a failed attempt, and what the plain-HTTP port answers once HTTPS is the relay's
 * address. Pure; actors/relay/acme.ts and relay-server/server.ts do the IO.
 */

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** A certificate is renewed when two thirds of its life are over (90-day certificates: 30 days before the end). */
export function renewalTime(notBefore: number, notAfter: number): number {
  return notBefore + Math.floor(((notAfter - notBefore) * 2) / 3);
}

/** After the `failures`-th failed attempt in a row: 1 min, 2, 4, … at most 6 hours (the old certificate serves). */
export function retryDelayMs(failures: number): number {
  return Math.min(6 * 60 * MINUTE, MINUTE * 2 ** Math.max(0, failures - 1));
}

/**
 * How long to sleep before looking again at a time `at`: timers cannot wait more than 2^31 ms (24.8 days), so a wait
 * for a renewal two months away is a chain of at most one-day sleeps that each look at the clock again.
 */
export function sleepUntil(at: number, now: number): number {
  return Math.max(0, Math.min(at - now, DAY));
}

/** A host name a certificate can be asked for: letters, digits and hyphens in dot-separated labels. */
export function checkDomain(name: string): string {
  const domain = name.trim().toLowerCase().replace(/\.$/, '');
  const label = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
  const labels = domain.split('.');
  // a name, not an address: at least two labels, and the last (a top-level domain) never all digits
  if (
    domain.length > 253 ||
    labels.length < 2 ||
    !labels.every((part) => label.test(part)) ||
    /^\d+$/.test(labels.at(-1) ?? '')
  )
    throw new Error(`--domain must be a host name such as relay.example.org, not ${JSON.stringify(name)}`);
  return domain;
}

export const ACME_CHALLENGE_PATH = '/.well-known/acme-challenge/';

export type PlainAnswer =
  | { status: 200; body: string }
  | { status: 308; location: string }
  | { status: 400 | 404; body: string };

/**
 * What the plain-HTTP port answers when the relay serves HTTPS: an ACME HTTP-01 challenge's key authorization, and
 * for everything else a redirect to the same path over HTTPS (308: the method and body are kept). The redirect's
 * host is the relay's domain when it has one, else the host the request named (a certificate the person brought
 * may name several); a Host that is not a host name is refused rather than echoed into a Location.
 */
export function plainHttpAnswer(
  url: string,
  host: string | undefined,
  https: { domain?: string; port: number },
  challenge: (token: string) => string | undefined,
): PlainAnswer {
  // the path goes into a Location header: anything but visible ASCII percent-encoded
  const path = (url.startsWith('/') ? url : '/').replace(/[^\x21-\x7e]/g, (c) => encodeURIComponent(c));
  if (path.startsWith(ACME_CHALLENGE_PATH)) {
    const token = path.slice(ACME_CHALLENGE_PATH.length);
    const answer = /^[A-Za-z0-9_-]+$/.test(token) ? challenge(token) : undefined;
    return answer === undefined ? { status: 404, body: 'no such challenge\n' } : { status: 200, body: answer };
  }
  let name = https.domain;
  if (!name) {
    const named = /^([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i.exec(host ?? '')?.[1];
    if (!named)
      return { status: 400, body: 'this relay answers over HTTPS; the request named no host to send it to\n' };
    name = named.toLowerCase();
  }
  const port = https.port === 443 ? '' : `:${https.port}`;
  return { status: 308, location: `https://${name}${port}${path}` };
}

export const LETS_ENCRYPT_DIRECTORY = 'https://acme-v02.api.letsencrypt.org/directory';

export type HttpsFlags =
  | { kind: 'acme'; domain: string; directoryUrl: string; email?: string }
  | { kind: 'files'; certPath: string; keyPath: string }
  | null;

/**
 * `svc relay serve`'s HTTPS flags read together: `--domain` (ACME, with `--acme-directory` and `--acme-email`) or
 * `--tls-cert` with `--tls-key`, never both; null for plain HTTP. Throws the sentence to print for a wrong mix.
 */
export function httpsFlags(args: Readonly<Record<string, unknown>>): HttpsFlags {
  const text = (name: string) => {
    const value = args[name];
    return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
  };
  const [domain, directory, email, cert, key] = ['domain', 'acme-directory', 'acme-email', 'tls-cert', 'tls-key'].map(
    text,
  );
  if (domain && (cert || key))
    throw new Error(
      '--domain gets a certificate over ACME; --tls-cert/--tls-key serve one you have: give one or the other',
    );
  if (domain) {
    const directoryUrl = directory ?? LETS_ENCRYPT_DIRECTORY;
    if (!/^https:\/\/[^\s/]+/.test(directoryUrl))
      throw new Error(`--acme-directory must be an https:// URL, not ${JSON.stringify(directoryUrl)}`);
    if (email !== undefined && !/^[^\s@:]+@[^\s@]+\.[^\s@]+$/.test(email))
      throw new Error(`--acme-email must be an email address, not ${JSON.stringify(email)}`);
    return { kind: 'acme', domain: checkDomain(domain), directoryUrl, ...(email ? { email } : {}) };
  }
  if (directory || email) throw new Error('--acme-directory and --acme-email go with --domain');
  if (cert || key) {
    if (!cert || !key) throw new Error('--tls-cert and --tls-key go together: the certificate (chain) and its key');
    return { kind: 'files', certPath: cert, keyPath: key };
  }
  return null;
}
