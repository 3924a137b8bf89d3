/**
 * `--tls-cert FILE --tls-key FILE`: a certificate the person already has (certbot's, their company's). Both files are
 * read at start (a missing or mismatched pair is an error then), and again whenever either changes (their stat looked
 * at every `intervalMs`, through symlinks, so a renewal that swaps certbot's links is seen): a new valid pair is served to new connections, open WebSockets keep theirs; a pair that does not match yet (the
 * key written, the certificate not) is logged and the old one keeps serving until the next change.
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { describeError, type Log } from '../log.js';

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

export interface CertificateFiles {
  certPath: string;
  keyPath: string;
}

export interface LoadedCertificate {
  key: string;
  cert: string;
  /** The host names the certificate is for (its DNS subject alternative names). */
  names: string[];
  notAfter: number;
}

/** Both files read and checked to make a pair; throws saying which file is wrong. */
export function loadCertificateFiles(files: CertificateFiles): LoadedCertificate {
  const read = (path: string, what: string) => {
    try {
      return readFileSync(path, 'utf8');
    } catch (error) {
      throw new Error(`cannot read the ${what} ${path}: ${(error as Error).message}`);
    }
  };
  const cert = read(files.certPath, 'certificate');
  const key = read(files.keyPath, 'key');
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch {
    throw new Error(`${files.certPath} is not a PEM certificate`);
  }
  try {
    createSecureContext({ key, cert });
  } catch (error) {
    throw new Error(`${files.keyPath} is not the key of ${files.certPath} (${messageOf(error)})`);
  }
  const names = (x509.subjectAltName ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice(4));
  return { key, cert, names, notAfter: Date.parse(x509.validTo) };
}

/** Watch both files; `install` each new valid pair. Returns the stop function. */
export function watchCertificateFiles(
  files: CertificateFiles,
  served: LoadedCertificate,
  install: (key: string, cert: string) => Promise<void>,
  log: Log,
  intervalMs = 2000,
): () => void {
  let current = served;
  let reloading: Promise<void> | null = null;
  let again: string | null = null; // a change seen while a reload was installing: looked at once it is done
  const reload = (why: string) => {
    if (reloading) {
      again = why;
      return;
    }
    reloading = (async () => {
      let next: LoadedCertificate;
      try {
        next = loadCertificateFiles(files);
      } catch (error) {
        log.warn(`${why}: ${messageOf(error)}; still serving the certificate valid until ${iso(current.notAfter)}`);
        return;
      }
      if (next.cert === current.cert && next.key === current.key) return;
      await install(next.key, next.cert);
      current = next;
      log.info(`${why}: now serving ${files.certPath} (${next.names.join(', ')}; valid until ${iso(next.notAfter)})`);
    })()
      .catch((error: unknown) => log.error(`reloading the certificate failed: ${describeError(error)}`))
      .finally(() => {
        reloading = null;
        const next = again;
        again = null;
        if (next) reload(next);
      });
  };
  const onChange = () => reload('the certificate files changed');
  watchFile(files.certPath, { interval: intervalMs, persistent: false }, onChange);
  watchFile(files.keyPath, { interval: intervalMs, persistent: false }, onChange);
  return () => {
    unwatchFile(files.certPath, onChange);
    unwatchFile(files.keyPath, onChange);
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
