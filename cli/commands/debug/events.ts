/**
 * `svc debug events [--follow] [--json]`: the listener's recent transitions (actor, event type, from → to), and
 * with `--follow` each new one as it happens, until Ctrl-C or the listener stops.
 */
import { defineCommand } from 'citty';
import { controlConnect } from '../../../actors/daemon/controlSocket.js';
import { describeMove, formatStateValue, formatSummary, type TransitionRecord } from '../../../core/daemon/control.js';
import { failControl, svcDir } from './_shared.js';

function line(t: TransitionRecord): string {
  const time = new Date(t.at).toISOString().slice(11, 23);
  const move =
    t.status === 'active'
      ? (describeMove(t.from, t.to) ?? `(no change: ${formatStateValue(t.to)})`)
      : `${formatStateValue(t.from)} → (${t.status})`;
  const summary = formatSummary(t.summary);
  return `${time}  ${t.actor}  ${t.event}  ${move}${summary ? `  [${summary}]` : ''}`;
}

export default defineCommand({
  meta: { name: 'events', description: "Print the running listener's transitions as they happen" },
  args: {
    follow: { type: 'boolean', alias: 'f', description: 'Keep printing new transitions' },
    json: { type: 'boolean', description: 'One JSON transition per line' },
    limit: { type: 'string', default: '50', description: 'How many recent transitions to print first' },
  },
  async run({ args }) {
    const limit = Math.max(0, Math.min(500, Number.parseInt(args.limit, 10) || 0));
    const print = (t: TransitionRecord) => process.stdout.write(`${args.json ? JSON.stringify(t) : line(t)}\n`);
    try {
      let failed: string | null = null;
      const conn = await controlConnect(svcDir(), { type: 'events', follow: args.follow === true, limit }, (reply) => {
        if (reply.type === 'events') {
          for (const t of reply.transitions) print(t);
          if (!reply.following) conn.close();
        } else if (reply.type === 'transition') print(reply.transition);
        else if (reply.type === 'error') {
          failed = reply.error.message;
          conn.close();
        }
      });
      const stop = () => conn.close();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await conn.closed;
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      if (failed) failControl(new Error(failed));
    } catch (err) {
      failControl(err);
    }
  },
});
