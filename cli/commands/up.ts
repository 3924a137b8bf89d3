import { isIPv4 } from 'node:net';
import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { readConfigFile } from '../../actors/daemon/configFile.js';
import { type DaemonContext, defaultEntry, findListener } from '../../actors/daemon/daemon.js';
import { stopListenerVia } from '../../actors/daemon/listenerControl.js';
import { createLogger } from '../../actors/daemon/logger.js';
import { clearRunningUp, runningUp, writeRunningUp } from '../../actors/daemon/upFile.js';
import { ensurePrivateDir } from '../../actors/files.js';
import { ListenerStartError, type RunningListener, startListener } from '../../actors/listener.js';
import { ensureLanCertificate, type LanCertificate, lanAddress } from '../../actors/relay/tls.js';
import { type RunningTunnel, startTunnel } from '../../actors/relay/tunnel.js';
import { installService, serviceFacts } from '../../actors/service/service.js';
import { createTmux } from '../../actors/tmux/tmux.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { VERSION } from '../../core/daemon/version.js';
import { trustedProxies } from '../../core/relay/clientAddress.js';
import { type TunnelKind, tunnelKind } from '../../core/relay/tunnel.js';
import { wrapperSocket } from '../../core/sessions/launch.js';
import { createAccount } from '../../relay-server/accounts.js';
import { authenticate } from '../../relay-server/auth.js';
import { startRelay } from '../../relay-server/server.js';
import { openSqliteStore } from '../../relay-server/sqliteStore.js';
import { fail } from '../output.js';
import { progress } from '../progress.js';
import { login } from './login.js';
import { createPairingLink, pairingText } from './pair.js';

/** What `svc up` says when its listener ended on its own (or was stopped by `svc listener --stop`). */
export function listenerEndedLine(code: number, relayUrl: string, log: string): string {
  return [
    `svc: the listener stopped (exit ${code}; the lines above and ${log} say why); the relay keeps serving at ${relayUrl}.`,
    '  The next `svc cc` (or `svc listener --restart`) starts a listener in the background.',
  ].join('\n');
}

/** The flags of this `svc up` that differ from the defaults, for the login service to run it the same way. */
export function upFlags(args: {
  host: string;
  port: string;
  lan?: boolean;
  'lan-host'?: string;
  'lan-port': string;
  tunnel?: string;
  public?: boolean;
}): string[] {
  return [
    ...(args.tunnel ? ['--tunnel', args.tunnel] : []),
    ...(args.public ? ['--public'] : []),
    ...(args.host !== '127.0.0.1' ? ['--host', args.host] : []),
    ...(args.port !== '8787' ? ['--port', args.port] : []),
    ...(args.lan ? ['--lan'] : []),
    ...(args['lan-host'] ? ['--lan-host', args['lan-host']] : []),
    ...(args['lan-port'] !== '8443' ? ['--lan-port', args['lan-port']] : []),
  ];
}

/** The tmux sessions on the server `svc cc` uses, by name (none when it does not run). */
async function sessionNames(): Promise<string[]> {
  try {
    const socket = wrapperSocket(process.env, process.getuid?.() ?? 0);
    return (await createTmux({ socketPath: socket.path }).listSessions()).map((r) => r.name);
  } catch {
    return [];
  }
}

