/**
 * `~/.svc/devices.json` (0600): the devices this computer pinned (core/devices/devices.ts). The listener and `svc devices`
 * both change it, always as operations applied to the file as it is on disk at that moment (read, apply, write a
 * temp file, rename), under `devices.json.lock` (actors/fileLock.ts), so neither undoes the other's change. The
 * running listener notices the file changing (`watchPins`, an inotify watch on its directory) and also reads it afresh at
 * every sealed contact; reading needs no lock, since the file is only ever replaced whole.
 */
import { type FSWatcher, readFileSync, unwatchFile, watch, watchFile } from 'node:fs';
import { basename, dirname } from 'node:path';
import { fromCallback } from 'xstate';
import { applyPinOps, emptyPins, type PinOp, PinsFile } from '../../core/devices/devices.js';
import { withFileLockSync } from '../fileLock.js';
import { ensurePrivateDir, writeFileAtomic } from '../files.js';
import { checkPrivateFile } from './deviceKey.js';

export class PinsFileError extends Error {}

/** The file, or an empty one when there is none. An unreadable file throws: trust is never silently reset. */
export function readPins(path: string): PinsFile {
  try {
    if (!checkPrivateFile(path)) return emptyPins();
  } catch (err) {
    throw new PinsFileError((err as Error).message);
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return emptyPins();
    throw new PinsFileError(`cannot read ${path}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new PinsFileError(`${path} is not JSON`);
  }
  const parsed = PinsFile.safeParse(data);
  if (!parsed.success) throw new PinsFileError(`${path} is not a device pins file`);
  return parsed.data;
}

/**
 * A read and a write of a small file take milliseconds: a lock older than 5 s was left by a process that hung or
 * died, and 10 s is long enough to wait for that.
 */
const PINS_LOCK = { waitMs: 10_000, maxAgeMs: 5_000 };

/**
 * Apply the operations to the file as it is now, and write it back, holding the file's lock so that another
 * process's update made meanwhile is not lost. Synchronous: the listener calls it from an action. Returns the new
 * content.
 */
export function updatePins(path: string, ops: readonly PinOp[]): PinsFile {
  ensurePrivateDir(dirname(path));
  return withFileLockSync(path, PINS_LOCK, () => {
    const next = applyPinOps(readPins(path), ops);
    writeFileAtomic(path, `${JSON.stringify(next, null, 2)}\n`, 0o600);
    return next;
  });
}

export type PinsReading = { pins: PinsFile; unreadable: false } | { pins: PinsFile; unreadable: true; error: string };

export function readPinsSafely(path: string): PinsReading {
  try {
    return { pins: readPins(path), unreadable: false };
  } catch (err) {
    return { pins: emptyPins(), unreadable: true, error: (err as Error).message };
  }
}

/** How long after a change the file is read: the events of one write come together, and a hand edit has ended. */
const SETTLE_MS = 30;

/**
 * Sends `PINS.LOADED` to the listener when the file changed (also after our own writes). The directory is watched
 * (inotify: nothing runs until a file in it changes; the file itself is replaced whole, so its own inode is not the
 * one to watch), with a stat every `safetyPollMs` behind it (a watch can end without an error: its folder removed and
 * made again, events dropped); where a watch cannot be had (no inotify, its limit reached) the stat runs every
 * `pollMs` instead.
 */
export function watchPins(
  path: string,
  {
    pollMs = 500,
    safetyPollMs = 30_000,
    watchDir = watch,
  }: { pollMs?: number; safetyPollMs?: number; watchDir?: typeof watch } = {},
) {
  return fromCallback(({ sendBack }) => {
    const onChange = () => {
      const reading = readPinsSafely(path);
      sendBack({ type: 'PINS.LOADED', pins: reading.pins, unreadable: reading.unreadable });
    };
    let timer: NodeJS.Timeout | null = null;
    const soon = () => {
      if (timer) return;
      timer = setTimeout(() => {
        timer = null;
        onChange();
      }, SETTLE_MS);
      timer.unref();
    };
    let polling = 0;
    const poll = (interval: number) => {
      if (polling) unwatchFile(path, onChange);
      polling = interval;
      watchFile(path, { interval, persistent: false }, onChange);
    };
    let watcher: FSWatcher | null = null;
    try {
      const name = basename(path);
      watcher = watchDir(dirname(path), { persistent: false }, (_event, file) => {
        if (file === null || file === name) soon();
      });
      watcher.on('error', () => {
        watcher?.close();
        watcher = null;
        poll(pollMs);
      });
      poll(safetyPollMs);
    } catch {
      poll(pollMs);
    }
    return () => {
      watcher?.close();
      if (polling) unwatchFile(path, onChange);
      if (timer) clearTimeout(timer);
    };
  });
}
