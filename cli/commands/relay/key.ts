/** `svc relay key create`: a further API key for an account, with the scopes asked for. */
import { defineCommand } from 'citty';
import { createApiKey } from '../../../relay-server/accounts.js';
import { parseScopeList } from '../../../relay-server/auth.js';
import { fail } from '../../output.js';
import { dataArg, openRelayStore, storeArg } from './_shared.js';

const create = defineCommand({
  meta: { name: 'create', description: 'Create an API key for an account and print it (shown only this once)' },
  args: {
    data: dataArg,
    store: storeArg,
    account: { type: 'string', description: 'Account id (acc_…)', valueHint: 'ID' },
    scopes: {
      type: 'string',
      description: 'Comma-separated scopes: push:read (listeners), push:write (senders)',
      default: 'push:read',
    },
    json: { type: 'boolean', description: 'Print {"keyId","apiKey","scopes"} as JSON' },
  },
  async run({ args }) {
    try {
      if (!args.account) throw new Error('--account ID is required');
      const scopes = parseScopeList(args.scopes);
      const store = await openRelayStore(args);
      try {
        const key = await createApiKey(store, args.account, scopes);
        if (args.json) process.stdout.write(`${JSON.stringify(key)}\n`);
        else {
          process.stdout.write(
            `key ${key.keyId} for ${args.account} (${key.scopes.join(', ')}; shown only now, store it safely):\n` +
              `${key.apiKey}\n`,
          );
        }
      } finally {
        await store.close();
      }
    } catch (error) {
      fail(error);
    }
  },
});

export default defineCommand({
  meta: { name: 'key', description: 'Manage relay API keys' },
  subCommands: { create },
});
