import { homedir } from 'node:os';
import { defineCommand } from 'citty';
import { type DaemonContext, defaultEntry } from '../../actors/daemon/daemon.js';
import { listenerStatus, restartListenerVia, stopListenerVia } from '../../actors/daemon/listenerControl.js';
import { isClosedPipe, watchStdio } from '../../actors/daemon/logger.js';
import { ListenerStartError, startListener } from '../../actors/listener.js';
import {
  installService,
  isServiceInstalled,
  serviceAction,
  serviceFacts,
  serviceState,
  uninstallService,
} from '../../actors/service/service.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { VERSION } from '../../core/daemon/version.js';
import { fail } from '../output.js';

function daemonContext(): DaemonContext {
  const home = homedir();
  return {
    home,
    paths: svcPaths(home),
    env: process.env,
    cliVersion: VERSION,
    entry: defaultEntry(),
    socketPath: process.env.SVC_TMUX_SOCKET,
  };
}

/** How long a listener whose output pipe closed may take to stop before it exits anyway. */
const STOP_GRACE_MS = 2_000;

export default defineCommand({
  meta: { name: 'listener', description: 'Run the listener in the foreground: relay link, inventory, injection' },
  args: {
    'ws-url': { type: 'string', description: 'Override wsUrl for this run' },
    'turn-history': {
      type: 'boolean',
      description: 'Upload sealed session history for the phone’s timeline (default; --no-turn-history)',
    },
    'keep-awake': {
      type: 'boolean',
      description: 'Keep the computer from idle-sleeping while the listener runs (default; --no-keep-awake)',
    },
    'install-service': {
      type: 'boolean',
      description: 'Start the listener at login (systemd user unit / LaunchAgent)',
    },
    'uninstall-service': { type: 'boolean', description: 'Remove the login service' },
    'service-status': { type: 'boolean', description: 'Is the login service installed and running?' },
    debug: { type: 'boolean', description: 'Log debug lines too' },
    status: { type: 'boolean', description: 'Is a listener running? Its pid, version, relay link and sessions' },
    json: { type: 'boolean', description: 'With --status: one JSON object' },
    stop: { type: 'boolean', description: 'Stop the background listener (through its control socket, else SIGTERM)' },
    restart: { type: 'boolean', description: 'Restart the background listener on this CLI' },
  },
  async run({ args }) {
    const service = serviceFacts(homedir(), { node: process.execPath, svcBin: defaultEntry() });
    if (args['install-service'] || args['uninstall-service'] || args['service-status']) {
      if (!service) return fail(new Error(`no login service on ${process.platform}: run svc listener yourself`));
      if (args['service-status']) {
        const state = serviceState(service);
        process.stdout.write(`login service: ${state}\n`);
        if (!state.startsWith('installed')) process.exitCode = 1;
        return;
      }
      try {
        const done = args['install-service'] ? installService(service) : uninstallService(service);
        for (const line of done.lines) process.stdout.write(`${line}\n`);
        if (!done.ok) process.exitCode = 1;
      } catch (err) {
        fail(err);
      }
      return;
    }
    if ((args.stop || args.restart) && service && isServiceInstalled(service)) {
      const done = serviceAction(service, args.stop ? 'stop' : 'restart');
      for (const line of done.lines) process.stdout.write(`${line}\n`);
      if (!done.ok) process.exitCode = 1;
      return;
    }
    if (args.status) {
      const found = await listenerStatus(daemonContext());
      if (args.json) process.stdout.write(`${JSON.stringify({ ...found, lines: undefined })}\n`);
      else for (const line of found.lines) (found.running ? process.stdout : process.stderr).write(`${line}\n`);
      if (!found.running) process.exitCode = 1;
      return;
    }
    if (args.stop) {
      const { lines } = await stopListenerVia(daemonContext());
      for (const line of lines) process.stdout.write(`${line}\n`);
      return;
    }
    if (args.restart) {
      const { status, lines } = await restartListenerVia(daemonContext());
      for (const line of lines) process.stderr.write(`${line}\n`);
      if (status === 'not-logged-in' || status === 'failed') process.exitCode = 1;
      return;
    }
    let listener: Awaited<ReturnType<typeof startListener>>;
    try {
      listener = await startListener({
        wsUrl: args['ws-url'],
        debug: args.debug,
        ...(args['keep-awake'] === false ? { keepAwake: false } : {}),
        ...(args['turn-history'] === false ? { turnHistory: false } : {}),
        // A daemon started by the wrapper has its stderr appended to listener.log already: log each line once.
        logToStderr: process.env.SVC_LISTENER_BACKGROUND !== '1',
      });
    } catch (err) {
      if (err instanceof ListenerStartError) return fail(err);
      throw err;
    }
    const stop = () => listener.stop();
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    // `svc listener 2>&1 | head`: once the reader is gone, stop as a program on a closed pipe does, but cleanly
    // (the ledger and the relay link close normally); the log file keeps the reason.
    watchStdio((what) => {
      listener.log.warn(`${what}: stopping`);
      stop();
      setTimeout(() => process.exit(0), STOP_GRACE_MS).unref();
    });
    // Never rethrows and never writes to a stream that failed: a handler that fails again would call itself forever.
    const report = (what: string) => {
      try {
        listener.log.error(what);
      } catch {
        // the log file cannot be written either: nothing left to tell
      }
    };
    process.on('uncaughtException', (err) => {
      if (!isClosedPipe(err)) report(`uncaught: ${err.stack ?? err.message}`);
    });
    process.on('unhandledRejection', (err) => report(`unhandled rejection: ${String(err)}`));
    const code = await listener.done;
    listener.log.info(`listener stopped (exit ${code})`);
    process.exit(code);
  },
});
