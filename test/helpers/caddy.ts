/**
 * A real Caddy (Debian's `caddy`) on loopback as the reverse proxy in front of a relay: HTTPS with its own local CA
 * (`tls internal`), forwarding everything (WebSocket upgrades too) to the relay, its access log in a file. Nothing
 * is installed in the system's trust store (`skip_install_trust`): clients trust `rootCert` (node through
 * NODE_EXTRA_CA_CERTS) or, for Chromium, the leaf's key (`spki`, for `--ignore-certificate-errors-spki-list`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { servedCertificate } from './certs.js';
import { freePort } from './ports.js';
import { waitFor } from './relay.js';

export const CADDY = process.env.SVC_TEST_CADDY ?? '/usr/bin/caddy';

export interface TestCaddy {
  /** https://127.0.0.1:<port> */
  url: string;
  /** Caddy's local root certificate (PEM file). */
  rootCert: string;
  /** base64 sha256 of the served certificate's public key. */
  spki: string;
  /** Caddy's access log (JSON lines). */
  accessLog: string;
  output(): string;
  stop(): Promise<void>;
}

/** Caddy in front of the relay at 127.0.0.1:`upstream`, until `stop()`. */
export async function startCaddy(upstream: number): Promise<TestCaddy> {
  if (!existsSync(CADDY)) throw new Error(`no Caddy at ${CADDY}: apt-get install caddy, or set SVC_TEST_CADDY`);
  const dir = mkdtempSync(join(tmpdir(), 'svc-caddy-'));
  const [httpPort, httpsPort] = [await freePort(), await freePort()];
  const accessLog = join(dir, 'access.log');
  const caddyfile = join(dir, 'Caddyfile');
  writeFileSync(
    caddyfile,
    [
      '{',
      '  admin off',
      `  storage file_system ${join(dir, 'data')}`,
      '  skip_install_trust',
      `  http_port ${httpPort}`,
      `  https_port ${httpsPort}`,
      '}',
      `https://127.0.0.1:${httpsPort} {`,
      '  tls internal',
      `  reverse_proxy 127.0.0.1:${upstream}`,
      '  log {',
      `    output file ${accessLog}`,
      '    format json',
      '  }',
      '}',
      '',
    ].join('\n'),
  );
  let out = '';
  const child: ChildProcess = spawn(CADDY, ['run', '--config', caddyfile, '--adapter', 'caddyfile'], {
    env: { ...process.env, HOME: dir, XDG_DATA_HOME: join(dir, 'xdg-data'), XDG_CONFIG_HOME: join(dir, 'xdg-config') },
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
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const rootCert = join(dir, 'data', 'pki', 'authorities', 'local', 'root.crt');
    const cert = await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`caddy exited (${child.exitCode}):\n${out}`);
        return existsSync(rootCert) ? servedCertificate(httpsPort).catch(() => null) : null;
      },
      { timeoutMs: 30_000, what: 'Caddy serving HTTPS' },
    );
    const spki = createHash('sha256')
      .update(cert.publicKey.export({ type: 'spki', format: 'der' }))
      .digest('base64');
    return { url: `https://127.0.0.1:${httpsPort}`, rootCert, spki, accessLog, output: () => out, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
