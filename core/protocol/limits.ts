/**
 * Wire protocol limits, and the one check of a message's size: plain values, no schema library, so the web app's
 * first load can use them (re-exported by codes.ts and so by core/protocol/index.ts).
 */

/** Spec 2.1 / 7.4: the only characters a target session name may contain. */
export const SESSION_NAME_RE = /^[A-Za-z0-9._-]+$/;
export const MAX_SESSION_NAME = 128;
/**
 * The one limit on a message's text, in characters (UTF-16 code units): a plaintext `body` at the relay, and the
 * `text` inside a sealed one, checked where it is sealed (commandTextProblem, below) and by the
 * listener (`too_large`).
 */
export const MAX_BODY_CHARS = 64 * 1024;
/**
 * Largest HTTP request body the relay reads, in bytes. Room for any text within MAX_BODY_CHARS once sealed: up to
 * 3 UTF-8 bytes a character, then base64 (4/3) in the envelope, about 263 KB.
 */
export const MAX_HTTP_BYTES = 384 * 1024;
export const MAX_WS_FRAME_BYTES = 1024 * 1024;

/**
 * The one size limit on a message, checked where it is sealed (`svc agent send`, the app) so a text the listener
 * would refuse never leaves: at most MAX_BODY_CHARS characters (UTF-16 code units, as JavaScript and zod count), the
 * same limit as a plaintext `body` at the relay and `text` inside the envelope at the listener (`too_large`).
 */
export function commandTextProblem(text: string): { code: 'empty_body' | 'too_large'; message: string } | null {
  if (text.length === 0) return { code: 'empty_body', message: 'nothing to send' };
  if (text.length > MAX_BODY_CHARS) {
    return {
      code: 'too_large',
      message: `the message is ${text.length} characters; at most ${MAX_BODY_CHARS} can be sent`,
    };
  }
  return null;
}
