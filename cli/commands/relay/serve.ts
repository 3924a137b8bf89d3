/** `svc relay serve`: run the relay until SIGINT or SIGTERM. */
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { defineCommand } from 'citty';
import { defaultEntry } from '../../../actors/daemon/daemon.js';
import { installRelayUnit, unreadableNotes } from '../../../actors/service/service.js';
import { parsePushHosts } from '../../../core/notify/endpoint.js';
import { type HttpsFlags, httpsFlags } from '../../../core/relay/certificate.js';
import { trustedProxies } from '../../../core/relay/clientAddress.js';
import { relayUnitFlags } from '../../../core/service/relayUnit.js';
import { defaultLog } from '../../../relay-server/log.js';
import { DEFAULT_PORT, DEFAULT_REPLAY_WINDOW_MS, type Relay, startRelay } from '../../../relay-server/server.js';
import { CertificateKeeper } from '../../../relay-server/tls/acme.js';
import {
  type LoadedCertificate,
  loadCertificateFiles,
  watchCertificateFiles,
} from '../../../relay-server/tls/files.js';
import { fail } from '../../output.js';
import { busArg, dataArg, defaultRelayDataDir, openRelayBus, openRelayStore, storeArg } from './_shared.js';

function parsePort(text: string, flag: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) throw new Error(`${flag} must be a number from 0 to 65535, not "${text}"`);
  return port;
}

function parseSeconds(text: string): number {
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error(`--replay-window must be seconds > 0, not "${text}"`);
  return Math.round(seconds * 1000);
}

/** Where phones reach the relay: its domain or the certificate's first name on the HTTPS port, else its URL. */
function publicUrl(relay: Relay, https: HttpsFlags, files: LoadedCertificate | null): string {
  if (!https) return relay.url;
  const name = https.kind === 'acme' ? https.domain : files?.names.find((n) => !n.startsWith('*.'));
  if (!name) return relay.tlsUrl ?? relay.url;
  return `https://${name}${relay.tlsPort === 443 ? '' : `:${relay.tlsPort}`}`;
}

/** `--install-service`: the system unit written (root only), then systemd asked to start it now and at boot. */
function installRelayService(flags: Readonly<Record<string, unknown>>): void {
  let args = flags;
  try {
    trustedProxies(args['trust-proxy'] as string | undefined); // a bad flag is said now, not at boot
    const https = httpsFlags(args);
    if (https?.kind === 'files') loadCertificateFiles(https); // a certificate that cannot serve is said now too
    // the unit runs from / : the certificate's files by their absolute paths
    for (const name of ['tls-cert', 'tls-key'] as const)
      if (typeof args[name] === 'string') args = { ...args, [name]: resolve(args[name] as string) };
    if (process.getuid?.() !== 0)
      throw new Error('a system service is installed as root: run `sudo svc relay serve --install-service …`');
    const { flags, notes } = relayUnitFlags(args);
    const user = process.env.SUDO_USER || userInfo().username;
    if (https?.kind === 'files') notes.push(...unreadableNotes(https, user));
    const facts = { node: process.execPath, svcBin: defaultEntry(), user, flags };
    const done = installRelayUnit(facts, notes, process.env.SVC_SYSTEM_UNIT_DIR || undefined);
    for (const line of done.lines) process.stdout.write(`${line}\n`);
    if (!done.ok) process.exitCode = 1;
  } catch (err) {
    fail(err);
  }
}

