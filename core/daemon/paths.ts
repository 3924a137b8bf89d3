/** Where svc keeps its files (spec 2.6), computed from a home directory. */
import { join } from 'node:path';

export interface SvcPaths {
  dir: string;
  config: string;
  pid: string;
  version: string;
  log: string;
  relayData: string;
  markers: string;
  ledger(hookId: string): string;
  stateDir: string;
  shellAudit: string;
  /** The schedules (core/schedules/book.ts), 0600. */
  schedules: string;
  /** This computer's device key pair (JWK, 0600) and its device id on the relay (docs/security.md). */
  deviceKey: string;
  /** The devices this computer pinned: their keys, verified flags and last sequence stamps. */
  devicePins: string;
  /** The secrets of the pairing links this computer made (actors/devices/pairings.ts). */
  pairings: string;
  /** `svc agent send`'s own device key pair, and the computer keys it pinned. */
  cliDeviceKey: string;
  cliPins: string;
  /** `svc up --lan`'s self-signed certificate for this computer's LAN address: key.pem and cert.pem (0600). */
  tlsDir: string;
  /** A running `svc up`: its pid and addresses (0600), so a second one says where the first is. */
  up: string;
}

export function svcPaths(home: string): SvcPaths {
  const dir = join(home, '.svc');
  const stateDir = join(home, '.local', 'state', 'svc');
  return {
    dir,
    config: join(dir, 'config.json'),
    pid: join(dir, 'listener.pid'),
    version: join(dir, 'listener.version'),
    log: join(dir, 'listener.log'),
    relayData: join(dir, 'relay'),
    markers: join(dir, 'remote-origin'),
    ledger: (hookId: string) => join(dir, `delivered-${hookId.replace(/[^A-Za-z0-9_-]/g, '_')}.json`),
    stateDir,
    shellAudit: join(stateDir, 'shell-audit.log'),
    schedules: join(stateDir, 'schedules'),
    deviceKey: join(dir, 'device-key.json'),
    devicePins: join(dir, 'devices.json'),
    pairings: join(dir, 'pairings.json'),
    cliDeviceKey: join(dir, 'cli-device-key.json'),
    cliPins: join(dir, 'cli-pins.json'),
    tlsDir: join(dir, 'tls'),
    up: join(dir, 'up.json'),
  };
}
