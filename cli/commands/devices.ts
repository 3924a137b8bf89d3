/**
 * `svc devices`: the account's devices as the relay lists them, with what this computer makes of each (pinned,
 * verified, key changed) and the safety code between this computer's key and the device's, which the phone shows
 * too. `svc devices verify <id>` accepts the listed key after a person compared the codes; `svc devices forget
 * <id>` drops the pin here and the device on the relay. The running listener reads devices.json again at every
 * sealed contact and within half a second of a change (actors/devices/pins.ts).
 */

import { homedir } from 'node:os';
import { createInterface } from 'node:readline/promises';
import { defineCommand } from 'citty';
import { loggedIn } from '../../actors/daemon/configFile.js';
import { loadDeviceIdentity } from '../../actors/devices/deviceKey.js';
import { readPins, updatePins } from '../../actors/devices/pins.js';
import { RelayError, relayJson } from '../../actors/relay/http.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { type DevicePin, type PinOp, type PinsFile, trustOf } from '../../core/devices/devices.js';
import {
  ComputerListResponse,
  DeviceDeleteResponse,
  type DeviceInfo,
  DeviceListResponse,
} from '../../core/protocol/index.js';
import { fingerprint, safetyCode } from '../../core/seal/keys.js';
import type { ComputerEntry } from '../../core/sessions/agentSend.js';
import { fail } from '../output.js';

const jsonArg = { type: 'boolean', description: 'Print JSON for scripts' } as const;

async function account(home = homedir()) {
  const paths = svcPaths(home);
  const { apiKey, baseUrl } = loggedIn(paths.config);
  const me = await loadDeviceIdentity(paths.deviceKey, baseUrl);
  const list = () => relayJson(DeviceListResponse, baseUrl, apiKey, 'GET', '/devices').then((r) => r.devices);
  const computers = () =>
    relayJson(ComputerListResponse, baseUrl, apiKey, 'GET', '/computers').then((r) => r.computers);
  return { paths, apiKey, baseUrl, me, list, computers };
}

export interface DeviceRow {
  deviceId: string;
  name: string;
  kind: string;
  fingerprint: string | null;
  /** `this computer`, `not pinned`, `pinned`, `pinned, verified`, `KEY CHANGED`, `pinned, not on the relay`. */
  state: string;
  /** Between this computer's key and the key the relay lists (what the device should show too). */
  safetyCode: string | null;
  pinnedFingerprint: string | null;
}

/** What this computer makes of a device: its own, unknown, pinned, verified, or a key that changed. */
export function describeState(listedKey: string | null, pin: DevicePin | undefined, mine: boolean): string {
  if (mine) return 'this computer';
  if (!pin) return 'not pinned';
  if (listedKey === null) return 'pinned, not on the relay';
  if (trustOf(pin) === 'unverified' || pin.publicKey !== listedKey) return 'KEY CHANGED: refused until verified';
  return pin.verified ? 'pinned, verified' : 'pinned';
}

/**
 * Computers `svc agent send` pinned to another device than the one the relay names for them now, as
 * [device named now, hookId] pairs.
 */
function movedComputers(computers: readonly ComputerEntry[], cliPins: PinsFile): [string, string][] {
  return computers.flatMap((c) => {
    const pinned = cliPins.computers?.[c.hookId]?.deviceId;
    return c.deviceId && pinned && pinned !== c.deviceId ? [[c.deviceId, c.hookId] as [string, string]] : [];
  });
}

export async function deviceRows(home?: string): Promise<DeviceRow[]> {
  const { paths, me, list, computers } = await account(home);
  const [devices, listedComputers] = await Promise.all([list(), computers()]);
  const pins = readPins(paths.devicePins).devices;
  const cliPins = readPins(paths.cliPins);
  const moved = new Map(
    movedComputers(listedComputers, cliPins).map(([deviceId, hookId]) => {
      const name = listedComputers.find((c) => c.hookId === hookId)?.name ?? hookId;
      return [deviceId, `${name} was ${cliPins.computers?.[hookId]?.deviceId}`];
    }),
  );
  const rows: DeviceRow[] = [];
  for (const d of devices) {
    const pin = pins[d.deviceId];
    const move = moved.get(d.deviceId);
    rows.push({
      deviceId: d.deviceId,
      name: d.name,
      kind: d.kind,
      fingerprint: await fingerprint(d.publicKey).catch(() => null),
      state: move
        ? `COMPUTER MOVED (${move}): refused until verified`
        : describeState(d.publicKey, pin, d.deviceId === me?.deviceId),
      safetyCode:
        me && d.deviceId !== me.deviceId ? await safetyCode(me.publicKey, d.publicKey).catch(() => null) : null,
      pinnedFingerprint: pin?.fingerprint ?? null,
    });
  }
  for (const pin of Object.values(pins)) {
    if (devices.some((d) => d.deviceId === pin.deviceId)) continue;
    rows.push({
      deviceId: pin.deviceId,
      name: '?',
      kind: '?',
      fingerprint: pin.fingerprint,
      state: describeState(null, pin, false),
      safetyCode: null,
      pinnedFingerprint: pin.fingerprint,
    });
  }
  return rows;
}