export default defineCommand({
  meta: { name: 'serve', description: 'Run the relay: HTTP API and WebSocket on one port' },
  args: {
    host: {
      type: 'string',
      description: 'Address to listen on (default 127.0.0.1; every address with --domain or --tls-cert)',
      valueHint: 'ADDRESS',
    },
    port: {
      type: 'string',
      description: `HTTP port, 0 picks a free one (default ${DEFAULT_PORT}; 80 with --domain or --tls-cert, where it answers ACME and redirects to HTTPS)`,
      valueHint: 'PORT',
    },
    domain: {
      type: 'string',
      description:
        "Serve HTTPS for this domain with a certificate got and renewed over ACME (Let's Encrypt by default); its DNS must point here and port 80 reach the relay",
      valueHint: 'NAME',
    },
    'acme-directory': {
      type: 'string',
      description: "The ACME server's directory URL (default Let's Encrypt's production directory)",
      valueHint: 'URL',
    },
    'acme-email': {
      type: 'string',
      description: "The ACME account's contact address (the CA's notices about it)",
      valueHint: 'EMAIL',
    },
    'tls-cert': {
      type: 'string',
      description: 'Serve HTTPS with this certificate (PEM, full chain); read again when it or the key changes',
      valueHint: 'FILE',
    },
    'tls-key': { type: 'string', description: "The --tls-cert certificate's private key (PEM)", valueHint: 'FILE' },
    'https-port': {
      type: 'string',
      description: 'HTTPS port with --domain or --tls-cert (default 443)',
      valueHint: 'PORT',
    },
    data: dataArg,
    store: storeArg,
    bus: busArg,
    'push-hosts': {
      type: 'string',
      description:
        "Web Push only to these hosts (comma-separated; `*.example.org`; `known` for the browsers' push services). A host named exactly may be on a private address",
      valueHint: 'HOSTS',
    },
    'trust-proxy': {
      type: 'string',
      description:
        'Reverse proxies (CIDRs or addresses, comma-separated) whose X-Forwarded-For/Forwarded name the client; other requests’ headers are ignored',
      valueHint: 'CIDRS',
    },
    'install-service': {
      type: 'boolean',
      description:
        'Install this relay (with these flags) as a system service started at boot, allowed to bind ports below 1024; as root',
    },
    'replay-window': {
      type: 'string',
      description: 'Seconds a missed push may still be replayed to a listener',
      default: String(DEFAULT_REPLAY_WINDOW_MS / 1000),
      valueHint: 'SECONDS',
    },
  },
  async run({ args }) {
    if (args['install-service']) return installRelayService(args);
    try {
      // flags first: a bad one is said before any store or bus is opened
      const trustProxy = trustedProxies(args['trust-proxy']);
      const https = httpsFlags(args);
      const files = https?.kind === 'files' ? loadCertificateFiles(https) : null;
      const host = args.host ?? (https ? '::' : '127.0.0.1');
      const port = parsePort(args.port ?? (https ? '80' : String(DEFAULT_PORT)), '--port');
      const httpsPort = https ? parsePort(args['https-port'] ?? '443', '--https-port') : 0;
      const replayWindowMs = parseSeconds(args['replay-window']);
      const pushHosts = parsePushHosts(args['push-hosts']);
      const dataDir = args.data ?? defaultRelayDataDir();
      const log = defaultLog();
      const store =
        args.store || process.env.SVC_RELAY_STORE
          ? await openRelayStore(args, (err) =>
              process.stderr.write(`relay: Postgres connection lost: ${err.message}\n`),
            )
          : undefined;
      const bus = await openRelayBus(args, (err) =>
        process.stderr.write(`relay: Redis: ${err instanceof Error ? err.message : String(err)}\n`),
      );
      const keeper =
        https?.kind === 'acme'
          ? new CertificateKeeper({
              domain: https.domain,
              directoryUrl: https.directoryUrl,
              ...(https.email ? { email: https.email } : {}),
              dir: join(dataDir, 'acme'),
              install: (key, cert) => relay.setCertificate(key, cert),
              log,
            })
          : null;
      const relay = await startRelay({
        ...(store ? { store } : {}),
        ...(bus ? { bus } : {}),
        host,
        port,
        dataDir,
        log,
        replayWindowMs,
        webPush: { pushHosts },
        trustProxy,
        ...(https ? { tls: { host, port: httpsPort, ...(files ? { key: files.key, cert: files.cert } : {}) } } : {}),
        ...(https
          ? {
              httpsOnly: {
                ...(https.kind === 'acme' ? { domain: https.domain } : {}),
                challenge: (token: string) => keeper?.challenge(token),
              },
            }
          : {}),
      });
      const unwatch =
        files && https?.kind === 'files' ? watchCertificateFiles(https, files, relay.setCertificate, log) : null;
      const stop = () => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        keeper?.stop();
        unwatch?.();
        relay
          .close()
          .then(() => Promise.all([store?.close(), bus?.close()]))
          // an ACME attempt in flight holds timers of its library: it is not waited for
          .then(() => keeper && process.exit())
          .catch(fail);
      };
      // Handlers first: whoever reads the ready line may signal at once.
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      if (keeper && https?.kind === 'acme') {
        process.stdout.write(
          `relay: HTTP on ${relay.url} answers ACME challenges and redirects to HTTPS; getting a certificate for ${https.domain}…\n`,
        );
        await keeper.start();
        await keeper.ready(); // after a failure it is tried again with backoff, said in the log
      }
      process.stdout.write(`relay listening on ${publicUrl(relay, https, files)}\n`);
    } catch (error) {
      fail(error);
    }
  },
});
