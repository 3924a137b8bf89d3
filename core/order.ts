/**
 * Order two strings by their UTF-16 code units (the order `Array.prototype.sort` uses by default). svc sorts session
 * names, pane ids and actor ids to be deterministic; the one list a person reads in that order (`svc verify`'s failing
 * actors) is of ASCII ids, where a language's order would say the same. `localeCompare` would make the listener load
 * ICU's collation data for it, megabytes it then keeps resident (docs/benchmarks.md, "ICU, and where the rest is").
 */
export function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
