/** `svc relay account create`: a new account and its first API key (both scopes), shown once. */
import { defineCommand } from 'citty';
import { createAccount } from '../../../relay-server/accounts.js';
import { fail } from '../../output.js';
import { dataArg, openRelayStore, storeArg } from './_shared.js';

const create = defineCommand({
  meta: { name: 'create', description: 'Create an account and print its API key (shown only this once)' },
  args: {
    data: dataArg,
    store: storeArg,
    json: { type: 'boolean', description: 'Print {"accountId","apiKey"} as JSON' },
  },
  async run({ args }) {
    try {
      const store = await openRelayStore(args);
      try {
        const account = await createAccount(store);
        if (args.json) {
          process.stdout.write(`${JSON.stringify({ accountId: account.accountId, apiKey: account.apiKey })}\n`);
        } else {
          process.stdout.write(
            `account ${account.accountId}\n` +
              `API key (${account.scopes.join(', ')}; shown only now, store it safely):\n${account.apiKey}\n`,
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
  meta: { name: 'account', description: 'Manage relay accounts' },
  subCommands: { create },
});
