/**
 * The relay's certificate for `--domain`, got and renewed over ACME (RFC 8555) with acme-client: the HTTP-01
 * challenge is answered by the relay's own plain-HTTP port (`challenge()`), the certificate is renewed at two thirds
 * of its life (core/relay/certificate.ts) and handed to the HTTPS server without a restart (`install`: new
 * connections get it, open WebSockets keep theirs), and a failed attempt is tried again after 1 min, 2, 4, … at most
 * 6 h while the old certificate keeps serving.
 *
 * Files, per ACME server (in `dir/<directory host>/`, 0700; each 0600, replaced atomically): `account.key` (the
 * account there), and per domain `<domain>/key.pem` and `<domain>/cert.pem` (the full chain): a certificate from a
 * staging CA is not served once the directory is production's. A stored pair is served at once on start when it
 * names the domain and has not expired; one that does not make a pair (a crash between the two renames) is got anew.
 *
 * Bounds: every request to the CA times out after 30 s and is not retried by the library (this keeper's backoff
 * is the one retry: a CA's Retry-After of hours would otherwise hold an attempt that long), and an attempt as a
 * whole is given up after 10 minutes, so an unanswering CA never stops the renewals.
 */
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import acme from 'acme-client';
import { writeFileAtomic } from '../../actors/files.js';
import { renewalTime, retryDelayMs, sleepUntil } from '../../core/relay/certificate.js';
import { describeError, type Log } from '../log.js';

acme.axios.defaults.timeout = 30_000;
(acme.axios.defaults as unknown as { acmeSettings: { retryMaxAttempts: number } }).acmeSettings.retryMaxAttempts = 0;
const ATTEMPT_LIMIT_MS = 10 * 60_000;

