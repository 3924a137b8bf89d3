/**
 * The one error sealing throws (core/seal/seal.ts, core/seal/keys.ts), with a code callers can act on. Messages name
 * fields and device ids, never key material or plaintext.
 */

export type SealErrorCode = 'bad_envelope' | 'bad_version' | 'wrong_purpose' | 'not_for_me' | 'bad_key' | 'tampered';

export class SealError extends Error {
  override readonly name = 'SealError';
  readonly code: SealErrorCode;
  constructor(code: SealErrorCode, message: string) {
    super(`${code}: ${message}`);
    this.code = code;
  }
}
