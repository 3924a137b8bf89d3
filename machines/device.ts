/**
 * One app, computer or `svc agent send` device that has contacted this computer: `device.<id>`.
 *
 * trust: unknown → pinned | unverified (core/devices/devices.ts decides; `verified` is a flag on the pin). Sealed contacts
 * (a sealed push, a watch request, key input) are handled one at a time, in arrival order, so sequence stamps are
 * checked in the order the relay delivered them: `openSealed` gathers the facts (the pin as the file holds it now,
 * the relay's listed key, the envelope opened with it), `decideContact` decides, `persistPins` writes the change,
 * and the root gets the opened body or the refusal.
 */
import { assign, enqueueActions, fromPromise, setup } from 'xstate';
import {
  applyPinOps,
  type ContactFacts,
  type ContactOutcome,
  type DevicePin,
  decideContact,
  openFailure,
  type PinOp,
  type TrustState,
  trustOf,
} from '../core/devices/devices.js';
import type { InboundPurpose } from '../core/protocol/bodies.js';
import type { Contact, ContactRef } from '../core/sessions/routing.js';
import type { LogParams } from './log.js';

/** What a contact was (`ref`, opaque to this machine) is core/sessions/routing.ts's: the root acts on the opened body. */
export type { Contact, ContactRef };

/** What `openSealed` is asked. */
export interface OpenSealedInput {
  deviceId: string;
  purpose: InboundPurpose;
  envelope: unknown;
}

/** The facts of one contact, as `openSealed` gathered them (core/devices/devices.ts ContactFacts without the names). */
export type OpenSealedOutput = Pick<ContactFacts, 'pin' | 'listed' | 'opened' | 'now'>;

export interface DeviceInput {
  deviceId: string;
  pin?: DevicePin;
}

export interface DeviceContext {
  deviceId: string;
  /** The pin as last read or written; undefined while unknown. */
  pin: DevicePin | undefined;
  queue: Contact[];
  current: Contact | null;
}

export type DeviceEvent =
  | { type: 'CONTACT'; contact: Contact }
  /** The root read devices.json again (svc devices verify / forget): this device's pin, or none. */
  | { type: 'PIN.SYNC'; pin: DevicePin | undefined };

/** What the device tells the root about each contact. */
export interface DeviceResult {
  type: 'DEVICE.RESULT';
  deviceId: string;
  ref: ContactRef;
  outcome: ContactOutcome;
  trust: TrustState;
  /** The device's pin after this contact (undefined: still unknown). */
  pin: DevicePin | undefined;
}

/** Contacts waiting beyond this are refused: a flood from the relay must not grow memory without bound. */
export const MAX_DEVICE_QUEUE = 256;

