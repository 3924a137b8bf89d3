/**
 * Who may do what on the relay (docs/security.md "Who may do what"). Pure: the relay's routes and frame handlers
 * describe the credential and the act, and refuse with the message when the answer is no.
 *
 * Two kinds of credential: an **API key** (made on the relay host with `svc relay account/key create`, held by a
 * computer's `svc login`) and a **device token** (from `POST /pairings/claim`, bound to one app device). A device
 * token acts as an app and nothing more. A computer belongs to the key that first registered it: only that key may
 * subscribe as its listener or register it again (which is how its device, the key phones seal for, changes).
 */
import type { Scope } from '../protocol/index.js';

export interface Credential {
  keyId: string;
  scopes: readonly Scope[];
  /** Set for a device token: the app device it speaks for. */
  deviceId?: string | null;
}

export type Act =
  /** Read state: a push's status, the computers, the device list; subscribe as an app; watch a pane. */
  | { act: 'read' }
  /** `POST /pushes/send`. */
  | { act: 'send' }
  /** `pane.keys`: typing into a session. */
  | { act: 'typeKeys' }
  /** `POST /devices`. */
  | { act: 'registerDevice' }
  /**
   * `DELETE /devices/<id>`. `computerOwner`: when the device is a computer's own device, the key that computer
   * belongs to (null for a computer without an owner yet); undefined otherwise.
   */
  | { act: 'removeDevice'; deviceId: string; computerOwner?: string | null }
  /** `POST /pairings`: a code that makes a new device token. */
  | { act: 'createPairing' }
  /**
   * Act as an app device: `subscribe` naming it (its frames, its asks' questions), and `POST`/`DELETE
   * /push/subscriptions` for it. A device token: its own device only. An API key: a device registered with a key
   * (`POST /devices`), never one that was paired (`paired`: it holds a token of its own, and only that token may
   * speak for it, so a key cannot pose as the phone and take its frames).
   */
  | { act: 'actAsDevice'; deviceId: string; paired: boolean }
  /** `ask.answer` from an app: the answer reaches the agent as its tool result, so it drives it like a message. */
  | { act: 'answerAsk' }
  /**
   * The listener's `ask.new`, `ask.closed`, `ask.result` and `notify.new`: what the phones are asked and told on a
   * computer's behalf, so only the key that computer belongs to (`owner`) may send them.
   */
  | { act: 'announce'; owner: string | null | undefined }
  /**
   * `POST /computers` (a new computer when `owner` is undefined) and `subscribe` as a listener. `owner` is the key id
   * the computer belongs to, or null for a computer registered before owners were recorded.
   */
  | { act: 'registerComputer' | 'listen'; owner: string | null | undefined };

export type Access =
  | { ok: true /** The computer has no owner yet and this key becomes it. */; claims: boolean }
  | { ok: false; message: string };

const allow: Access = { ok: true, claims: false };
const deny = (message: string): Access => ({ ok: false, message });

const has = (c: Credential, scope: Scope) => c.scopes.includes(scope);

export function decideAccess(c: Credential, a: Act): Access {
  const device = c.deviceId != null;
  switch (a.act) {
    case 'read':
      return c.scopes.length > 0 ? allow : deny('this key has no scope');
    case 'send':
      return has(c, 'push:write') ? allow : deny('this key lacks the scope push:write');
    case 'typeKeys':
      return has(c, 'push:write') ? allow : deny('typing into a session needs the scope push:write');
    case 'registerDevice':
      if (device) return deny('a device token acts as its own app device only; it cannot register devices');
      return c.scopes.length > 0 ? allow : deny('this key has no scope');
    case 'removeDevice':
      if (device && c.deviceId !== a.deviceId) {
        return deny('a device token can only remove its own device; use an API key');
      }
      // Removing a computer's device unlinks it, which changes what phones seal for: the computer's own key only.
      if (typeof a.computerOwner === 'string' && a.computerOwner !== c.keyId) {
        return deny(`this is a computer's own device; only the key it belongs to (${a.computerOwner}) may remove it`);
      }
      return c.scopes.length > 0 ? allow : deny('this key has no scope');
    case 'createPairing':
      if (device) return deny('a device token cannot pair further devices; run `svc pair` on the computer');
      return has(c, 'push:write') ? allow : deny('this key lacks the scope push:write');
    case 'actAsDevice':
      if (device && c.deviceId !== a.deviceId) return deny('a device token speaks for its own device only');
      if (!device && a.paired) return deny('a paired device speaks only through its own device token, not an API key');
      return c.scopes.length > 0 ? allow : deny('this key has no scope');
    case 'answerAsk':
      return has(c, 'push:write') ? allow : deny('answering an ask needs the scope push:write');
    case 'announce':
      if (device) return deny('a device token acts as an app; it cannot ask or notify for a computer');
      if (!has(c, 'push:read')) return deny('to ask or notify for a computer a key needs the scope push:read');
      if (a.owner !== c.keyId) return deny("only the computer's own key may ask or notify for it");
      return allow;
    case 'registerComputer':
    case 'listen': {
      const what = a.act === 'listen' ? 'subscribe as a listener' : 'register computers';
      if (device) return deny(`a device token acts as an app; it cannot ${what}`);
      if (!has(c, 'push:read')) return deny(`to ${what} a key needs the scope push:read`);
      if (a.owner === undefined) return a.act === 'listen' ? deny('no such computer') : { ok: true, claims: true };
      if (a.owner === null) return { ok: true, claims: true };
      if (a.owner !== c.keyId) {
        return deny(`this computer belongs to another key (${a.owner}): only the key it logged in with may ${what}`);
      }
      return allow;
    }
  }
}
