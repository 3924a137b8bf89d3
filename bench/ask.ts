/**
 * The `svc_ask` path on loopback (docs/benchmarks.md): the real MCP SDK client calls `svc_ask` on `svc mcp`
 * (compiled, a child process), through the real listener (a child process) and the real relay (this process),
 * to an app client with its own device key and a Web Push subscription whose endpoint is an HTTPS server here.
 *
 *   npm run bench:ask [-- --asks 30 --json]
 *
 * Timed per ask: from the tool call to the push arriving at the push endpoint (notification sent) and to the
 * question at the app; from the app sending its sealed answer (the tap) to the tool result. Baseline, measured in
 * the same run: the app's `ping` → `pong` round trip through the relay.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import WebSocket from 'ws';
import { ensureLanCertificate } from '../actors/relay/tls.js';
import { LISTENER_NODE_FLAGS } from '../core/daemon/nodeFlags.js';
import type { QuestionBody } from '../core/mcp/ask.js';
import { exportPublicKey, generateDeviceKeys, importPublicKey } from '../core/seal/keys.js';
import { openText, seal } from '../core/seal/seal.js';
import { createAccount } from '../relay-server/accounts.js';
import { startRelay } from '../relay-server/server.js';
import { openSqliteStore } from '../relay-server/sqliteStore.js';
import { output } from './inject.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SVC = join(ROOT, 'bin/svc.js');
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const ASKS = arg('asks', 30);
const JSON_OUT = process.argv.includes('--json');
const err = (line: string) => process.stderr.write(`${line}\n`);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
};
const stats = (xs: number[]) => ({ p50: pct(xs, 50), p90: pct(xs, 90), max: Math.max(...xs) });

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'svc-bench-ask-'));
  const cleanups: (() => unknown)[] = [() => rmSync(work, { recursive: true, force: true })];
  try {
    // Push endpoint on loopback (HTTPS with its own certificate), recording arrival times.
    const cert = await ensureLanCertificate({ dir: join(work, 'tls'), ip: '127.0.0.1' });
    const arrivals: number[] = [];
    const endpoint = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
      req.resume();
      req.on('end', () => {
        arrivals.push(performance.now());
        res.writeHead(201).end();
      });
    });
    await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
    cleanups.push(() => endpoint.close());

    const dataDir = join(work, 'relay');
    const store = openSqliteStore(dataDir);
    const { apiKey } = await createAccount(store);
    await store.close();
    // batchMs 1: every ask of the run is the first of its window, as an ask a person waits on usually is.
    const relay = await startRelay({
      host: '127.0.0.1',
      port: 0,
      dataDir,
      httpBucket: { capacity: 100_000, refillPerSecond: 100_000 },
      webPush: { agent: new Agent({ ca: cert.cert }), batchMs: 1 },
      log: { info: () => {}, warn: () => {}, error: err },
    });
    cleanups.push(() => relay.close());

    const home = join(work, 'home');
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, SVC_TMUX_SOCKET: join(work, 'tmux.sock') };
    delete env.TMUX;
    execFileSync('tmux', [
      '-S',
      env.SVC_TMUX_SOCKET as string,
      '-f',
      '/dev/null',
      'new-session',
      '-d',
      '-s',
      'svc-bench',
      'cat',
    ]);
    cleanups.push(() => execFileSync('tmux', ['-S', env.SVC_TMUX_SOCKET as string, 'kill-server']));
    // Not execFileSync: the relay answering the login runs in this process.
    await promisify(execFile)(
      process.execPath,
      [SVC, 'login', '--url', relay.url, '--key', apiKey, '--name', 'bench'],
      {
        env,
      },
    );
    // with the flags the listener's launchers give it (core/daemon/nodeFlags.ts)
    const listener = spawn(process.execPath, [...LISTENER_NODE_FLAGS, SVC, 'listener'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(() => listener.kill());
    await new Promise<void>((res) => {
      let out = '';
      listener.stderr.on('data', (c: Buffer) => {
        out += c.toString();
        if (/connected to ws:/.test(out) && /control socket/.test(out)) res();
      });
    });

    const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    const get = async (path: string) => (await fetch(`${relay.url}${path}`, { headers })).json();
    const keys = await generateDeviceKeys(false);
    const publicKey = await exportPublicKey(keys.publicKey);
    const device = await (
      await fetch(`${relay.url}/devices`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'bench phone', kind: 'app', publicKey }),
      })
    ).json();
    const { computers } = await get('/computers');
    const hookId = computers[0].hookId;
    const { devices } = await get('/devices');
    const computerKey = devices.find((d: { deviceId: string }) => d.deviceId === computers[0].deviceId).publicKey;
    const computerCrypto = await importPublicKey(computerKey);
    const { createECDH, randomBytes } = await import('node:crypto');
    const ecdh = createECDH('prime256v1');
    ecdh.generateKeys();
    await fetch(`${relay.url}/push/subscriptions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        deviceId: device.deviceId,
        subscription: {
          endpoint: `https://127.0.0.1:${(endpoint.address() as AddressInfo).port}/push/bench`,
          keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: randomBytes(16).toString('base64url') },
        },
      }),
    });

    // The app: a WebSocket subscribed as the device.
    const ws = new WebSocket(relay.wsUrl, { headers: { Authorization: `Bearer ${apiKey}` } });
    const waiters: ((f: { type: string; [k: string]: unknown }) => boolean)[] = [];
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString());
      for (const w of [...waiters]) if (w(frame)) waiters.splice(waiters.indexOf(w), 1);
    });
    const next = (type: string) =>
      new Promise<{ type: string; [k: string]: unknown }>((res) =>
        waiters.push((f) => {
          if (f.type !== type) return false;
          res(f);
          return true;
        }),
      );
    await new Promise((r) => ws.once('open', r));
    const subscribed = next('subscribed');
    ws.send(JSON.stringify({ type: 'subscribe', role: 'app', deviceId: device.deviceId }));
    await subscribed;
    cleanups.push(() => ws.close());

    const client = new Client({ name: 'bench', version: '0' });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [SVC, 'mcp'], env: env as Record<string, string> }),
    );
    cleanups.push(() => client.close());

    const ping: number[] = [];
    for (let i = 0; i < ASKS; i++) {
      const t = performance.now();
      const pong = next('pong');
      ws.send(JSON.stringify({ type: 'ping', t: i }));
      await pong;
      ping.push(performance.now() - t);
    }

    const toPush: number[] = [];
    const toApp: number[] = [];
    const tapToResult: number[] = [];
    for (let i = 0; i < ASKS + 3; i++) {
      const pushesBefore = arrivals.length;
      const question = next('ask.new');
      const t0 = performance.now();
      const call = client.callTool({ name: 'svc_ask', arguments: { question: `bench ${i}?`, timeout: 60 } });
      const frame = await question;
      const tApp = performance.now();
      const body = JSON.parse(
        await openText({
          envelope: frame.envelope,
          purpose: 'ask.question',
          me: { id: device.deviceId, privateKey: keys.privateKey },
          senderPublicKey: computerCrypto,
        }),
      ) as QuestionBody;
      while (arrivals.length === pushesBefore) await new Promise((r) => setTimeout(r, 1));
      const tPush = arrivals[pushesBefore] as number;
      const envelope = await seal({
        purpose: 'ask.answer',
        from: { id: device.deviceId, privateKey: keys.privateKey },
        to: [{ id: computers[0].deviceId, publicKey: computerCrypto }],
        plaintext: JSON.stringify({ id: body.id, session: body.session, text: 'yes', sentAt: Date.now() }),
      });
      const t2 = performance.now();
      ws.send(JSON.stringify({ type: 'ask.answer', computer: hookId, id: body.id, envelope }));
      await call;
      const t3 = performance.now();
      if (i < 3) continue; // warm-up
      toPush.push(tPush - t0);
      toApp.push(tApp - t0);
      tapToResult.push(t3 - t2);
    }
    const base = stats(ping).p50;
    const rows = {
      'ping → pong (baseline)': stats(ping),
      'svc_ask → push at the endpoint': stats(toPush),
      'svc_ask → question at the app': stats(toApp),
      'tap (sealed answer sent) → tool result': stats(tapToResult),
    };
    if (JSON_OUT) output(`${JSON.stringify({ asks: ASKS, rows }, null, 2)}\n`);
    else {
      output(`svc_ask on loopback, ${ASKS} asks (3 warm-up asks not counted)\n`);
      for (const [name, s] of Object.entries(rows)) {
        output(
          `${name.padEnd(40)} p50 ${s.p50.toFixed(1).padStart(6)} ms  p90 ${s.p90.toFixed(1).padStart(6)} ms  max ${s.max.toFixed(1).padStart(6)} ms  (${(s.p50 / base).toFixed(1)}× ping)\n`,
        );
      }
    }
  } finally {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch {
        // already gone
      }
    }
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    err(String(e?.stack ?? e));
    process.exit(1);
  },
);
