/**
 * Order two strings by their UTF-16 code units (the order `Array.prototype.sort` uses by default). svc sorts names
 * and ids only to be deterministic, never for a person's reading: `localeCompare` would make the listener load ICU's
 * collation data for that, megabytes it then keeps resident (docs/benchmarks.md, "Idle memory").
 */
export function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
