/** `svc relay serve`: run the relay until SIGINT or SIGTERM. */
import { userInfo } from 'node:os';
import { defineCommand } from 'citty';
import { defaultEntry } from '../../../actors/daemon/daemon.js';
import { installRelayUnit } from '../../../actors/service/service.js';
import { parsePushHosts } from '../../../core/notify/endpoint.js';
import { trustedProxies } from '../../../core/relay/clientAddress.js';
import { relayUnitFlags } from '../../../core/service/relayUnit.js';
import { DEFAULT_PORT, DEFAULT_REPLAY_WINDOW_MS, startRelay } from '../../../relay-server/server.js';
import { fail } from '../../output.js';
import { busArg, dataArg, defaultRelayDataDir, openRelayBus, openRelayStore, storeArg } from './_shared.js';

function parsePort(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) throw new Error(`--port must be a number from 0 to 65535, not "${text}"`);
  return port;
}

function parseSeconds(text: string): number {
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new Error(`--replay-window must be seconds > 0, not "${text}"`);
  return Math.round(seconds * 1000);
}

/** `--install-service`: the system unit written (root only), then systemd asked to start it now and at boot. */
function installRelayService(args: Readonly<Record<string, unknown>>): void {
  try {
    trustedProxies(args['trust-proxy'] as string | undefined); // a bad flag is said now, not at boot
    if (process.getuid?.() !== 0)
      throw new Error('a system service is installed as root: run `sudo svc relay serve --install-service …`');
    const { flags, notes } = relayUnitFlags(args);
    const user = process.env.SUDO_USER || userInfo().username;
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
    host: { type: 'string', description: 'Address to listen on', default: '127.0.0.1' },
    port: { type: 'string', description: `Port (0 picks a free one)`, default: String(DEFAULT_PORT) },
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
      const store =
        args.store || process.env.SVC_RELAY_STORE
          ? await openRelayStore(args, (err) =>
              process.stderr.write(`relay: Postgres connection lost: ${err.message}\n`),
            )
          : undefined;
      const bus = await openRelayBus(args, (err) =>
        process.stderr.write(`relay: Redis: ${err instanceof Error ? err.message : String(err)}\n`),
      );
      const relay = await startRelay({
        ...(store ? { store } : {}),
        ...(bus ? { bus } : {}),
        host: args.host,
        port: parsePort(args.port),
        dataDir: args.data ?? defaultRelayDataDir(),
        replayWindowMs: parseSeconds(args['replay-window']),
        webPush: { pushHosts: parsePushHosts(args['push-hosts']) },
        trustProxy,
      });
      const stop = () => {
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        relay
          .close()
          .then(() => Promise.all([store?.close(), bus?.close()]))
          .catch(fail);
      };
      // Handlers first: whoever reads the ready line may signal at once.
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      process.stdout.write(`relay listening on ${relay.url}\n`);
    } catch (error) {
      fail(error);
    }
  },
});
