/**
 * Asks Codex which hooks it has and which it trusts: `codex app-server` over stdio (JSON-RPC, one message a line),
 * `initialize`, then `hooks/list`. Codex's own answer carries each hook's key and current hash, which svc writes
 * back as trust for the hooks it wrote itself (core/hooks/wiring.ts codexTrustWiring). Codex labels its app-server
 * experimental: anything unexpected is an error with one line, and setup then says how to trust by hand (`/hooks`).
 */
import { spawn } from 'node:child_process';
import type { CodexHookListing } from '../../core/hooks/wiring.js';

const LIST_TIMEOUT_MS = 20_000;

export function listCodexHooks(
  codex: string,
  opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<CodexHookListing[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(codex, ['app-server'], { cwd: opts.cwd, env: opts.env ?? process.env, stdio: 'pipe' });
    let buffered = '';
    let settled = false;
    const done = (err: Error | null, hooks?: CodexHookListing[]) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.stdin.end();
      child.kill();
      if (err) reject(err);
      else resolve(hooks ?? []);
    };
    const timer = setTimeout(
      () => done(new Error('codex app-server did not list its hooks in time')),
      opts.timeoutMs ?? LIST_TIMEOUT_MS,
    );
    const send = (message: object) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
    child.on('error', (err) => done(new Error(`cannot run codex app-server: ${err.message}`)));
    child.on('exit', (code) => done(new Error(`codex app-server ended (${code}) before listing its hooks`)));
    child.stdin.on('error', () => {});
    child.stderr.resume();
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        let message: { id?: number; result?: unknown; error?: { message?: string } };
        try {
          message = JSON.parse(line);
        } catch {
          continue;
        }
        if (message.id === 1) {
          if (message.error)
            return done(new Error(`codex app-server: ${message.error.message ?? 'initialize failed'}`));
          send({ method: 'initialized' });
          send({ id: 2, method: 'hooks/list', params: {} });
        } else if (message.id === 2) {
          if (message.error)
            return done(new Error(`codex app-server: ${message.error.message ?? 'hooks/list failed'}`));
          const data = (message.result as { data?: { hooks?: CodexHookListing[] }[] })?.data;
          if (!Array.isArray(data))
            return done(new Error('codex app-server answered hooks/list in a shape svc does not know'));
          return done(
            null,
            data.flatMap((d) => (Array.isArray(d.hooks) ? d.hooks : [])),
          );
        }
      }
    });
    send({ id: 1, method: 'initialize', params: { clientInfo: { name: 'svc', version: '1' } } });
  });
}