export default defineCommand({
  meta: {
    name: 'up',
    description: 'Everything on this computer: a local relay (embedded SQLite), an account, the listener, the web app',
  },
  args: {
    host: { type: 'string', default: '127.0.0.1', description: 'Address the relay listens on' },
    port: { type: 'string', default: '8787', description: 'Relay port (0 picks a free one)' },
    lan: {
      type: 'boolean',
      description: "Also serve HTTPS on this computer's LAN address (a self-signed certificate) for a phone to pair",
    },
    'lan-host': { type: 'string', description: 'The LAN address for --lan (default: the first non-internal IPv4)' },
    'lan-port': { type: 'string', default: '8443', description: 'The HTTPS port for --lan (0 picks a free one)' },
    tunnel: {
      type: 'string',
      description:
        'Reach the relay from anywhere through your own tunnel program: cloudflared (a quick tunnel) or tailscale (Serve; Funnel with --public)',
      valueHint: 'cloudflared|tailscale',
    },
    public: {
      type: 'boolean',
      description: 'With --tunnel tailscale: Funnel (the internet), not Serve (your tailnet)',
    },
    'install-service': {
      type: 'boolean',
      description:
        'Run this `svc up` (with these flags) at login instead, as the login service (systemd user unit / LaunchAgent)',
    },
  },
  async run({ args }) {
    const paths = svcPaths(homedir());
    ensurePrivateDir(paths.dir);
    if (args['install-service']) {
      const service = serviceFacts(homedir(), { node: process.execPath, svcBin: defaultEntry() });
      if (!service) return fail(new Error(`no login service on ${process.platform}: run svc up yourself`));
      try {
        const done = installService({ ...service, command: ['up', ...upFlags(args)] });
        for (const line of done.lines) process.stdout.write(`${line}\n`);
        if (!done.ok) process.exitCode = 1;
      } catch (err) {
        fail(err);
      }
      return;
    }
    const first = runningUp(paths.up);
    if (first) {
      process.stdout.write(
        `svc up is already running (pid ${first.pid}): web app ${first.appUrl}/, relay ${first.relayUrl}. Ctrl-C it in its terminal (or kill ${first.pid}) to stop it.\n`,
      );
      return;
    }
    // what it is doing while it starts, on a terminal; `fail` wipes it
    const shown = progress();
    let tunnelKindGiven: TunnelKind | null = null;
    try {
      if (args.tunnel !== undefined) tunnelKindGiven = tunnelKind(args.tunnel);
      if (args.public && tunnelKindGiven !== 'tailscale') throw new Error('--public goes with --tunnel tailscale');
      if (tunnelKindGiven && args.lan) throw new Error('--tunnel and --lan are two ways in: pick one');
    } catch (err) {
      return fail(err);
    }
    const port = Number.parseInt(args.port, 10);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      return fail(new Error(`--port ${args.port} is not a port`));

    let lan: { host: string; port: number; certificate: LanCertificate } | null = null;
    if (args.lan) {
      const lanPort = Number.parseInt(args['lan-port'], 10);
      if (!Number.isInteger(lanPort) || lanPort < 0 || lanPort > 65535)
        return fail(new Error(`--lan-port ${args['lan-port']} is not a port`));
      const lanHost = args['lan-host'] ?? lanAddress();
      if (!lanHost)
        return fail(new Error('no LAN address found on this computer: connect to a network or pass --lan-host'));
      if (!isIPv4(lanHost)) return fail(new Error(`--lan-host ${lanHost} is not an IPv4 address`));
      try {
        shown.step("making this computer's certificate");
        lan = {
          host: lanHost,
          port: lanPort,
          certificate: await ensureLanCertificate({ dir: paths.tlsDir, ip: lanHost }),
        };
      } catch (err) {
        return fail(err);
      }
    }

    shown.step("opening the relay's database");
    const store = openSqliteStore(paths.relayData);
    const relayLog = createLogger({ file: `${paths.dir}/relay.log`, stderr: false });
    let relay: Awaited<ReturnType<typeof startRelay>>;
    try {
      const tls = lan
        ? { host: lan.host, port: lan.port, key: lan.certificate.key, cert: lan.certificate.cert }
        : undefined;
      // through a tunnel every phone comes from the tunnel program on loopback: its X-Forwarded-For names them
      const trustProxy = tunnelKindGiven ? trustedProxies('127.0.0.1/32, ::1') : undefined;
      shown.step('starting the relay');
      relay = await startRelay({ host: args.host, port, store, log: relayLog, tls, trustProxy });
    } catch (err) {
      await store.close();
      const error = err as NodeJS.ErrnoException & { port?: number };
      if (error.code === 'EADDRINUSE') {
        const which = error.port === lan?.port && lan?.port !== port ? `--lan-port ${lan?.port}` : `port ${port}`;
        return fail(new Error(`${which} is in use: is another \`svc up\` running? Try --port`));
      }
      if (error.code === 'EADDRNOTAVAIL' && lan)
        return fail(new Error(`--lan-host ${lan.host} is not an address of this computer`));
      return fail(err);
    }
    let appUrl = relay.tlsUrl ?? relay.url;
    let tunnel: RunningTunnel | null = null;
    if (tunnelKindGiven) {
      shown.step(`waiting for ${tunnelKindGiven}'s address`);
      tunnel = startTunnel({
        kind: tunnelKindGiven,
        localUrl: relay.url,
        publicly: Boolean(args.public),
        died: (line) =>
          shown.say(
            `svc: ${line}; the relay keeps serving at ${relay.url}. Restart \`svc up --tunnel ${tunnelKindGiven}\` for a new address.`,
          ),
      });
      try {
        appUrl = await tunnel.url;
      } catch (err) {
        shown.say(`svc: ${(err as Error).message}; the relay serves at ${relay.url} on this computer only.`);
        tunnel = null;
      }
    }
    writeRunningUp(paths.up, { relayUrl: relay.url, appUrl });

    // Reuse this computer's key when it belongs to this relay; otherwise make the account now.
    const file = readConfigFile(paths.config);
    let apiKey = file.status === 'ok' && file.data.baseUrl === relay.url ? file.data.apiKey : undefined;
    if (apiKey && !(await authenticate(store, `Bearer ${apiKey}`)).ok) apiKey = undefined;
    const fresh = !apiKey;
    shown.step(fresh ? 'making an account and logging in' : 'logging in');
    if (!apiKey) apiKey = (await createAccount(store)).apiKey;
    const account = await login({ url: relay.url, key: apiKey });

    // One listener per computer, and it must use the login just written: a background one (started by an
    // earlier `svc cc`, perhaps for another relay or key) gives way to the one this process runs.
    const daemon: DaemonContext = {
      home: homedir(),
      paths,
      env: process.env,
      cliVersion: VERSION,
      entry: defaultEntry(),
    };
    const running = await findListener(daemon);
    if (running && running.host !== 'up') {
      const stopped = await stopListenerVia(daemon);
      for (const line of stopped.lines.filter((l) => !l.endsWith(' stopped'))) shown.say(line);
      shown.say(`svc: stopped the background listener (pid ${running.pid}); this \`svc up\` runs the listener now`);
    }

    let listener: RunningListener | null = null;
    try {
      // The tmux server `svc cc` in another terminal uses (core/sessions/launch.ts), whether or not it runs yet.
      const socket = wrapperSocket(process.env, process.getuid?.() ?? 0);
      // the listener logs to this terminal as it starts: those lines say what it does from here on
      shown.done();
      listener = await startListener({
        host: 'up',
        tmuxSocket: { path: socket.path, source: `${socket.source} (the one \`svc cc\` uses)` },
      });
    } catch (err) {
      if (!(err instanceof ListenerStartError)) throw err;
      shown.say(`svc: ${err.message}`);
    }

    // A pairing code only when no phone is paired yet (or on `svc pair`): later runs are a few lines.
    const auth = await authenticate(store, `Bearer ${apiKey}`);
    const phones = auth.ok ? (await store.listDevices(auth.key.accountId)).filter((d) => d.kind === 'app').length : 0;
    let pairing = '';
    if (fresh || phones === 0) {
      try {
        const link = await createPairingLink({ baseUrl: relay.url, apiKey, appUrl });
        pairing = await pairingText(link, undefined, undefined, Boolean(args['lan-host']));
      } catch (err) {
        pairing = `(no pairing link: ${(err as Error).message}; run \`svc pair\`)\n`;
      }
    } else pairing = `${phones} phone${phones === 1 ? '' : 's'} paired; \`svc pair\` pairs another.\n`;
    const sessions = await sessionNames();
    const lanLines = lan
      ? [
          `The phone opens ${appUrl}/: it must be on the same network as this computer. It warns about the`,
          'certificate once: it is a certificate svc made for this computer; check the fingerprint before you accept it:',
          `  SHA-256 ${lan.certificate.fingerprint}   (${paths.tlsDir}/cert.pem)`,
          '',
        ]
      : [];
    // Ctrl-C stops everything from here on: set before the banner says so (a signal right after it must not kill
    // svc up with its tunnel left running)
    let stopping = false;
    const stop = async () => {
      if (stopping) return;
      stopping = true;
      listener?.stop();
      await tunnel?.stop();
      if (listener) await listener.done;
      clearRunningUp(paths.up);
      await relay.close();
      await store.close();
      process.exit(0);
    };
    process.on('SIGINT', () => void stop());
    process.on('SIGTERM', () => void stop());
    if (!fresh) {
      process.stdout.write(
        [
          `svc is up: web app ${appUrl}/ · relay ${relay.url}`,
          `  computer ${account.name} (${account.hookId}) · listener ${listener ? 'running' : 'not started here (see above)'}`,
          `  ${sessions.length === 0 ? 'no tmux session yet: `svc cc` starts Claude Code in one' : `${sessions.length} session${sessions.length === 1 ? '' : 's'}: ${sessions.join(', ')}`}`,
          'Ctrl-C stops the relay and the listener.',
          '',
          ...lanLines,
          pairing,
        ].join('\n'),
      );
    } else {
      const curl = [
        `curl -sS -X POST ${relay.url}/pushes/send`,
        `-H "Authorization: Bearer $(node -p "require('${paths.config}').apiKey")"`,
        `-H 'Content-Type: application/json'`,
        `-d '{"type":"agent.command","agentSessionName":"my-session","body":"hello from svc"}'`,
      ].join(' \\\n    ');
      process.stdout.write(
        [
          '',
          'svc is up (new account created)',
          `  relay    ${relay.url}   (data: ${paths.relayData})`,
          `  web app  ${appUrl}/`,
          `  computer ${account.name} (${account.hookId})`,
          `  listener ${listener ? `running, log ${paths.log}` : 'not started here (see above)'}`,
          '',
          'Start an agent in another terminal: `svc cc` (Claude Code), `svc codex`, `svc gemini`, …',
          'Or send a first message to any program in tmux, e.g.',
          '  tmux new-session -d -s my-session cat',
          'then',
          `  ${curl}`,
          '  tmux capture-pane -p -t my-session',
          'Once a phone is paired, plain text like this curl is refused (e2ee_required): from the command line, send',
          '  svc agent send --session my-session "hello from svc"',
          '',
          'Ctrl-C stops the relay and the listener.',
          '',
          ...lanLines,
          pairing,
        ].join('\n'),
      );
    }

    if (listener) {
      // The relay serves the phone and every listener of this account: it never stops with this one.
      const code = await listener.done;
      if (!stopping) process.stderr.write(`${listenerEndedLine(code, relay.url, paths.log)}\n`);
    }
  },
});
