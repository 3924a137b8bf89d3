/**
 * Node flags the listener runs with wherever svc starts it as a process of its own (the background listener of
 * `svc cc` and `svc listener --restart`, the login service); startup flags only, which V8 reads as it starts:
 * - `--max-semi-space-size=1`: V8's young generation at most 1 MiB a semi-space (its default grows to 16). The idle
 *   listener held about 18 MiB less (93 instead of 111 when measured); a push costs it about a tenth more CPU.
 * - `--no-opt --no-maglev`: V8's two optimizing compilers off (its interpreter and baseline compiler stay). The idle
 *   listener holds about 10 MiB less (71-72 instead of 81-84, 20 sessions, Node 24; Node 22, where Maglev is off
 *   already, 68 instead of 76); either one off alone gives little on Node 24. Hot JavaScript runs 1.5-1.8x slower
 *   (a frame's parse 16 → 24-28 µs; a pure-JS loop over bytes 10-20x, which is why core/base64url.ts uses Node's
 *   codec), but a push's CPU in the listener did not move (10-13 ms either way), nor did a phone's file in sealed
 *   chunks (4.6 ms a 192 KiB chunk) or reading 20 MB of transcript (0.12 s): their time is in native code.
 * Measured in docs/benchmarks.md, "Idle memory". `svc up` is started by the person and runs the relay, whose hot
 * paths want the optimizing compilers, in the same process: it keeps Node's defaults.
 */
export const LISTENER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1', '--no-opt', '--no-maglev'];

/** The node flags before svc's bin for a command line of svc's: the listener's for `listener`, none otherwise. */
export function nodeFlagsFor(words: readonly string[]): readonly string[] {
  return words[0] === 'listener' ? LISTENER_NODE_FLAGS : [];
}
