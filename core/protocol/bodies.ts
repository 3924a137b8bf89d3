/**
 * What travels inside envelopes (core/seal/seal.ts), by purpose. Every body a device sends carries a sequence stamp
 * `seq` that must increase per sender and purpose, so a relay that replays or reorders envelopes is caught
 * (core/devices/devices.ts checks it); the session it is meant for is inside too, so a relay cannot point a sealed message
 * at another session. docs/protocol.md lists them for people.
 */
import { z } from 'zod/v3';
import { CONTROL_ACTIONS } from './actions.js';
import { MAX_BODY_CHARS, SessionName } from './codes.js';

export const Seq = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

/** Shortest and longest lease a watch may ask for; a watch not renewed within its lease stops. */
export const MIN_LEASE_MS = 2_000;
export const MAX_LEASE_MS = 300_000;
/** Most text one key-input body may type. */
export const MAX_KEYS_TEXT = 4_096;
/** Most named keys in one key-input body. */
export const MAX_KEYS = 64;

/** `agent.command`: a message to type into a session, then submit (`svc agent send`, the app). */
export const CommandBody = z.strictObject({
  text: z.string().max(MAX_BODY_CHARS),
  seq: Seq,
  /** The sender's clock (epoch ms); informational: the relay's replay window decides what is too old. */
  sentAt: z.number().finite(),
  session: SessionName,
});
export type CommandBody = z.infer<typeof CommandBody>;

export { commandTextProblem } from './limits.js';

/** `pane.watch`: start or renew a live pane for the sending device. */
export const WatchBody = z.strictObject({
  session: SessionName,
  seq: Seq,
  leaseMs: z.number().int().min(MIN_LEASE_MS).max(MAX_LEASE_MS),
});
export type WatchBody = z.infer<typeof WatchBody>;

/** An approval prompt's fingerprint (core/agents/approvals.ts). */
export const Fingerprint = z.string().regex(/^[0-9a-f]{16}$/);

/**
 * A schedule request from the phone, in a `pane.keys` body (spec 4.8.9): `add` makes one for the session the body
 * names, run where that session ran with its agent (the phone never chooses a directory, command or arguments);
 * the times are what `svc schedule add` takes. `rm` removes schedule `id`.
 */
export const ScheduleRequest = z.discriminatedUnion('action', [
  z.strictObject({
    action: z.literal('add'),
    at: z.string().max(5).optional(),
    days: z.string().max(32).optional(),
    every: z.string().max(8).optional(),
    prompt: z.string().min(1).max(4000).optional(),
    maxRuntime: z.string().max(8).optional(),
  }),
  z.strictObject({ action: z.literal('rm'), id: z.string().regex(/^[0-9a-f]{6}$/) }),
]);
export type ScheduleRequest = z.infer<typeof ScheduleRequest>;

/** One schedule as `svc schedule --json` and the phone show it (core/schedules/book.ts viewSchedule). */
export const ScheduleViewBody = z.strictObject({
  id: z.string().max(16),
  agent: z.string().max(16),
  agentName: z.string().max(64),
  project: z.string().max(128),
  cwd: z.string().max(4096),
  session: SessionName,
  when: z.string().max(64),
  prompt: z.string().max(4000).nullable(),
  maxRuntime: z.string().max(16),
  next: z.number().finite().nullable(),
  last: z
    .strictObject({
      at: z.number().finite(),
      result: z.string().max(32),
      text: z.string().max(200),
      note: z.string().max(300).optional(),
    })
    .nullable(),
  running: z.boolean(),
});

/** `schedules` (listener → its own device and the phones, with the inventory): the computer's schedules. */
export const SchedulesBody = z.strictObject({
  schedules: z.array(ScheduleViewBody).max(20),
  /** When the listener sealed it (epoch ms, the computer's clock). */
  at: z.number().finite(),
});
export type SchedulesBody = z.infer<typeof SchedulesBody>;

/**
 * `pane.keys`: text typed as is (no submit), then named keys (core/panes/keys.ts ALLOWED_KEYS), in that order; or
 * the answer to an approval card: the choice and the fingerprint of the prompt the card showed, typed by the
 * listener only while the screen shows that very prompt (spec 4.11.2). Keys sent while an approval prompt is on the
 * screen carry the `fingerprint` of the prompt the sender saw (the Watch screen reads it from the pane it draws);
 * without it, or with another, they are refused `prompt_changed`.
 */
