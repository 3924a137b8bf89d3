/**
 * The listener's side of `svc mcp` (docs/mcp.md): it takes `ask`, `notify` and `asks` requests on the control
 * socket, seals the question or the notification for the phones (core/mcp/ask.ts `chooseRecipients`) and for this
 * computer, hands the root machine an `ASK.START` / `NOTIFY.SEND`, and answers the asker when the root says the ask
 * ended (`settleAsk`) or the relay took the notification (`notifyAcked`).
 *
 * `~/.svc/asks.json` (0600) lists the asks in flight with their deadlines; a listener that starts and finds some
 * there answers them expired (`ASK.LEFTOVER`): the agent that asked lost its connection with the old listener, and
 * the phone must not keep showing a question nobody will read the answer to.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { z } from 'zod/v3';
import type { ControlReply } from '../../core/daemon/control.js';
import {
  type AnswerBody,
  AnswerBody as AnswerBodySchema,
  ASK_FAILURE_TEXT,
  type AskOutcome,
  askDeadline,
  type NotifyBody,
  type QuestionBody,
} from '../../core/mcp/ask.js';
import type { AskCode } from '../../core/protocol/codes.js';
import type { ClientFrame } from '../../core/protocol/index.js';
import { SealError } from '../../core/seal/error.js';
import { type Envelope, openText } from '../../core/seal/seal.js';
import type { AskInput, OpenAnswerInput, OpenAnswerOutput, SettledAsk } from '../../machines/ask.js';
import type { ListenerEvent } from '../../machines/listener.js';
import type { McpRequest } from '../daemon/controlSocket.js';
import type { DeviceIdentity } from '../devices/deviceKey.js';
import { setAsideBroken, writeFileAtomic } from '../files.js';
import { cryptoKey } from '../seal/e2ee.js';
import type { Outbox } from '../seal/outbox.js';

/** How long `svc_notify` waits for the relay to take a notification. */
export const NOTIFY_ACK_MS = 15_000;

/** A listener notice whose recipients could not be read is tried again after these waits (ms). */
export const EVENT_RETRY_MS = [1_000, 3_000, 10_000] as const;

const AsksFile = z.object({
  version: z.literal(1),
  asks: z.array(z.object({ id: z.string(), session: z.string(), deadline: z.number().finite() })),
});
type AsksFile = z.infer<typeof AsksFile>;

interface Pending {
  id: string;
  session: string;
  deadline: number;
  seconds: number;
  envelope: Envelope;
  devices: number;
  send: (r: ControlReply) => void;
  settled: boolean;
}

export interface AskServiceDeps {
  /** Sealing for the phones, and who they are (actors/seal/outbox.ts). */
  outbox: Outbox;
  /** ~/.svc/asks.json */
  asksPath: string;
  /** To the root machine. */
  send: (event: ListenerEvent) => void;
  /** Straight to the relay link (queued there while offline). */
  sendToRelay: (frame: ClientFrame) => void;
  log: { info(m: string): void; warn(m: string): void; error(m: string): void };
  now?: () => number;
  notifyAckMs?: number;
}

const newId = (prefix: 'a' | 'n') => `${prefix}_${randomBytes(8).toString('hex')}`;

const failure = (code: AskCode, message?: string): AskOutcome => ({
  state: 'failed',
  code,
  message: message ?? ASK_FAILURE_TEXT[code] ?? code,
});

