/**
 * Every machine in this folder, with what the charts need to know of it. A machine file that exports a machine
 * not listed here fails `npm test` (test/unit/statecharts.test.ts): add it, then run `npm run charts`.
 * Which machine starts which is read from the definitions (core/debug/statechart.ts `actorChildren`); `actorId` is how
 * its actors are named in a running listener.
 */
import type { MachineEntry } from '../core/debug/statechart.js';
import { askMachine } from './ask.js';
import { asksMachine } from './asks.js';
import { deviceMachine } from './device.js';
import { devicesMachine } from './devices.js';
import { inventoryMachine } from './inventory.js';
import { listenerMachine } from './listener.js';
import { paneWatchMachine } from './paneWatch.js';
import { relayLinkMachine } from './relayLink.js';
import { scheduleMachine } from './schedule.js';
import { schedulerMachine } from './scheduler.js';
import { sessionMachine } from './session.js';
import { sessionsMachine } from './sessions.js';
import { watchesMachine } from './watches.js';
import { worktreeMachine } from './worktree.js';
import { worktreesMachine } from './worktrees.js';

export const MACHINES: readonly MachineEntry[] = [
  {
    name: 'listener',
    file: 'machines/listener.ts',
    machine: listenerMachine,
    actorId: 'listener',
    summary:
      'The root of the daemon: invokes and supervises the relay link, the inventory and the supervisors (sessions, devices, scheduler, asks, worktrees, watches); routes pushes, pane requests and opened contacts as core/sessions/routing.ts decides; keeps the delivery ledger.',
  },
  {
    name: 'relayLink',
    file: 'machines/relayLink.ts',
    machine: relayLinkMachine,
    actorId: 'relay',
    summary:
      'The WebSocket to the relay: connecting → online ⇄ backoff; authentication failures stop retrying; a ping/pong watchdog.',
  },
  {
    name: 'inventory',
    file: 'machines/inventory.ts',
    machine: inventoryMachine,
    actorId: 'inventory',
    summary: 'One tmux query per 5 s tick; a report on change, on reconnect, or as a 2-minute heartbeat.',
  },
  {
    name: 'sessions',
    file: 'machines/sessions.ts',
    machine: sessionsMachine,
    actorId: 'sessions',
    summary:
      "The tmux sessions' actors and their supervisor: an actor per session of each reading (made, told, stopped with what it held answered); hands each the input the root releases; sticky REMOTE and approval cards; one that fails is rebuilt from the first reading after its backoff, and the root refuses what it held.",
  },
  {
    name: 'session',
    file: 'machines/session.ts',
    machine: sessionMachine,
    actorId: 'session.<name>',
    summary:
      'One tmux session: attachment × agent state × remote mode × approval, and a delivery queue typed one push at a time.',
  },
  {
    name: 'worktrees',
    file: 'machines/worktrees.ts',
    machine: worktreesMachine,
    actorId: 'worktrees',
    summary:
      'The worktrees made by `--wt` and their supervisor: scans git at start and every minute, spawns a worktree actor per worktree, tells each after every tmux reading whether a session holds it; one that fails comes back at the next scan.',
  },
  {
    name: 'worktree',
    file: 'machines/worktree.ts',
    machine: worktreeMachine,
    actorId: 'worktree.<repo>-wt-<slug>',
    summary:
      'One worktree made by `--wt`: removed when its session has ended and nothing holds it, otherwise held and looked at again.',
  },
  {
    name: 'devices',
    file: 'machines/devices.ts',
    machine: devicesMachine,
    actorId: 'devices',
    summary:
      'The devices that seal for this computer and their supervisor: a device actor per pinned device at start and per new device at its first contact; hands each its contacts; one that fails is made again from its pin at its next contact, and the listener refuses what it held.',
  },
  {
    name: 'device',
    file: 'machines/device.ts',
    machine: deviceMachine,
    actorId: 'device.<deviceId>',
    summary:
      'One device that sealed something for this computer: unknown → pinned | unverified; opens its contacts one at a time and checks their sequence stamps.',
  },
  {
    name: 'watches',
    file: 'machines/watches.ts',
    machine: watchesMachine,
    actorId: 'watches',
    summary:
      'The live panes and their supervisor: a watch actor per live pane, what an opened pane.watch does (stream, renew, refuse), stops on pane.stop, a forgotten or untrusted device or a gone session; resumes the last listener’s streams within their leases; a failed one starts again after its backoff.',
  },
  {
    name: 'paneWatch',
    file: 'machines/paneWatch.ts',
    machine: paneWatchMachine,
    actorId: 'watch.<deviceId>/<session>',
    summary:
      'One live pane for one device: captures, diffs and seals frames while its lease is renewed; stops on pane.stop, lease lapse or session end.',
  },
  {
    name: 'asks',
    file: 'machines/asks.ts',
    machine: asksMachine,
    actorId: 'asks',
    summary:
      'The svc_asks and their supervisor: spawns an ask actor per ask, hands it the phones’ answers, announces the asks again when the link is back; an ask whose actor fails ends failed for its asker.',
  },
  {
    name: 'ask',
    file: 'machines/ask.ts',
    machine: askMachine,
    actorId: 'ask.<id>',
    summary:
      'One svc_ask in flight: waiting for a sealed answer until its deadline (a timestamp); the first answer taken ends it, later ones are refused.',
  },
  {
    name: 'scheduler',
    file: 'machines/scheduler.ts',
    machine: schedulerMachine,
    actorId: 'scheduler',
    summary:
      'The schedules: at each listener tick reads the schedules file and decides, for all schedules at once, which due runs start and which are skipped (one notice per tick); spawns a schedule actor per entry.',
  },
  {
    name: 'schedule',
    file: 'machines/schedule.ts',
    machine: scheduleMachine,
    actorId: 'schedule.<id>',
    summary:
      'One schedule: waiting → starting → running → ending → done | skipped; types its prompt once when the agent reads idle, and ends its run at max-runtime with the agent’s own exit command, never a kill.',
  },
];
