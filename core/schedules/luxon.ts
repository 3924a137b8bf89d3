/**
 * luxon, loaded the first time a schedule's date is computed. A listener with no schedule never needs it, and it
 * costs the process about 1.3 MiB (its 250 kB of source, compiled: docs/benchmarks.md, "Idle memory"). `require`,
 * not `import()`, so the decisions stay synchronous; the module is loaded once and shared. core/schedules/ is not part
 * of the web app (its build, for browsers, would refuse `node:module`).
 */
import { createRequire } from 'node:module';

type Luxon = typeof import('luxon');

let loaded: Luxon | undefined;

export function luxon(): Luxon {
  loaded ??= createRequire(import.meta.url)('luxon') as Luxon;
  return loaded;
}
