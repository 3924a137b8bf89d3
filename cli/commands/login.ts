import { homedir, hostname } from 'node:os';
import { defineCommand } from 'citty';
import { readConfigFile, writeConfigFile } from '../../actors/daemon/configFile.js';
import { ensureDeviceIdentity } from '../../actors/devices/deviceKey.js';
import { relayJson } from '../../actors/relay/http.js';
import { wsUrlFor } from '../../core/daemon/config.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { ComputerRegisterResponse } from '../../core/protocol/index.js';
import { fail } from '../output.js';

/**
 * Register this computer with a relay and write ~/.svc/config.json. The computer's device key pair is made on the
 * first login (~/.svc/device-key.json, 0600) and its public key registered, so apps can seal for this computer.
 */
export async function login(opts: { url: string; key: string; name?: string; wsUrl?: string; home?: string }) {
  const baseUrl = new URL(opts.url).toString().replace(/\/$/, '');
  const name = opts.name ?? hostname();
  const paths = svcPaths(opts.home ?? homedir());
  // an existing config file's proxy keys apply to the login's own calls (spec 2.5)
  readConfigFile(paths.config);
  const device = await ensureDeviceIdentity({
    path: paths.deviceKey,
    baseUrl,
    apiKey: opts.key,
    name,
    kind: 'computer',
  });
  const registered = await relayJson(ComputerRegisterResponse, baseUrl, opts.key, 'POST', '/computers', {
    name,
    platform: process.platform,
    deviceId: device.deviceId,
  });
  const wsUrl = opts.wsUrl ?? wsUrlFor(baseUrl);
  writeConfigFile(paths.dir, paths.config, { apiKey: opts.key, hookId: registered.hookId, baseUrl, wsUrl });
  return {
    hookId: registered.hookId,
    name: registered.name,
    deviceId: device.deviceId,
    baseUrl,
    wsUrl,
    configPath: paths.config,
  };
}

export default defineCommand({
  meta: { name: 'login', description: 'Register this computer with a relay and save the key in ~/.svc/config.json' },
  args: {
    url: { type: 'string', description: 'Relay base URL, e.g. https://relay.example.com', required: true },
    key: { type: 'string', description: 'API key (scopes push:read and push:write)', required: true },
    name: { type: 'string', description: 'Name of this computer in the app (default: hostname)' },
    'ws-url': { type: 'string', description: 'WebSocket address, when not <url>/ws' },
    json: { type: 'boolean', description: 'Print the result as JSON' },
  },
  async run({ args }) {
    try {
      const result = await login({ url: args.url, key: args.key, name: args.name, wsUrl: args['ws-url'] });
      if (args.json) process.stdout.write(`${JSON.stringify(result)}\n`);
      else
        process.stdout.write(
          `logged in as "${result.name}" (${result.hookId}) at ${result.baseUrl}\nconfig: ${result.configPath}\n`,
        );
    } catch (err) {
      fail(err);
    }
  },
});
