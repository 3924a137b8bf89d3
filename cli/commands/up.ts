import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { readConfigFile } from '../../actors/configFile.js';
import { ensurePrivateDir } from '../../actors/files.js';
import { ListenerStartError, type RunningListener, startListener } from '../../actors/listener.js';
import { createLogger } from '../../actors/logger.js';
import { svcPaths } from '../../core/paths.js';
import { createAccount } from '../../relay-server/accounts.js';
import { authenticate } from '../../relay-server/auth.js';
import { startRelay } from '../../relay-server/server.js';
import { openSqliteStore } from '../../relay-server/sqliteStore.js';
import { fail } from '../output.js';
import { login } from './login.js';
import { createPairingLink, pairingText } from './pair.js';

export default defineCommand({
  meta: {
    name: 'up',
    description: 'Everything on this computer: a local relay (embedded SQLite), an account, the listener, the web app',
  },
  args: {
    host: { type: 'string', default: '127.0.0.1', description: 'Address the relay listens on' },
    port: { type: 'string', default: '8787', description: 'Relay port (0 picks a free one)' },
  },
  async run({ args }) {
    const paths = svcPaths(homedir());
    ensurePrivateDir(paths.dir);
    const port = Number.parseInt(args.port, 10);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      return fail(new Error(`--port ${args.port} is not a port`));

    const store = openSqliteStore(paths.relayData);
    const relayLog = createLogger({ file: `${paths.dir}/relay.log`, stderr: false });
    let relay: Awaited<ReturnType<typeof startRelay>>;
    try {
      relay = await startRelay({ host: args.host, port, store, log: relayLog });
    } catch (err) {
      await store.close();
      const inUse = (err as NodeJS.ErrnoException).code === 'EADDRINUSE';
      return fail(inUse ? new Error(`port ${port} is in use: is another \`svc up\` running? Try --port`) : err);
    }

    // Reuse this computer's key when it belongs to this relay; otherwise make the account now.
    const file = readConfigFile(paths.config);
    let apiKey = file.status === 'ok' && file.data.baseUrl === relay.url ? file.data.apiKey : undefined;
    if (apiKey && !(await authenticate(store, `Bearer ${apiKey}`)).ok) apiKey = undefined;
    const fresh = !apiKey;
    if (!apiKey) apiKey = (await createAccount(store)).apiKey;
    const account = await login({ url: relay.url, key: apiKey });

    let listener: RunningListener | null = null;
    try {
      listener = await startListener({});
    } catch (err) {
      if (!(err instanceof ListenerStartError)) throw err;
      process.stderr.write(`svc: ${err.message}\n`);
    }

    const curl = [
      `curl -sS -X POST ${relay.url}/pushes/send`,
      `-H "Authorization: Bearer $(node -p "require('${paths.config}').apiKey")"`,
      `-H 'Content-Type: application/json'`,
      `-d '{"type":"agent.command","agentSessionName":"my-session","body":"hello from svc"}'`,
    ].join(' \\\n    ');
    let pairing = '';
    try {
      pairing = await pairingText(await createPairingLink({ baseUrl: relay.url, apiKey }));
    } catch (err) {
      pairing = `(no pairing link: ${(err as Error).message}; run \`svc pair\`)\n`;
    }
    process.stdout.write(
      [
        '',
        `svc is up${fresh ? ' (new account created)' : ''}`,
        `  relay    ${relay.url}   (data: ${paths.relayData})`,
        `  web app  ${relay.url}/`,
        `  computer ${account.name} (${account.hookId})`,
        `  listener ${listener ? `running, log ${paths.log}` : 'not started here (see above)'}`,
        '',
        'Send a first message: start any program in tmux, e.g.',
        '  tmux new-session -d -s my-session cat',
        'then',
        `  ${curl}`,
        '  tmux capture-pane -p -t my-session',
        '',
        'Ctrl-C stops the relay and the listener.',
        '',
        pairing,
      ].join('\n'),
    );

    let stopping = false;
    const stop = async () => {
      if (stopping) return;
      stopping = true;
      listener?.stop();
      if (listener) await listener.done;
      await relay.close();
      await store.close();
      process.exit(0);
    };
    process.on('SIGINT', () => void stop());
    process.on('SIGTERM', () => void stop());
    if (listener) {
      const code = await listener.done;
      if (!stopping) {
        process.stderr.write(`svc: the listener stopped (exit ${code}); see ${paths.log}\n`);
        await relay.close();
        await store.close();
        process.exit(code);
      }
    }
  },
});
