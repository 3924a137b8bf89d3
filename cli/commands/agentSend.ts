/**
 * `svc agent send [--session NAME] [--computer HOOKID] TEXT` (spec 4.5): a message typed into a session of a
 * computer, always sealed. It is a device of its own (kind `cli`, key in ~/.svc/cli-device-key.json), pins the
 * computer's key on first use (~/.svc/cli-pins.json) and refuses loudly if the relay later lists another one.
 */
import { homedir, hostname } from 'node:os';
import { defineCommand } from 'citty';
import { loggedIn } from '../../actors/daemon/configFile.js';
import { ensureDeviceIdentity, loadDeviceIdentity, takeSeq } from '../../actors/devices/deviceKey.js';
import { readPins, updatePins } from '../../actors/devices/pins.js';
import { withFileLock } from '../../actors/fileLock.js';
import { relayJson } from '../../actors/relay/http.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { decideComputerDevice, decideTrust, type PinOp } from '../../core/devices/devices.js';
import { type CommandBody, commandTextProblem } from '../../core/protocol/bodies.js';
import {
  ComputerListResponse,
  DeviceListResponse,
  PushSendResponse,
  PushStatusResponse,
} from '../../core/protocol/index.js';
import { fingerprint, importPublicKey, safetyCode } from '../../core/seal/keys.js';
import { seal } from '../../core/seal/seal.js';
import { explainCode, parseSendArgs, pickComputer, pickSession } from '../../core/sessions/agentSend.js';
import { fail } from '../output.js';

export interface AgentSendResult {
  id: number;
  computer: string;
  session: string;
  state: PushStatusResponse['state'];
  code: string | null;
}

export class AgentSendError extends Error {}

const FINAL = new Set(['injected', 'refused', 'expired']);

