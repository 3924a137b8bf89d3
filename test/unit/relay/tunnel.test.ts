/** core/relay/tunnel.ts: the tunnel programs' command lines, their URL read from what they print, and failures. */
import { describe, expect, it } from 'vitest';
import { tunnelCommand, tunnelFailure, tunnelKind, tunnelUrl } from '../../../core/relay/tunnel.js';

// As cloudflared logs a quick tunnel (cmd/cloudflared/tunnel/quick_tunnel.go: the disclaimer, the request, the box)
const CLOUDFLARED = [
  '2026-11-26T10:00:00Z INF Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick way to experiment and try it out.',
  '2026-11-26T10:00:00Z INF Requesting new quick Tunnel on trycloudflare.com...',
  '2026-11-26T10:00:01Z INF +--------------------------------------------------------------------------------------------+',
  '2026-11-26T10:00:01Z INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |',
  '2026-11-26T10:00:01Z INF |  https://lucky-river-tiger-sand.trycloudflare.com                                          |',
  '2026-11-26T10:00:01Z INF +--------------------------------------------------------------------------------------------+',
].join('\n');

// As `tailscale serve http://127.0.0.1:8787` prints in the foreground (cmd/tailscale/cli/serve_v2.go)
const SERVE = [
  'Available within your tailnet:',
  '',
  'https://laptop.tail1234.ts.net/',
  '|-- proxy http://127.0.0.1:8787',
  '',
  'Press Ctrl+C to exit.',
].join('\n');

describe('the tunnel programs', () => {
  it('runs each in the foreground against the local relay', () => {
    expect(tunnelCommand('cloudflared', 'http://127.0.0.1:8787', false)).toEqual([
      'cloudflared',
      'tunnel',
      '--no-autoupdate',
      '--url',
      'http://127.0.0.1:8787',
    ]);
    expect(tunnelCommand('tailscale', 'http://127.0.0.1:8787', false)).toEqual([
      'tailscale',
      'serve',
      'http://127.0.0.1:8787',
    ]);
    expect(tunnelCommand('tailscale', 'http://127.0.0.1:8787', true)[1]).toBe('funnel');
  });

  it('reads the public URL once it is printed, not before', () => {
    expect(tunnelUrl('cloudflared', CLOUDFLARED)).toBe('https://lucky-river-tiger-sand.trycloudflare.com');
    expect(tunnelUrl('cloudflared', CLOUDFLARED.split('\n').slice(0, 4).join('\n'))).toBeNull();
    expect(tunnelUrl('tailscale', SERVE)).toBe('https://laptop.tail1234.ts.net');
    expect(tunnelUrl('tailscale', SERVE.replace('within your tailnet', 'on the internet'))).toBe(
      'https://laptop.tail1234.ts.net',
    );
    expect(tunnelUrl('tailscale', 'Available within your tailnet:\n\n')).toBeNull();
  });

  it('says what to do when the program is missing, logged out, or gave no tunnel', () => {
    expect(tunnelFailure('cloudflared', { missing: true, output: '' })).toMatch(
      /^--tunnel cloudflared: cloudflared is not on PATH: install cloudflared .*, or use --lan$/,
    );
    expect(tunnelFailure('tailscale', { output: 'Logged out.\n', code: 1 })).toMatch(/run `tailscale up`$/);
    expect(
      tunnelFailure('tailscale', {
        output:
          "failed to connect to local tailscaled; it doesn't appear to be running (sudo systemctl start tailscaled ?)",
        code: 1,
      }),
    ).toMatch(/tailscaled is not running/);
    expect(
      tunnelFailure('cloudflared', {
        output: 'ERR Error unmarshaling QuickTunnel response\nfailed to unmarshal quick Tunnel: invalid character',
        code: 1,
      }),
    ).toMatch(/trycloudflare\.com gave no tunnel/);
    expect(tunnelFailure('cloudflared', { output: 'a\nsomething odd\n', code: 2 })).toBe(
      '--tunnel cloudflared: cloudflared stopped (exit 2): something odd',
    );
  });

  it('refuses a tunnel it does not know', () => {
    expect(tunnelKind('tailscale')).toBe('tailscale');
    expect(() => tunnelKind('ngrok')).toThrow(/--tunnel ngrok is not one svc runs/);
  });
});
