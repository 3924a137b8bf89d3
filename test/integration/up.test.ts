/**
 * `svc up`, the README's main command: a local relay on embedded SQLite, an account, the login, the listener.
 * Then what the README tells a newcomer to do: start a program in tmux, send one curl, see it typed.
 */

import { X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { delimiter, join } from 'node:path';
import type * as pty from 'node-pty';
import { afterEach, describe, expect, it } from 'vitest';
import { keptLines, type SpawnedSvc, spawnSvc, svcEnv, svcInTerminal, tempHome } from '../helpers/cli.js';
import { registerTestDevice } from '../helpers/devices.js';
import { api, waitFor } from '../helpers/relay.js';
import { startTmuxServer, type TmuxServer } from '../helpers/tmux.js';
import { cloudflaredQuickTunnelLog } from '../helpers/tunnel.js';

let up: SpawnedSvc | null = null;
let tmux: TmuxServer | null = null;
let home: ReturnType<typeof tempHome> | null = null;
let term: pty.IPty | null = null;

const SPINNER = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;

afterEach(async () => {
  term?.kill('SIGINT');
  term = null;
  await up?.stop('SIGINT');
  up = null;
  await tmux?.cleanup();
  tmux = null;
  home?.cleanup();
  home = null;
});

async function startUp(env: NodeJS.ProcessEnv) {
  const proc = spawnSvc(['up', '--port', '0'], env);
  const line = await proc.waitForLine(/^\s+relay\s+http:\/\/127\.0\.0\.1:\d+/);
  const url = /http:\/\/127\.0\.0\.1:\d+/.exec(line)![0];
  await proc.waitForLine(/connected to ws:/);
  return { proc, url };
}

describe('svc up', () => {
  it('brings up relay, account and listener, and a curl push is typed into a tmux program', async () => {
    home = tempHome();
    tmux = await startTmuxServer();
    const env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath });
    delete env.CI; // so that only the pipe keeps the progress line off (CI would too)
    const started = await startUp(env);
    up = started.proc;
    expect(up.output()).toMatch(/svc is up \(new account created\)/);
    expect(up.output()).toMatch(/curl -sS -X POST http:\/\/127\.0\.0\.1:\d+\/pushes\/send/);
    // the relay is on loopback: no QR code a phone could not open, but the ways in
    expect(up.output()).toMatch(
      /The relay is on this computer only \(http:\/\/127\.0\.0\.1:\d+\): a phone cannot open it/,
    );
    expect(up.output()).toMatch(/^ {2}svc up --lan +a phone on this Wi-Fi/m);
    expect(up.output()).toMatch(/^ {2}svc up --tunnel cloudflared\|tailscale +a phone anywhere/m);
    expect(up.output()).toMatch(/^Pair a browser on this computer: open this link\./m);

    const config = JSON.parse(readFileSync(join(home.home, '.svc', 'config.json'), 'utf8'));
    expect(config.baseUrl).toBe(started.url);
    expect(statSync(join(home.home, '.svc', 'relay', 'relay.db')).mode & 0o777).toBe(0o600);
    // The key is not printed: the curl line reads it from the config file.
    expect(up.output()).not.toContain(config.apiKey);
    // in a pipe, no progress line (cli/progress.ts)
    expect(up.output()).not.toMatch(/starting the relay|\x1b\[2K/);

    await tmux.newSession('my-session', 'cat');
    // As a person would: once cat is running (tmux starts it through `sh -c`, and a shell in front is refused).
    await waitFor(
      async () =>
        (await tmux!.run(['display-message', '-p', '-t', 'my-session', '#{pane_current_command}'])).trim() === 'cat',
      { what: 'cat in front' },
    );
    const res = await api(started.url, 'POST', '/pushes/send', {
      key: config.apiKey,
      body: { type: 'agent.command', agentSessionName: 'my-session', body: 'hello from svc' },
    });
    expect(res.status).toBe(200);
    await waitFor(async () => (await tmux!.capture('my-session')).includes('hello from svc'), {
      timeoutMs: 15_000,
      what: 'the message in the pane',
    }).catch(async (err) => {
      const r = await api(started.url, 'GET', `/pushes/${res.json.id}`, { key: config.apiKey });
      throw new Error(`${err.message}; the relay says ${JSON.stringify(r.json)}; svc up printed:\n${up?.output()}`);
    });
    const status = await waitFor(async () => {
      const r = await api(started.url, 'GET', `/pushes/${res.json.id}`, { key: config.apiKey });
      return r.json.state === 'injected' ? r.json : null;
    });
    expect(status.state).toBe('injected');
  });

  it('on a terminal, says what it is doing while it starts, then wipes that line before the banner', async () => {
    home = tempHome();
    tmux = await startTmuxServer();
    const run = svcInTerminal(['up', '--port', '0'], svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath }));
    term = run.term;
    await waitFor(() => run.output().includes('svc is up (new account created)'), {
      timeoutMs: 15_000,
      what: 'the banner on the terminal',
    });
    const out = run.output();
    for (const step of ["opening the relay's database…", 'starting the relay…', 'making an account and logging in…'])
      expect(out).toContain(step);
    // wiped before anything else is printed: what stays on each line of the terminal is never the progress line
    // (the listener's own log lines, printed as it starts, are not glued onto it either)
    expect(keptLines(out).filter((line) => SPINNER.test(line))).toEqual([]);
    const banner = out.indexOf('svc is up (new account created)');
    expect(out.slice(banner)).not.toMatch(SPINNER);
  });

  it('a second run reuses the account and is short; a pairing code only until a phone is paired', async () => {
    home = tempHome();
    tmux = await startTmuxServer();
    const env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath });
    const first = await startUp(env);
    const key = JSON.parse(readFileSync(join(home.home, '.svc', 'config.json'), 'utf8')).apiKey;
    const port = new URL(first.url).port;
    await first.proc.stop('SIGINT');
    await tmux.newSession('my-session', 'cat');

    const again = async () => {
      const proc = spawnSvc(['up', '--port', port], env);
      await proc.waitForLine(/connected to ws:/);
      // the listener's first lines and `svc up`'s own summary come from two writers: wait for the summary too
      await proc.waitForLine(/Ctrl-C stops/);
      await proc.waitForLine(/#pair=|phone paired/);
      return proc;
    };
    up = await again();
    expect(up.output()).toMatch(new RegExp(`^svc is up: web app http://127\\.0\\.0\\.1:${port}/ · relay`, 'm'));
    expect(up.output()).toMatch(/^ {2}1 session: my-session$/m);
    expect(up.output()).not.toMatch(/new account|curl/);
    expect(up.output()).toMatch(/#pair=/); // no phone yet
    expect(JSON.parse(readFileSync(join(home.home, '.svc', 'config.json'), 'utf8')).apiKey).toBe(key);
    await registerTestDevice({ url: first.url, apiKey: key }, 'app', 'phone');
    await up.stop('SIGINT');
    up = await again();
    expect(up.output()).toMatch(/^1 phone paired; `svc pair` pairs another\.$/m);
    expect(up.output()).not.toMatch(/#pair=/);
  });

  it('a second `svc up` beside the first says where it runs and exits 0', async () => {
    home = tempHome();
    tmux = await startTmuxServer();
    const env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath });
    const started = await startUp(env);
    up = started.proc;
    expect(statSync(join(home.home, '.svc', 'up.json')).mode & 0o777).toBe(0o600);
    const second = spawnSvc(['up'], env);
    expect(await second.exited).toBe(0);
    expect(second.output()).toBe(
      `svc up is already running (pid ${up.child.pid}): web app ${started.url}/, relay ${started.url}. Ctrl-C it in its terminal (or kill ${up.child.pid}) to stop it.\n`,
    );
    // the first is untouched, and once it stops a new one starts
    expect(up.child.exitCode).toBeNull();
    await up.stop('SIGINT');
    expect(existsSync(join(home.home, '.svc', 'up.json'))).toBe(false);
  });

  it('--lan serves the app over HTTPS with its own certificate and prints that pairing link', async () => {
    home = tempHome();
    tmux = await startTmuxServer();
    const env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath });
    up = spawnSvc(['up', '--lan', '--lan-host', '127.0.0.1', '--port', '0', '--lan-port', '0'], env);
    await up.waitForLine(/connected to ws:/);
    const line = await up.waitForLine(/^\s+https:\/\/127\.0\.0\.1:\d+\/#pair=/);
    const link = new URL(line.trim());
    expect(link.port).not.toBe('0');
    expect(up.output()).toMatch(/^\s+relay\s+http:\/\/127\.0\.0\.1:\d+/m);
    expect(up.output()).toMatch(/a certificate svc made for this computer; check the fingerprint/);
    expect(up.output()).toMatch(/same network/);
    const cert = readFileSync(join(home.home, '.svc', 'tls', 'cert.pem'), 'utf8');
    const fingerprint = new X509Certificate(cert).fingerprint256;
    expect(up.output()).toContain(`SHA-256 ${fingerprint}`);
    expect(statSync(join(home.home, '.svc', 'tls')).mode & 0o777).toBe(0o700);
    expect(statSync(join(home.home, '.svc', 'tls', 'key.pem')).mode & 0o777).toBe(0o600);
    // The config keeps the loopback relay; the phone's origin is the HTTPS one.
    expect(JSON.parse(readFileSync(join(home.home, '.svc', 'config.json'), 'utf8')).baseUrl).toMatch(/^http:\/\//);
    const status = await new Promise<number>((resolve, reject) => {
      get(`${link.origin}/healthz`, { ca: cert }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject);
    });
    expect(status).toBe(200);
  });

  it('says which port is taken', async () => {
    home = tempHome();
    tmux = await startTmuxServer();
    const env = svcEnv(home.home, { SVC_TMUX_SOCKET: tmux.socketPath });
    const first = await startUp(env);
    up = first.proc;
    const port = new URL(first.url).port;
    const otherHome = tempHome();
    try {
      const second = spawnSvc(['up', '--port', port], svcEnv(otherHome.home, { SVC_TMUX_SOCKET: tmux.socketPath }));
      expect(await second.exited).toBe(1);
      expect(second.output()).toMatch(new RegExp(`port ${port} is in use`));
    } finally {
      otherHome.cleanup();
    }
  });
});