export function createAskService(deps: AskServiceDeps) {
  const now = deps.now ?? Date.now;
  const pending = new Map<string, Pending>();
  const notes = new Map<string, { send: (r: ControlReply) => void; timer: NodeJS.Timeout }>();
  const save = () => {
    const file: AsksFile = {
      version: 1,
      asks: [...pending.values()].map(({ id, session, deadline }) => ({ id, session, deadline })),
    };
    try {
      writeFileAtomic(deps.asksPath, `${JSON.stringify(file)}\n`, 0o600, false);
    } catch (err) {
      deps.log.error(`could not save the asks in flight ${deps.asksPath}: ${(err as Error).message}`);
    }
  };

  const ask = async (sock: Socket, request: Extract<McpRequest, { type: 'ask' }>, send: (r: ControlReply) => void) => {
    const done = (id: string, outcome: AskOutcome) => send({ ok: true, type: 'ask.done', id, outcome });
    if (!deps.outbox.me) return done('-', failure('no_device_key'));
    const to = await deps.outbox.recipients();
    if (to.length === 0) return done('-', failure('no_device'));
    const id = newId('a');
    const askedAt = now();
    const { deadline, seconds, clamped } = askDeadline(request.timeoutSeconds, askedAt);
    const body: QuestionBody = {
      id,
      session: request.session,
      question: request.question,
      choices: request.choices,
      deadline,
      askedAt,
    };
    const envelope = await deps.outbox.forPhones('ask.question', body, to);
    const entry: Pending = {
      id,
      session: request.session,
      deadline,
      seconds,
      envelope,
      devices: to.length,
      send,
      settled: false,
    };
    pending.set(id, entry);
    save();
    sock.setTimeout(0); // an ask may wait ten minutes
    send({ ok: true, type: 'ask.started', id, deadline, seconds, clamped, devices: to.length });
    // The asker hung up (the agent stopped the tool call): the ask ends for the phone too.
    sock.once('close', () => {
      if (!entry.settled) deps.send({ type: 'ASK.CANCEL', id });
    });
    const input: AskInput = {
      id,
      session: request.session,
      deadline,
      leftMs: deadline - now(),
      choices: request.choices,
      recipients: to,
    };
    deps.send({ type: 'ASK.START', ask: input });
  };

  const notify = async (request: Extract<McpRequest, { type: 'notify' }>, send: (r: ControlReply) => void) => {
    const failed = (id: string, code: AskCode) =>
      send({ ok: true, type: 'notify.done', id, delivered: false, code, message: ASK_FAILURE_TEXT[code] ?? code });
    if (!deps.outbox.me) return failed('-', 'no_device_key');
    const to = await deps.outbox.recipients();
    if (to.length === 0) return failed('-', 'no_device');
    const id = newId('n');
    const body: NotifyBody = {
      id,
      session: request.session,
      kind: 'notify',
      message: request.message,
      at: now(),
      ...(request.title ? { title: request.title } : {}),
    };
    const envelope = await deps.outbox.forPhones('notify', body, to);
    const timer = setTimeout(() => {
      notes.delete(id);
      send({
        ok: true,
        type: 'notify.done',
        id,
        delivered: false,
        code: 'computer_offline',
        message: `the relay did not take the notification within ${Math.round((deps.notifyAckMs ?? NOTIFY_ACK_MS) / 1000)} s (is the listener online?)`,
      });
    }, deps.notifyAckMs ?? NOTIFY_ACK_MS);
    notes.set(id, { send, timer });
    deps.send({
      type: 'NOTIFY.SEND',
      frame: { type: 'notify.new', id, session: request.session, kind: 'notify', envelope },
    });
  };

  const service = {
    /** The control socket's `mcp` handler. */
    handle(sock: Socket, request: McpRequest, send: (r: ControlReply) => void): void {
      const fail = (err: unknown) => {
        deps.log.error(`${request.type} request failed: ${(err as Error).message}`);
        send({ ok: false, type: 'error', error: { code: 'internal', message: (err as Error).message.slice(0, 200) } });
      };
      if (request.type === 'asks') {
        const asks = [...pending.values()].map(({ id, session, deadline, devices }) => ({
          id,
          session,
          deadline,
          devices,
        }));
        send({ ok: true, type: 'asks', asks });
      } else if (request.type === 'ask') ask(sock, request, send).catch(fail);
      else notify(request, send).catch(fail);
    },

    /** `announceAsk`: the sealed question to the relay, with the time left now. */
    announce(id: string): void {
      const entry = pending.get(id);
      if (!entry) return;
      const { session, deadline, envelope } = entry;
      deps.sendToRelay({ type: 'ask.new', id, session, deadline, leftMs: Math.max(0, deadline - now()), envelope });
    },

    /** `settleAsk`: the ask ended; its asker is told once. */
    settle(output: SettledAsk): void {
      const entry = pending.get(output.id);
      if (!entry) return;
      pending.delete(output.id);
      save();
      entry.settled = true;
      const outcome: AskOutcome =
        output.state === 'answered'
          ? {
              state: 'answered',
              text: output.text,
              choice: output.choice,
              deviceId: output.deviceId,
              ...(output.svcState ? { svcState: output.svcState } : {}),
            }
          : output.state === 'failed'
            ? { state: 'failed', code: 'ask_failed', message: ASK_FAILURE_TEXT.ask_failed ?? 'ask_failed' }
            : { state: 'expired', seconds: entry.seconds };
      entry.send({ ok: true, type: 'ask.done', id: output.id, outcome });
    },

    /**
     * `abandonAsks`: the asks' supervisor failed (machines/asks.ts), and with it every ask waiting: each ends `failed`
     * for its asker and closed for the phones.
     */
    abandon(): void {
      for (const id of [...pending.keys()]) {
        deps.sendToRelay({ type: 'ask.closed', id, state: 'expired' });
        service.settle({ id, state: 'failed' });
      }
    },

    /**
     * `notifyAcked`: the relay kept notification `id` in the phones' inbox; `delivered`: a phone got it now, else
     * `reason` (code `not_delivered`: it waits in the inbox).
     */
    acked(id: string, delivered = true, reason?: string): void {
      const note = notes.get(id);
      if (!note) return;
      notes.delete(id);
      clearTimeout(note.timer);
      if (delivered) note.send({ ok: true, type: 'notify.done', id, delivered: true });
      else
        note.send({
          ok: true,
          type: 'notify.done',
          id,
          delivered: false,
          code: 'not_delivered',
          message: reason ?? 'no phone got it now',
        });
    },

    /** A listener event for the phones (an approval waiting, a finished turn): sealed like svc_notify, no reply. */
    event(session: string, kind: 'approval' | 'turn' | 'schedule', message: string): void {
      if (!deps.outbox.me) return;
      void (async () => {
        let to = await deps.outbox.recipients();
        // no phone because the relay's list could not be read (a relay starting, a busy machine): asked again a few
        // times before the notice is given up, so a missed run found at start is not lost to one failed read
        for (let i = 0; to.length === 0 && deps.outbox.listUnread() && i < EVENT_RETRY_MS.length; i++) {
          await new Promise((r) => setTimeout(r, EVENT_RETRY_MS[i]));
          to = await deps.outbox.recipients();
        }
        if (to.length === 0) {
          deps.log.warn(`${kind} notice for ${session} not sent: no phone to seal it for`);
          return;
        }
        const id = newId('n');
        const body: NotifyBody = { id, session, kind, message, at: now() };
        const envelope = await deps.outbox.forPhones('notify', body, to);
        deps.send({ type: 'NOTIFY.SEND', frame: { type: 'notify.new', id, session, kind, envelope } });
      })().catch((err: Error) => deps.log.warn(`could not tell the phones about ${session}: ${err.message}`));
    },

    /** Asks a listener before this one left in asks.json; the file is emptied. */
    leftovers(): string[] {
      let ids: string[] = [];
      let text: string;
      try {
        text = readFileSync(deps.asksPath, 'utf8');
      } catch {
        return ids; // none
      }
      const what = 'asks a listener before this one left are not closed for the phones';
      try {
        const parsed = AsksFile.safeParse(JSON.parse(text));
        if (parsed.success) ids = parsed.data.asks.map((a) => a.id);
        else setAsideBroken(deps.asksPath, 'not an asks file', what, deps.log);
      } catch {
        setAsideBroken(deps.asksPath, 'not JSON', what, deps.log);
      }
      if (ids.length > 0) save();
      return ids;
    },

    /** Asks waiting, for the debug page. */
    inFlight: () => [...pending.values()].map(({ id, session, deadline }) => ({ id, session, deadline })),
  };
  return service;
}

