/**
 * `watchPins` on a real file: a change written as `svc devices` writes it reaches the listener as `PINS.LOADED`,
 * through the directory watch, and through the stat poll where no watch can be had.
 */
import { mkdtempSync, rmSync, watch } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, it } from 'vitest';
import { type AnyActorRef, createActor, setup } from 'xstate';
import { updatePins, watchPins } from '../../../actors/devices/pins.js';
import type { PinsFile } from '../../../core/devices/devices.js';
import { waitFor } from '../../helpers/tmux.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A machine that invokes the watcher made for a fresh `devices.json`, and records each `PINS.LOADED`. */
function watching(make: (path: string) => ReturnType<typeof watchPins>) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-pins-'));
  const path = join(dir, 'devices.json');
  const seen: PinsFile[] = [];
  const machine = setup({ actors: { watcher: make(path) } }).createMachine({
    invoke: { src: 'watcher' },
    on: { 'PINS.LOADED': { actions: ({ event }) => seen.push((event as unknown as { pins: PinsFile }).pins) } },
  });
  const actor: AnyActorRef = createActor(machine).start();
  cleanups.push(() => {
    actor.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { path, seen };
}

const pin = (deviceId: string) =>
  ({ op: 'pin', deviceId, publicKey: `k-${deviceId}`, fingerprint: 'f', at: 1, lastSeq: {} }) as const;

/**
 * Pin, then forget, each written as `svc devices` writes it (a new file renamed over the old). A stat poll takes its
 * first look some time after it starts, and a file written before that look is its starting point, not a change: so
 * each write is made again (the same content, a new file) until it is seen.
 */
async function pinThenForget(path: string, seen: PinsFile[]) {
  await waitFor(
    () => {
      updatePins(path, [pin('d_one')]);
      return seen.some((p) => p.devices.d_one !== undefined);
    },
    { what: 'd_one pinned', intervalMs: 100 },
  );
  await waitFor(
    () => {
      updatePins(path, [{ op: 'forget', deviceId: 'd_one' }]);
      return seen.at(-1)?.devices.d_one === undefined;
    },
    { what: 'd_one forgotten', intervalMs: 100 },
  );
}

describe('watchPins', () => {
  it('passes on what another process writes, through the directory watch (the stat behind it: once a minute)', async () => {
    const { path, seen } = watching((p) => watchPins(p, { safetyPollMs: 60_000 }));
    await pinThenForget(path, seen);
  });

  it('polls the file where no watch can be had (inotify refused)', async () => {
    const refuse = (() => {
      throw Object.assign(new Error('ENOSPC: System limit for number of file watchers reached'), { code: 'ENOSPC' });
    }) as unknown as typeof watch;
    const { path, seen } = watching((p) => watchPins(p, { pollMs: 50, watchDir: refuse }));
    await pinThenForget(path, seen);
  });

  it('still notices through the stat behind it when the watch goes quiet without an error (its folder made again)', async () => {
    // a real watch on the folder whose events go nowhere: the watch is there, and says nothing
    const silent = ((dir: string) => watch(dir, { persistent: false }, () => {})) as unknown as typeof watch;
    const { path, seen } = watching((p) => watchPins(p, { safetyPollMs: 50, watchDir: silent }));
    await pinThenForget(path, seen);
  });
});
