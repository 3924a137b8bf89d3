/**
 * `svc up --tunnel` (issue 29 part 4) with stand-ins for the tunnel programs on PATH: they print exactly what the
 * real ones print (core/relay/tunnel.ts names the sources), record how they were started, and note the signal that
 * ends them. svc reads the public URL, pairs with it, stops the program when it stops; a program that cannot give a
 * tunnel, or that dies later, is one line saying what to do, and the local relay keeps serving.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type SpawnedSvc, spawnSvc, svcEnv, tempHome } from '../helpers/cli.js';
import { waitFor } from '../helpers/relay.js';
import { startTmuxServer, type TmuxServer } from '../helpers/tmux.js';

const URL_SHOWN = 'https://lucky-river-tiger-sand.trycloudflare.com';

let up: SpawnedSvc | null = null;
let tmux: TmuxServer | null = null;
let home: ReturnType<typeof tempHome> | null = null;

afterEach(async () => {
  await up?.stop('SIGINT');
  up = null;
  await tmux?.cleanup();
  tmux = null;
  home?.cleanup();
  home = null;
});

/** A home, a tmux server, and `bin/` on PATH holding `program` as the shell script `body`. */
async function withStandIn(program: string, body: string) {
  home = tempHome();
  tmux = await startTmuxServer();
  const bin = join(home.home, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, program), `#!/bin/sh\n${body}\n`);
  chmodSync(join(bin, program), 0o755);
  const env = svcEnv(home.home, {
    SVC_TMUX_SOCKET: tmux.socketPath,
    PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`,
    STANDIN_DIR: home.home,
  });
  return { env, file: (name: string) => join(home!.home, name) };
}

// cloudflared's quick tunnel, as it logs it on stderr (cmd/cloudflared/tunnel/quick_tunnel.go), then it serves
const CLOUDFLARED = `echo "$@" > "$STANDIN_DIR/args"
trap 'echo TERM > "$STANDIN_DIR/stopped"; exit 0' TERM
cat >&2 <<'LOG'
2026-11-26T10:00:00Z INF Thank you for trying Cloudflare Tunnel. Doing so, without a Cloudflare account, is a quick way to experiment and try it out.
2026-11-26T10:00:00Z INF Requesting new quick Tunnel on trycloudflare.com...
2026-11-26T10:00:01Z INF +--------------------------------------------------------------------------------------------+
2026-11-26T10:00:01Z INF |  Your quick Tunnel has been created! Visit it at (it may take some time to be reachable):  |
2026-11-26T10:00:01Z INF |  ${URL_SHOWN}                                          |
2026-11-26T10:00:01Z INF +--------------------------------------------------------------------------------------------+
LOG
echo $$ > "$STANDIN_DIR/pid"
while true; do sleep 0.2; done`;

describe('svc up --tunnel', () => {
  it('cloudflared: pairs with the public URL it prints, and stops it when svc up stops', async () => {
    const { env, file } = await withStandIn('cloudflared', CLOUDFLARED);
    up = spawnSvc(['up', '--port', '0', '--tunnel', 'cloudflared'], env);
    await up.waitForLine(/connected to ws:/);
    const link = await up.waitForLine(/#pair=/);
    expect(link.trim()).toMatch(new RegExp(`^${URL_SHOWN.replaceAll('.', '\\.')}/#pair=[A-Za-z0-9_-]{22}$`));
    expect(up.output()).toContain(`web app  ${URL_SHOWN}/`);
    expect(up.output()).not.toMatch(/a phone cannot open it/);
    const relay = /relay\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())![1];
    expect(readFileSync(file('args'), 'utf8').trim()).toBe(`tunnel --no-autoupdate --url ${relay}`);
    expect(JSON.parse(readFileSync(join(home!.home, '.svc', 'up.json'), 'utf8')).appUrl).toBe(URL_SHOWN);

    await up.stop('SIGINT');
    up = null;
    await waitFor(() => existsSync(file('stopped')), { timeoutMs: 10_000, what: 'the tunnel stopped' });
  });

  it('a tunnel that dies later is said, and the local relay keeps serving', async () => {
    const { env, file } = await withStandIn('cloudflared', CLOUDFLARED);
    up = spawnSvc(['up', '--port', '0', '--tunnel', 'cloudflared'], env);
    await up.waitForLine(/#pair=/);
    process.kill(Number(readFileSync(file('pid'), 'utf8')), 'SIGKILL');
    const said = await up.waitForLine(/--tunnel cloudflared: cloudflared stopped/);
    expect(said).toMatch(
      /the relay keeps serving at http:\/\/127\.0\.0\.1:\d+\. Restart `svc up --tunnel cloudflared`/,
    );
    const relay = /relay\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())![1];
    expect((await fetch(`${relay}/healthz`)).status).toBe(200);
    expect(up.child.exitCode).toBeNull();
  });

  it('tailscale logged out: one line saying what to do, and svc up serves on this computer', async () => {
    // what `tailscale serve` says on a logged-out node (cmd/tailscale/cli/status.go's words), exit 1
    const { env } = await withStandIn('tailscale', 'echo "Logged out." >&2\nexit 1');
    up = spawnSvc(['up', '--port', '0', '--tunnel', 'tailscale'], env);
    const said = await up.waitForLine(/--tunnel tailscale:/);
    expect(said).toMatch(
      /^svc: --tunnel tailscale: this computer is not logged in to Tailscale: run `tailscale up`; the relay serves at http:\/\/127\.0\.0\.1:\d+ on this computer only\.$/,
    );
    await up.waitForLine(/connected to ws:/);
    await up.waitForLine(/a phone cannot open it/);
  });

  it('refuses a tunnel it does not run, and --public without tailscale', async () => {
    home = tempHome();
    const env = svcEnv(home.home, {});
    const bad = spawnSvc(['up', '--tunnel', 'ngrok'], env);
    expect(await bad.exited).toBe(1);
    expect(bad.output()).toMatch(/--tunnel ngrok is not one svc runs: --tunnel cloudflared or --tunnel tailscale/);
    const pub = spawnSvc(['up', '--tunnel', 'cloudflared', '--public'], env);
    expect(await pub.exited).toBe(1);
    expect(pub.output()).toMatch(/--public goes with --tunnel tailscale/);
  });
});
