/**
 * A real ACME server on loopback: Debian's `pebble`, its challenge validation on (not PEBBLE_VA_ALWAYS_VALID), asking
 * its own DNS stand-in (a few lines of node:dgram here) where a domain is. The stand-in answers every A question with
 * 127.0.0.1 (and AAAA with nothing), so pebble validates HTTP-01 against the relay's plain-HTTP port `httpPort`;
 * `dns.fail(true)` answers NXDOMAIN instead, and every validation fails (a CA that cannot reach the relay).
 *
 * Trust: `caFile` holds pebble's own HTTPS certificate (made here with openssl; the Debian package ships none) and
 * its roots and intermediates of this run (they are new at each start), for NODE_EXTRA_CA_CERTS; `spki` is the
 * intermediate's key hash for Chromium's `--ignore-certificate-errors-spki-list` (a root's is not honoured).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { selfSigned } from './certs.js';
import { freePort } from './ports.js';
import { waitFor } from './relay.js';

export const PEBBLE = process.env.SVC_TEST_PEBBLE ?? '/usr/bin/pebble';

export interface TestPebble {
  /** https://127.0.0.1:<port>/dir */
  directoryUrl: string;
  /** PEM file: pebble's HTTPS certificate, its roots and intermediates (for NODE_EXTRA_CA_CERTS or `ca`). */
  caFile: string;
  /** base64 sha256 of the intermediate's public key, for Chromium. */
  spki: string;
  dns: { fail(on: boolean): void; questions: string[] };
  output(): string;
  stop(): Promise<void>;
}

/** A UDP DNS responder: A → 127.0.0.1, other types → no answer, or NXDOMAIN for everything while failing. */
async function startDns(): Promise<{ port: number; fail(on: boolean): void; questions: string[]; close(): void }> {
  const socket = createSocket('udp4');
  let failing = false;
  const questions: string[] = [];
  socket.on('message', (query, from) => {
    if (query.length < 17) return;
    let at = 12;
    const labels: string[] = [];
    while (at < query.length && query[at] !== 0) {
      labels.push(query.subarray(at + 1, at + 1 + query[at]!).toString());
      at += query[at]! + 1;
    }
    const type = query.readUInt16BE(at + 1);
    questions.push(`${labels.join('.')} ${type === 1 ? 'A' : type === 28 ? 'AAAA' : type}`);
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2); // the id
    header.writeUInt16BE(failing ? 0x8183 : 0x8180, 2); // a response, recursion available; rcode 3 = NXDOMAIN
    header.writeUInt16BE(1, 4); // one question
    const answer =
      !failing && type === 1 ? Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 127, 0, 0, 1]) : Buffer.alloc(0);
    header.writeUInt16BE(answer.length ? 1 : 0, 6);
    socket.send(Buffer.concat([header, query.subarray(12, at + 5), answer]), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    port: socket.address().port,
    fail: (on) => {
      failing = on;
    },
    questions,
    close: () => socket.close(),
  };
}

function get(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request(url, { ca }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${res.statusCode}`))));
    })
      .on('error', reject)
      .end();
  });
}

/** pebble validating HTTP-01 on 127.0.0.1:`httpPort`; certificates valid `validitySeconds` (default its 5 years). */
export async function startPebble(opts: { httpPort: number; validitySeconds?: number }): Promise<TestPebble> {
  if (!existsSync(PEBBLE)) throw new Error(`no pebble at ${PEBBLE}: apt-get install pebble, or set SVC_TEST_PEBBLE`);
  const dir = mkdtempSync(join(tmpdir(), 'svc-pebble-'));
  const dns = await startDns();
  const [port, management, tlsPort] = [await freePort(), await freePort(), await freePort()];
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  selfSigned({ key, cert }, { cn: 'pebble', san: 'IP:127.0.0.1' });
  const config = join(dir, 'pebble.json');
  writeFileSync(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${port}`,
        managementListenAddress: `127.0.0.1:${management}`,
        certificate: cert,
        privateKey: key,
        httpPort: opts.httpPort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
        ...(opts.validitySeconds ? { certificateValidityPeriod: opts.validitySeconds } : {}),
      },
    }),
  );
  let out = '';
  const child: ChildProcess = spawn(PEBBLE, ['-config', config, '-dnsserver', `127.0.0.1:${dns.port}`], {
    // no sleeps before validating; a fresh authorization per order (a renewal validates again)
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_AUTHZREUSE: '0', PEBBLE_WFE_NONCEREJECT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    dns.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const own = readFileSync(cert, 'utf8');
    await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`pebble exited (${child.exitCode}):\n${out}`);
        return out.includes('ACME directory available');
      },
      { timeoutMs: 20_000, what: 'pebble serving its directory' },
    );
    const root = await get(`https://127.0.0.1:${management}/roots/0`, own);
    const intermediate = await get(`https://127.0.0.1:${management}/intermediates/0`, own);
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, `${own}\n${root}\n${intermediate}\n`);
    const spki = createHash('sha256')
      .update(new X509Certificate(intermediate).publicKey.export({ type: 'spki', format: 'der' }))
      .digest('base64');
    return {
      directoryUrl: `https://127.0.0.1:${port}/dir`,
      caFile,
      spki,
      dns: { fail: dns.fail, questions: dns.questions },
      output: () => out,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