/** A file-view request from the phone, in a `pane.keys` body (spec 4.11.3): list, read a file, or the diff. */
export const FileRequest = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('list') }),
  z.strictObject({ op: z.literal('read'), path: z.string().min(1).max(4096) }),
  /** One file's uncommitted changes, or the project's when `path` is absent. */
  z.strictObject({ op: z.literal('diff'), path: z.string().min(1).max(4096).optional() }),
]);
export type FileRequest = z.infer<typeof FileRequest>;

/**
 * `file` (listener → the device that asked; spec 4.11.3): a listing (`entries`), a file's text or a diff (`text`,
 * secret-looking strings masked, `masked` of them), or why not (`refused`). A secret file is listed, never shown.
 */
export const FileResultBody = z.strictObject({
  session: SessionName,
  seq: z.number().int().safe().nonnegative(),
  op: z.enum(['list', 'read', 'diff', 'transfer']),
  path: z.string().max(4096).optional(),
  /** A transfer: how many bytes the computer holds of it now, and the name it was saved as once complete. */
  received: z.number().int().safe().nonnegative().optional(),
  savedAs: z.string().max(4096).optional(),
  entries: z
    .array(
      z.strictObject({
        path: z.string().max(4096),
        size: z.number().finite().nonnegative(),
        secret: z.boolean().optional(),
        changed: z.boolean().optional(),
      }),
    )
    .max(5_000)
    .optional(),
  /** Paths not listed (over the listing's limit). */
  more: z.number().int().safe().nonnegative().optional(),
  text: z.string().max(300_000).optional(),
  masked: z.number().int().safe().nonnegative().optional(),
  truncated: z.boolean().optional(),
  binary: z.boolean().optional(),
  secret: z.boolean().optional(),
  size: z.number().finite().nonnegative().optional(),
  refused: z.string().max(64).optional(),
});
export type FileResultBody = z.infer<typeof FileResultBody>;

/**
 * One chunk of a file sent to the computer (spec 4.11.4), in a `pane.keys` body: transfer `id` (the phone's), the
 * file's name, size and SHA-256, and `data` (base64, at most TRANSFER_CHUNK_BYTES) from `offset`. Without `data` it
 * asks where the transfer stands (to resume after a dropped connection).
 */
export const TransferChunk = z.strictObject({
  id: z.string().regex(/^[0-9a-f]{16}$/),
  name: z.string().min(1).max(1024),
  size: z.number().int().safe().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  offset: z.number().int().safe().nonnegative(),
  data: z
    .string()
    .max(270_000)
    .regex(/^[A-Za-z0-9+/]*={0,2}$/)
    .optional(),
});
export type TransferChunk = z.infer<typeof TransferChunk>;

/**
 * A new session from the phone (issue 30 item 3), in a `pane.keys` body: `options` asks which folders and agents the
 * computer offers; `start` runs registry agent `agent` in folder `cwd` (one of the folders offered: svc ran an agent
 * there), in a `--wt` worktree of `branch` when given, and types `prompt` once the agent reads idle. The phone never
 * names a command, arguments or any other path. The body's `session` is core/sessions/newSession.ts NEW_SESSION_TARGET.
 */
export const LaunchRequest = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('options') }),
  z.strictObject({
    op: z.literal('start'),
    cwd: z.string().min(1).max(4096),
    agent: z.string().regex(/^A\d{1,2}$/),
    branch: z.string().min(1).max(200).optional(),
    prompt: z.string().min(1).max(4000).optional(),
  }),
]);
export type LaunchRequest = z.infer<typeof LaunchRequest>;

/**
 * `launch` (listener → the device that asked): what a new session can be (`projects`: folders svc ran agents in,
 * newest first; `agents`: the registry agents on the computer's PATH), or the session a `start` made (`started`), or
 * why not (`refused`, `message`).
 */
// not strict: an app cached before a field was added still opens the answer of a newer listener
export const LaunchResultBody = z.object({
  seq: z.number().int().safe().nonnegative(),
  op: z.enum(['options', 'start']),
  projects: z
    .array(
      z.strictObject({
        cwd: z.string().max(4096),
        name: z.string().max(128),
        /** When svc last saw an agent there (epoch seconds). */
        at: z.number().finite(),
        /** The agents svc ran there, newest first (registry ids). */
        agents: z.array(z.string().max(16)).max(20),
      }),
    )
    .max(50)
    .optional(),
  agents: z
    .array(
      z.strictObject({
        id: z.string().max(16),
        name: z.string().max(64),
        /** A first prompt can be typed into it (core/agents/registry.ts PROMPT_AGENTS). */
        prompt: z.boolean(),
      }),
    )
    .max(20)
    .optional(),
  started: SessionName.optional(),
  refused: z.string().max(64).optional(),
  message: z.string().max(300).optional(),
  /** Refused because `svc new-session off` holds there. */
  off: z.boolean().optional(),
});
export type LaunchResultBody = z.infer<typeof LaunchResultBody>;