// `svc up --tunnel` (issue 29 part 4) with stand-ins for the tunnel programs on PATH: they print exactly what the
// real ones print (core/relay/tunnel.ts names the sources), record how they were started, and note the signal that
// ends them. svc reads the public URL, pairs with it, stops the program when it stops; a program that cannot give a
// tunnel, or that dies later, is one line saying what to do, and the local relay keeps serving.

const URL_SHOWN = 'https://lucky-river-tiger-sand.trycloudflare.com';

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
${cloudflaredQuickTunnelLog(URL_SHOWN)}LOG
echo $$ > "$STANDIN_DIR/pid"
while true; do sleep 0.2; done`;

describe('svc up --tunnel', () => {
  it('cloudflared: pairs with the public URL it prints, and stops it when svc up stops', async () => {
    const { env, file } = await withStandIn('cloudflared', CLOUDFLARED);
    up = spawnSvc(['up', '--port', '0', '--tunnel', 'cloudflared'], env);
    await up.waitForLine(/connected to ws:/);
    const link = await up.waitForLine(/#pair=/);
    expect(link.trim()).toMatch(
      new RegExp(`^${URL_SHOWN.replaceAll('.', '\\.')}/#pair=[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}$`),
    );
    expect(up.output()).toContain(`web app  ${URL_SHOWN}/`);
    expect(up.output()).not.toMatch(/a phone cannot open it/);
    const relay = /relay\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(up.output())![1];
    expect(readFileSync(file('args'), 'utf8').trim()).toBe(`tunnel --no-autoupdate --url ${relay}`);
    expect(JSON.parse(readFileSync(join(home!.home, '.svc', 'up.json'), 'utf8')).appUrl).toBe(URL_SHOWN);

    // a loaded machine may take a while to stop the relay and the listener: no SIGKILL that would orphan the tunnel
    await waitFor(() => existsSync(file('pid')), { what: 'the stand-in to note its pid' });
    const pid = Number(readFileSync(file('pid'), 'utf8'));
    const output = up.output();
    const code = await up.stop('SIGINT', 20_000);
    up = null;
    // the program does not outlive svc up (SIGTERM first: the stand-in notes it when its shell gets to it)
    const alive = () => {
      try {
        // a zombie (ended, not yet reaped by whoever inherited it) has ended
        return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      } catch {
        return false;
      }
    };
    await waitFor(() => !alive(), {
      timeoutMs: 20_000,
      what: `the tunnel (pid ${pid}) to end after svc up stopped (exit ${code}); its output:\n${output}`,
    });
    expect(code).toBe(0);
  }, 90_000);

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
