/**
 * The listener's sealing side, wired for the machines: the relay's device list (cached), opening sealed contacts
 * for `device.<id>`, sealing pane frames and capturing panes for `watch.<…>`, typing key input for sessions.
 * docs/security.md says what is trusted and why.
 */
import { fromPromise } from 'xstate';
import { APPROVAL_CONFIRM_MS, PromptChangedError, stillShows } from '../../core/agents/approvals.js';
import { DEVICE_LIST_RETRY_MS, DevicesUnavailableError } from '../../core/devices/devices.js';
import { type PaneScreen, paneScreen } from '../../core/panes/frames.js';
import { DeviceListResponse } from '../../core/protocol/index.js';
import { SealError } from '../../core/seal/error.js';
import { fingerprint, importPublicKey } from '../../core/seal/keys.js';
import { openText } from '../../core/seal/seal.js';
import type { OpenSealedInput, OpenSealedOutput } from '../../machines/device.js';
import type { TypeKeysInput } from '../../machines/session.js';
import { typeExitCommand } from '../agents/inject.js';
import type { DeviceIdentity } from '../devices/deviceKey.js';
import { readPins } from '../devices/pins.js';
import { relayJson } from '../relay/http.js';
import type { Tmux } from '../tmux/tmux.js';

/** How long the listed keys are trusted to be current for key input and watches (messages always refetch). */
export const DIRECTORY_TTL_MS = 30_000;

export interface Listed {
  publicKey: string;
  fingerprint: string;
}

/**
 * The relay's device list, cached. A sealed message (`agent.command`) always reads it afresh, so a key swapped on
 * the relay is caught at the next message; key input and watch renewals, which come several times a second, use
 * a copy younger than DIRECTORY_TTL_MS unless the device is missing from it or its key differs from the pin.
 */
export function createDeviceDirectory(opts: {
  fetchList: () => Promise<DeviceListResponse>;
  now?: () => number;
  ttlMs?: number;
}) {
  const now = opts.now ?? Date.now;
  const ttl = opts.ttlMs ?? DIRECTORY_TTL_MS;
  let cache: Map<string, string> | null = null;
  let fetchedAt = 0;
  let inflight: Promise<Map<string, string>> | null = null;
  const fingerprints = new Map<string, string>();

  const refresh = () => {
    inflight ??= opts
      .fetchList()
      .then((list) => {
        cache = new Map(list.devices.map((d) => [d.deviceId, d.publicKey]));
        fetchedAt = now();
        return cache;
      })
      .finally(() => {
        inflight = null;
      });
    return inflight;
  };

  return {
    async lookup(deviceId: string, hints: { fresh: boolean; pinnedKey?: string }): Promise<Listed | null> {
      let map = cache;
      const stale = !map || now() - fetchedAt > ttl;
      const cached = map?.get(deviceId);
      if (hints.fresh || stale || cached === undefined || (hints.pinnedKey && cached !== hints.pinnedKey)) {
        map = await refresh();
      }
      const publicKey = map?.get(deviceId);
      if (publicKey === undefined) return null;
      let fp = fingerprints.get(publicKey);
      if (!fp) {
        try {
          fp = await fingerprint(publicKey);
        } catch {
          return null; // not a key: as good as not listed
        }
        fingerprints.set(publicKey, fp);
      }
      return { publicKey, fingerprint: fp };
    },
  };
}

export type DeviceDirectory = ReturnType<typeof createDeviceDirectory>;

/** The relay's list through its HTTP API, with this computer's key. */
export function relayDeviceList(baseUrl: string, apiKey: string): () => Promise<DeviceListResponse> {
  return () => relayJson(DeviceListResponse, baseUrl, apiKey, 'GET', '/devices');
}

const publicKeys = new Map<string, Promise<CryptoKey>>();
export function cryptoKey(publicKey: string): Promise<CryptoKey> {
  let key = publicKeys.get(publicKey);
  if (!key) {
    key = importPublicKey(publicKey);
    key.catch(() => publicKeys.delete(publicKey));
    if (publicKeys.size > 256) publicKeys.clear();
    publicKeys.set(publicKey, key);
  }
  return key;
}

/**
 * Read the device list, trying again after each wait in `retryMs` when it cannot be read; then give up with
 * DevicesUnavailableError, which the device machine refuses with the temporary `devices_unavailable`.
 */
export async function lookupWithRetry<T>(read: () => Promise<T>, retryMs: readonly number[]): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (attempt >= retryMs.length) throw new DevicesUnavailableError((error as Error).message ?? String(error));
      await new Promise((resolve) => setTimeout(resolve, retryMs[attempt]));
    }
  }
}

/**
 * `openSealed` for `device.<id>`: the pin as the file holds it now, the key the relay lists, and the envelope
 * opened with that key. Without a device key of its own the listener cannot open anything: that is an error
 * (the device machine refuses it `bad_seal`).
 */