export const deviceMachine = setup({
  types: {
    context: {} as DeviceContext,
    input: {} as DeviceInput,
    events: {} as DeviceEvent,
  },
  actors: {
    openSealed: fromPromise<OpenSealedOutput, OpenSealedInput>(async () => ({
      pin: undefined,
      listed: null,
      opened: null,
      now: 0,
    })),
  },
  actions: {
    log: (_, _params: LogParams) => {},
    /** Apply the operations to ~/.svc/devices.json as it is on disk now (actors/devices/pins.ts). */
    persistPins: (_, _params: { ops: PinOp[] }) => {},
  },
  guards: {
    isUnknown: ({ context }) => trustOf(context.pin) === 'unknown',
    isPinned: ({ context }) => trustOf(context.pin) === 'pinned',
    isUnverified: ({ context }) => trustOf(context.pin) === 'unverified',
    hasWork: ({ context }) => context.queue.length > 0,
  },
}).createMachine({
  id: 'device',
  type: 'parallel',
  context: ({ input }) => ({ deviceId: input.deviceId, pin: input.pin, queue: [], current: null }),
  on: {
    'PIN.SYNC': { actions: assign({ pin: ({ event }) => event.pin }) },
  },
  states: {
    trust: {
      description: 'Follows the pin: unknown until a first sealed contact, unverified after a key change.',
      initial: 'unknown',
      states: {
        unknown: {
          always: [
            { guard: 'isPinned', target: 'pinned' },
            { guard: 'isUnverified', target: 'unverified' },
          ],
        },
        pinned: {
          always: [
            { guard: 'isUnknown', target: 'unknown' },
            { guard: 'isUnverified', target: 'unverified' },
          ],
        },
        unverified: {
          description: 'The relay lists a key other than the pinned one: refused until `svc devices verify`.',
          always: [
            { guard: 'isUnknown', target: 'unknown' },
            { guard: 'isPinned', target: 'pinned' },
          ],
        },
      },
    },
    work: {
      initial: 'idle',
      on: {
        CONTACT: {
          actions: enqueueActions(({ context, event, enqueue }) => {
            if (context.queue.length < MAX_DEVICE_QUEUE) {
              enqueue.assign({ queue: [...context.queue, event.contact] });
              return;
            }
            enqueue.sendParent({
              type: 'DEVICE.RESULT',
              deviceId: context.deviceId,
              ref: event.contact.ref,
              outcome: { accepted: false, code: 'subscriber_unverified', message: 'too many contacts waiting' },
              trust: trustOf(context.pin),
              pin: context.pin,
            } satisfies DeviceResult);
          }),
        },
      },
      states: {
        idle: {
          always: {
            guard: 'hasWork',
            target: 'opening',
            actions: assign(({ context }) => ({ current: context.queue[0]!, queue: context.queue.slice(1) })),
          },
        },
        opening: {
          invoke: {
            src: 'openSealed',
            input: ({ context }) => ({
              deviceId: context.deviceId,
              purpose: context.current!.purpose,
              envelope: context.current!.envelope,
            }),
            onDone: {
              target: 'idle',
              actions: enqueueActions(({ context, event, enqueue }) => {
                const contact = context.current!;
                const decision = decideContact({
                  deviceId: context.deviceId,
                  purpose: contact.purpose,
                  ...event.output,
                });
                const onDisk = event.output.pin;
                const pin = applyPinOps(
                  { version: 1, devices: onDisk ? { [context.deviceId]: onDisk } : {} },
                  decision.ops,
                ).devices[context.deviceId];
                if (decision.ops.length > 0) enqueue({ type: 'persistPins', params: { ops: decision.ops } });
                if (decision.alarm) enqueue({ type: 'log', params: { level: 'error', message: decision.alarm } });
                if (decision.ops.some((op) => op.op === 'pin')) {
                  enqueue({
                    type: 'log',
                    params: {
                      level: 'info',
                      message: `device ${context.deviceId} pinned (key ${pin?.fingerprint ?? '?'}); plaintext requests are refused from now on`,
                    },
                  });
                }
                enqueue.assign({ pin, current: null });
                enqueue.sendParent({
                  type: 'DEVICE.RESULT',
                  deviceId: context.deviceId,
                  ref: contact.ref,
                  outcome: decision.outcome,
                  trust: trustOf(pin),
                  pin,
                } satisfies DeviceResult);
              }),
            },
            onError: {
              target: 'idle',
              actions: enqueueActions(({ context, event, enqueue }) => {
                // A network failure is not a damaged envelope: it gets a temporary code (core/devices/devices.ts).
                const { code, message } = openFailure(event.error, context.current!.purpose);
                enqueue({ type: 'log', params: { level: 'warn', message: `device ${context.deviceId}: ${message}` } });
                enqueue.sendParent({
                  type: 'DEVICE.RESULT',
                  deviceId: context.deviceId,
                  ref: context.current!.ref,
                  outcome: { accepted: false, code, message },
                  trust: trustOf(context.pin),
                  pin: context.pin,
                } satisfies DeviceResult);
                enqueue.assign({ current: null });
              }),
            },
          },
        },
      },
    },
  },
});
