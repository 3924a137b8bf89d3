/**
 * `svc up --tunnel cloudflared|tailscale` (issue 29 part 4): the person's own tunnel program in front of the local
 * relay, for a phone on any network. svc runs it in the foreground (so it stops when `svc up` stops), reads the
 * public HTTPS URL from what it prints, and pairs with that URL. Pure: the command line, the URL read from its
 * output, and the one line said when it fails; actors/relay/tunnel.ts runs it.
 *
 * What the programs print was taken from their sources: cloudflared's quick tunnel
 * (`cmd/cloudflared/tunnel/quick_tunnel.go`, cloudflare/cloudflared at 022b542: an ASCII box logged line by line on
 * stderr, "Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):" then the URL),
 * and Tailscale's serve and funnel (`cmd/tailscale/cli/serve_v2.go`, tailscale 1.103.0: "Available within your
 * tailnet:" or "Available on the internet:", a blank line, then `https://<machine>.<tailnet>.ts.net/`).
 */

export type TunnelKind = 'cloudflared' | 'tailscale';

export const TUNNEL_KINDS: readonly TunnelKind[] = ['cloudflared', 'tailscale'];

/** How long the program may take to print its URL. */
export const TUNNEL_URL_TIMEOUT_MS = 30_000;

export function tunnelKind(text: string | undefined): TunnelKind {
  if (text === 'cloudflared' || text === 'tailscale') return text;
  throw new Error(`--tunnel ${text ?? ''} is not one svc runs: --tunnel cloudflared or --tunnel tailscale`);
}

/**
 * The program and its arguments, in the foreground: a cloudflared quick tunnel, or Tailscale Serve (the tailnet
 * only) or Funnel (`publicly`: the internet) of the local relay.
 */
export function tunnelCommand(kind: TunnelKind, localUrl: string, publicly: boolean): string[] {
  if (kind === 'cloudflared') return ['cloudflared', 'tunnel', '--no-autoupdate', '--url', localUrl];
  return ['tailscale', publicly ? 'funnel' : 'serve', localUrl];
}

/** The public HTTPS URL in what the program printed so far (no trailing slash), or null while there is none. */
export function tunnelUrl(kind: TunnelKind, output: string): string | null {
  const lines = output.split(/\r?\n/);
  if (kind === 'cloudflared') {
    const at = lines.findIndex((l) => l.includes('Your quick Tunnel has been created!'));
    if (at < 0) return null;
    const url = /\|\s+(https:\/\/[A-Za-z0-9.-]+)\s*\|/.exec(lines[at + 1] ?? '')?.[1];
    return url ?? null;
  }
  const at = lines.findIndex((l) => /^Available (within your tailnet|on the internet):/.test(l.trim()));
  if (at < 0) return null;
  for (const line of lines.slice(at + 1)) {
    const url = /^(https:\/\/[A-Za-z0-9.-]+(?::\d+)?)\/?(\s|$)/.exec(line.trim())?.[1];
    if (url) return url;
  }
  return null;
}

/** The one line said when the program could not be started or stopped: what happened and what to do. */
export function tunnelFailure(
  kind: TunnelKind,
  what: { missing?: boolean; output: string; code?: number | null },
): string {
  const install =
    kind === 'cloudflared'
      ? 'install cloudflared (https://developers.cloudflare.com/cloudflare-one/connections/connect-networks/downloads/)'
      : 'install Tailscale (https://tailscale.com/download)';
  if (what.missing) return `--tunnel ${kind}: ${kind} is not on PATH: ${install}, or use --lan`;
  const text = what.output;
  if (kind === 'tailscale') {
    if (/doesn't appear to be running/.test(text))
      return '--tunnel tailscale: tailscaled is not running: start it (sudo systemctl start tailscaled), then `tailscale up`';
    if (/Logged out|NeedsLogin|not logged in/i.test(text))
      return '--tunnel tailscale: this computer is not logged in to Tailscale: run `tailscale up`';
    if (/funnel/i.test(text) && /not (enabled|available|allowed)|nodeAttrs|policy/i.test(text))
      return '--tunnel tailscale --public: Funnel is not enabled for this tailnet (its admin console), or drop --public';
  }
  if (kind === 'cloudflared' && /failed to request quick Tunnel|failed to unmarshal quick Tunnel/.test(text))
    return '--tunnel cloudflared: trycloudflare.com gave no tunnel (no internet, or its limit): try again later';
  const last = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean)
    .at(-1);
  const how = what.code === undefined ? 'gave no URL' : `stopped (exit ${what.code ?? 'signal'})`;
  return `--tunnel ${kind}: ${kind} ${how}${last ? `: ${last.slice(0, 200)}` : ''}`;
}
