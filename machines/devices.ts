/**
 * The devices that seal for this computer, and their supervisor: invoked by the listener as `devices`, it spawns one
 * `device.<id>` actor per pinned device at start (also after a restart) and one for a new device at its first contact,
 * hands each its contacts, and passes what they opened to the listener.
 *
 *   supervising: CONTACT → the device's actor (made first when new)     PINS → each actor told its pin again
 *
 * A device actor that fails is stopped and logged, and made again from its pin at its next contact; the listener is
 * told (`CHILD.DOWN`) so it refuses what that device held. At the fifth failure in ten minutes it is not made again:
 * its contacts are refused (core/supervision.ts). What a device was handed and owes an answer for is the listener's
 * book (its `owed`), not this machine's: it outlives this supervisor's own failure.
 */
import { enqueueActions, setup } from 'xstate';
import { type DevicePin, MAX_DEVICE_ACTORS, type PinsFile } from '../core/devices/devices.js';
import type { Contact } from '../core/sessions/routing.js';
import { decideFailure, describeFailure, type Failures, pruneFailures } from '../core/supervision.js';
import { type DeviceResult, deviceMachine } from './device.js';
import { clockOf, type LogParams, logLine, type SupervisorInput } from './log.js';

export const deviceActorId = (deviceId: string) => `device.${deviceId}`;

export interface DevicesInput extends SupervisorInput {
  /** ~/.svc/devices.json as the listener knows it: a `device.<id>` actor for each pinned device. */
  pins: PinsFile;
}

export interface DevicesContext {
  input: DevicesInput;
  /** Device ids that have a `device.<id>` child. */
  devices: string[];
  /** Device actors that failed, by actor id (core/supervision.ts), for `svc verify` and `svc debug state`. */
  failures: Record<string, Failures>;
}

export type DevicesEvent =
  /** A sealed contact for `deviceId`, with its pin as the listener knows it (for an actor made for it now). */
  | { type: 'CONTACT'; deviceId: string; pin: DevicePin | undefined; contact: Contact }
  /** ~/.svc/devices.json changed on disk (`svc devices verify` / `forget`). */
  | { type: 'PINS'; pins: PinsFile }
  | DeviceResult
  | { type: `xstate.error.actor.device.${string}`; error: unknown };

/** What the listener hears: each opened contact, and a device whose contacts it must refuse (failed or given up). */
export type DevicesToListener = DeviceResult | { type: 'CHILD.DOWN'; id: string };

const child = (deviceId: string, pin: DevicePin | undefined) => ({
  id: deviceActorId(deviceId),
  input: { deviceId, ...(pin ? { pin } : {}) },
});

export const devicesMachine = setup({
  types: {
    context: {} as DevicesContext,
    input: {} as DevicesInput,
    events: {} as DevicesEvent,
  },
  actors: { device: deviceMachine },
  actions: {
    log: (_, _params: LogParams) => {},
    /** Device actor `id` failed: logged with its stack and the last event it took (actors/listener.ts). */
    reportFailure: (_, _params: { id: string; error: unknown; what: string }) => {},
  },
}).createMachine({
  id: 'devices',
  context: ({ input }) => ({ input, devices: [], failures: input.failures ?? {} }),
  // Rebuilt from the pins, not from a snapshot: one device actor per pinned device, but for one given up.
  entry: enqueueActions(({ context, enqueue }) => {
    const ids = Object.keys(context.input.pins.devices)
      .filter((id) => !context.failures[deviceActorId(id)]?.givenUp)
      .slice(0, MAX_DEVICE_ACTORS);
    for (const deviceId of ids) enqueue.spawnChild('device', child(deviceId, context.input.pins.devices[deviceId]));
    enqueue.assign({ devices: ids });
  }),
  initial: 'supervising',
  states: {
    supervising: {
      on: {
        CONTACT: {
          description:
            "A contact goes to its device's actor, made first for a device seen for the first time or one rebuilt after a failure; a device given up is refused (CHILD.DOWN).",
          actions: enqueueActions(({ context, event, enqueue }) => {
            const { deviceId, pin, contact } = event;
            if (context.failures[deviceActorId(deviceId)]?.givenUp) {
              enqueue.sendParent({ type: 'CHILD.DOWN', id: deviceActorId(deviceId) } satisfies DevicesToListener);
              return;
            }
            if (!context.devices.includes(deviceId)) {
              enqueue(logLine('debug', `device ${deviceId}: an actor made for its contact`));
              enqueue.spawnChild('device', child(deviceId, pin));
              enqueue.assign({ devices: [...context.devices, deviceId] });
            }
            enqueue.sendTo(deviceActorId(deviceId), { type: 'CONTACT', contact });
          }),
        },
        'DEVICE.RESULT': {
          description: 'What a device opened (or refused) goes to the listener, which acts on it.',
          actions: enqueueActions(({ event, enqueue }) => enqueue.sendParent(event)),
        },
        PINS: {
          description:
            "Each device's actor is told its pin as the file now holds it; a forgotten device's failure record goes with it.",
          actions: enqueueActions(({ context, event, enqueue }) => {
            const forgotten = (id: string) => !event.pins.devices[id.slice('device.'.length)];
            enqueue.assign({ failures: pruneFailures(context.failures, clockOf(context), forgotten) });
            for (const deviceId of context.devices) {
              enqueue.sendTo(deviceActorId(deviceId), { type: 'PIN.SYNC', pin: event.pins.devices[deviceId] });
            }
          }),
        },
        'xstate.error.actor.device.*': {
          description:
            'A device actor that failed is stopped and logged, and made again from its pin at its next contact; what it held is refused by the listener. At the fifth failure in ten minutes its contacts are refused until the listener restarts.',
          actions: enqueueActions(({ context, event, enqueue }) => {
            const id = event.type.slice('xstate.error.actor.'.length);
            const { error } = event as Extract<DevicesEvent, { error: unknown }>;
            const now = clockOf(context);
            const { record, decision } = decideFailure('device', context.failures[id], now, describeFailure(error));
            const deviceId = id.slice('device.'.length);
            enqueue.stopChild(id);
            enqueue.assign({
              devices: context.devices.filter((d) => d !== deviceId),
              failures: { ...context.failures, [id]: record },
            });
            enqueue.sendParent({ type: 'CHILD.DOWN', id } satisfies DevicesToListener);
            const what =
              decision.kind === 'give_up'
                ? 'failed 5 times in ten minutes: not restarted until the listener is; its contacts are refused'
                : 'rebuilt from its pin at its next contact; what it held is refused';
            enqueue({ type: 'reportFailure', params: { id, error, what } });
          }),
        },
      },
    },
  },
});