export const KeysBody = z
  .strictObject({
    session: SessionName,
    seq: Seq,
    keys: z.array(z.string().max(16)).max(MAX_KEYS).optional(),
    text: z.string().max(MAX_KEYS_TEXT).optional(),
    fingerprint: Fingerprint.optional(),
    answer: z.strictObject({ fingerprint: Fingerprint, choice: z.number().int().min(0).max(15) }).optional(),
    /** Session control (core/sessions/control.ts): end, kill (force), resume or forget the session named. */
    control: z.enum(CONTROL_ACTIONS).optional(),
    /** Schedules (spec 4.8.9): make one for the session named (an agent session this computer ran), or remove one. */
    schedule: ScheduleRequest.optional(),
    /** File view (spec 4.11.3): answered with a sealed `file` result in `keys.result`, nothing typed. */
    file: FileRequest.optional(),
    /** A chunk of a file sent to the computer (spec 4.11.4): answered with a sealed `file` result, nothing typed. */
    transfer: TransferChunk.optional(),
    /** A new session (issue 30): answered with a sealed `launch` result in `keys.result`, nothing typed. */
    launch: LaunchRequest.optional(),
  })
  .refine(
    (b) =>
      [
        (b.keys?.length ?? 0) > 0 || (b.text?.length ?? 0) > 0,
        b.answer !== undefined,
        b.control !== undefined,
        b.schedule !== undefined,
        b.file !== undefined,
        b.transfer !== undefined,
        b.launch !== undefined,
      ].filter(Boolean).length === 1,
    'keys or text, an answer, a control action, a schedule, a file request or a new session',
  );
export type KeysBody = z.infer<typeof KeysBody>;

/**
 * What a phone asks of the listener's IO in a `pane.keys` body instead of typing: decoded once, here, and answered by
 * actors/sessions/phoneRequests.ts, one case per kind. A new kind of request is a field of KeysBody and a member
 * here, and a case there.
 */
export type PhoneRequest =
  /** Resume or forget a past session (core/sessions/control.ts). */
  | { kind: 'past'; action: 'resume' | 'forget' }
  /** Make or remove a schedule (spec 4.8.9). */
  | { kind: 'schedule'; request: ScheduleRequest }
  /** The file view (spec 4.11.3). */
  | { kind: 'file'; request: FileRequest }
  /** A chunk of a file sent to the computer (spec 4.11.4). */
  | { kind: 'transfer'; chunk: TransferChunk }
  /** A new session (issue 30). */
  | { kind: 'launch'; request: LaunchRequest };

/**
 * What a checked `pane.keys` body asks for, decoded once (`phoneInputOf`): one of these, never two (KeysBody's
 * refinement). A session's actor branches on `kind`; a `request` never reaches it (machines/delivery.ts).
 */
export type PhoneInput =
  /** Keys and text to type; `fingerprint`: the approval prompt the sender saw, when one was on its screen. */
  | { kind: 'type'; keys: string[]; text: string; fingerprint?: string }
  /** An approval card's answer: the keys of that choice, typed for that very prompt only (spec 4.11.2). */
  | { kind: 'answer'; fingerprint: string; choice: number }
  /** End (the agent's exit command) or Force end (tmux kill-session) of the running session. */
  | { kind: 'control'; action: 'end' | 'kill' }
  /** Asked of the listener's IO instead of typing. */
  | { kind: 'request'; request: PhoneRequest };

export function phoneInputOf(body: KeysBody): PhoneInput {
  if (body.answer) return { kind: 'answer', fingerprint: body.answer.fingerprint, choice: body.answer.choice };
  if (body.control === 'end' || body.control === 'kill') return { kind: 'control', action: body.control };
  if (body.control === 'resume' || body.control === 'forget')
    return { kind: 'request', request: { kind: 'past', action: body.control } };
  if (body.schedule) return { kind: 'request', request: { kind: 'schedule', request: body.schedule } };
  if (body.file) return { kind: 'request', request: { kind: 'file', request: body.file } };
  if (body.transfer) return { kind: 'request', request: { kind: 'transfer', chunk: body.transfer } };
  if (body.launch) return { kind: 'request', request: { kind: 'launch', request: body.launch } };
  return {
    kind: 'type',
    keys: body.keys ?? [],
    text: body.text ?? '',
    ...(body.fingerprint ? { fingerprint: body.fingerprint } : {}),
  };
}