export async function agentSend(opts: {
  text: string;
  session?: string;
  computer?: string;
  home?: string;
  /** How long to wait for the computer's answer. */
  timeoutMs?: number;
}): Promise<AgentSendResult> {
  const paths = svcPaths(opts.home ?? homedir());
  let account: { apiKey: string; baseUrl: string };
  try {
    account = loggedIn(paths.config);
  } catch (err) {
    throw new AgentSendError((err as Error).message);
  }
  const { apiKey, baseUrl } = account;
  const problem = commandTextProblem(opts.text);
  if (problem) throw new AgentSendError(`NOT SENT (${problem.code}): ${problem.message}`);

  const me = await ensureDeviceIdentity({
    path: paths.cliDeviceKey,
    baseUrl,
    apiKey,
    name: `svc agent send on ${hostname()}`,
    kind: 'cli',
  });
  const { computers } = await relayJson(ComputerListResponse, baseUrl, apiKey, 'GET', '/computers');
  const computer = pickComputer(computers, opts.computer);
  if (!computer.ok) throw new AgentSendError(computer.message);
  const target = computer.value;
  const session = pickSession(target, opts.session);
  if (!session.ok) throw new AgentSendError(session.message);
  if (!target.deviceId) {
    throw new AgentSendError(`${target.name} has no device key on the relay: run \`svc login\` on it again`);
  }

  // The computer's device and key as the relay lists them, checked against the pins this command keeps: the
  // computer must still be the device first seen for it, and that device must still have the key pinned for it.
  const { devices } = await relayJson(DeviceListResponse, baseUrl, apiKey, 'GET', '/devices');
  const listedKey = devices.find((d) => d.deviceId === target.deviceId)?.publicKey ?? null;
  const pins = readPins(paths.cliPins);
  const pin = pins.devices[target.deviceId];
  const at = Date.now();
  /** The alarm: what changed, the new key's fingerprint and safety code, and how to accept it. */
  const refuse = async (what: string, ops: PinOp[]) => {
    if (ops.length > 0) updatePins(paths.cliPins, ops);
    const now = await fingerprint(listedKey!);
    const mine = await loadDeviceIdentity(paths.deviceKey, baseUrl).catch(() => null);
    const code = await safetyCode((mine ?? me).publicKey, listedKey!);
    return new AgentSendError(
      `NOT SENT: ${what}. A relay (or a stolen key) redirecting messages looks exactly like this. ` +
        `New key ${now}, safety code ${code}. If ${target.name} really was set up again, compare that code with ` +
        `\`svc devices\` on it, then run \`svc devices verify ${target.deviceId}\` here`,
    );
  };
  const mapping = decideComputerDevice(pins.computers?.[target.hookId], target.deviceId);
  if (!mapping.ok) {
    if (listedKey === null) throw new AgentSendError(`${target.name}'s device is not on the relay`);
    throw await refuse(
      `the relay now says ${target.name} (${target.hookId}) is device ${target.deviceId}; it was ` +
        `${mapping.pinnedDevice}`,
      [{ op: 'computerMoved', hookId: target.hookId, deviceId: target.deviceId, at }],
    );
  }
  const trust = decideTrust(pin, listedKey);
  if (!trust.ok) {
    if (trust.why === 'not_listed') throw new AgentSendError(`${target.name}'s device is not on the relay`);
    const ops: PinOp[] = [];
    if (trust.why === 'key_changed') {
      const fp = await fingerprint(listedKey!);
      ops.push({ op: 'keyChanged', deviceId: target.deviceId, publicKey: listedKey!, fingerprint: fp, at });
    }
    throw await refuse(
      `the relay lists a different key for ${target.name} (device ${target.deviceId}): pinned ${pin!.fingerprint}`,
      ops,
    );
  }
  const firstSeen: PinOp[] = [];
  if (trust.firstContact) {
    const fp = await fingerprint(trust.key);
    firstSeen.push({ op: 'pin', deviceId: target.deviceId, publicKey: trust.key, fingerprint: fp, at, lastSeq: {} });
  }
  if (mapping.firstContact) firstSeen.push({ op: 'pinComputer', hookId: target.hookId, deviceId: target.deviceId, at });
  if (firstSeen.length > 0) updatePins(paths.cliPins, firstSeen);
  const computerKey = await importPublicKey(trust.key);

  // Stamp, seal and post under one lock: stamps reach the relay in the order they were taken. It is held across one
  // request to the relay; one older than 30 s was left by a run that hung.
  const sent = await withFileLock(paths.cliDeviceKey, { waitMs: 10_000, maxAgeMs: 30_000 }, async () => {
    const body: CommandBody = {
      text: opts.text,
      seq: takeSeq(paths.cliDeviceKey),
      sentAt: Date.now(),
      session: session.value,
    };
    const sealed = await seal({
      purpose: 'agent.command',
      from: { id: me.deviceId, privateKey: me.privateKey },
      to: [{ id: target.deviceId!, publicKey: computerKey }],
      plaintext: JSON.stringify(body),
    });
    return relayJson(PushSendResponse, baseUrl, apiKey, 'POST', '/pushes/send', {
      type: 'agent.command',
      agentSessionName: session.value,
      body: '',
      targetComputer: target.hookId,
      sealed,
    });
  });

  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  let status: PushStatusResponse;
  for (;;) {
    status = await relayJson(PushStatusResponse, baseUrl, apiKey, 'GET', `/pushes/${sent.id}`);
    if (FINAL.has(status.state) || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  return { id: sent.id, computer: target.hookId, session: session.value, state: status.state, code: status.code };
}

const send = defineCommand({
  meta: { name: 'send', description: 'Send a message to a session, always sealed; shell sessions are skipped' },
  args: {
    text: { type: 'positional', description: 'The message (words starting with - are part of it)', required: false },
    session: { type: 'string', description: 'Session name (default: the most recently active agent session)' },
    computer: { type: 'string', description: 'hookId or name of the computer (default: the only one)' },
    json: { type: 'boolean', description: 'Print the result as JSON' },
  },
  async run({ rawArgs }) {
    try {
      // Read from the raw words: a parser of flags would take `-x` in a message for options (core/sessions/agentSend.ts).
      const parsed = parseSendArgs(rawArgs);
      if (!parsed.ok) {
        // a command line not understood: one line and the usage exit code, as for any other command
        process.stderr.write(`svc: ${parsed.message}; see svc agent send --help\n`);
        process.exitCode = 2;
        return;
      }
      const args = parsed.value;
      const { text } = args;
      const result = await agentSend({ text, session: args.session, computer: args.computer });
      if (args.json) process.stdout.write(`${JSON.stringify(result)}\n`);
      else if (result.state === 'injected') process.stdout.write(`typed into ${result.session}\n`);
      else if (result.state === 'refused') {
        process.stderr.write(`svc: not typed into ${result.session}: ${result.code} (${explainCode(result.code)})\n`);
      } else if (result.state === 'expired') {
        process.stderr.write(
          result.code === 'no_result'
            ? `svc: no answer from ${result.session}'s computer: it took the message and never said whether it typed it\n`
            : `svc: not typed into ${result.session}: expired (the computer was away too long)\n`,
        );
      } else if (result.state === 'delivered') {
        // the computer holds it (Claude Code in a turn: typed when it is over, at most the relay's replay window)
        process.stderr.write(
          `svc: not typed yet: ${result.session}'s computer has it (push ${result.id}), and may still type or refuse it; do not send it again\n`,
        );
      } else {
        process.stderr.write(`svc: no answer from the computer yet (push ${result.id} is ${result.state})\n`);
      }
      if (result.state !== 'injected') process.exitCode = 1;
    } catch (err) {
      fail(err);
    }
  },
});

/** `svc agent …`: the group; `send` is its one command so far. */
export const agentGroup = defineCommand({
  meta: { name: 'agent', description: 'Talk to agent sessions: svc agent send' },
  subCommands: { send },
});
