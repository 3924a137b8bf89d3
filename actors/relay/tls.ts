/**
 * A self-signed certificate for this computer's LAN address, so a phone can open the web app over HTTPS (WebCrypto
 * only runs on secure pages). Made with the `openssl` CLI (argv, no shell), kept in `~/.svc/tls/` (dir 0700, files
 * 0600), reused while it names the address and is valid for more than 30 days.
 */
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { ensurePrivateDir } from '../files.js';

export const RENEW_BEFORE_MS = 30 * 24 * 60 * 60 * 1000;
export const CERT_DAYS = 825; // the longest validity Apple platforms accept for a TLS server certificate

export interface LanCertificate {
  keyPath: string;
  certPath: string;
  key: string;
  cert: string;
  /** SHA-256 of the certificate, `AB:CD:…`, to compare with what the phone shows. */
  fingerprint: string;
  /** When the certificate stops being valid (epoch ms). */
  validTo: number;
  /** True when this call made a new certificate. */
  created: boolean;
}

/** This computer's first non-internal IPv4 address, or null when it has none. */
export function lanAddress(interfaces: ReturnType<typeof networkInterfaces> = networkInterfaces()): string | null {
  for (const list of Object.values(interfaces)) {
    for (const entry of list ?? []) {
      if (entry.family === 'IPv4' && !entry.internal) return entry.address;
    }
  }
  return null;
}

/** The stored certificate when it names `ip` and (unless `now` is null) stays valid for 30 more days. */
function readCertificate(dir: string, ip: string, now: number | null): LanCertificate | null {
  const keyPath = join(dir, 'key.pem');
  const certPath = join(dir, 'cert.pem');
  if (!existsSync(keyPath) || !existsSync(certPath)) return null;
  try {
    const key = readFileSync(keyPath, 'utf8');
    const cert = readFileSync(certPath, 'utf8');
    const x509 = new X509Certificate(cert);
    const validTo = Date.parse(x509.validTo);
    if (x509.checkIP(ip) === undefined) return null;
    if (now !== null && (!Number.isFinite(validTo) || validTo - now < RENEW_BEFORE_MS)) return null;
    return { keyPath, certPath, key, cert, fingerprint: x509.fingerprint256, validTo, created: false };
  } catch {
    return null; // unreadable or not a certificate: make a new one
  }
}

function runOpenssl(openssl: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(openssl, args, { timeout: 30_000 }, (error, _stdout, stderr) => {
      if (!error) return resolve();
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        return reject(new Error(`openssl not found (${openssl}): install OpenSSL to use --lan`));
      }
      const detail = String(stderr).trim().split('\n').pop() || error.message;
      reject(new Error(`openssl could not make a certificate: ${detail}`));
    });
  });
}

/**
 * The certificate in `dir` for `ip`: the stored one when it names `ip` and is valid for more than 30 more days,
 * otherwise a new one (replacing both files).
 */
export async function ensureLanCertificate(opts: {
  dir: string;
  ip: string;
  now?: number;
  /** The openssl program (default: `openssl` on PATH). */
  openssl?: string;
}): Promise<LanCertificate> {
  const now = opts.now ?? Date.now();
  ensurePrivateDir(opts.dir);
  const existing = readCertificate(opts.dir, opts.ip, now);
  if (existing) return existing;

  const work = mkdtempSync(join(opts.dir, 'new-'));
  try {
    const keyTmp = join(work, 'key.pem');
    const certTmp = join(work, 'cert.pem');
    await runOpenssl(opts.openssl ?? 'openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      String(CERT_DAYS),
      '-subj',
      '/CN=svc',
      '-addext',
      `subjectAltName=IP:${opts.ip}`,
      '-keyout',
      keyTmp,
      '-out',
      certTmp,
    ]);
    chmodSync(keyTmp, 0o600);
    chmodSync(certTmp, 0o600);
    renameSync(keyTmp, join(opts.dir, 'key.pem'));
    renameSync(certTmp, join(opts.dir, 'cert.pem'));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const made = readCertificate(opts.dir, opts.ip, null);
  if (!made) throw new Error(`openssl made a certificate in ${opts.dir} that does not name ${opts.ip}`);
  return { ...made, created: true };
}
