/**
 * Certificates for tests: a self-signed one made with openssl (as a person's own would be made elsewhere), the one a
 * TLS server presents, and a name lookup that sends a test's domain to loopback (`lookup` for node's clients).
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import type { LookupFunction } from 'node:net';
import { connect } from 'node:tls';

/** An EC P-256 key and a self-signed certificate (`san`: e.g. `DNS:relay.svc.test` or `IP:127.0.0.1`). */
export function selfSigned(paths: { key: string; cert: string }, opts: { cn: string; san: string; days?: number }) {
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', paths.key]
      .concat(['-out', paths.cert, '-days', String(opts.days ?? 2), '-subj', `/CN=${opts.cn}`])
      .concat(['-addext', `subjectAltName=${opts.san}`]),
    { stdio: 'ignore' },
  );
}

/**
 * The certificate a TLS server on 127.0.0.1:`port` presents to a client asking for `servername`; with `ca` it must
 * verify against it (else the promise rejects), without it anything is taken.
 */
export function servedCertificate(
  port: number,
  opts: { servername?: string; ca?: string | Buffer | (string | Buffer)[] } = {},
): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      ...(opts.servername ? { servername: opts.servername } : {}),
      ...(opts.ca ? { ca: opts.ca } : { rejectUnauthorized: false }),
    });
    socket.once('secureConnect', () => {
      const raw = socket.getPeerCertificate().raw;
      socket.end();
      if (raw) resolve(new X509Certificate(raw));
      else reject(new Error('no certificate presented'));
    });
    socket.once('error', reject);
  });
}

/** A `lookup` for node's clients: every name is this computer (a test's domain on loopback). */
export const toLoopback = ((_host: string, opts: { all?: boolean }, cb: (...a: unknown[]) => void) =>
  opts?.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)) as unknown as LookupFunction;
