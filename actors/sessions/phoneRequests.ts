/**
 * What the phone asks of the computer beyond typing (core/protocol/bodies.ts PhoneRequest), carried out for the root
 * machine's `phoneRequest` (machines/listener.ts): resuming or forgetting a past session, making or removing a
 * schedule, reading the project's files, receiving a file, starting a new session. Each answer goes back to the device
 * that asked, as a `keys.result` (through SESSION.KEYS_RESULT, or sealed for that device when it carries content).
 * A new kind of request is a member of PhoneRequest (with its KeysBody field) and a case in `handle` here.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { SvcPaths } from '../../core/daemon/paths.js';
import type {
  FileRequest,
  LaunchRequest,
  LaunchResultBody,
  PhoneRequest,
  ScheduleRequest,
  TransferChunk,
} from '../../core/protocol/bodies.js';
import type { ClientFrame, RefusalCode } from '../../core/protocol/index.js';
import { decideControl } from '../../core/sessions/control.js';
import { decideLaunchRequest, LAUNCH_BUCKET, NEW_SESSION_TARGET } from '../../core/sessions/newSession.js';
import { keysResultFrame } from '../../core/sessions/routing.js';
import { type BucketState, fullBucket, takeToken } from '../../core/tokenBucket.js';
import type { PhoneRef } from '../../machines/session.js';
import type { Logger } from '../daemon/logger.js';
import { createFileView, type FileAnswer } from '../files/view.js';
import type { RootHandle } from '../rootHandle.js';
import type { scheduleAdapters } from '../schedules/runs.js';
import type { Outbox } from '../seal/outbox.js';
import type { Tmux } from '../tmux/tmux.js';
import { desktopNotice } from '../transfer/notice.js';
import { createReceiver } from '../transfer/receive.js';
import type { createNewSessions } from './newSession.js';
import type { createPastSessions } from './pastSessions.js';

type Ref = PhoneRef;

export interface PhoneRequestDeps {
  paths: SvcPaths;
  home?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  log: Logger;
  /** Sealing for the phones (actors/seal/outbox.ts): an answer goes to the asking device alone. */
  outbox: Outbox;
  tmux: Tmux;
  past: ReturnType<typeof createPastSessions>;
  /** Tell the root the past sessions changed. */
  tellPast: () => void;
  schedules: ReturnType<typeof scheduleAdapters>;
  newSessions: ReturnType<typeof createNewSessions>;
  /** The root: its events and its context (actors/rootHandle.ts). */
  root: RootHandle;
}

