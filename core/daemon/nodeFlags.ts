/**
 * Node flags the listener runs with wherever svc starts it as a process of its own (the background listener of
 * `svc cc` and `svc listener --restart`, the login service): V8's young generation at most 1 MiB a semi-space (its
 * default grows to 16). The idle listener then holds about 18 MiB less (93 instead of 111 when measured, 20
 * sessions, Node 24); a push costs it about a tenth more CPU (under 1.5 ms of ~10), which no one feels against the
 * agent's own 60-400 ms (docs/benchmarks.md, "Idle memory"). A startup flag only: V8 sizes the heap when the
 * process starts.
 * `svc up` is started by the person and runs the relay in the same process: it keeps Node's defaults.
 */
export const LISTENER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];

/** The node flags before svc's bin for a command line of svc's: the listener's for `listener`, none otherwise. */
export function nodeFlagsFor(words: readonly string[]): readonly string[] {
  return words[0] === 'listener' ? LISTENER_NODE_FLAGS : [];
}
