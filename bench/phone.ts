/**
 * A phone for the benchmarks, as the app's pairing leaves one: an app device registered on the relay with a key pair
 * of its own, sealing each message for the computer as the app does.
 */
import { computerDevice, registerTestDevice, type TestDevice } from '../test/helpers/devices.js';

/** A paired phone: an app device on the relay, sealing each message for the computer as the app does. */
export interface Phone {
  device: TestDevice;
  computer: { id: string; publicKey: string };
  hookId: string;
  seq: number;
}

/** The body of `POST /pushes/send`: sealed by the phone when there is one (before the clock starts, as on a phone). */
export async function pushBody(phone: Phone | null, session: string, text: string, clientId: string): Promise<string> {
  if (!phone) return JSON.stringify({ type: 'agent.command', agentSessionName: session, body: text, clientId });
  const sealed = await phone.device.seal('agent.command', phone.computer, {
    text,
    seq: ++phone.seq,
    sentAt: Date.now(),
    session,
  });
  return JSON.stringify({
    type: 'agent.command',
    agentSessionName: session,
    body: '',
    targetComputer: phone.hookId,
    clientId,
    sealed,
  });
}

/** Register the phone on the relay (after `svc login` made the computer's device). */
export async function pairPhone(relay: { url: string; apiKey: string }, hookId: string): Promise<Phone> {
  return {
    device: await registerTestDevice(relay, 'app', 'bench phone'),
    computer: await computerDevice(relay, hookId),
    hookId,
    seq: 0,
  };
}
