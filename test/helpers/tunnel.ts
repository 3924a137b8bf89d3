/**
 * What `cloudflared tunnel --url …` logs on stderr for a quick tunnel (cmd/cloudflared/tunnel/quick_tunnel.go, at
 * cloudflare/cloudflared 022b542: the URL in an ASCII box), for the stand-ins in test/integration/up.test.ts and
 * test/e2e/throughTunnel.test.ts.
 */
export function cloudflaredQuickTunnelLog(url: string): string {
  return `2026-11-26T10:00:00Z INF Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick way to experiment and try it out.
2026-11-26T10:00:00Z INF Requesting new quick Tunnel on trycloudflare.com...
2026-11-26T10:00:01Z INF +--------------------------------------------------------------------------------------------+
2026-11-26T10:00:01Z INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |
2026-11-26T10:00:01Z INF |  ${url}                                          |
2026-11-26T10:00:01Z INF +--------------------------------------------------------------------------------------------+
`;
}
