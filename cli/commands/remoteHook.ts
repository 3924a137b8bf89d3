/**
 * `svc remote-hook <agent>` (spec 4.5, 4.13): the entry an agent's prompt-submit hook runs. Reads the hook's input
 * on stdin, and when the prompt is exactly the text the listener just typed for this project (its marker, spec 2.3:
 * exact sha256, fresh, consumed on match) prints the agent's hook output that tells the model the person drives
 * the session from the phone. It never blocks the agent: everything ends within `TIME_LIMIT_MS`, and any failure
 * exits 0 with nothing on stdout and one line in `~/.svc/remote-hook.log`. Decisions: core/hooks/remoteOrigin.ts.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { defineCommand } from 'citty';
import { ensurePrivateDir } from '../../actors/files.js';
import { markerPath } from '../../actors/sessions/marker.js';
import { svcPaths } from '../../core/daemon/paths.js';
import {
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

function readStdin(limitMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    const timer = setTimeout(() => reject(new Error('no hook input in time')), limitMs);
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk) => {
      data += chunk;
    });
    process.stdin.on('end', () => {
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

export default defineCommand({
  meta: {
    name: 'remote-hook',
    description: 'Hook entry for remote-origin detection: svc remote-hook claude|codex|gemini',
  },
  args: { agent: { type: 'positional', required: true, description: 'claude, codex or gemini' } },
  async run({ args }) {
    const home = homedir();
    const deadline = setTimeout(() => {
      log(home, `${args.agent}: time limit reached, nothing done`);
      process.exit(0);
    }, TIME_LIMIT_MS);
    try {
      const agent = String(args.agent);
      if (!isHookAgent(agent)) throw new Error(`unknown agent ${agent}`);
      const input = parseHookInput(await readStdin(TIME_LIMIT_MS - 50));
      if (!input) throw new Error('hook input without prompt and cwd');
      const path = markerPath(svcPaths(home).markers, input.cwd);
      const match = matchRemote({
        marker: readMarker(path),
        promptSha256: createHash('sha256').update(input.prompt).digest('hex'),
        projectDir: input.cwd,
        nowSeconds: Math.floor(Date.now() / 1000),
        muted: false,
      });
      if (!match.remote) {
        // a prompt typed at the keyboard is the common case: nothing to log
        if (match.why !== 'no marker' && match.why !== 'different text')
          log(home, `${agent}: not remote (${match.why})`);
      } else if (consume(path)) {
        process.stdout.write(`${hookOutput(agent)}\n`);
        log(home, `${agent}: remote prompt in ${match.session}`);
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