export type AskService = ReturnType<typeof createAskService>;

/**
 * `openAnswer` for `ask.<id>`: only a device the question was sealed for may answer, and only with the key it was
 * sealed with (so a device list changed on the relay since cannot slip another key in).
 */
export function openAnswerLogic(me: DeviceIdentity | null) {
  return async ({ input }: { input: OpenAnswerInput }): Promise<OpenAnswerOutput> => {
    if (!me) return { ok: false, code: 'no_device_key' };
    const from = input.recipients.find((r) => r.deviceId === input.deviceId);
    if (!from) return { ok: false, code: 'not_for_you' };
    let body: AnswerBody;
    try {
      const text = await openText({
        envelope: input.envelope,
        purpose: 'ask.answer',
        me: { id: me.deviceId, privateKey: me.privateKey },
        senderPublicKey: await cryptoKey(from.publicKey),
      });
      const parsed = AnswerBodySchema.safeParse(JSON.parse(text));
      if (!parsed.success) return { ok: false, code: 'bad_seal' };
      body = parsed.data;
    } catch (err) {
      if (err instanceof SealError || err instanceof SyntaxError) return { ok: false, code: 'bad_seal' };
      throw err;
    }
    // The envelope's sender must be the device the relay says answered.
    if ((input.envelope as { from?: unknown }).from !== from.deviceId) return { ok: false, code: 'bad_seal' };
    return { ok: true, body };
  };
}
