#!/usr/bin/env node
/**
 * The `svc` command line. Commands load lazily so `svc --version` starts fast.
 */
import { defineCommand, runMain } from 'citty';
import { VERSION } from '../core/version.js';

const main = defineCommand({
  meta: { name: 'svc', version: VERSION, description: 'Drive the coding agents on this computer from your phone.' },
  subCommands: {
    up: () => import('./commands/up.js').then((m) => m.default),
    login: () => import('./commands/login.js').then((m) => m.default),
    listener: () => import('./commands/listener.js').then((m) => m.default),
    relay: () => import('./commands/relay/index.js').then((m) => m.default),
  },
});

if (process.argv[2] === '--version' || process.argv[2] === '-v') {
  process.stdout.write(`${VERSION}\n`);
} else {
  runMain(main);
}