/** The keeper's clock: the time, and a timer (tests move both). */
export interface Clock {
  now(): number;
  after(ms: number, run: () => void): () => void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  after(ms, run) {
    const timer = setTimeout(run, ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

export interface CertificateKeeperOptions {
  domain: string;
  directoryUrl: string;
  email?: string;
  /** Where account keys and certificates are kept (the relay's data dir + `/acme`), a folder per ACME server. */
  dir: string;
  /** Serve this key and certificate from now on; throws when they do not make a pair. */
  install(key: string, cert: string): Promise<void>;
  log: Log;
  clock?: Clock;
}

export interface Served {
  notBefore: number;
  notAfter: number;
  renewAt: number;
  serial: string;
}

/** Keeps a certificate for one domain; `challenge` is what the plain-HTTP port answers. */
export class CertificateKeeper {
  private readonly challenges = new Map<string, string>();
  private readonly clock: Clock;
  private served: Served | null = null;
  private failures = 0;
  private cancelTimer: (() => void) | null = null;
  private stopped = false;
  private attempt: Promise<void> | null = null;
  private readonly caDir: string;
  private readonly certDir: string;
  private readonly firstInstalled: Promise<void>;
  private resolveFirst!: () => void;

  constructor(private readonly opts: CertificateKeeperOptions) {
    this.clock = opts.clock ?? realClock;
    this.caDir = join(opts.dir, new URL(opts.directoryUrl).host.replace(/[^a-z0-9.-]/gi, '_'));
    this.certDir = join(this.caDir, opts.domain);
    this.firstInstalled = new Promise((resolve) => {
      this.resolveFirst = resolve;
    });
  }

  /** The key authorization for a token of a challenge in progress. */
  challenge = (token: string): string | undefined => this.challenges.get(token);

  /** The certificate being served, once there is one. */
  get current(): Served | null {
    return this.served;
  }

  /**
   * Serve the stored certificate when it still may be, then get one if none is stored or it is due. Resolves once
   * a stored one serves, or else after the first attempt (successful or not); `ready()` resolves when a certificate
   * is served.
   */
  async start(): Promise<void> {
    const stored = this.readStored();
    if (stored) {
      await this.serve(stored.key, stored.cert);
      this.opts.log.info(
        `certificate for ${this.opts.domain} from ${this.certDir}, renewed from ${iso(stored.renewAt)}`,
      );
    }
    if (!this.served) await this.renew();
    else if (this.clock.now() >= this.served.renewAt)
      void this.renew(); // the stored one serves meanwhile
    else this.scheduleAt(this.served.renewAt);
  }

  ready(): Promise<void> {
    return this.firstInstalled;
  }

  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelTimer = null;
  }

  /** The stored pair, when it names the domain, makes a pair, and has not expired. */
  private readStored(): { key: string; cert: string; renewAt: number } | null {
    const keyPath = join(this.certDir, 'key.pem');
    const certPath = join(this.certDir, 'cert.pem');
    if (!existsSync(keyPath) || !existsSync(certPath)) return null;
    try {
      const key = readFileSync(keyPath, 'utf8');
      const cert = readFileSync(certPath, 'utf8');
      createSecureContext({ key, cert }); // throws when the key is not the certificate's
      const x509 = new X509Certificate(cert);
      if (x509.checkHost(this.opts.domain) === undefined) return null;
      const notBefore = Date.parse(x509.validFrom);
      const notAfter = Date.parse(x509.validTo);
      if (!(notAfter > this.clock.now())) return null;
      return { key, cert, renewAt: renewalTime(notBefore, notAfter) };
    } catch (error) {
      this.opts.log.warn(
        `the stored certificate for ${this.opts.domain} is not usable (${describeError(error)}): getting a new one`,
      );
      return null;
    }
  }

  private async serve(key: string, cert: string): Promise<void> {
    await this.opts.install(key, cert);
    const x509 = new X509Certificate(cert);
    const notBefore = Date.parse(x509.validFrom);
    const notAfter = Date.parse(x509.validTo);
    this.served = { notBefore, notAfter, renewAt: renewalTime(notBefore, notAfter), serial: x509.serialNumber };
    this.resolveFirst();
  }

  private scheduleAt(at: number): void {
    this.cancelTimer?.();
    if (this.stopped) return;
    this.cancelTimer = this.clock.after(sleepUntil(at, this.clock.now()), () => {
      this.cancelTimer = null;
      if (this.clock.now() < at) return this.scheduleAt(at); // a one-day step of a longer wait
      void this.renew();
    });
  }

  /**
   * One attempt; on failure the next is scheduled with backoff, on success the renewal. Never throws. Only the CA's
   * failures count as failures: a certificate it gave is served even when it cannot be saved (said in the log).
   */
  private renew(): Promise<void> {
    this.attempt ??= this.obtainWithin(ATTEMPT_LIMIT_MS)
      .then(
        async ({ key, cert }) => {
          if (this.stopped) return;
          await this.serve(key, cert);
          this.failures = 0;
          try {
            writeFileAtomic(join(this.certDir, 'key.pem'), key);
            writeFileAtomic(join(this.certDir, 'cert.pem'), cert);
          } catch (error) {
            this.opts.log.warn(
              `the new certificate for ${this.opts.domain} serves but could not be saved in ${this.certDir} (${oneLine(error)}): a restart will ask the CA again`,
            );
          }
          const served = this.served as Served;
          this.opts.log.info(
            `certificate for ${this.opts.domain} from ${this.opts.directoryUrl}: valid until ${iso(served.notAfter)}, renewed from ${iso(served.renewAt)}`,
          );
          // a certificate due already (this computer's clock ahead, or one with a very short life) is not asked for
          // again at once: at the earliest after a tenth of its life
          const now = this.clock.now();
          const earliest = now + Math.floor((served.notAfter - served.notBefore) / 10);
          if (served.renewAt < earliest)
            this.opts.log.warn(
              `the new certificate for ${this.opts.domain} is due for renewal already (${iso(served.renewAt)}; this computer says ${iso(now)}): is its clock right? Next attempt at ${iso(earliest)}`,
            );
          this.scheduleAt(Math.max(served.renewAt, earliest));
        },
        (error: unknown) => {
          if (this.stopped) return;
          this.failures += 1;
          const wait = retryDelayMs(this.failures);
          const still = this.served
            ? `the certificate valid until ${iso(this.served.notAfter)} still serves`
            : 'no HTTPS until then';
          this.opts.log.error(
            `ACME: no certificate for ${this.opts.domain} from ${this.opts.directoryUrl}: ${oneLine(error)}; trying again in ${Math.round(wait / 60_000)} min (${still})`,
          );
          this.scheduleAt(this.clock.now() + wait);
        },
      )
      .catch((error: unknown) => this.opts.log.error(`certificate keeper: ${describeError(error)}`))
      .finally(() => {
        this.attempt = null;
      });
    return this.attempt;
  }

  /** `obtain`, or an error after `ms` of real time (an attempt never holds the renewals forever). */
  private obtainWithin(ms: number): Promise<{ key: string; cert: string }> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from the CA within ${ms / 60_000} minutes`)), ms);
      timer.unref();
    });
    return Promise.race([this.obtain(), limit]).finally(() => clearTimeout(timer));
  }

  private async obtain(): Promise<{ key: string; cert: string }> {
    const client = new acme.Client({
      directoryUrl: this.opts.directoryUrl,
      accountKey: await this.accountKey(),
      backoffMin: 1000,
    });
    const [key, csr] = await acme.crypto.createCsr(
      // a CSR's common name holds at most 64 characters; the name is in the alternative names either way
      { ...(this.opts.domain.length <= 64 ? { commonName: this.opts.domain } : {}), altNames: [this.opts.domain] },
      await acme.crypto.createPrivateEcdsaKey(),
    );
    const cert = await client.auto({
      csr,
      ...(this.opts.email ? { email: this.opts.email } : {}),
      termsOfServiceAgreed: true,
      challengePriority: ['http-01'],
      // the CA's validation is the check; a self-check from the server often cannot reach its own public address
      skipChallengeVerification: true,
      challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
        this.challenges.set(challenge.token, keyAuthorization);
      },
      challengeRemoveFn: async (_authz, challenge) => {
        this.challenges.delete(challenge.token);
      },
    });
    return { key: key.toString(), cert };
  }

  /** The ACME account's key: made once, kept 0600. */
  private async accountKey(): Promise<string> {
    const path = join(this.caDir, 'account.key');
    if (existsSync(path)) return readFileSync(path, 'utf8');
    const key = (await acme.crypto.createPrivateKey()).toString();
    writeFileAtomic(path, key);
    return key;
  }
}

/** An ACME error's message on one line (the CA's own words), not its stack; a network error by its code. */
function oneLine(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const inner = error instanceof AggregateError ? error.errors.map((e) => (e as Error).message).join('; ') : '';
  const code = (error as NodeJS.ErrnoException).code;
  const text = error.message || inner || code || error.name;
  return text.replace(/\s+/g, ' ').trim();
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
