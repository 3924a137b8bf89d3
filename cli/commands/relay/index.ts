/** `svc relay`: run a relay and manage its accounts and keys. */
import { defineCommand } from 'citty';

export default defineCommand({
  meta: { name: 'relay', description: 'Run a relay server and manage its accounts and API keys' },
  subCommands: {
    serve: () => import('./serve.js').then((m) => m.default),
    account: () => import('./account.js').then((m) => m.default),
    key: () => import('./key.js').then((m) => m.default),
  },
});
