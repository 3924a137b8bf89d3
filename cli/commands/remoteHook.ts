/**
 * `svc remote-hook <agent>` (spec 4.5, 4.13): the entry an agent's prompt-submit hook runs. Reads the hook's input
 * on stdin, and when the prompt is exactly the text the listener just typed for this project (its marker, spec 2.3:
 * exact sha256, fresh, consumed on match) prints the agent's hook output that tells the model the person drives
 * the session from the phone. It never blocks the agent: everything ends within `TIME_LIMIT_MS`, and any failure
 * exits 0 with nothing on stdout and one line in `~/.svc/remote-hook.log`. Decisions: core/hooks/remoteOrigin.ts.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { defineCommand } from 'citty';
import { ControlUnavailable, controlRequest } from '../../actors/daemon/controlSocket.js';
import { ensurePrivateDir } from '../../actors/files.js';
import { ancestry } from '../../actors/hooks/ancestry.js';
import { readMutes } from '../../actors/hooks/muteFile.js';
import { markerPath } from '../../actors/sessions/marker.js';
import { svcPaths } from '../../core/daemon/paths.js';
import { type HookEvent, PaneId } from '../../core/hooks/control.js';
import { isMuted } from '../../core/hooks/mute.js';
import {
  type AgentSessionRef,
  hookOutput,
  isHookAgent,
  type MarkerRecord,
  matchRemote,
  parseHookInput,
} from '../../core/hooks/remoteOrigin.js';

/** The whole hook, from start to exit: a fraction of a second. */
export const TIME_LIMIT_MS = 400;

function log(home: string, line: string): void {
  try {
    ensurePrivateDir(svcPaths(home).dir);
    appendFileSync(join(svcPaths(home).dir, 'remote-hook.log'), `${new Date().toISOString()} ${line}\n`, {
      mode: 0o600,
    });
  } catch {
    // nowhere to say it: stay quiet
  }
}

/**
 * Stdin to its end, or an error after `limitMs`. The limit counts our waiting, not the time the process was not
 * running: a loop turn runs its timers before it reads, so a hook descheduled past the limit on a busy machine would
 * give up on input already in the pipe. On the timer it lets the loop read once more (setImmediate runs after the
 * read) before it gives up.
 */
function readStdin(limitMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    let ended = false;
    const timer = setTimeout(
      () => setImmediate(() => (ended ? undefined : reject(new Error('no hook input in time')))),
      limitMs,
    );
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk) => {
      data += chunk;
    });
    process.stdin.on('end', () => {
      ended = true;
      clearTimeout(timer);
      resolve(data);
    });
    process.stdin.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

function readMarker(path: string): MarkerRecord | null {
  try {
    const m = JSON.parse(readFileSync(path, 'utf8')) as MarkerRecord;
    return typeof m?.sha256 === 'string' && typeof m.epoch === 'number' ? m : null;
  } catch {
    return null;
  }
}

/** Take the marker for this hook only: a rename succeeds for one caller; the others find it gone. */
function consume(path: string): boolean {
  const taken = `${path}.${process.pid}.taken`;
  try {
    renameSync(path, taken);
    rmSync(taken, { force: true });
    return true;
  } catch {
    return false;
  }
}

/** How long the hook waits for the listener's answer: what is left of the time limit, at most this. */
const LISTENER_WAIT_MS = 250;

/** Tell the running listener; quietly nothing when none answers in time (the hook never blocks the agent). */
async function tellListener(
  home: string,
  request: { event: HookEvent; agent: string; session?: string; sha256?: string } & AgentSessionRef,
): Promise<string> {
  const pane = process.env.TMUX_PANE;
  const parents = request.transcript || request.agentSession ? ancestry() : undefined;
  try {
    const reply = await controlRequest(
      svcPaths(home).dir,
      {
        type: 'hook',
        ...request,
        ...(PaneId.safeParse(pane).success ? { pane } : {}),
        ...(parents ? { ancestry: parents } : {}),
      },
      'hook',
      { timeoutMs: LISTENER_WAIT_MS },
    );
    return `${reply.outcome}${reply.session ? ` ${reply.session}` : ''}`;
  } catch (err) {
    return `listener not told (${err instanceof ControlUnavailable ? 'not running' : (err as Error).message})`;
  }
}

function mutedHere(home: string, cwd: string): boolean {
  try {
    const list = readMutes(svcPaths(home).dir);
    if (!list.all && list.projects.length === 0) return false;
    return isMuted(list, realpathSync(cwd));
  } catch (err) {
    log(home, `${(err as Error).message}: counted as nothing muted`);
    return false;
  }
}

export default defineCommand({
  meta: {
    name: 'remote-hook',
    description: 'Hook entry for remote-origin detection: svc remote-hook claude|codex|gemini|pi',
  },
  args: { agent: { type: 'positional', required: true, description: 'claude, codex, gemini or pi' } },
  async run({ args }) {
    const home = homedir();
    const deadline = setTimeout(() => {
      log(home, `${args.agent}: time limit reached, nothing done`);
      process.exit(0);
    }, TIME_LIMIT_MS);
    try {
      const agent = String(args.agent);
      if (!isHookAgent(agent)) throw new Error(`unknown agent ${agent}`);
      const input = parseHookInput(await readStdin(TIME_LIMIT_MS - LISTENER_WAIT_MS - 50));
      if (!input) throw new Error('hook input is not a prompt, a stop or a start event with a cwd');
      // the agent's own session (its id and transcript file), told with every event
      const ref: AgentSessionRef = {
        ...(input.transcript ? { transcript: input.transcript } : {}),
        ...(input.agentSession ? { agentSession: input.agentSession } : {}),
      };
      if (input.kind === 'stop') {
        log(home, `${agent}: turn finished: ${await tellListener(home, { event: 'finished', agent, ...ref })}`);
        return;
      }
      if (input.kind === 'start') {
        // which conversation runs in this pane, from its start (the listener pins it); nothing printed
        if (ref.transcript || ref.agentSession) await tellListener(home, { event: 'started', agent, ...ref });
        return;
      }
      const path = markerPath(svcPaths(home).markers, input.cwd);
      const promptSha256 = createHash('sha256').update(input.prompt).digest('hex');
      const match = matchRemote({
        marker: readMarker(path),
        promptSha256,
        projectDir: input.cwd,
        nowSeconds: Math.floor(Date.now() / 1000),
        muted: mutedHere(home, input.cwd),
      });
      if (match.remote && consume(path)) {
        // the model hears it even when the listener is not there to be told
        process.stdout.write(`${hookOutput(agent)}\n`);
        const told = await tellListener(home, {
          event: 'remote',
          agent,
          session: match.session,
          sha256: promptSha256,
          ...ref,
        });
        log(home, `${agent}: remote prompt in ${match.session}: ${told}`);
      } else if (!match.remote && match.why !== 'muted') {
        // typed at the keyboard: sticky REMOTE ends for the session holding this pane
        const told = await tellListener(home, { event: 'keyboard', agent, ...ref });
        if (match.why !== 'no marker' && match.why !== 'different text')
          log(home, `${agent}: not remote (${match.why})`);
        if (told.startsWith('local')) log(home, `${agent}: prompt from the keyboard: ${told}`);
      }
    } catch (err) {
      log(home, `${String(args.agent)}: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      clearTimeout(deadline);
      // an agent that keeps our stdin open must not keep us alive
      process.stdin.destroy();
      process.exitCode = 0;
    }
  },
});
