/**
 * Runs the person's tunnel program in front of the local relay (core/relay/tunnel.ts decides the command, reads
 * the URL, words the failures): `url` resolves with the public HTTPS URL, or rejects with the one line to say;
 * `died` is called once if the program ends after giving its URL; `stop()` ends it (SIGTERM, then SIGKILL).
 */
import { spawn } from 'node:child_process';
import {
  TUNNEL_URL_TIMEOUT_MS,
  type TunnelKind,
  tunnelCommand,
  tunnelFailure,
  tunnelUrl,
} from '../../core/relay/tunnel.js';

export interface RunningTunnel {
  url: Promise<string>;
  stop(): Promise<void>;
}

export function startTunnel(opts: {
  kind: TunnelKind;
  localUrl: string;
  publicly: boolean;
  died: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}): RunningTunnel {
  const [program, ...args] = tunnelCommand(opts.kind, opts.localUrl, opts.publicly);
  const child = spawn(program!, args, { env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let found: string | null = null;
  let stopping = false;
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const url = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(tunnelFailure(opts.kind, { output })));
      child.kill('SIGTERM');
    }, opts.timeoutMs ?? TUNNEL_URL_TIMEOUT_MS);
    const take = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-64 * 1024);
      if (found) return;
      found = tunnelUrl(opts.kind, output);
      if (found) {
        clearTimeout(timer);
        resolve(found);
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new Error(tunnelFailure(opts.kind, { missing: err.code === 'ENOENT', output: err.message })));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (!found) reject(new Error(tunnelFailure(opts.kind, { output, code })));
      else if (!stopping) opts.died(tunnelFailure(opts.kind, { output, code }));
    });
  });
  url.catch(() => {}); // the caller reads it; an unread rejection must not end the process
  return {
    url,
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    },
  };
}
