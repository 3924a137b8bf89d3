import { defineCommand } from 'citty';
import { ListenerStartError, startListener } from '../../actors/listener.js';
import { fail } from '../output.js';

export default defineCommand({
  meta: { name: 'listener', description: 'Run the listener in the foreground: relay link, inventory, injection' },
  args: {
    'ws-url': { type: 'string', description: 'Override wsUrl for this run' },
    'keep-awake': { type: 'boolean', default: true, description: 'Keep the computer awake (macOS); --no-keep-awake' },
    'turn-history': { type: 'boolean', default: true, description: 'Upload sealed session history; --no-turn-history' },
    debug: { type: 'boolean', description: 'Log debug lines too' },
  },
  async run({ args }) {
    let listener: Awaited<ReturnType<typeof startListener>>;
    try {
      listener = await startListener({
        wsUrl: args['ws-url'],
        keepAwake: args['keep-awake'],
        turnHistory: args['turn-history'],
        debug: args.debug,
      });
    } catch (err) {
      if (err instanceof ListenerStartError) return fail(err);
      throw err;
    }
    const stop = () => listener.stop();
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    process.on('uncaughtException', (err) => listener.log.error(`uncaught: ${err.stack ?? err.message}`));
    process.on('unhandledRejection', (err) => listener.log.error(`unhandled rejection: ${String(err)}`));
    const code = await listener.done;
    listener.log.info(`listener stopped (exit ${code})`);
    process.exit(code);
  },
});