export function openSealedLogic(deps: {
  me: DeviceIdentity | null;
  directory: DeviceDirectory;
  pinsPath: string;
  now?: () => number;
  /** Waits before each new try to read the device list (DEVICE_LIST_RETRY_MS). */
  retryMs?: readonly number[];
}) {
  return fromPromise<OpenSealedOutput, OpenSealedInput>(async ({ input }) => {
    const me = deps.me;
    if (!me) throw new Error('this computer has no device key: run `svc login` again');
    const pin = readPins(deps.pinsPath).devices[input.deviceId];
    const fresh = input.purpose === 'agent.command';
    const hints = pin ? { pinnedKey: pin.publicKey } : {};
    const lookup = (h: { fresh: boolean; pinnedKey?: string }) =>
      lookupWithRetry(() => deps.directory.lookup(input.deviceId, h), deps.retryMs ?? DEVICE_LIST_RETRY_MS);
    let listed = await lookup({ fresh, ...hints });
    const tryOpen = async (key: Listed | null): Promise<OpenSealedOutput['opened']> => {
      // With a pin, only the pinned key may open it; a listed key that differs is refused without trying.
      if (!key || (pin && pin.publicKey !== key.publicKey)) return null;
      try {
        const text = await openText({
          envelope: input.envelope,
          purpose: input.purpose,
          me: { id: me.deviceId, privateKey: me.privateKey },
          senderPublicKey: await cryptoKey(key.publicKey),
        });
        return { ok: true, text };
      } catch (err) {
        return { ok: false, reason: err instanceof SealError ? err.code : 'could not open' };
      }
    };
    let opened = await tryOpen(listed);
    // Not opening with a cached key may mean the key changed: look at the list again before deciding, so a key
    // change is reported as one (subscriber_unverified, loudly) rather than as a damaged envelope.
    if (
      !fresh &&
      opened &&
      !opened.ok &&
      !['bad_envelope', 'bad_version', 'wrong_purpose', 'not_for_me'].includes(opened.reason)
    ) {
      listed = await lookup({ fresh: true, ...hints });
      opened = await tryOpen(listed);
    }
    return { pin, listed, opened, now: (deps.now ?? Date.now)() };
  });
}

/** The pane's rows and size for `watch.<…>`: one tmux call, so the size is the one the rows were captured at. */
export function capturePaneLogic(tmux: Pick<Tmux, 'captureScreen'>) {
  return fromPromise<PaneScreen, { paneId: string }>(async ({ input }) => {
    const { text, width, height } = await tmux.captureScreen({ pane: input.paneId });
    return paneScreen(text, { width, height });
  });
}

/**
 * Key input: the text as is (no submit), then the named keys. A pane in a tmux mode is taken out of it first: the
 * phone shows the program's screen (capture-pane reads under the mode), so the keys are meant for the program.
 */
export function typeKeysLogic(
  tmux: Pick<Tmux, 'sendLiteral' | 'sendKeys' | 'capture' | 'captureScreen' | 'killSession' | 'panePid'>,
  wait: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  /** Runs the typing when the pane is free (actors/agents/paneTurns.ts); at once by default. */
  inTurn: <T>(pane: string, run: () => Promise<T>) => Promise<T> = (_, run) => run(),
) {
  return fromPromise<void, TypeKeysInput>(({ input }) => inTurn(input.paneId, () => typeKeys(tmux, wait, input)));
}

async function typeKeys(
  tmux: Pick<Tmux, 'sendLiteral' | 'sendKeys' | 'capture' | 'captureScreen' | 'killSession' | 'panePid'>,
  wait: (ms: number) => Promise<void>,
  input: TypeKeysInput,
): Promise<void> {
  const pane = { pane: input.paneId };
  // "force end", chosen and confirmed on the phone (core/sessions/control.ts)
  if (input.kill) return tmux.killSession(input.session);
  // End: the agent's exit command, then Enter once it is drawn (never both in one call)
  if (input.exit) return typeExitCommand(tmux, input, wait);
  // a scheduled run past its max-runtime whose agent did not end on its exit command: its process is asked to end
  if (input.term) {
    const pid = await tmux.panePid(input.paneId);
    if (pid === null) throw new Error(`pane ${input.paneId} is gone`);
    process.kill(pid, 'SIGTERM');
    return;
  }
  // Input into an approval prompt: one more look, a moment later, right before typing (core/agents/approvals.ts).
  if (input.confirm) {
    await wait(APPROVAL_CONFIRM_MS);
    const { text } = await tmux.captureScreen(pane);
    if (!stillShows(input.confirm.agent, input.confirm.fingerprint, { text })) throw new PromptChangedError();
  }
  const leaveMode = input.inMode === true;
  // Text, then keys, in one tmux call.
  if (input.text.length > 0) await tmux.sendLiteral(pane, input.text, { leaveMode, keys: input.keys });
  else if (input.keys.length > 0) await tmux.sendKeys(pane, input.keys, { leaveMode });
}