export function createPhoneRequests(deps: PhoneRequestDeps) {
  const { log, paths } = deps;
  const answerKeys = (session: string, ref: Ref, state: 'typed' | 'refused', code?: RefusalCode, message?: string) =>
    deps.root.send({
      type: 'SESSION.KEYS_RESULT',
      session,
      ref,
      state,
      ...(code ? { code } : {}),
      ...(message ? { message } : {}),
    });
  const live = (session: string) => deps.root.context()?.sessions[session];
  const launchBuckets = new Map<string, BucketState>();
  /** Seals `body` for the device of `ref` alone (with the key this computer pinned for it) in its `keys.result`. */
  const answerSealed = async (
    purpose: 'file' | 'launch',
    body: object,
    session: string,
    ref: Ref,
    refused: string | undefined,
  ) => {
    const envelope = await deps.outbox.forPinned(purpose, body, ref.deviceId);
    const to = { session, deviceId: ref.deviceId, connection: ref.connection };
    const frame = keysResultFrame(to, refused ? 'refused' : 'typed', refused, ref.seq);
    if (!deps.root.toRelay({ ...frame, envelope } as ClientFrame))
      log.warn(`${purpose} answer for ${ref.deviceId}: no relay link`);
  };

  // spec 4.11.3: the phone browses a session's project and reads files and diffs, sealed both ways
  const files = createFileView({
    settingsPath: join(paths.dir, 'file-view.json'),
    logPath: join(paths.stateDir, 'file-view.log'),
    home: deps.home ?? homedir(),
  });
  // spec 4.11.4: files sent from the phone, received in sealed chunks, placed under ~/Downloads/Svc
  const receiver = createReceiver({
    incoming: join(paths.dir, 'incoming'),
    downloads: join(deps.home ?? homedir(), 'Downloads', 'Svc'),
    notice: desktopNotice(deps.env),
    log: (line) => deps.log.info(line),
  });
  const receive = (chunk: TransferChunk, device: string): FileAnswer => {
    let a: ReturnType<typeof receiver.take>;
    try {
      a = receiver.take(device, chunk);
    } catch (err) {
      a = { ok: false, code: 'inject_failed', message: (err as Error).message };
    }
    if (!a.ok) log.warn(`file transfer ${chunk.id} from ${device}: refused ${a.code} (${a.message})`);
    if (a.ok && a.savedAs) log.info(`file transfer ${chunk.id} from ${device}: saved as ${a.savedAs}`);
    return {
      op: 'transfer',
      received: a.received ?? 0,
      ...(a.ok ? (a.savedAs ? { savedAs: a.savedAs } : {}) : { refused: a.code }),
    };
  };

  const requests = {
    /**
     * A new session from the phone (core/sessions/newSession.ts): what can be started, or start one; answered sealed
     * for the device that asked (`launch`), with the name of the session started.
     */
    launch(request: LaunchRequest, ref: Ref): void {
      const setting = deps.newSessions.setting();
      if (setting.problem) log.warn(setting.problem);
      const offered = deps.newSessions.offered();
      const d = decideLaunchRequest(request, { off: setting.off, ...offered });
      const answer = async (): Promise<LaunchResultBody> => {
        if (d.kind === 'refuse') {
          const { code: refused, message, off } = d;
          return { seq: ref.seq, op: request.op, refused, message, ...(off ? { off } : {}) };
        }
        if (d.kind === 'options') return { seq: ref.seq, op: 'options', ...offered };
        // a phone (or a relay that got a device listed) cannot start agents without end: a few a minute per device
        const limit = takeToken(
          LAUNCH_BUCKET,
          launchBuckets.get(ref.deviceId) ?? fullBucket(LAUNCH_BUCKET, Date.now()),
          Date.now(),
        );
        launchBuckets.set(ref.deviceId, limit.state);
        if (!limit.allowed) {
          const message = `too many new sessions from this phone; again in ${Math.ceil(limit.retryAfterMs / 1000)} s`;
          return { seq: ref.seq, op: 'start', refused: 'rate_limited', message };
        }
        const started = await deps.newSessions
          .start(d.cwd, d.agent, d.branch, d.prompt)
          .catch((err: Error) => ({ ok: false as const, message: err.message.slice(0, 300) }));
        if (!started.ok) return { seq: ref.seq, op: 'start', refused: 'inject_failed', message: started.message };
        return { seq: ref.seq, op: 'start', started: started.name };
      };
      void answer()
        .then(async (body) => {
          const what =
            request.op === 'start' ? `new session ${request.agent} in ${request.cwd}` : 'new-session options';
          if (body.refused) log.warn(`${what}, asked by ${ref.deviceId}: refused ${body.refused} (${body.message})`);
          else if (body.started) log.info(`${what}, asked by ${ref.deviceId}: started ${body.started}`);
          await answerSealed('launch', body, NEW_SESSION_TARGET, ref, body.refused);
        })
        .catch((err: Error) => log.warn(`new session, asked by ${ref.deviceId}: not answered (${err.message})`));
    },

    /** Resume or forget a past session (core/sessions/control.ts). */
    controlPast(session: string, action: 'resume' | 'forget', ref: Ref, isLive: boolean) {
      const d = decideControl(action, session, isLive ? live(session) : undefined, deps.past.find(session));
      if (d.kind === 'refuse') return answerKeys(session, ref, 'refused', d.code);
      if (d.kind === 'forget') {
        deps.past.forget(d.name);
        log.info(`${session}: forgotten (past sessions), asked by ${ref.deviceId}`);
        answerKeys(session, ref, 'typed');
        return deps.tellPast();
      }
      if (d.kind !== 'resume') return answerKeys(session, ref, 'refused', 'session_not_found');
      void deps.past.resume(d.past, deps.tmux).then((outcome) => {
        if (!outcome.ok) {
          log.warn(`${session}: not resumed (${outcome.code}): ${outcome.message}`);
          return answerKeys(session, ref, 'refused', outcome.code, outcome.message);
        }
        log.info(`${session}: resumed as ${outcome.name}, asked by ${ref.deviceId}`);
        answerKeys(session, ref, 'typed');
        deps.tellPast();
      });
    },

    /** Make or remove a schedule (spec 4.8.9; actors/schedules/runs.ts). */
    controlSchedule(session: string, request: ScheduleRequest, ref: Ref, isLive: boolean): void {
      const outcome = deps.schedules.fromPhone(
        session,
        request,
        isLive ? live(session) : undefined,
        deps.past.find(session),
      );
      const what = request.action === 'add' ? `schedule for ${session}` : `removing schedule ${request.id}`;
      if (!outcome.ok) log.warn(`${what}, asked by ${ref.deviceId}: refused ${outcome.code} (${outcome.message})`);
      else log.info(`${what}, asked by ${ref.deviceId}: ${request.action === 'add' ? `made ${outcome.id}` : 'done'}`);
      if (outcome.ok) answerKeys(session, ref, 'typed');
      else answerKeys(session, ref, 'refused', outcome.code, outcome.message);
      // the list the phones see is sealed again at once, not at the next tick
      if (outcome.ok) deps.root.send({ type: 'SCHEDULES.CHANGED' });
    },

    /** Answer a file-view request or take a chunk of a file, sealed for the device that asked only. */
    viewFiles(session: string, request: FileRequest | { op: 'transfer'; chunk: TransferChunk }, ref: Ref): void {
      const what =
        request.op === 'transfer'
          ? `file transfer ${request.chunk.id} (${request.chunk.offset}/${request.chunk.size})`
          : `file view ${request.op}${'path' in request && request.path ? ` ${request.path}` : ''} in ${session}`;
      const answered =
        request.op === 'transfer'
          ? Promise.resolve(receive(request.chunk, ref.deviceId))
          : files.answer(session, live(session), request, ref.deviceId);
      void answered
        .then(async (result) => {
          await answerSealed('file', { session, seq: ref.seq, ...result }, session, ref, result.refused);
          log.info(`${what}, asked by ${ref.deviceId}: ${result.refused ?? 'answered'}`);
        })
        .catch((err: Error) => log.warn(`${what}, asked by ${ref.deviceId}: not answered (${err.message})`));
    },
  };
  return {
    /**
     * The root's `phoneRequest`: what a phone asked instead of typing (core/protocol/bodies.ts PhoneRequest), one
     * case per kind. `live`: the fresh reading shows a running session of that name.
     */
    handle({ session, request, ref, live }: { session: string; request: PhoneRequest; ref: Ref; live: boolean }) {
      switch (request.kind) {
        case 'past':
          return requests.controlPast(session, request.action, ref, live);
        case 'schedule':
          return requests.controlSchedule(session, request.request, ref, live);
        case 'file':
          return requests.viewFiles(session, request.request, ref);
        case 'transfer':
          return requests.viewFiles(session, { op: 'transfer', chunk: request.chunk }, ref);
        case 'launch':
          return requests.launch(request.request, ref);
        default: {
          // a kind without its case here does not compile
          const unhandled: never = request;
          return unhandled;
        }
      }
    },
  };
}