/**
 * `pane.frame` (listener → app): rows of the pane by index. A full frame has every row `0 … height-1`; a change
 * frame only the rows that differ from the previous frame, and the app drops rows at or beyond `height`.
 *
 * The pane's size is inside, never outside the envelope: `height` is the pane's rows (`#{pane_height}`) and `width`
 * its columns (`#{pane_width}`). Both fields were in the first version of this body (`width` optional, unset by
 * earlier listeners, whose `height` counted the captured rows), so the shape is unchanged: older apps accept the
 * frames of newer listeners and the other way round, and the body needs no version number. A field added later
 * would: the schema is strict, so an older app would drop every frame that has it.
 */
export const FrameBody = z.strictObject({
  session: SessionName,
  frameSeq: z.number().int().safe().nonnegative(),
  full: z.boolean(),
  height: z.number().int().safe().nonnegative(),
  /** Columns of the pane: the app's terminal is this wide, so a long row never wraps onto the next one. */
  width: z.number().int().positive().max(10_000).optional(),
  rows: z.record(z.string().regex(/^\d+$/), z.string()),
});
export type FrameBody = z.infer<typeof FrameBody>;

/**
 * `approval` (listener → its own device and the phones, in the session's inventory record): what an approval
 * prompt on the session's screen asks (core/agents/approvals.ts). `readable: false`: a dialog whose layout the
 * rules do not know (a new version of the agent), the app says so and offers the live pane.
 */
export const ApprovalCardBody = z.strictObject({
  session: SessionName,
  agent: z.string().max(16),
  fingerprint: Fingerprint,
  readable: z.boolean(),
  tool: z.string().max(512),
  detail: z.array(z.string().max(2_000)).max(200),
  question: z.string().max(512),
  choices: z.array(z.strictObject({ label: z.string().max(512), always: z.boolean() })).max(16),
  highlighted: z.number().int().safe().nonnegative().nullable(),
  /** When the listener read it (epoch ms, the computer's clock). */
  at: z.number().finite(),
});
export type ApprovalCardBody = z.infer<typeof ApprovalCardBody>;

const HistoryItem = z.discriminatedUnion('k', [
  z.strictObject({ k: z.literal('prompt'), text: z.string().max(8_000) }),
  z.strictObject({ k: z.literal('reply'), text: z.string().max(8_000) }),
  z.strictObject({
    k: z.literal('tool'),
    id: z.string().max(128),
    name: z.string().max(128),
    target: z.string().max(300).optional(),
    lines: z.number().int().safe().nonnegative().optional(),
  }),
  z.strictObject({ k: z.literal('result'), id: z.string().max(128), ok: z.boolean() }),
  z.strictObject({
    k: z.literal('tokens'),
    input: z.number().finite().nonnegative(),
    output: z.number().finite().nonnegative(),
  }),
  z.strictObject({
    k: z.literal('todos'),
    items: z
      .array(z.strictObject({ text: z.string().max(100), status: z.enum(['pending', 'in_progress', 'completed']) }))
      .max(30),
  }),
]);

/**
 * `history.chunk` (listener → its own device and the devices listed when it was sealed; spec 4.11.1, 4.12): items of
 * a session's transcript (core/transcripts/history.ts). `reset`: the transcript was replaced or cut, earlier items of
 * the session are superseded. A device paired later is not among the recipients and cannot open it.
 */
export const HistoryChunkBody = z.strictObject({
  session: SessionName,
  seq: z.number().int().safe().nonnegative(),
  reset: z.boolean(),
  items: z.array(HistoryItem).max(40),
  /** When the listener sealed it (epoch ms, the computer's clock). */
  at: z.number().finite(),
});
export type HistoryChunkBody = z.infer<typeof HistoryChunkBody>;

/** The bodies a listener opens, by purpose. */
export const INBOUND_BODIES = {
  'agent.command': CommandBody,
  'pane.watch': WatchBody,
  'pane.keys': KeysBody,
} as const;
export type InboundPurpose = keyof typeof INBOUND_BODIES;
export type InboundBody<P extends InboundPurpose> = z.infer<(typeof INBOUND_BODIES)[P]>;
