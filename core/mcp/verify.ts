/** The `asks` line of `svc verify` (docs/mcp.md): the `svc_ask`s the running listener is waiting on. Pure. */
import type { AskInFlight } from './control.js';

export function formatAsksLine(asks: readonly AskInFlight[] | null, now: number): string {
  const head = `${'ok  '}  ${'asks'.padEnd(9)} `;
  if (asks === null) return `${head}- (no listener answers on the control socket)`;
  if (asks.length === 0) return `${head}none in flight`;
  const each = asks
    .map(
      (a) =>
        `${a.session} (${a.id}, ${Math.max(0, Math.round((a.deadline - now) / 1000))} s left, ${a.devices} device(s))`,
    )
    .join('; ');
  return `${head}${asks.length} in flight: ${each}`;
}