const verify = defineCommand({
  meta: { name: 'verify', description: 'Accept a device’s key after comparing its safety code with this one' },
  args: {
    id: { type: 'positional', description: 'Device id (d_…)', required: true },
    yes: { type: 'boolean', description: 'Do not ask: the codes were compared already' },
  },
  async run({ args }) {
    try {
      const { paths, me, list, computers } = await account();
      if (!me) throw new Error('this computer has no device key: run `svc login` again');
      const device = (await list()).find((d: DeviceInfo) => d.deviceId === args.id);
      if (!device) throw new Error(`no device ${args.id} on the relay (see \`svc devices\`)`);
      if (device.deviceId === me.deviceId) throw new Error(`${args.id} is this computer`);
      const fp = await fingerprint(device.publicKey);
      const code = await safetyCode(me.publicKey, device.publicKey);
      const pin = readPins(paths.devicePins).devices[device.deviceId];
      process.stdout.write(
        [
          `device ${device.deviceId} "${device.name}" (${device.kind})`,
          `  key          ${fp}${pin && pin.publicKey !== device.publicKey ? `   (was ${pin.fingerprint}: a NEW key)` : ''}`,
          `  safety code  ${code}`,
          'The device must show the same safety code for this computer.',
          '',
        ].join('\n'),
      );
      if (!args.yes) {
        if (!process.stdin.isTTY) throw new Error('compare the codes, then run again with --yes');
        const rl = createInterface({ input: process.stdin, output: process.stdout });
        const answer = await rl.question('Same code on the device? [y/N] ');
        rl.close();
        if (!/^y(es)?$/i.test(answer.trim())) {
          process.stdout.write('not verified\n');
          process.exitCode = 1;
          return;
        }
      }
      const op = { op: 'verify' as const, deviceId: device.deviceId, publicKey: device.publicKey, fingerprint: fp };
      updatePins(paths.devicePins, [{ ...op, at: Date.now() }]);
      // `svc agent send` pins computers in its own file: a verified computer key is good there too, and a computer
      // pinned to another device that the relay now names this one for is this device from now on.
      const cli = readPins(paths.cliPins);
      const cliOps: PinOp[] = [];
      for (const [deviceId, hookId] of movedComputers(await computers(), cli)) {
        if (deviceId === device.deviceId) cliOps.push({ op: 'verifyComputer', hookId, deviceId, at: Date.now() });
      }
      if (cliOps.length > 0 || cli.devices[device.deviceId]) cliOps.unshift({ ...op, at: Date.now() });
      if (cliOps.length > 0) updatePins(paths.cliPins, cliOps);
      process.stdout.write(`device ${device.deviceId} verified; its key is pinned\n`);
    } catch (err) {
      fail(err);
    }
  },
});

const forget = defineCommand({
  meta: { name: 'forget', description: 'Drop a device: its pin here and its entry on the relay' },
  args: { id: { type: 'positional', description: 'Device id (d_…)', required: true } },
  async run({ args }) {
    try {
      const { paths, me, apiKey, baseUrl } = await account();
      if (me && args.id === me.deviceId) throw new Error(`${args.id} is this computer; it cannot forget itself`);
      updatePins(paths.devicePins, [{ op: 'forget', deviceId: args.id }]);
      updatePins(paths.cliPins, [{ op: 'forget', deviceId: args.id }]);
      let onRelay = true;
      try {
        await relayJson(DeviceDeleteResponse, baseUrl, apiKey, 'DELETE', `/devices/${encodeURIComponent(args.id)}`);
      } catch (err) {
        if (!(err instanceof RelayError && err.status === 404)) throw err;
        onRelay = false;
      }
      process.stdout.write(
        `device ${args.id} forgotten${onRelay ? ' here and on the relay' : ' (it was not on the relay)'}\n`,
      );
    } catch (err) {
      fail(err);
    }
  },
});

export default defineCommand({
  meta: { name: 'devices', description: 'The account’s devices: pinned, verified, safety codes' },
  args: { json: jsonArg },
  subCommands: { verify, forget },
  async run({ args }) {
    // citty runs a parent's `run` after its subcommand's: `svc devices verify x` must not list as well.
    if (args._[0] === 'verify' || args._[0] === 'forget') return;
    try {
      const rows = await deviceRows();
      if (args.json) {
        process.stdout.write(`${JSON.stringify({ devices: rows })}\n`);
        return;
      }
      if (rows.length === 0) process.stdout.write('no devices on the relay\n');
      for (const r of rows) {
        const parts = [
          r.deviceId.padEnd(20),
          r.kind.padEnd(9),
          r.name.slice(0, 28).padEnd(28),
          r.state.padEnd(20),
          `key ${r.fingerprint ?? '?'}`,
        ];
        if (r.safetyCode) parts.push(`  safety code ${r.safetyCode}`);
        process.stdout.write(`${parts.join(' ')}\n`);
      }
      if (rows.some((r) => r.state.startsWith('KEY CHANGED'))) {
        process.stderr.write(
          'svc: a device key changed on the relay: compare its safety code on the device, then `svc devices verify <id>`\n',
        );
      }
      if (rows.some((r) => r.state.startsWith('COMPUTER MOVED'))) {
        process.stderr.write(
          'svc: the relay names another device for a computer: compare its safety code on that computer, then ' +
            '`svc devices verify <id>`\n',
        );
      }
    } catch (err) {
      fail(err);
    }
  },
});
