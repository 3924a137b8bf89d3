/**
 * `svc debug ui [--port N]`: serve a page on 127.0.0.1 that draws the running listener's actor tree, the selected
 * actor's chart with its current state, and the transitions as they happen (actors/debug/ui.ts). Runs until Ctrl-C.
 */
import { defineCommand } from 'citty';
import { startDebugUi } from '../../../actors/debug/ui.js';
import { fail } from '../../output.js';
import { svcDir } from './_shared.js';

export default defineCommand({
  meta: { name: 'ui', description: 'Serve a local page that shows the listener live (127.0.0.1, token in the URL)' },
  args: {
    port: { type: 'string', default: '0', description: 'Port on 127.0.0.1 (0: any free one)' },
  },
  async run({ args }) {
    const port = Number.parseInt(args.port, 10);
    if (!Number.isInteger(port) || port < 0 || port > 65535) return fail(`--port must be 0-65535, not ${args.port}`);
    let ui: Awaited<ReturnType<typeof startDebugUi>>;
    try {
      ui = await startDebugUi({ svcDir: svcDir(), port });
    } catch (err) {
      return fail(err);
    }
    process.stdout.write(`${ui.url}\n`);
    process.stderr.write('svc: serving the listener debug page on 127.0.0.1 only; Ctrl-C to stop\n');
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await ui.close();
  },
});
